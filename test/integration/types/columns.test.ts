// rowMode 'columns': a result as one array per column, typed arrays for
// fixed-width types, built straight from the DataRow bytes.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { ArgumentError, type Client } from '../../../src/index.js'
import { openClient, uniqueName } from '../../support/client.js'

let db: Client
before(async () => {
  db = await openClient()
})
after(async () => {
  await db.end()
})

const isNull = (bitmap: Uint8Array | null | undefined, row: number) => bitmap != null && (bitmap[row >> 3]! & (1 << (row & 7))) !== 0

test('fixed-width columns are typed arrays, equal to what object rows give; other columns plain arrays', async () => {
  const sql = `SELECT g::int2 AS i2, g * 100000 AS i4, g::int8 * 10000000000 AS i8, (g / 4.0)::float4 AS f4, g / 3.0::float8 AS f8,
                      g % 2 = 0 AS b, '2024-02-28'::date + g AS d, '2024-01-01 00:00:00.123456+00'::timestamptz + g * interval '1 hour' AS ts,
                      'x' || g AS t, (g * 1.5)::numeric AS n
                 FROM generate_series(1, 300) AS g`
  for (let run = 0; run < 2; run++) {
    // The first run prepares the statement, the second binds the cached one.
    const c = await db.query(sql, [], { rowMode: 'columns' })
    const { rows } = await db.query<Record<string, unknown>>(sql)
    assert.deepEqual(c.rows, [])
    assert.equal(c.rowCount, 300)
    const cols = c.columns!
    assert.ok(cols.i2 instanceof Int16Array && cols.i4 instanceof Int32Array && cols.i8 instanceof BigInt64Array)
    assert.ok(cols.f4 instanceof Float32Array && cols.f8 instanceof Float64Array && cols.b instanceof Uint8Array)
    assert.ok(cols.d instanceof Float64Array && cols.ts instanceof Float64Array)
    assert.ok(Array.isArray(cols.t) && Array.isArray(cols.n))
    for (const [name, values] of Object.entries(cols)) assert.equal(values.length, 300, name)
    rows.forEach((r, i) => {
      assert.equal(cols.i2![i], r.i2)
      assert.equal(cols.i4![i], r.i4)
      assert.equal(cols.i8![i], r.i8)
      assert.equal(cols.f4![i], Math.fround(r.f4 as number))
      assert.equal(cols.f8![i], r.f8)
      assert.equal(cols.b![i], r.b ? 1 : 0)
      assert.equal(cols.d![i], Date.parse(`${r.d as string}T00:00:00Z`))
      assert.equal(cols.ts![i], (r.ts as Date).getTime() + 0.456)
      assert.equal(cols.t![i], r.t)
      assert.equal(cols.n![i], r.n)
    })
    assert.ok(Object.values(c.nulls!).every((b) => b === null), 'no NULLs, no bitmaps')
  }
})

test('NULLs: a bitmap per typed column (slot 0, NaN for floats and dates), null in plain columns', async () => {
  const c = await db.query(
    `SELECT CASE WHEN g % 3 = 0 THEN NULL ELSE g END AS i, CASE WHEN g % 2 = 0 THEN NULL ELSE g::float8 END AS f,
            CASE WHEN g = 5 THEN NULL ELSE 'v' || g END AS s, NULL::date AS d
       FROM generate_series(0, 99) AS g`,
    [],
    { rowMode: 'columns' },
  )
  const { i, f, s, d } = c.columns!
  for (let g = 0; g < 100; g++) {
    assert.equal(isNull(c.nulls!.i, g), g % 3 === 0, `i ${g}`)
    assert.equal((i as Int32Array)[g], g % 3 === 0 ? 0 : g)
    assert.equal(isNull(c.nulls!.f, g), g % 2 === 0, `f ${g}`)
    assert.ok(g % 2 === 0 ? Number.isNaN((f as Float64Array)[g]) : (f as Float64Array)[g] === g)
    assert.equal(s![g], g === 5 ? null : `v${g}`)
    assert.ok(isNull(c.nulls!.d, g) && Number.isNaN((d as Float64Array)[g]))
  }
  assert.equal(c.nulls!.s, null)
})

test('infinite dates and timestamps, an empty result, and hostile column names', async () => {
  const inf = await db.query(`SELECT 'infinity'::date AS d, '-infinity'::timestamptz AS t`, [], { rowMode: 'columns' })
  assert.deepEqual([inf.columns!.d![0], inf.columns!.t![0]], [Infinity, -Infinity])
  const none = await db.query('SELECT 1::int4 AS a, 2::text AS b WHERE false', [], { rowMode: 'columns' })
  assert.ok(none.columns!.a instanceof Int32Array && none.columns!.a.length === 0)
  assert.deepEqual(none.columns!.b, [])
  const hostile = await db.query('SELECT 1 AS "__proto__", 2 AS "constructor"', [], { rowMode: 'columns' })
  assert.equal(Object.getPrototypeOf(hostile.columns), Object.prototype)
  assert.deepEqual(Object.keys(hostile.columns!), ['__proto__', 'constructor'])
  assert.deepEqual([...(hostile.columns!['__proto__'] as Int32Array)], [1])
})

test('with prepare: false, with a type seen for the first time, and pipelined between object queries', async () => {
  const type = uniqueName('level')
  await db.query(`CREATE TYPE ${type} AS ENUM ('low', 'high')`)
  try {
    const [a, c, b] = await Promise.all([
      db.query('SELECT 1 AS n'),
      db.query(`SELECT g AS n, (CASE WHEN g > 1 THEN 'high' ELSE 'low' END)::${type} AS lvl FROM generate_series(1, 3) g`, [], { rowMode: 'columns', prepare: false }),
      db.query('SELECT 2 AS n'),
    ])
    assert.deepEqual([a.rows, b.rows], [[{ n: 1 }], [{ n: 2 }]])
    assert.deepEqual([...(c.columns!.n as Int32Array)], [1, 2, 3])
    assert.deepEqual(c.columns!.lvl, ['low', 'high', 'high'])
  } finally {
    await db.query(`DROP TYPE ${type}`)
  }
})

test('a stream of an unnamed statement whose types are looked up first still binds its own statement', async () => {
  // The lookup, sent ahead while the stream's statement waits to be bound, is an unnamed Parse too.
  const type = uniqueName('shade')
  await db.query(`CREATE TYPE ${type} AS ENUM ('dark', 'light')`)
  try {
    const got: unknown[] = []
    for await (const row of db.stream(`SELECT $1::int AS n, 'light'::${type} AS s`, [7], { prepare: false })) got.push(row)
    assert.deepEqual(got, [{ n: 7, s: 'light' }])
  } finally {
    await db.query(`DROP TYPE ${type}`)
  }
})

test("'columns' is for query() only; limits apply to it too", async () => {
  await assert.rejects(db.stream('SELECT 1', [], { rowMode: 'columns' as never }).next(), (e: unknown) => e instanceof ArgumentError && /query\(\) only/.test(e.message))
  await assert.rejects(db.simpleQuery('SELECT 1', { rowMode: 'columns' as never }), ArgumentError)
  await assert.rejects(db.query('SELECT generate_series(1, 100)', [], { rowMode: 'columns', maxRows: 10 }), /maxRows/)
})
