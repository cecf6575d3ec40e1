import { test } from 'node:test'
import assert from 'node:assert/strict'
import { type ClientOptions } from '../../../src/index.js'
import { fileClient, openClient } from '../../support/client.js'

// Every built-in type through the whole client: the first execution of a
// statement comes back in text, later ones in binary wherever a binary codec
// exists, and both must give identical values; the decoded value sent back as
// a parameter must be the value the server started from; and the same for an
// array of the type with a NULL element.

const db = await fileClient()
const major = Number.parseInt(db.serverParameters.server_version ?? '0', 10)

/** [type, SQL literals of that type] — edge values first. */
const cases: [string, string[]][] = [
  ['bool', ['true', 'false']],
  ['int2', ["'-32768'", '32767', '0']],
  ['int4', ["'-2147483648'", '2147483647', '0']],
  ['int8', ["'-9223372036854775808'", '9223372036854775807', '0']],
  ['oid', ['0', '4294967295']],
  ['xid', ["'0'", "'4294967295'"]],
  ['cid', ["'0'", "'4294967295'"]],
  ['float4', ["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", '3.4028235e38', '1.4e-45', '1.1']],
  ['float8', ["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", '1.7976931348623157e308', '5e-324', '0.1']],
  ['numeric', ["'NaN'", '0', '-0.000', '123456789012345678901234567890.123456789', '1e-100', "'1.50'", '-99999999999999999999']],
  ['money', ["'-92233720368547758.08'", "'92233720368547758.07'", "'12.34'"]],
  ['text', ["''", "'hello'", "'é😀 \\ \" '''"]],
  ['varchar', ["'abc'"]],
  ['bpchar', ["'ab  '"]],
  ['name', ["'pg_class'"]],
  ['"char"', ["'x'", "''"]],
  ['bytea', ["'\\x'", "'\\x00ff10'"]],
  ['uuid', ["'00000000-0000-0000-0000-000000000000'", "'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF'"]],
  // A top-level JSON string or null is left out: a string parameter for json is
  // JSON text, and null is SQL NULL (see the README).
  ['json', ["'{\"a\":[1,null,\"x\"]}'", "'[[1,2],[3]]'"]],
  ['jsonb', ["'{\"b\":{\"c\":true}}'", "'[]'", "'1.5'", "'[{\"x\":[]}]'"]],
  ['jsonpath', ["'$.a[*] ? (@ > 1)'"]],
  ['xml', ["'<a>b</a>'"]],
  ['date', ["'2024-02-29'", "'infinity'", "'-infinity'", "'4713-01-01 BC'", "'5874897-12-31'", "'0001-01-01 BC'"]],
  ['time', ["'00:00:00'", "'23:59:59.999999'", "'24:00:00'"]],
  ['timetz', ["'12:34:56.5+05:30'", "'01:02:03-08'"]],
  // A Date holds milliseconds: microseconds and the years beyond a Date's range are checked in 'string' mode below.
  ['timestamp', ["'2024-02-29 12:34:56.123'", "'infinity'", "'-infinity'", "'4713-01-01 00:00:00 BC'", "'275760-09-13 00:00:00'"]],
  ['timestamptz', ["'2024-02-29 12:34:56.123+00'", "'infinity'", "'-infinity'", "'2024-03-10 07:30:00+00'", "'1999-12-31 23:59:59.999-11'"]],
  ['interval', ["'1 year 2 mons 3 days 04:05:06.789'", "'-1 days +02:03:00'", "'0'", "'-178000000 years'"]],
  ['inet', ["'192.168.1.5'", "'10.0.0.0/8'", "'::1'", "'2001:db8::ff00:42:8329/64'", "'::ffff:1.2.3.4'"]],
  ['cidr', ["'10.0.0.0/8'", "'2001:db8::/32'"]],
  ['macaddr', ["'08:00:2b:01:02:03'"]],
  ['macaddr8', ["'08:00:2b:01:02:03:04:05'"]],
  ['bit(3)', ["B'101'"]],
  ['varbit', ["B''", "B'1101011'"]],
  ['point', ["'(1.5,-2)'"]],
  ['line', ["'{1,-1,0}'"]],
  ['lseg', ["'[(0,0),(1,1)]'"]],
  ['box', ["'(1,1),(0,0)'"]],
  ['path', ["'[(0,0),(1,1),(2,0)]'", "'((0,0),(1,1))'"]],
  ['polygon', ["'((0,0),(1,1),(1,0))'"]],
  ['circle', ["'<(1,2),3>'"]],
  ['tsvector', ["'a:1A fat:2B,4C cat:5D'", "''"]],
  ['tsquery', ["'fat & (rat | !cat) <-> mat:*'"]],
  ['pg_lsn', ["'0/0'", "'FFFFFFFF/FFFFFFFF'"]],
  ['int4range', ["'[1,10)'", "'empty'", "'(,5]'"]],
  ['int8range', ["'[-9223372036854775808,0)'"]],
  ['numrange', ["'[1.5,2.50]'"]],
  ['tsrange', ["'[2024-01-01 00:00:00,2024-01-02 00:00:00)'"]],
  ['tstzrange', ["'[2024-01-01 00:00:00+00,infinity)'"]],
  ['daterange', ["'[2024-01-01,2024-02-01)'"]],
  ['int4multirange', ["'{[1,3), [5,7)}'", "'{}'"]],
  ['regclass', ["'pg_class'"]],
  ['regtype', ["'integer'"]],
]

/** Exact temporal values, with timestamps and dates as strings. */
const stringModeCases: [string, string[]][] = [
  ['timestamp', ["'2024-02-29 12:34:56.123456'", "'294276-12-31 23:59:59.999999'", "'4713-01-01 00:00:00 BC'", "'infinity'"]],
  ['timestamptz', ["'2024-02-29 12:34:56.123456+00'", "'294276-12-31 23:59:59.999999+00'", "'0044-03-15 12:00:00+00 BC'", "'-infinity'"]],
  ['date', ["'5874897-12-31'", "'4713-01-01 BC'"]],
  ['tsrange', ["'[2024-01-01 00:00:00.000001,2024-01-02 00:00:00)'"]],
]

const runs: [string, [string, string[]][], ClientOptions][] = [
  ['', cases, {}],
  [' (timestamps and dates as strings)', stringModeCases, { types: { timestamps: 'string', dates: 'string' } }],
]

for (const [label, list, options] of runs) for (const [type, literals] of list) {
  test(`${type}${label}: text and binary decode alike, values survive a round trip, alone and in arrays`, async () => {
    if (type === 'int4multirange' && major < 14) return
    const c = await openClient(options)
    try {
      const columns = literals.map((lit, i) => `${lit}::${type} AS v${i}`).join(', ')
      const arrays = literals.map((lit, i) => `ARRAY[${lit}::${type}, NULL] AS a${i}`).join(', ')
      const sql = `SELECT ${columns}, ${arrays}, NULL::${type} AS n`
      const first = (await c.query(sql)).rows[0]!
      const second = (await c.query(sql)).rows[0]!
      assert.deepStrictEqual(second, first, `${type}: binary and text results differ`)
      assert.equal(first.n, null)

      // Each decoded value, sent back as a parameter of the type, is the value the server had.
      const back = literals.map((lit, i) => `$${i + 1}::${type}::text IS NOT DISTINCT FROM (${lit}::${type})::text AS s${i}`).join(', ')
      const values = literals.map((_, i) => first[`v${i}`])
      for (let run = 0; run < 2; run++) {
        const same = (await c.query(`SELECT ${back}`, values)).rows[0]!
        for (let i = 0; i < literals.length; i++) assert.equal(same[`s${i}`], true, `${type} ${literals[i]} did not survive as a parameter (run ${run + 1})`)
      }
      const arrayBack = literals.map((lit, i) => `$${i + 1}::${type}[]::text IS NOT DISTINCT FROM (ARRAY[${lit}::${type}, NULL])::text AS s${i}`).join(', ')
      const arrayValues = literals.map((_, i) => first[`a${i}`])
      for (let run = 0; run < 2; run++) {
        const same = (await c.query(`SELECT ${arrayBack}`, arrayValues)).rows[0]!
        for (let i = 0; i < literals.length; i++) assert.equal(same[`s${i}`], true, `${type}[] with ${literals[i]} did not survive (run ${run + 1})`)
      }
    } finally {
      await c.end()
    }
  })
}

test('multi-dimensional arrays, non-default lower bounds and empty arrays', async () => {
  const sql = `SELECT '{{1,2},{3,NULL}}'::int4[] AS m, '[0:2]={a,b,c}'::text[] AS lb, '{}'::int4[] AS e, '[2:3][1:2]={{1,2},{3,4}}'::int8[] AS both`
  const c = await openClient()
  try {
    const first = (await c.query(sql)).rows[0]!
    const second = (await c.query(sql)).rows[0]!
    assert.deepStrictEqual(second, first)
    assert.deepEqual(first.m, [[1, 2], [3, null]])
    assert.deepEqual(first.lb, ['a', 'b', 'c'])
    assert.deepEqual((first.lb as unknown as { lowerBounds: number[] }).lowerBounds, [0])
    assert.deepEqual(first.e, [])
    assert.deepEqual((first.both as unknown as { lowerBounds: number[] }).lowerBounds, [2, 1])
    const back = (await c.query('SELECT $1::text[]::text AS lb, $2::int8[]::text AS both', [first.lb, first.both])).rows[0]!
    assert.deepEqual(back, { lb: '[0:2]={a,b,c}', both: '[2:3][1:2]={{1,2},{3,4}}' })
  } finally {
    await c.end()
  }
})

test('JS values map to the types the server expects', async () => {
  const c = await openClient()
  try {
    const when = new Date('2024-05-06T07:08:09.123Z')
    const sql = `SELECT $1::int8 AS i8, $2::numeric AS num, $3::bytea AS b, $4::timestamptz AS tz, $5::date AS d, $6::jsonb AS j, $7::float8[] AS fs, $8::bool AS t, $9::uuid AS u`
    const values = [2n ** 62n, 10n ** 30n, new Uint8Array([1, 2, 255]), when, when, { k: [1, 'v'] }, [1.5, -0, NaN], true, 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11']
    for (let run = 0; run < 2; run++) {
      const r = (await c.query(sql, values)).rows[0]!
      assert.equal(r.i8, 2n ** 62n)
      assert.equal(r.num, '1000000000000000000000000000000')
      assert.deepEqual([...(r.b as Uint8Array)], [1, 2, 255])
      assert.equal((r.tz as Date).getTime(), when.getTime())
      assert.equal(r.d, '2024-05-06')
      assert.deepEqual(r.j, { k: [1, 'v'] })
      assert.deepEqual(r.fs, [1.5, -0, NaN])
      assert.equal(r.t, true)
      assert.equal(r.u, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')
    }
  } finally {
    await c.end()
  }
})

test('values of the wrong JS type are refused naming the parameter and both types', async () => {
  const c = await openClient()
  try {
    const sql = 'SELECT $1::int4 AS a, $2::timestamptz AS b'
    await c.query(sql, [1, new Date()])
    await assert.rejects(c.query(sql, [true, new Date()]), /parameter \$1 \(int4\): .*boolean/)
    await assert.rejects(c.query(sql, [1, { not: 'a date' }]), /parameter \$2 \(timestamptz\): .*object/)
    await assert.rejects(c.query(sql, [2 ** 31, new Date()]), /parameter \$1 \(int4\): .*out of range/)
    await assert.rejects(c.query(sql, [1.5, new Date()]), /parameter \$1 \(int4\)/)
    await c.query('SELECT $1::int2 AS x', [1])
    await assert.rejects(c.query('SELECT $1::int2 AS x', [40000]), /parameter \$1 \(int2\): .*out of range/)
  } finally {
    await c.end()
  }
})
