// copyFrom() writes large chunks behind their CopyData header instead of
// copying them into the write buffer, and small ones gathered into it. Chunks
// of every size, alone and piled up behind a full socket, over TCP and TLS,
// must arrive whole and in order.

import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, test } from 'node:test'
import { connect, type ClientOptions } from '../../../src/index.js'
import { isolateEnvironment, tcpOptions } from '../../support/connect.js'
import { getTestServer } from '../../support/servers/test-server.js'

const server = await getTestServer()
await isolateEnvironment('copy-chunks')

/** Text COPY rows first..first+count-1 of (id int, body text). */
function rows(first: number, count: number, width: number): string {
  let s = ''
  for (let i = first; i < first + count; i++) s += `${i}\t${String(i % 10).repeat(width)}\n`
  return s
}

/** Chunks of sizes from 1 byte to 300 KB, cut anywhere (inside rows too), and the text they make. */
function chunks(): { parts: Buffer[]; text: string } {
  const text = rows(1, 30_000, 7) + rows(30_001, 40, 20_000) + rows(30_041, 5000, 3)
  const sizes = [1, 5, 4095, 8191, 8192, 8193, 65_536, 300_000, 17, 12_000, 3]
  const all = Buffer.from(text)
  const parts: Buffer[] = []
  for (let at = 0, k = 0; at < all.length; k++) {
    const n = sizes[k % sizes.length]!
    parts.push(all.subarray(at, at + n))
    at += n
  }
  return { parts, text }
}

for (const sslmode of ['disable', 'require'] as const) {
  describe(`copyFrom() chunks of every size (sslmode ${sslmode})`, () => {
    const options: ClientOptions = tcpOptions(server, server.users.scram, { sslmode })

    test('written one by one as the stream allows, and all at once behind a full socket: every byte in order', async () => {
      const db = await connect(options)
      try {
        assert.equal(db.tls, sslmode === 'require')
        const { parts, text } = chunks()
        const want = createHash('md5').update(text).digest('hex')
        for (const burst of [false, true]) {
          await db.query('CREATE TEMP TABLE IF NOT EXISTS chunked (id int, body text)')
          await db.query('TRUNCATE chunked')
          const s = db.copyFrom('COPY chunked FROM STDIN')
          await new Promise<void>((resolve, reject) => {
            s.on('error', reject)
            let i = 0
            const pump = (): void => {
              // A burst ignores write()'s answer, so chunks pile up and go out together (_writev).
              while (i < parts.length) if (!s.write(parts[i++]!) && !burst) return void s.once('drain', pump)
              s.end(resolve)
            }
            pump()
          })
          assert.equal((await s.result).rowCount, 35_040)
          const r = await db.query<{ h: string }>("SELECT md5(string_agg(id || E'\\t' || body || E'\\n', '' ORDER BY id)) AS h FROM chunked")
          assert.equal(r.rows[0]!.h, want, burst ? 'burst' : 'paced')
        }
        // The connection is still in step.
        assert.deepEqual((await db.query('SELECT 1 AS one')).rows, [{ one: 1 }])
      } finally {
        await db.end()
      }
    })
  })
}
