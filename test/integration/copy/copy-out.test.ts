// test-tags: matrix, pglite
// COPY out of the server through the client: copyTo() streams of raw COPY
// data and copyToRows() with values decoded here, in all three formats;
// server errors, backpressure, and a connection lost in the middle of a COPY
// either way. COPY into the server: copy-in.test.ts.

import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { describe, test } from 'node:test'
import { AbortError, ArgumentError, ConnectionError, PgError } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'
import { copyTables, textRows } from '../../support/copy-tables.js'
import { RetainedPeak } from '../../support/memory.js'
import { adminQuery } from '../../support/servers/test-server.js'
import { NOT_ON_PGLITE, serverOnly } from '../../support/target.js'

const db = await fileClient()
const { table, count } = copyTables(db)

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

async function until(what: string, check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = performance.now() + ms
  while (performance.now() < end) {
    if (await check()) return
    await sleep(10)
  }
  assert.fail(`timed out waiting until ${what}`)
}

async function waitEvent(pid: number): Promise<string | null> {
  const r = await adminQuery(`SELECT wait_event FROM pg_stat_activity WHERE pid = ${pid}`)
  const v = r.rows[0]?.[0]
  return v === undefined || v === null ? null : String(v)
}

describe('copyTo(): raw COPY data', () => {
  test('the data is what the server sends, in as few chunks as the socket gives', async () => {
    const t = await table()
    await db.copyFromRows(
      t,
      Array.from({ length: 10000 }, (_, i) => [i, `name ${i}`, BigInt(i) * 10n]),
    )
    const text = db.copyTo(`COPY (SELECT * FROM ${t} ORDER BY id) TO STDOUT`)
    const chunks: Buffer[] = []
    for await (const c of text) chunks.push(c as Buffer)
    const all = Buffer.concat(chunks).toString()
    assert.equal(all, Array.from({ length: 10000 }, (_, i) => `${i}\tname ${i}\t${i * 10}\n`).join(''))
    assert.ok(chunks.length < 200, `${chunks.length} chunks for 10,000 rows`)
    assert.deepEqual(await text.result, { command: 'COPY', rowCount: 10000 })
    assert.equal(text.format, 'text')
    const bin = db.copyTo(`COPY ${t} TO STDOUT (FORMAT binary)`)
    const b: Buffer[] = []
    for await (const c of bin) b.push(c as Buffer)
    assert.equal(bin.format, 'binary')
    assert.ok(Buffer.concat(b).subarray(0, 11).equals(Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')))
  })

  test('a slow consumer makes the server wait; every byte arrives and memory stays flat', serverOnly(NOT_ON_PGLITE.admin), async () => {
    const c = await openClient()
    try {
      const s = c.copyTo(`COPY (SELECT g, repeat('x', 200) FROM generate_series(1, 400000) g) TO STDOUT`)
      let bytes = 0
      let release: (() => void) | null = null
      let held: RetainedPeak | null = null
      const slow = new Writable({
        highWaterMark: 16 * 1024,
        write(chunk: Buffer, _e, cb) {
          bytes += chunk.length
          held?.sample()
          release = cb
        },
      })
      const done = pipeline(s, slow)
      await until('the server waits for the client to read', async () => (await waitEvent(c.processId)) === 'ClientWrite')
      held = new RetainedPeak(20_000)
      let pumping = true
      const pump = (): void => {
        const r = release
        release = null
        r?.()
        if (pumping) setImmediate(pump)
      }
      pump()
      await done
      pumping = false
      assert.equal((await s.result).rowCount, 400000)
      assert.equal(bytes, 400000 * 201 + [...Array(400000).keys()].reduce((n, i) => n + String(i + 1).length + 1, 0))
      // About 83 MB pass through; what the client holds at any moment is its socket and stream buffers.
      held.measure()
      assert.ok(held.peakGrowth < 24 * 2 ** 20, `held ${held.mib()} more while the data flowed`)
    } finally {
      await c.end()
    }
  })

  test('destroying the stream early cancels the COPY; the connection stays usable', serverOnly(NOT_ON_PGLITE.cancel), async () => {
    const c = await openClient()
    try {
      const s = c.copyTo(`COPY (SELECT generate_series(1, 100000000) AS g) TO STDOUT`)
      for await (const _ of s) break
      await assert.rejects(s.result, AbortError)
      assert.deepEqual((await c.query('SELECT 7 AS n')).rows, [{ n: 7 }])
    } finally {
      await c.end()
    }
  })

  test('an error mid-COPY fails the stream with the server error; a statement that is not a COPY TO is an ArgumentError', serverOnly(NOT_ON_PGLITE.wholeReplies), async () => {
    const s = db.copyTo(`COPY (SELECT 10 / (50000 - g) FROM generate_series(1, 100000) g) TO STDOUT`)
    let got = 0
    await assert.rejects(
      (async () => {
        for await (const c of s) got += (c as Buffer).length
      })(),
      (e: unknown) => e instanceof PgError && e.code === '22012',
    )
    assert.ok(got > 0, 'the rows before the error arrived')
    const t = await table()
    for (const [sql, what] of [
      ['SELECT 1', /answered with rows/],
      [`COPY ${t} FROM STDIN`, /another COPY FROM STDIN/],
    ] as const) {
      await assert.rejects(
        (async () => {
          for await (const _ of db.copyTo(sql));
        })(),
        (e: unknown) => e instanceof ArgumentError && what.test(e.message),
      )
    }
    assert.deepEqual((await db.query('SELECT 8 AS n')).rows, [{ n: 8 }])
  })
})

describe('copyToRows(): COPY data decoded here', () => {
  test('binary, text and CSV give the rows query() gives, for many types', async () => {
    const sql = `SELECT g AS id, g::int8 * 1000000000000 AS big, g / 3.0 AS num, g % 2 = 0 AS even, CASE WHEN g % 5 = 0 THEN NULL ELSE 'row ' || g || E' ,"\\\\\\t\\n' END AS t,
                        '2024-02-29 12:00:00+00'::timestamptz + g * interval '1 minute' AS ts, ARRAY[g, NULL, -g] AS arr, jsonb_build_object('g', g) AS j, ('\\x' || lpad(to_hex(g), 8, '0'))::bytea AS by
                   FROM generate_series(1, 2000) g`
    const expected = (await db.query(sql)).rows
    for (const format of ['binary', 'text', 'csv'] as const) {
      const got: unknown[] = []
      const s = db.copyToRows(sql, { format })
      for await (const row of s) got.push(row)
      assert.deepEqual(got, expected, format)
      assert.equal(s.rowCount, 2000)
      assert.deepEqual(
        s.fields.map((f) => f.name),
        ['id', 'big', 'num', 'even', 't', 'ts', 'arr', 'j', 'by'],
      )
    }
    const arrays: unknown[] = []
    for await (const row of db.copyToRows('SELECT 1 AS a, 2::int8 AS b;', { rowMode: 'array', types: { int8: 'number' } })) arrays.push(row)
    assert.deepEqual(arrays, [[1, 2]])
  })

  test('an enum met for the first time, an early exit that cancels, and errors', serverOnly(NOT_ON_PGLITE.cancel), async () => {
    const mood = uniqueName('mood')
    await db.query(`CREATE TYPE ${mood} AS ENUM ('sad', 'happy')`)
    const c = await openClient()
    try {
      const got: unknown[] = []
      for await (const row of c.copyToRows(`SELECT 'happy'::${mood} AS m, ARRAY['sad'::${mood}] AS ms`)) got.push(row)
      assert.deepEqual(got, [{ m: 'happy', ms: ['sad'] }])
      let n = 0
      for await (const _ of c.copyToRows('SELECT generate_series(1, 100000000) AS g')) if (++n === 10) break
      assert.deepEqual((await c.query('SELECT 9 AS n')).rows, [{ n: 9 }])
      await assert.rejects(
        (async () => {
          for await (const _ of c.copyToRows('SELECT nope FROM nowhere'));
        })(),
        (e: unknown) => e instanceof PgError && e.code === '42P01',
      )
      await assert.rejects(
        (async () => {
          for await (const _ of c.copyToRows('SELECT 1', { format: 'json' as 'csv' }));
        })(),
        ArgumentError,
      )
      assert.deepEqual((await c.query('SELECT 10 AS n')).rows, [{ n: 10 }])
    } finally {
      await c.end()
    }
  })

  test('a slow consumer makes the server wait', serverOnly(NOT_ON_PGLITE.admin), async () => {
    const c = await openClient()
    try {
      const it = c.copyToRows<{ g: number }>(`SELECT g, repeat('y', 500) AS pad FROM generate_series(1, 300000) g`, { highWaterMark: 100 })[Symbol.asyncIterator]()
      assert.equal((await it.next()).value?.g, 1)
      await until('the server waits for the client to read', async () => (await waitEvent(c.processId)) === 'ClientWrite')
      let n = 1
      for (;;) {
        const r = await it.next()
        if (r.done) break
        n++
      }
      assert.equal(n, 300000)
    } finally {
      await c.end()
    }
  })
})

describe('a connection lost mid-COPY', () => {
  test('copyFrom(): the stream fails with a ConnectionError, nothing hangs', serverOnly(NOT_ON_PGLITE.admin), async () => {
    const t = await table()
    const c = await openClient()
    try {
      const s = c.copyFrom(`COPY ${t} FROM STDIN`)
      s.write(textRows(1, 100))
      await until('the COPY runs', async () => (await adminQuery(`SELECT query FROM pg_stat_activity WHERE pid = ${c.processId}`)).rows[0]?.[0] !== null)
      const failed = s.result.then(
        () => null,
        (e: unknown) => e,
      )
      await adminQuery(`SELECT pg_terminate_backend(${c.processId})`)
      const err = await failed
      assert.ok(err instanceof ConnectionError, String(err))
      assert.ok(s.destroyed)
      // Writing on afterwards gets the error, not a hang.
      await new Promise<void>((resolve) => s.write('1\tx\t1\n', () => resolve()))
    } finally {
      await c.end()
    }
    assert.equal(await count(t), 0)
  })

  test('copyFromRows() blocked by a server that stopped reading: the call rejects, it does not wait forever', serverOnly(NOT_ON_PGLITE.admin), async () => {
    const t = await table()
    const c = await openClient()
    const locker = await openClient()
    try {
      // The COPY waits for the lock (SHARE lets the describing SELECT through), so
      // the server reads no data and the socket backs up.
      await locker.query('BEGIN')
      await locker.query(`LOCK TABLE ${t} IN SHARE MODE`)
      let pulled = 0
      function* rows(): Generator<unknown[]> {
        for (let i = 0; i < 10_000_000; i++) {
          pulled++
          yield [i, 'a fairly long name to fill the socket buffers quickly', BigInt(i)]
        }
      }
      const copying = c.copyFromRows(t, rows()).then(
        () => null,
        (e: unknown) => e,
      )
      await until('the client is held back', async () => {
        const before = pulled
        await sleep(100)
        return pulled > 0 && pulled === before
      })
      await adminQuery(`SELECT pg_terminate_backend(${c.processId})`)
      const err = await copying
      assert.ok(err instanceof ConnectionError, String(err))
      assert.ok(pulled < 10_000_000)
    } finally {
      await locker.query('ROLLBACK')
      await locker.end()
      await c.end()
    }
    assert.equal(await count(t), 0)
  })

  test('copyTo() and copyToRows(): the iteration rejects with a ConnectionError', serverOnly(NOT_ON_PGLITE.admin), async () => {
    for (const rows of [false, true]) {
      const c = await openClient()
      try {
        const it = (rows ? c.copyToRows('SELECT generate_series(1, 100000000) AS g') : c.copyTo('COPY (SELECT generate_series(1, 100000000)) TO STDOUT'))[Symbol.asyncIterator]()
        await it.next()
        const failed = (async () => {
          for (;;) if ((await it.next()).done) return null
        })().catch((e: unknown) => e)
        await adminQuery(`SELECT pg_terminate_backend(${c.processId})`)
        const err = await failed
        assert.ok(err instanceof ConnectionError, `${rows ? 'copyToRows' : 'copyTo'}: ${String(err)}`)
      } finally {
        await c.end()
      }
    }
  })
})
