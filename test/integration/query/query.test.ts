// test-tags: matrix, pglite
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fragment, identifier, PgError, ArgumentError, ParameterError } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'
import { NOT_ON_PGLITE, serverOnly } from '../../support/target.js'

const table = uniqueName('q')
const db = await fileClient({ setup: `CREATE TABLE ${table} (id int PRIMARY KEY, name text, score float8)`, cleanup: `DROP TABLE IF EXISTS ${table}` })

test('query returns rows, rowCount, command and fields', async () => {
  const r = await db.query('SELECT 1::int AS a, $1::text AS b', ['x'])
  assert.deepEqual(r.rows, [{ a: 1, b: 'x' }])
  assert.equal(r.rowCount, 1)
  assert.equal(r.command, 'SELECT')
  assert.deepEqual(
    r.fields.map((f) => [f.name, f.typeOid, f.format]),
    [['a', 23, 0], ['b', 25, 0]],
  )
})

test('fields carry the table OID and column number of table columns', async () => {
  await db.query(`INSERT INTO ${table} VALUES (100, 'f', 1) ON CONFLICT DO NOTHING`)
  const r = await db.query(`SELECT name, id FROM ${table} WHERE id = 100`)
  const oid = (await db.query<{ oid: number }>(`SELECT '${table}'::regclass::oid AS oid`)).rows[0]!.oid
  assert.deepEqual(r.fields.map((f) => [f.name, f.tableOid, f.columnNumber]), [['name', oid, 2], ['id', oid, 1]])
})

test('rowMode array returns arrays in column order, including duplicate names', async () => {
  const r = await db.query('SELECT 1 AS a, 2 AS b, 3 AS a', [], { rowMode: 'array' })
  assert.deepEqual(r.rows, [[1, 2, 3]])
  const o = await db.query('SELECT 1 AS a, 2 AS b, 3 AS a')
  assert.deepEqual(o.rows, [{ a: 3, b: 2 }])
})

test('a client-wide rowMode applies unless a query overrides it', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
  const c = await openClient({ rowMode: 'array' })
  try {
    assert.deepEqual((await c.query('SELECT 1 AS a')).rows, [[1]])
    assert.deepEqual((await c.query('SELECT 1 AS a', [], { rowMode: 'object' })).rows, [{ a: 1 }])
  } finally {
    await c.end()
  }
})

test('command and rowCount for every kind of command', async () => {
  const t = uniqueName('cmd')
  const major = Number.parseInt(db.serverParameters.server_version ?? '0', 10)
  const merge = `MERGE INTO ${t} USING (VALUES (3)) v(x) ON ${t}.a = v.x WHEN MATCHED THEN DELETE`
  const cases: [string, string, number | null][] = [
    [`CREATE TABLE ${t} (a int)`, 'CREATE TABLE', null],
    [`INSERT INTO ${t} VALUES (1), (2), (3)`, 'INSERT', 3],
    [`UPDATE ${t} SET a = a + 1 WHERE a > 1`, 'UPDATE', 2],
    [`SELECT * FROM ${t}`, 'SELECT', 3],
    [`DELETE FROM ${t} WHERE a = 1`, 'DELETE', 1],
    [`CREATE TABLE ${t}_2 AS SELECT * FROM ${t}`, 'SELECT', 2],
    // MERGE came with PostgreSQL 15: before it, the same row goes with a DELETE, and MERGE is a syntax error (below).
    major >= 15 ? [merge, 'MERGE', 1] : [`DELETE FROM ${t} WHERE a = 3`, 'DELETE', 1],
    [`COPY (SELECT 1) TO '/dev/null'`, 'COPY', 1],
    [`ALTER TABLE ${t} ADD COLUMN b text`, 'ALTER TABLE', null],
    [`CREATE INDEX ON ${t} (a)`, 'CREATE INDEX', null],
    [`DROP TABLE ${t}, ${t}_2`, 'DROP TABLE', null],
    ['SET search_path = public', 'SET', null],
    ['DO $$ BEGIN END $$', 'DO', null],
    ['SHOW search_path', 'SHOW', null],
    ['VALUES (1), (2)', 'SELECT', 2],
    ['BEGIN', 'BEGIN', null],
    ['DECLARE c CURSOR FOR SELECT generate_series(1, 10)', 'DECLARE CURSOR', null],
    ['FETCH 3 FROM c', 'FETCH', 3],
    ['MOVE 4 IN c', 'MOVE', 4],
    ['COMMIT', 'COMMIT', null],
  ]
  for (const [sql, command, rowCount] of cases) {
    const r = await db.query(sql)
    assert.equal(r.command, command, sql)
    assert.equal(r.rowCount, rowCount, sql)
  }
  if (major < 15) await assert.rejects(db.query(merge), (e: unknown) => e instanceof PgError && e.code === '42601', `PostgreSQL ${major} has no MERGE`)
})

test('an empty query string gives an empty result', async () => {
  const r = await db.query('')
  assert.deepEqual({ rows: r.rows, command: r.command, rowCount: r.rowCount }, { rows: [], command: '', rowCount: null })
  const s = await db.simpleQuery('')
  assert.deepEqual(s.map((x) => x.command), [''])
})

test('simpleQuery runs several statements and returns one result each', async () => {
  const t = uniqueName('sq')
  const results = await db.simpleQuery(`CREATE TEMP TABLE ${t} (a int); INSERT INTO ${t} VALUES (1), (2); SELECT a FROM ${t} ORDER BY a; SELECT 'x' AS y`)
  assert.deepEqual(results.map((r) => [r.command, r.rowCount]), [['CREATE TABLE', null], ['INSERT', 2], ['SELECT', 2], ['SELECT', 1]])
  assert.deepEqual(results[2]!.rows, [{ a: 1 }, { a: 2 }])
  assert.deepEqual(results[3]!.rows, [{ y: 'x' }])
  assert.deepEqual(results[2]!.fields.map((f) => f.name), ['a'])
})

test('simpleQuery rejects with the first error and runs nothing after it', async () => {
  const t = uniqueName('sqe')
  await db.simpleQuery(`CREATE TABLE ${t} (a int)`)
  try {
    await assert.rejects(db.simpleQuery(`INSERT INTO ${t} VALUES (1); SELECT 1/0; INSERT INTO ${t} VALUES (2)`), (e: unknown) => e instanceof PgError && e.code === '22012')
    // The string ran as one implicit transaction, so the first INSERT was rolled back too.
    assert.deepEqual((await db.query(`SELECT count(*)::int AS n FROM ${t}`)).rows, [{ n: 0 }])
  } finally {
    await db.query(`DROP TABLE ${t}`)
  }
})

test('simpleQuery rowMode array', async () => {
  const [r] = await db.simpleQuery('SELECT 1 AS a, 2 AS b', { rowMode: 'array' })
  assert.deepEqual(r!.rows, [[1, 2]])
})

test('sql tagged template sends every value as a parameter', async () => {
  const name = "Robert'); DROP TABLE students;--"
  const { rows } = await db.sql`SELECT ${name}::text AS name, ${42}::int AS n, ${null}::text AS nothing`
  assert.deepEqual(rows, [{ name, n: 42, nothing: null }])
})

test('sql works detached from the client', async () => {
  const { sql } = db
  assert.deepEqual((await sql`SELECT ${1}::int AS one`).rows, [{ one: 1 }])
})

test('sql composes fragments (renumbering their parameters) and quoted identifiers', async () => {
  await db.query(`INSERT INTO ${table} VALUES (1, 'a', 1.5), (2, 'b', 2.5), (3, 'c', 3.5) ON CONFLICT DO NOTHING`)
  const cond = fragment`id >= ${2} AND name <> ${'z'}`
  const { rows } = await db.sql`SELECT ${identifier('name')} FROM ${identifier('public', table)} WHERE ${cond} AND score < ${3} AND id < ${100} ORDER BY id`
  assert.deepEqual(rows, [{ name: 'b' }])
})

test('identifier quotes hostile names', async () => {
  const r = await db.sql`SELECT 1 AS ${identifier('we"ird; DROP')}`
  assert.deepEqual(Object.keys(r.rows[0]!), ['we"ird; DROP'])
})

test('sql called as a plain function is an ArgumentError', async () => {
  await assert.rejects((db.sql as unknown as (s: string) => Promise<unknown>)('SELECT 1'), ArgumentError)
})

test('hostile column names come back as plain data', async () => {
  const evil = "'); process.exit(7); ('"
  const r = await db.query(`SELECT 1 AS "${evil.replace(/"/g, '""')}", 2 AS "__proto__", 3 AS "constructor", 4 AS "toString", 5 AS "hasOwnProperty"`)
  const row = r.rows[0]!
  assert.equal(row[evil], 1)
  assert.equal(Object.getPrototypeOf(row), Object.prototype, 'the prototype was not replaced')
  assert.ok(Object.prototype.hasOwnProperty.call(row, '__proto__'))
  assert.equal(Object.getOwnPropertyDescriptor(row, '__proto__')!.value, 2)
  assert.equal(row.constructor, 3)
  assert.equal(row.toString, 4)
  assert.deepEqual(Object.keys(row), [evil, '__proto__', 'constructor', 'toString', 'hasOwnProperty'])
  assert.equal(({} as Record<string, unknown>).polluted, undefined)
  const arr = await db.query('SELECT 2 AS "__proto__"', [], { rowMode: 'array' })
  assert.deepEqual(arr.rows, [[2]])
})

test('values: integers, floats, bool, text, json, bytea, timestamps and NULL', async () => {
  const { rows } = await db.query(
    `SELECT 32767::int2 AS i2, (-2147483648)::int4 AS i4, 9223372036854775807::int8 AS i8, 1.5::float4 AS f4,
            'NaN'::float8 AS nan, '-Infinity'::float8 AS ninf, true AS t, false AS f, 'é😀'::text AS s,
            '{"a":[1,null]}'::json AS j, '{"b":2}'::jsonb AS jb, '\\xdeadbeef'::bytea AS by,
            '2024-02-29 12:34:56.789+00'::timestamptz AS tz, '2024-02-29 12:34:56.789'::timestamp AS ts,
            '2024-02-29'::date AS d, 12.345::numeric AS num, NULL::int AS nul`,
  )
  const r = rows[0]!
  assert.equal(r.i2, 32767)
  assert.equal(r.i4, -2147483648)
  assert.equal(r.i8, 9223372036854775807n)
  assert.equal(r.f4, 1.5)
  assert.ok(Number.isNaN(r.nan))
  assert.equal(r.ninf, -Infinity)
  assert.equal(r.t, true)
  assert.equal(r.f, false)
  assert.equal(r.s, 'é😀')
  assert.deepEqual(r.j, { a: [1, null] })
  assert.deepEqual(r.jb, { b: 2 })
  assert.deepEqual(r.by, Buffer.from('deadbeef', 'hex'))
  assert.equal((r.tz as Date).toISOString(), '2024-02-29T12:34:56.789Z')
  assert.equal((r.ts as Date).toISOString(), '2024-02-29T12:34:56.789Z')
  assert.equal(r.d, '2024-02-29')
  assert.equal(r.num, '12.345')
  assert.equal(r.nul, null)
})

test('parameters of every basic JS type reach the server as the right value', async () => {
  const when = new Date('2001-02-03T04:05:06.789Z')
  const bytes = Buffer.from([0, 1, 254, 255])
  const { rows } = await db.query(
    'SELECT $1::int AS a, $2::float8 AS b, $3::bool AS c, $4::text AS d, $5::int8 AS e, $6::timestamptz AS f, $7::bytea AS g, $8::jsonb AS h, $9::int[] AS i, $10::text AS j, $11::text[] AS k',
    [7, 2.25, true, 'str', 2n ** 62n, when, bytes, { x: [1, 'y'] }, [1, 2, null], undefined, ['a"b', 'c\\d', null, 'NULL']],
  )
  const r = rows[0]!
  assert.equal(r.a, 7)
  assert.equal(r.b, 2.25)
  assert.equal(r.c, true)
  assert.equal(r.d, 'str')
  assert.equal(r.e, 2n ** 62n)
  assert.equal((r.f as Date).getTime(), when.getTime())
  assert.deepEqual(r.g, bytes)
  assert.deepEqual(r.h, { x: [1, 'y'] })
  assert.deepEqual(r.i, [1, 2, null])
  assert.equal(r.j, null)
  assert.deepEqual(r.k, ['a"b', 'c\\d', null, 'NULL'])
})

test('a parameter that cannot be encoded rejects that query only, naming $n', async () => {
  const bad = db.query('SELECT $1::text AS a, $2::text AS b', ['ok', Symbol('x')])
  const good = db.query('SELECT 1 AS one')
  await assert.rejects(bad, (e: unknown) => e instanceof ParameterError && e.index === 2 && /\$2/.test(e.message))
  assert.deepEqual((await good).rows, [{ one: 1 }])
  await assert.rejects(db.query('SELECT $1::timestamptz', [new Date(NaN)]), (e: unknown) => e instanceof ParameterError && /invalid Date/.test(e.message))
})

test('wrong parameter count: from the server the first time, from the client once described', async () => {
  const text = 'SELECT $1::int + $2::int AS s'
  await assert.rejects(db.query(text, [1]), (e: unknown) => e instanceof PgError && e.code === '08P01')
  assert.deepEqual((await db.query(text, [1, 2])).rows, [{ s: 3 }])
  await assert.rejects(db.query(text, [1]), (e: unknown) => e instanceof ArgumentError && /2 parameters but 1 value was given/.test(e.message))
})

test('invalid arguments are rejected clearly', async () => {
  await assert.rejects(db.query(42 as unknown as string), ArgumentError)
  await assert.rejects(db.query('SELECT 1', 'x' as unknown as unknown[]), ArgumentError)
  await assert.rejects(db.query('SELECT 1', [], { rowMode: 'rows' as 'array' }), ArgumentError)
  await assert.rejects(db.query('SELECT \0'), (e: unknown) => e instanceof ArgumentError && /NUL/.test(e.message))
  await assert.rejects(db.simpleQuery('SELECT \0'), ArgumentError)
  assert.deepEqual((await db.query('SELECT 1 AS ok')).rows, [{ ok: 1 }])
})

test('a NUL byte or a lone surrogate in a text parameter is refused before sending, and the connection stays usable', async () => {
  for (let i = 0; i < 2; i++) {
    // The first execution sends untyped text, the second binary: both refuse.
    await assert.rejects(db.query('SELECT $1::text AS t', ['a\0b']), (e: unknown) => e instanceof ParameterError && e.index === 1 && /NUL/.test(e.message))
    await assert.rejects(db.query('SELECT $1::text AS t', ['\ud800']), (e: unknown) => e instanceof ParameterError && /Unicode/.test(e.message))
    await db.query('SELECT $1::text AS t', ['fine'])
  }
  assert.deepEqual((await db.query('SELECT 2 AS ok')).rows, [{ ok: 2 }])
})
