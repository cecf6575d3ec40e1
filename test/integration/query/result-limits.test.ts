// maxRows and maxBytes: a result that grows past them rejects with a
// ResultLimitError naming the limit and how far it got, the query is
// cancelled on the server, and the queries around it are unaffected.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { ArgumentError, PgError, ResultLimitError, createPool, type Client } from '../../../src/index.js'
import { followerOutcome } from '../../support/cancel-checks.js'
import { openClient } from '../../support/client.js'
import { getTestServer, mainDatabase } from '../../support/servers/test-server.js'

const server = await getTestServer()
let db: Client
before(async () => {
  db = await openClient()
})
after(async () => {
  await db.end()
})

/** One row a millisecond for 100 s: only a cancel on the server ends it early. */
const slowRows = 'SELECT n, pg_sleep(0.001) FROM generate_series(1, 100000) AS n'

function isLimit(limit: 'maxRows' | 'maxBytes', max: number, reached: number) {
  return (err: unknown) => {
    assert.ok(err instanceof ResultLimitError, `got ${String(err)}`)
    assert.equal(err.code, 'PG_RESULT_LIMIT')
    assert.deepEqual([err.limit, err.max, err.reached], [limit, max, reached])
    assert.match(err.message, new RegExp(`${limit} \\(${max}\\)`))
    return true
  }
}

test('past maxRows the query rejects, is cancelled on the server, and the queries around it keep their results', async () => {
  const t0 = performance.now()
  const before = db.query('SELECT 1 AS n')
  const limited = db.query(slowRows, [], { maxRows: 50 })
  const behind = Array.from({ length: 5 }, (_, i) => db.query('SELECT $1::int AS n', [i]))
  await assert.rejects(limited, isLimit('maxRows', 50, 51))
  const err = (await limited.then(() => null, (e: unknown) => e)) as ResultLimitError
  assert.ok(err.cause instanceof PgError && err.cause.code === '57014', `cancelled on the server: ${String(err.cause)}`)
  assert.ok(performance.now() - t0 < 20_000, 'stopped long before the 100 s the query would take')
  assert.deepEqual((await before).rows, [{ n: 1 }])
  ;(await Promise.allSettled(behind)).forEach((s, i) => followerOutcome(s, server.version, (r) => assert.deepEqual(r.rows, [{ n: i }])))
  assert.deepEqual((await db.query('SELECT 2 AS n')).rows, [{ n: 2 }], 'the connection stays usable')
})

test('a result of exactly maxRows rows, or of exactly maxBytes, is not cut', async () => {
  const r = await db.query('SELECT generate_series(1, 10) AS n', [], { maxRows: 10 })
  assert.equal(r.rows.length, 10)
  // Each DataRow: 2 bytes of column count, 4 of length, 100 of text.
  const b = await db.query("SELECT repeat('x', 100) AS s FROM generate_series(1, 10)", [], { maxBytes: 1060 })
  assert.equal(b.rows.length, 10)
  await assert.rejects(db.query("SELECT repeat('x', 100) AS s FROM generate_series(1, 10)", [], { maxBytes: 1059 }), isLimit('maxBytes', 1059, 1060))
})

test('maxBytes counts the row data as received', async () => {
  await assert.rejects(db.query("SELECT repeat('x', 1000) AS s FROM generate_series(1, 100000)", [], { maxBytes: 10_000 }), isLimit('maxBytes', 10_000, 10 * 1006))
  assert.deepEqual((await db.query('SELECT 3 AS n')).rows, [{ n: 3 }])
})

test('a stream gives the rows up to the limit, then rejects', async () => {
  const got: unknown[] = []
  await assert.rejects(async () => {
    for await (const row of db.stream(slowRows, [], { maxRows: 20, highWaterMark: 5 })) got.push(row)
  }, isLimit('maxRows', 20, 21))
  assert.equal(got.length, 20)
  assert.deepEqual((await db.query('SELECT 4 AS n')).rows, [{ n: 4 }])
})

test('a cursor counts its rows across batches', async () => {
  const batches: number[] = []
  await assert.rejects(async () => {
    for await (const rows of db.cursor('SELECT generate_series(1, 1000) AS n', [], { batchSize: 10, maxRows: 25 })) batches.push(rows.length)
  }, isLimit('maxRows', 25, 26))
  assert.deepEqual(batches, [10, 10])
  assert.deepEqual((await db.query('SELECT 5 AS n')).rows, [{ n: 5 }])
})

test('limits that are not positive whole numbers are refused by name', async () => {
  for (const bad of [0, -1, 1.5, '10', Number.NaN, Infinity]) {
    await assert.rejects(db.query('SELECT 1', [], { maxRows: bad as number }), (e: unknown) => e instanceof ArgumentError && /maxRows must be a positive whole number/.test(e.message))
    await assert.rejects(db.query('SELECT 1', [], { maxBytes: bad as number }), (e: unknown) => e instanceof ArgumentError && /maxBytes/.test(e.message))
  }
})

test('a client or pool sets limits for every query; a query sets its own over them', async () => {
  const limited = await openClient({ maxRows: 5 })
  const pool = createPool({ ...(await mainDatabase()).options, max: 2, maxBytes: 2000 })
  try {
    await assert.rejects(limited.query('SELECT generate_series(1, 6)'), isLimit('maxRows', 5, 6))
    assert.equal((await limited.query('SELECT generate_series(1, 6)', [], { maxRows: 6 })).rows.length, 6)
    // A transaction's queries take the client's limits.
    await assert.rejects(limited.begin((tx) => tx.query('SELECT generate_series(1, 10)')), isLimit('maxRows', 5, 6))
    assert.equal((await limited.query('SELECT generate_series(1, 5)')).rows.length, 5)
    await assert.rejects(pool.query("SELECT repeat('x', 500) FROM generate_series(1, 10)"), (e: unknown) => e instanceof ResultLimitError && e.limit === 'maxBytes')
    assert.equal((await pool.query("SELECT repeat('x', 500) FROM generate_series(1, 10)", [], { maxBytes: 100_000 })).rows.length, 10)
    assert.throws(() => createPool({ maxRows: 0 }), (e: unknown) => e instanceof ArgumentError && /maxRows/.test(e.message))
  } finally {
    await limited.end()
    await pool.end()
  }
})
