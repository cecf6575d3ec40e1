// test-tags: matrix
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ParameterError, PgError, typed, Range } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'

// Types the client does not know in advance: learned from pg_type the first
// time a query meets them (enums, composites, domains, ranges, arrays of them,
// table row types), registered by the application (hstore), or unknown (then
// text). And the ways to steer encoding: typed(), describe-first for values that
// need their type, per-query type options.

const s = uniqueName('cat')
const db = await fileClient({
  setup: `
    CREATE SCHEMA ${s};
    CREATE TYPE ${s}.mood AS ENUM ('sad', 'ok', 'happy');
    CREATE TYPE ${s}.pair AS (a int4, b text);
    CREATE TYPE ${s}.nested AS (p ${s}.pair, moods ${s}.mood[], at timestamptz);
    CREATE DOMAIN ${s}.posint AS int4 CHECK (VALUE > 0);
    CREATE TYPE ${s}.floatrange AS RANGE (subtype = float8);
    CREATE TABLE ${s}.people (id ${s}.posint PRIMARY KEY, name text, mood ${s}.mood, tags text[]);
    INSERT INTO ${s}.people VALUES (1, 'ann', 'happy', '{a,b}'), (2, 'bob', 'sad', '{}');
    CREATE EXTENSION IF NOT EXISTS hstore;
  `,
  cleanup: `DROP SCHEMA ${s} CASCADE`,
})
const major = Number.parseInt(db.serverParameters.server_version ?? '0', 10)

/** Runs a query twice on a fresh client: the first execution comes back in text, the second in binary where possible. */
async function twice<T = Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<[T[], T[]]> {
  const c = await openClient()
  try {
    const a = await c.query<T>(sql, values)
    const b = await c.query<T>(sql, values)
    return [a.rows, b.rows]
  } finally {
    await c.end()
  }
}

test('enums come back as their labels, alone and in arrays, the same in text and binary', async () => {
  const [first, second] = await twice(`SELECT 'ok'::${s}.mood AS m, ARRAY['sad','happy']::${s}.mood[] AS ms, NULL::${s}.mood AS n`)
  assert.deepEqual(first, [{ m: 'ok', ms: ['sad', 'happy'], n: null }])
  assert.deepEqual(second, first)
})

test('composites come back as objects, nested ones too', async () => {
  const sql = `SELECT ROW(1, 'x')::${s}.pair AS p, ROW(ROW(2, NULL), ARRAY['ok']::${s}.mood[], '2024-01-02T03:04:05Z')::${s}.nested AS n`
  const [first, second] = await twice(sql)
  assert.deepEqual(first, [{ p: { a: 1, b: 'x' }, n: { p: { a: 2, b: null }, moods: ['ok'], at: new Date('2024-01-02T03:04:05Z') } }])
  assert.deepEqual(second, first)
})

test('table rows and domains', async () => {
  const [first, second] = await twice(`SELECT p AS person, p.id FROM ${s}.people p ORDER BY p.id`)
  assert.deepEqual(first, [
    { person: { id: 1, name: 'ann', mood: 'happy', tags: ['a', 'b'] }, id: 1 },
    { person: { id: 2, name: 'bob', mood: 'sad', tags: [] }, id: 2 },
  ])
  assert.deepEqual(second, first)
})

test('ranges and multiranges over a user subtype', async () => {
  const multirange = `${s}.floatmultirange(${s}.floatrange(1, 2), ${s}.floatrange(3, 4))`
  const [first, second] = await twice(`SELECT ${s}.floatrange(1.5, 2.5) AS r${major >= 14 ? `, ${multirange} AS m` : ''}`)
  const r = first[0]!.r as Range<number>
  assert.ok(r instanceof Range)
  assert.deepEqual([r.lower, r.upper, r.lowerInclusive, r.upperInclusive], [1.5, 2.5, true, false])
  if (major >= 14) assert.equal((first[0]!.m as Range<number>[]).length, 2)
  // Multiranges came with PostgreSQL 14: before it a range type has no multirange type nor constructor.
  else await assert.rejects(twice(`SELECT ${multirange}`), (e: unknown) => e instanceof PgError && e.code === '42883', `PostgreSQL ${major} has no multiranges`)
  assert.deepEqual(second, first)
})

test('parameters of learned types: enum, composite, domain, array of enum', async () => {
  const c = await openClient()
  try {
    const sql = `SELECT $1::${s}.mood AS m, $2::${s}.pair AS p, $3::${s}.posint AS d, $4::${s}.mood[] AS ms`
    const values = ['happy', { a: 7, b: 'y' }, 5, ['ok', 'sad']]
    for (let i = 0; i < 3; i++) {
      assert.deepEqual((await c.query(sql, values)).rows, [{ m: 'happy', p: { a: 7, b: 'y' }, d: 5, ms: ['ok', 'sad'] }], `execution ${i + 1}`)
    }
    await assert.rejects(c.query(sql, ['happy', { a: true, b: 'y' }, 5, []]), (e: unknown) => e instanceof ParameterError && e.index === 2 && /int4/.test((e as Error).message))
    await assert.rejects(c.query(sql, ['happy', { a: 'not a number', b: 'y' }, 5, []]), (e: unknown) => e instanceof PgError && e.code === '22P02')
    await assert.rejects(c.query(sql, ['happy', { a: 1, b: 'y' }, -1, []]), (e: unknown) => e instanceof PgError && e.code === '23514')
  } finally {
    await c.end()
  }
})

test('many queries meeting a new type at once all decode it the same way', async () => {
  const c = await openClient()
  try {
    const all = await Promise.all(Array.from({ length: 50 }, (_, i) => c.query(`SELECT $1::int AS i, 'ok'::${s}.mood AS m, ROW($1::int, 'z')::${s}.pair AS p`, [i])))
    all.forEach((r, i) => assert.deepEqual(r.rows, [{ i, m: 'ok', p: { a: i, b: 'z' } }]))
  } finally {
    await c.end()
  }
})

test('a type created after the client connected is learned when first met', async () => {
  const c = await openClient()
  const t = `${s}.late_${Math.random().toString(36).slice(2, 7)}`
  try {
    assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    await c.query(`CREATE TYPE ${t} AS (x int4)`)
    assert.deepEqual((await c.query(`SELECT ROW(5)::${t} AS v`)).rows, [{ v: { x: 5 } }])
    const [r] = await c.simpleQuery(`SELECT ROW(6)::${t} AS v`)
    assert.deepEqual(r!.rows, [{ v: { x: 6 } }])
  } finally {
    await c.end()
  }
})

test('an extension type without a codec comes back as its text; with a registered codec, as the codec says', async () => {
  const plain = await twice(`SELECT 'a=>1, b=>NULL'::hstore AS h`)
  assert.deepEqual(plain[0], [{ h: '"a"=>"1", "b"=>NULL' }])
  assert.deepEqual(plain[1], plain[0])

  const c = await openClient()
  try {
    c.registerType({
      name: 'hstore',
      parse: (text) => Object.fromEntries([...text.matchAll(/"((?:[^"\\]|\\.)*)"=>(NULL|"((?:[^"\\]|\\.)*)")/g)].map((m) => [m[1], m[2] === 'NULL' ? null : m[3]])),
      serialize: (v) =>
        Object.entries(v as Record<string, string | null>)
          .map(([k, x]) => `"${k}"=>${x === null ? 'NULL' : `"${x}"`}`)
          .join(', '),
    })
    for (let i = 0; i < 2; i++) {
      const { rows } = await c.query(`SELECT 'a=>1, b=>NULL'::hstore AS h, ARRAY['x=>y'::hstore] AS hs, $1::hstore -> 'k' AS k`, [{ k: 'v' }])
      assert.deepEqual(rows, [{ h: { a: '1', b: null }, hs: [{ x: 'y' }], k: 'v' }])
    }
  } finally {
    await c.end()
  }
})

test('typed() declares a parameter type, also on the first execution', async () => {
  const c = await openClient()
  try {
    assert.deepEqual((await c.query('SELECT $1 AS n', [typed(42, 'int4')])).rows, [{ n: 42 }])
    assert.deepEqual((await c.query('SELECT $1 AS n', [typed(42, 'int8')])).rows, [{ n: 42n }])
    assert.deepEqual((await c.query('SELECT $1 AS n', [42])).rows, [{ n: '42' }])
    assert.deepEqual((await c.query('SELECT $1 AS j, $2 AS t', [typed('{"a":1}', 'jsonb'), typed(['x', null], 'text[]')])).rows, [{ j: { a: 1 }, t: ['x', null] }])
    assert.deepEqual((await c.query('SELECT $1 AS p', [typed({ x: 1, y: 2 }, 600)])).rows, [{ p: { x: 1, y: 2 } }])
  } finally {
    await c.end()
  }
})

test('a plain object for a parameter of a non-json type is described first, then bound by its type', async () => {
  const c = await openClient()
  try {
    const { rows } = await c.query('SELECT $1::point AS p, $2::jsonb AS j, $3::circle AS c', [{ x: 1, y: 2 }, { a: [1] }, { x: 0, y: 0, radius: 3 }])
    assert.deepEqual(rows, [{ p: { x: 1, y: 2 }, j: { a: [1] }, c: { x: 0, y: 0, radius: 3 } }])
    // Queries issued in the same tick behind it still get their own results.
    const all = await Promise.all([c.query('SELECT $1::point AS p', [{ x: 5, y: 6 }]), c.query('SELECT 7 AS n'), c.query('SELECT $1::point AS p', [{ x: 8, y: 9 }], { prepare: false })])
    assert.deepEqual(all.map((r) => r.rows), [[{ p: { x: 5, y: 6 } }], [{ n: 7 }], [{ p: { x: 8, y: 9 } }]])
    await assert.rejects(c.query('SELECT $1::point AS q', [{ nope: 1 }]), (e: unknown) => e instanceof ParameterError && /point/.test((e as Error).message))
    assert.deepEqual((await c.query('SELECT 1 AS still_fine')).rows, [{ still_fine: 1 }])
  } finally {
    await c.end()
  }
})

test('type options per client and per query', async () => {
  const c = await openClient({ types: { int8: 'string', numeric: 'number', timestamps: 'string', dates: 'date' } })
  try {
    const sql = `SELECT 9007199254740993::int8 AS big, 1.5::numeric AS num, '2024-01-02 03:04:05.123456+00'::timestamptz AS ts, '2024-01-02'::date AS d`
    for (let i = 0; i < 2; i++) {
      assert.deepEqual((await c.query(sql)).rows, [{ big: '9007199254740993', num: 1.5, ts: '2024-01-02T03:04:05.123456Z', d: new Date('2024-01-02T00:00:00Z') }])
    }
    const r = await c.query('SELECT 5::int8 AS n', [], { types: { int8: 'number' } })
    assert.deepEqual(r.rows, [{ n: 5 }])
    await assert.rejects(c.query('SELECT 9007199254740993::int8 AS n', [], { types: { int8: 'number' } }), /does not fit/)
    await assert.rejects(c.query('SELECT 1', [], { types: { int8: 'float' as 'number' } }), /int8 must be one of/)
  } finally {
    await c.end()
  }
})
