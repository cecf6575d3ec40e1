// queryRaw(): the server's messages for a result, passed byte for byte into a
// writable, with the destination's backpressure reaching the server, and a
// destination that goes away cancelling the query.

import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, test } from 'node:test'
import { AbortError, ArgumentError, PgError } from '../../../src/index.js'
import { fileClient, openClient } from '../../support/client.js'
import { startProxy } from '../../support/proxies/proxy.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'
import { RetainedPeak } from '../../support/memory.js'

const db = await fileClient()

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** A writable that keeps what it is given, and how many writes it took. */
function collector(): Writable & { chunks: Buffer[]; all(): Buffer } {
  const chunks: Buffer[] = []
  const w = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk)
      cb()
    },
  }) as Writable & { chunks: Buffer[]; all(): Buffer }
  w.chunks = chunks
  w.all = () => Buffer.concat(chunks)
  return w
}

interface Message {
  type: string
  body: Buffer
}

function messages(bytes: Buffer): Message[] {
  const out: Message[] = []
  let p = 0
  while (p < bytes.length) {
    const len = bytes.readInt32BE(p + 1)
    out.push({ type: String.fromCharCode(bytes[p]!), body: bytes.subarray(p + 5, p + 1 + len) })
    p += 1 + len
  }
  assert.equal(p, bytes.length, 'the output is whole messages')
  return out
}

/** Format codes of a RowDescription body. */
function formatsOf(body: Buffer): number[] {
  const n = body.readInt16BE(0)
  const formats: number[] = []
  let p = 2
  for (let i = 0; i < n; i++) {
    p = body.indexOf(0, p) + 1 + 4 + 2 + 4 + 2 + 4
    formats.push(body.readInt16BE(p))
    p += 2
  }
  return formats
}

describe('what is written', () => {
  test('exactly the bytes the server sent for the result: RowDescription, DataRows, CommandComplete', async () => {
    const url = new URL((await mainDatabase()).connectionString!)
    const fromServer: Buffer[] = []
    const proxy = await startProxy({ host: url.hostname, port: Number(url.port) }, { onServerData: (c) => fromServer.push(c) })
    const c = await openClient({ host: proxy.host, port: proxy.port, sslmode: 'disable' })
    try {
      const out = collector()
      const sql = `SELECT g AS n, g::text AS t, NULL::int AS nothing, point(g, g) AS pt FROM generate_series(1, 3000) g`
      const r = await c.queryRaw(sql, [], out)
      assert.deepEqual({ command: r.command, rowCount: r.rowCount }, { command: 'SELECT', rowCount: 3000 })
      const bytes = out.all()
      assert.equal(r.bytes, bytes.length)
      const ms = messages(bytes)
      assert.equal(ms[0]!.type, 'T')
      assert.deepEqual(formatsOf(ms[0]!.body), [1, 1, 1, 0], 'binary where pipegres/wire decodes it (text too: the same bytes), text for point')
      assert.equal(ms.filter((m) => m.type === 'D').length, 3000)
      assert.equal(ms.at(-1)!.type, 'C')
      // The very same bytes appear, contiguous, in what the server sent.
      assert.ok(Buffer.concat(fromServer).includes(bytes), 'byte for byte as the server sent them')
      // Gathered per socket chunk, not written message by message.
      assert.ok(out.chunks.length < 100, `${out.chunks.length} writes`)
    } finally {
      await c.end()
      await proxy.close()
    }
  })

  test("format: 'text' asks for every column in text; a statement without rows writes its CommandComplete only", async () => {
    const out = collector()
    await db.queryRaw('SELECT 1 AS a, true AS b', [], out, { format: 'text' })
    const ms = messages(out.all())
    assert.deepEqual(formatsOf(ms[0]!.body), [0, 0])
    assert.deepEqual(
      ms.map((m) => m.type),
      ['T', 'D', 'C'],
    )
    const out2 = collector()
    const r = await db.queryRaw('CREATE TEMP TABLE raw_cmd (a int)', [], out2)
    assert.equal(r.command, 'CREATE TABLE')
    assert.deepEqual(
      messages(out2.all()).map((m) => m.type),
      ['C'],
    )
  })

  test('a failing query writes the rows before the error and its ErrorResponse, and rejects with the PgError', async () => {
    const out = collector()
    await assert.rejects(db.queryRaw('SELECT 10 / (5 - g) FROM generate_series(1, 10) g', [], out), (e: unknown) => e instanceof PgError && e.code === '22012')
    const ms = messages(out.all())
    assert.equal(ms.at(-1)!.type, 'E')
    assert.ok(ms.at(-1)!.body.includes(Buffer.from('C22012\0')))
    assert.ok(ms.at(-1)!.body.includes(Buffer.from('Mdivision by zero\0')))
    assert.equal(ms.filter((m) => m.type === 'D').length, 4)
  })

  test('several results into one destination, pipelined with ordinary queries that keep their own results', async () => {
    const out = collector()
    const ps: Promise<unknown>[] = []
    for (let i = 0; i < 50; i++) {
      ps.push(db.query<{ n: number }>('SELECT $1::int AS n', [i]).then((r) => assert.equal(r.rows[0]!.n, i)))
      ps.push(db.queryRaw('SELECT $1::int AS n', [i], out, { prepare: i % 2 === 0 }))
    }
    await Promise.all(ps)
    const ms = messages(out.all())
    const rows = ms.filter((m) => m.type === 'D').map((m) => m.body.readInt32BE(6))
    assert.deepEqual(
      rows,
      Array.from({ length: 50 }, (_, i) => i),
    )
  })

  test('bad arguments are ArgumentErrors', async () => {
    await assert.rejects(db.queryRaw('SELECT 1', [], {} as Writable), ArgumentError)
    await assert.rejects(db.queryRaw('SELECT 1', [], collector(), { format: 'json' as 'text' }), ArgumentError)
  })
})

describe('backpressure and a destination that goes away', () => {
  test('a slow destination holds the server back; every byte arrives', async () => {
    const c = await openClient()
    try {
      let total = 0
      let release: (() => void) | null = null
      let held: RetainedPeak | null = null
      const slow = new Writable({
        highWaterMark: 16 * 1024,
        write(chunk: Buffer, _enc, cb) {
          total += chunk.length
          held?.sample()
          release = cb
        },
      })
      const done = c.queryRaw(`SELECT g, repeat('x', 100) FROM generate_series(1, 300000) g`, [], slow)
      let sawWaiting = false
      for (let i = 0; i < 300 && !sawWaiting; i++) {
        await sleep(10)
        const r = await adminQuery(`SELECT wait_event FROM pg_stat_activity WHERE pid = ${c.processId}`)
        sawWaiting = r.rows[0]?.[0] === 'ClientWrite'
      }
      assert.ok(sawWaiting, 'the server waited for the client to read')
      held = new RetainedPeak(50)
      // Now drain it.
      const pump = setInterval(() => {
        const r = release
        release = null
        r?.()
      }, 0)
      const result = await done
      // The result settles once everything is handed over; the destination may still hold some of it.
      while (slow.writableLength > 0) await sleep(1)
      clearInterval(pump)
      assert.equal(result.rowCount, 300000)
      assert.equal(total, result.bytes)
      // About 35 MB pass through; the client holds its socket and destination buffers at any moment.
      held.measure()
      assert.ok(held.peakGrowth < 16 * 2 ** 20, `held ${held.mib()} more while the data flowed`)
    } finally {
      await c.end()
    }
  })

  test('a destination destroyed mid-result cancels the query with an AbortError; the connection stays usable', async () => {
    const c = await openClient()
    try {
      let writes = 0
      const dest = new Writable({
        write(_chunk, _enc, cb) {
          if (++writes === 3) dest.destroy()
          cb()
        },
      })
      await assert.rejects(c.queryRaw('SELECT generate_series(1, 100000000)', [], dest), AbortError)
      assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    } finally {
      await c.end()
    }
  })
})
