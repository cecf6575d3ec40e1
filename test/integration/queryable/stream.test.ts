// stream(): rows handed over as they arrive, with backpressure that reaches the
// server, early exit that cancels, errors mid-result, and the pipeline around
// a stream staying in order.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { AbortError, ArgumentError, ConnectionError, PgError, TimeoutError, createPool } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'
import { RetainedPeak } from '../../support/memory.js'

const db = await fileClient()

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** What the server process of `pid` is doing, as pg_stat_activity shows it. */
async function activity(pid: number): Promise<{ state: string; waitEvent: string | null }> {
  const r = await adminQuery(`SELECT state, wait_event FROM pg_stat_activity WHERE pid = ${pid}`)
  const row = r.rows[0]
  if (row === undefined) return { state: 'gone', waitEvent: null }
  return { state: String(row[0]), waitEvent: row[1] === null ? null : String(row[1]) }
}

async function until(what: string, check: () => Promise<boolean>, ms = 3000): Promise<void> {
  const end = performance.now() + ms
  while (performance.now() < end) {
    if (await check()) return
    await sleep(10)
  }
  assert.fail(`timed out waiting until ${what}`)
}

describe('rows', () => {
  test('every row, in order, decoded as query() decodes it; fields, command and rowCount at the end', async () => {
    const sql = `SELECT g AS n, g::int8 AS big, md5(g::text) AS h, '2024-02-29 12:34:56.789+00'::timestamptz - (g || ' days')::interval AS t, ARRAY[g, g + 1] AS a, NULL::text AS nothing
                   FROM generate_series(1, $1::int) g`
    const expected = (await db.query(sql, [5000])).rows
    const s = db.stream(sql, [5000])
    const got: unknown[] = []
    for await (const row of s) got.push(row)
    assert.equal(got.length, 5000)
    assert.deepEqual(got, expected)
    assert.deepEqual(
      s.fields.map((f) => f.name),
      ['n', 'big', 'h', 't', 'a', 'nothing'],
    )
    assert.equal(s.command, 'SELECT')
    assert.equal(s.rowCount, 5000)
  })

  test('rowMode array, per-query type options, and an empty result', async () => {
    const rows: unknown[][] = []
    for await (const r of db.stream<unknown[]>('SELECT g, g::int8 FROM generate_series(1, 3) g', [], { rowMode: 'array', types: { int8: 'string' } })) rows.push(r)
    assert.deepEqual(rows, [
      [1, '1'],
      [2, '2'],
      [3, '3'],
    ])
    const empty = db.stream('SELECT 1 WHERE false')
    for await (const _ of empty) assert.fail('no rows expected')
    assert.equal(empty.rowCount, 0)
  })

  test('a statement without rows, and one run with prepare: false', async () => {
    const t = uniqueName('stream_cmd')
    await db.query(`CREATE TEMP TABLE ${t} (a int)`)
    const s = db.stream(`INSERT INTO ${t} SELECT generate_series(1, 10)`)
    for await (const _ of s) assert.fail('no rows expected')
    assert.equal(s.command, 'INSERT')
    assert.equal(s.rowCount, 10)
    let n = 0
    for await (const r of db.stream<{ a: number }>(`SELECT a FROM ${t} ORDER BY a`, [], { prepare: false })) assert.equal(r.a, ++n)
    assert.equal(n, 10)
  })

  test('a type met for the first time is looked up before the rows come, so none is held back', async () => {
    const type = uniqueName('mood')
    await db.query(`CREATE TYPE ${type} AS ENUM ('sad', 'ok', 'happy')`)
    try {
      const c = await openClient()
      try {
        const got: unknown[] = []
        for await (const r of c.stream<{ m: string }>(`SELECT (ARRAY['sad','ok','happy']::${type}[])[1 + g % 3] AS m, ARRAY['ok']::${type}[] AS arr FROM generate_series(0, 5) g`)) got.push(r)
        assert.deepEqual(got[0], { m: 'sad', arr: ['ok'] })
        assert.equal(got.length, 6)
      } finally {
        await c.end()
      }
    } finally {
      await db.query(`DROP TYPE ${type}`)
    }
  })
})

describe('backpressure', () => {
  test('a consumer that stops reading holds the server back (it waits to write), with few rows buffered', async () => {
    const c = await openClient()
    try {
      const s = c.stream<{ g: number; pad: string }>(`SELECT g, repeat('x', 200) AS pad FROM (SELECT generate_series(1, 2000000) AS g) s`, [], { highWaterMark: 100 })
      const it = s[Symbol.asyncIterator]()
      assert.equal((await it.next()).value?.g, 1)
      // Not reading: the server must end up blocked writing to the socket.
      await until('the server waits on the client', async () => (await activity(c.processId)).waitEvent === 'ClientWrite')
      const held = new RetainedPeak(20_000)
      await sleep(200)
      assert.equal((await activity(c.processId)).waitEvent, 'ClientWrite')
      // Reading again: rows keep coming, in order.
      let expected = 2
      for (;;) {
        const r = await it.next()
        if (r.done === true) break
        assert.equal(r.value.g, expected++)
        held.sample()
        if (expected === 300000) break
      }
      await it.return!()
      // 300,000 rows of 200 bytes pass through (60 MB as strings); the stream holds about highWaterMark of them.
      held.measure()
      assert.ok(held.peakGrowth < 24 * 2 ** 20, `held ${held.mib()} more while the rows flowed`)
      assert.deepEqual((await c.query('SELECT 7 AS seven')).rows, [{ seven: 7 }])
    } finally {
      await c.end()
    }
  })

  test('leaving the loop early cancels the query; the connection serves the next query at once', async () => {
    const c = await openClient()
    try {
      let n = 0
      const t0 = performance.now()
      for await (const _ of c.stream('SELECT generate_series(1, 100000000) AS g')) if (++n === 10) break
      const r = await c.query<{ one: number }>('SELECT 1 AS one')
      assert.deepEqual(r.rows, [{ one: 1 }])
      assert.ok(performance.now() - t0 < 5000, 'did not read the hundred million rows')
      await until('the backend is idle', async () => (await activity(c.processId)).state === 'idle')
    } finally {
      await c.end()
    }
  })

  test('a stream that is never iterated sends nothing and blocks nothing', async () => {
    const s = db.stream('SELECT pg_sleep(100)')
    assert.deepEqual((await db.query('SELECT 3 AS three')).rows, [{ three: 3 }])
    await s.return()
    for await (const _ of s) assert.fail('a closed stream yields nothing')
  })
})

describe('failures', () => {
  test('an error in the middle of the rows ends the loop with the PgError; the connection stays usable', async () => {
    const got: number[] = []
    await assert.rejects(
      (async () => {
        for await (const r of db.stream<{ v: number }>('SELECT 10000 / (5000 - g) AS v FROM generate_series(1, 10000) g')) got.push(r.v)
      })(),
      (e: unknown) => e instanceof PgError && e.code === '22012',
    )
    assert.ok(got.length < 5000)
    assert.deepEqual((await db.query('SELECT 2 AS two')).rows, [{ two: 2 }])
  })

  test('bad arguments surface on the first next(), as an ArgumentError', async () => {
    await assert.rejects(db.stream('SELECT 1', [], { highWaterMark: 0 }).next(), ArgumentError)
    await assert.rejects(db.stream(42 as unknown as string).next(), ArgumentError)
    await assert.rejects(db.stream('SELECT $1::int', [1, 2]).next(), /1 parameter but 2 values/)
  })

  test('a signal aborts the stream while rows are coming; a timeout too', async () => {
    const ac = new AbortController()
    let n = 0
    await assert.rejects(
      (async () => {
        for await (const _ of db.stream('SELECT generate_series(1, 100000000) AS g', [], { signal: ac.signal })) {
          if (++n === 100) ac.abort()
        }
      })(),
      AbortError,
    )
    await assert.rejects(
      (async () => {
        for await (const _ of db.stream('SELECT pg_sleep(5)', [], { timeout: 50 })) assert.fail('no row expected')
      })(),
      TimeoutError,
    )
    assert.deepEqual((await db.query('SELECT 4 AS four')).rows, [{ four: 4 }])
  })

  test('losing the connection mid-stream ends the loop with a ConnectionError', async () => {
    const c = await openClient()
    try {
      let n = 0
      await assert.rejects(
        (async () => {
          for await (const _ of c.stream('SELECT generate_series(1, 100000000) AS g', [], { highWaterMark: 10 })) {
            if (++n === 5) await adminQuery(`SELECT pg_terminate_backend(${c.processId})`)
          }
        })(),
        ConnectionError,
      )
    } finally {
      await c.end()
    }
  })
})

describe('in a pipeline', () => {
  test('queries before and after a stream get their own results, in order', async () => {
    const before = db.query<{ n: number }>('SELECT 1 AS n')
    const s = db.stream<{ g: number }>('SELECT g FROM generate_series(1, 20000) g')
    const it = s[Symbol.asyncIterator]()
    const first = await it.next()
    const afterQ = db.query<{ n: number }>('SELECT 2 AS n')
    let n = first.value!.g
    for (;;) {
      const r = await it.next()
      if (r.done === true) break
      n = r.value.g
    }
    assert.equal(n, 20000)
    assert.deepEqual((await before).rows, [{ n: 1 }])
    assert.deepEqual((await afterQ).rows, [{ n: 2 }])
  })

  test('in a transaction and on a pool', async () => {
    const sum = await db.begin(async (tx) => {
      let total = 0
      for await (const r of tx.stream<{ g: number }>('SELECT g FROM generate_series(1, 100) g')) total += r.g
      return total
    })
    assert.equal(sum, 5050)
    const { options } = await mainDatabase()
    const pool = createPool({ ...options, max: 2 })
    try {
      let total = 0
      for await (const r of pool.stream<{ g: number }>('SELECT g FROM generate_series(1, 100) g')) total += r.g
      assert.equal(total, 5050)
    } finally {
      await pool.end()
    }
  })
})
