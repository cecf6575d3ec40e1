// Side by side with real pg: the same query through pg and through
// pipegres/pg gives deep-equal rows and fields, for every built-in type (and
// its array), with and without parameters (simple and extended protocol),
// and with parsers changed globally, per pool and per query.

// Local-time values (timestamp, date) must be compared away from UTC.
process.env.TZ = 'America/Sao_Paulo'

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import pgReal from 'pg'
import pg from '../../../../src/integrations/pg/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'
import { assertSameResult } from '../../../support/pg-compare.js'

const { connectionString } = await mainDatabase()
const theirs = new pgReal.Pool({ connectionString, max: 2 })
const ours = new pg.Pool({ connectionString, max: 2 })

const enumType = uniqueName('pgv_mood')
const compositeType = uniqueName('pgv_pair')
const domainType = uniqueName('pgv_posint')
await ours.query(`CREATE TYPE ${enumType} AS ENUM ('sad', 'ok', 'happy')`)
await ours.query(`CREATE TYPE ${compositeType} AS (a int, b text)`)
await ours.query(`CREATE DOMAIN ${domainType} AS int CHECK (VALUE > 0)`)
after(async () => {
  await ours.query(`DROP TYPE ${enumType}, ${compositeType}; DROP DOMAIN ${domainType}`)
  await Promise.all([theirs.end(), ours.end()])
})

const serverVersion = Number((await ours.query('SHOW server_version_num')).rows[0].server_version_num)

/** Expressions by type: each is selected alone, in an array, and next to a parameter. */
const samples: Record<string, string[]> = {
  bool: ['true', 'false'],
  bytea: [`'\\x00ff10'::bytea`, `''::bytea`, `'abc\\\\'::bytea`],
  char: [`'a'::"char"`],
  name: [`'a name'::name`],
  int8: ['9007199254740993::int8', '(-9223372036854775808)::int8', '0::int8'],
  int2: ['(-32768)::int2', '7::int2'],
  int4: ['2147483647', '-1'],
  regproc: [`'now'::regproc`],
  text: [`'héllo, "wörld"'`, `''`, `'NULL'`, `'a\\b{c}'`],
  oid: ['4294967295::oid'],
  tid: [`'(1,2)'::tid`],
  xid: [`'42'::xid`],
  cid: [`'3'::cid`],
  json: [`'{"a": [1, 2.5, null, "x"]}'::json`, `'"str"'::json`, `'null'::json`],
  jsonb: [`'{"b": {"c": true}, "a": 1}'::jsonb`, `'[1, "two"]'::jsonb`],
  jsonpath: [`'$.a[*] ? (@ > 1)'::jsonpath`],
  xml: [`'<a b="c">d</a>'::xml`],
  point: [`'(1.5,-2)'::point`],
  lseg: [`'[(0,0),(1,1)]'::lseg`],
  path: [`'((0,0),(1,1),(2,0))'::path`],
  box: [`'((1,1),(0,0))'::box`],
  polygon: [`'((0,0),(1,1),(1,0))'::polygon`],
  line: [`'{1,-1,0}'::line`],
  circle: [`'<(1,2),3.5>'::circle`],
  float4: ['1.5::float4', '3.14159::float4', `'NaN'::float4`, `'-Infinity'::float4`],
  float8: ['0.1::float8', '-0::float8', `'Infinity'::float8`, '1e300::float8'],
  money: ['12.34::money'],
  macaddr: [`'08:00:2b:01:02:03'::macaddr`],
  macaddr8: [`'08:00:2b:01:02:03:04:05'::macaddr8`],
  inet: [`'192.168.1.5/24'::inet`, `'::1'::inet`],
  cidr: [`'10.0.0.0/8'::cidr`],
  bpchar: [`'ab'::char(4)`],
  varchar: [`'abc'::varchar(10)`],
  date: [`'2024-02-29'::date`, `'infinity'::date`, `'0099-06-01'::date`, `'0044-03-15 BC'::date`, `'2023-10-15'::date`],
  time: [`'12:34:56.789'::time`],
  timetz: [`'12:34:56+05:30'::timetz`],
  timestamp: [`'2024-02-29 12:34:56.123456'::timestamp`, `'-infinity'::timestamp`, `'2023-10-15 00:30:00'::timestamp`, `'0010-01-01 00:00:00 BC'::timestamp`],
  timestamptz: [`'2024-02-29 12:34:56.123+02'::timestamptz`, `'infinity'::timestamptz`, `'1900-01-01 00:00:00+00'::timestamptz`],
  interval: [`'1 year 2 mons 3 days 04:05:06.789'::interval`, `'-01:02:03'::interval`, `'0'::interval`, `'-3 days'::interval`],
  bit: [`B'101'::bit(3)`],
  varbit: [`B'1001'::varbit`],
  numeric: ['1.50::numeric', `'NaN'::numeric`, '123456789012345678901234567890.000001'],
  refcursor: [`'c1'::refcursor`],
  regprocedure: [`'now()'::regprocedure`],
  regoper: [`'||/'::regoper`],
  regoperator: [`'+(int4,int4)'::regoperator`],
  regclass: [`'pg_type'::regclass`],
  regtype: [`'int4'::regtype`],
  regrole: [`current_user::regrole`],
  regnamespace: [`'pg_catalog'::regnamespace`],
  regconfig: [`'english'::regconfig`],
  regdictionary: [`'simple'::regdictionary`],
  uuid: [`'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid`],
  txid_snapshot: [`'10:20:10,14,15'::txid_snapshot`],
  pg_snapshot: [`'10:20:10,14,15'::pg_snapshot`],
  xid8: [`'18446744073709551615'::xid8`],
  pg_lsn: [`'16/B374D848'::pg_lsn`],
  tsvector: [`'a fat cat'::tsvector`],
  tsquery: [`'fat & (rat | cat)'::tsquery`],
  int4range: [`'[1,10)'::int4range`, `'empty'::int4range`],
  int8range: [`'(,5]'::int8range`],
  numrange: [`'[1.5,2.5]'::numrange`],
  daterange: [`'[2024-01-01,2024-02-01)'::daterange`],
  tsrange: [`'[2024-01-01 10:00,2024-01-01 11:00)'::tsrange`],
  tstzrange: [`'[2024-01-01 10:00+00,)'::tstzrange`],
  record: [`ROW(1, 'a', NULL)`],
  enum: [`'happy'::${enumType}`],
  composite: [`ROW(1, 'x y')::${compositeType}`],
  domain: [`5::${domainType}`],
  void: [`pg_sleep(0)`],
  unknown: [`'literal'`],
}
if (serverVersion >= 140000) samples.multirange = [`'{[1,3),[5,7)}'::int4multirange`]

async function both(text: string, values?: unknown[], what = text): Promise<void> {
  const [a, b] = await Promise.all([ours.query(text, values), theirs.query(text, values)])
  assertSameResult(a, b, what)
}

for (const [type, exprs] of Object.entries(samples)) {
  test(`${type}: the same values and fields as pg, alone, in arrays, as NULL, with and without parameters`, async () => {
    for (const e of exprs) {
      await both(`SELECT ${e} AS v, NULL::text AS n`)
      await both(`SELECT ${e} AS v, $1::int AS p`, [1], `${e} (extended)`)
      if (type !== 'void' && type !== 'unknown' && type !== 'record') {
        await both(`SELECT ARRAY[${e}, NULL] AS a, ARRAY[[${e}], [${e}]] AS nested`)
        await both(`SELECT ARRAY[${e}] AS a, $1::text AS p`, ['x'], `${e}[] (extended)`)
      }
    }
  })
}

test('rowMode array, several statements, commands and counts as pg gives them', async () => {
  const table = uniqueName('pgv_t')
  const ddl = await Promise.all([ours.query(`CREATE TEMP TABLE ${table}_a (a int)`), theirs.query(`CREATE TEMP TABLE ${table}_b (a int)`)])
  assert.equal(ddl[0].command, ddl[1].command)
  assert.equal(ddl[0].rowCount, ddl[1].rowCount)
  const multi = `SELECT 1 AS a; SELECT 'x' AS b, 2.5::float8 AS c; VALUES (1), (2)`
  const [m1, m2] = await Promise.all([ours.query(multi), theirs.query(multi)])
  assert.ok(Array.isArray(m1) && Array.isArray(m2))
  assert.equal(m1.length, m2.length)
  const [l1, l2] = [m1 as unknown as never[], m2 as unknown as never[]]
  l1.forEach((r, i) => assertSameResult(r, l2[i]!, `statement ${i}`))
  const arr = { text: 'SELECT 1 AS a, $1::text AS b, NULL AS c', values: ['z'], rowMode: 'array' as const }
  const [a1, a2] = await Promise.all([ours.query(arr), theirs.query(arr)])
  assertSameResult(a1, a2, 'rowMode array')
  assert.deepEqual(a1.rows, [[1, 'z', null]])
  const empty = await Promise.all([ours.query(''), theirs.query('')])
  assert.equal(empty[0].command, empty[1].command)
  assert.deepEqual(empty[0].rows, empty[1].rows)
})

test('parameters are sent as pg sends them: Dates in local time, arrays, objects as JSON, Buffers, toPostgres()', async () => {
  const when = new Date(2024, 1, 29, 12, 34, 56, 789)
  const custom = { toPostgres: () => '{"from":"toPostgres"}' }
  const values = [when, [1, null, 3], ['a"b', 'c\\d', null], { k: [1, 'v'] }, Buffer.from([0, 1, 255]), custom, 12.5, true, 10n, [[1, 2], [3, 4]]]
  const text = 'SELECT $1::timestamptz AS ts, $2::int[] AS ints, $3::text[] AS texts, $4::jsonb AS obj, $5::bytea AS buf, $6::json AS custom, $7::numeric AS num, $8::bool AS flag, $9::int8 AS big, $10::int[] AS grid, $1::timestamp AS local, $1::date AS day'
  await both(text, values)
})

test('type parsers: set globally, per pool (types option), per client and per query', async () => {
  const text = 'SELECT 123::int8 AS big, 1.25::numeric AS num, now()::date AS d'
  const numeric = (v: string): number => Number(v) * 2
  const mine = new pg.TypeOverrides()
  mine.setTypeParser(1700, numeric)
  const theirsTypes = new pgReal.TypeOverrides()
  theirsTypes.setTypeParser(1700, numeric)
  const withTypes = [new pg.Pool({ connectionString, types: mine }), new pgReal.Pool({ connectionString, types: theirsTypes })] as const
  try {
    const [a, b] = await Promise.all([withTypes[0].query(text), withTypes[1].query(text)])
    assertSameResult(a, b, 'pool types')
    assert.equal(a.rows[0].num, 2.5)
  } finally {
    await Promise.all(withTypes.map((p) => p.end()))
  }
  const perQuery = { getTypeParser: (oid: number) => (oid === 20 ? (v: string) => BigInt(v) : (v: string) => `<${v}>`) }
  const [q1, q2] = await Promise.all([ours.query({ text, types: perQuery }), theirs.query({ text, types: perQuery as never })])
  assertSameResult(q1, q2, 'query types')
  assert.equal(q1.rows[0].big, 123n)

  const oursClient = await ours.connect()
  const theirsClient = await theirs.connect()
  try {
    oursClient.setTypeParser(20, (v: string) => Number(v) + 1)
    theirsClient.setTypeParser(20, (v: string) => Number(v) + 1)
    const [c1, c2] = await Promise.all([oursClient.query(text), theirsClient.query(text)])
    assertSameResult(c1, c2, 'client types')
    assert.equal(c1.rows[0].big, 124)
  } finally {
    // pg keeps a client's parsers with its connection, which pool.query() may use next.
    theirsClient.setTypeParser(20, pgReal.types.getTypeParser(20))
    oursClient.release()
    theirsClient.release()
  }

  const saved = [pg.types.getTypeParser(1082), pgReal.types.getTypeParser(1082)] as const
  pg.types.setTypeParser(1082, (v: string) => `day ${v}`)
  pgReal.types.setTypeParser(1082, (v: string) => `day ${v}`)
  try {
    await both(text)
    await both('SELECT $1::date AS d', ['2024-01-02'])
  } finally {
    pg.types.setTypeParser(1082, saved[0])
    pgReal.types.setTypeParser(1082, saved[1])
  }
})

test('errors carry pg field names and shapes', async () => {
  const table = uniqueName('pgv_err')
  await ours.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text NOT NULL)`)
  try {
    await ours.query(`INSERT INTO ${table} VALUES (1, 'a')`)
    const attempts = [
      `INSERT INTO ${table} VALUES (1, 'b')`,
      `SELECT nosuchcolumn FROM ${table}`,
      `INSERT INTO ${table} VALUES (2, NULL)`,
      `SELECT 1/0`,
      `DO $$ BEGIN RAISE EXCEPTION 'custom' USING HINT = 'a hint', DETAIL = 'a detail'; END $$`,
    ]
    for (const text of attempts) {
      for (const values of [undefined, [] as unknown[]]) {
        const [e1, e2] = await Promise.all([ours.query(text, values).then(() => null, (e: unknown) => e), theirs.query(text, values).then(() => null, (e: unknown) => e)])
        assert.ok(e1 instanceof pg.DatabaseError, text)
        assert.ok(e2 instanceof pgReal.DatabaseError)
        const keys = ['name', 'message', 'severity', 'code', 'detail', 'hint', 'position', 'internalPosition', 'internalQuery', 'where', 'schema', 'table', 'column', 'dataType', 'constraint', 'file', 'routine'] as const
        for (const k of keys) assert.deepEqual((e1 as never)[k], (e2 as never)[k], `${text}: ${k}`)
        assert.equal(typeof (e1 as { line: unknown }).line, typeof (e2 as { line: unknown }).line)
      }
    }
  } finally {
    await ours.query(`DROP TABLE ${table}`)
  }
})
