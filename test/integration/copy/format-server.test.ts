import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import type { Client } from '../../../src/index.js'
import { Writer } from '../../../src/protocol/writer.js'
import { TypeCatalog } from '../../../src/types/catalog.js'
import type { TypeOptions } from '../../../src/types/codec.js'
import type { TypeInfo } from '../../../src/types/type-info.js'
import {
  copyFromStatement,
  copyToStatement,
  createCopyDecoder,
  createCopyEncoder,
  CopyRowError,
  type CopyColumn,
  type CopyFormatOptions,
  type CopyRow,
} from '../../../src/copy/format.js'
import { uniqueName } from '../../support/client.js'
import { CopyWire, sameDatabaseClient } from '../../support/codecs/copy-wire.js'

// The COPY data layer against the real server, both ways: what the server
// sends for COPY TO STDOUT must decode to exactly the rows query() gives for
// the same SELECT, in every format and however the bytes are split; and rows
// encoded for COPY FROM STDIN must come back from SELECT as they went in.

let db: Client
let wire: CopyWire
/** Statements that remove what the tests created. */
const cleanup: string[] = []

before(async () => {
  db = await sameDatabaseClient()
  wire = await CopyWire.open([['TimeZone', 'Asia/Kolkata']])
})

after(async () => {
  for (const sql of cleanup.reverse()) await wire.exec(sql)
  await wire.close()
  await db.end()
})

const EXACT: TypeOptions = { int8: 'string', numeric: 'string', timestamps: 'string', dates: 'string' }

/** Variants of output: format and options, with the session settings the wire connection uses. */
const OUTPUT_VARIANTS: CopyFormatOptions[] = [
  { format: 'binary' },
  { format: 'text' },
  { format: 'text', delimiter: '|' },
  { format: 'csv' },
  { format: 'csv', delimiter: ';', quote: "'", escape: '\\' },
  { format: 'csv', delimiter: '\t', quote: '|' },
]

/** Splits bytes into chunks of pseudo-random sizes (deterministic per seed). */
function randomChunks(bytes: Uint8Array, seed: number, max: number): Uint8Array[] {
  const out: Uint8Array[] = []
  let s = seed
  for (let p = 0; p < bytes.length; ) {
    s = (s * 1103515245 + 12345) & 0x7fffffff
    const n = 1 + (s % max)
    out.push(bytes.subarray(p, Math.min(bytes.length, p + n)))
    p += n
  }
  return out
}

function decodeAll(chunks: readonly Uint8Array[], columns: CopyColumn[], catalog: TypeCatalog, options: TypeOptions, variant: CopyFormatOptions): unknown[] {
  const dec = createCopyDecoder(columns, catalog.view(options), { ...variant, rowMode: 'array' })
  const rows: unknown[] = []
  for (const c of chunks) dec.push(c, 0, c.length, rows)
  dec.finish()
  assert.equal(dec.rowCount, rows.length)
  return rows
}

/**
 * COPY (sql) TO STDOUT in every variant; each decoded (as framed, in random
 * splits, in one piece) under the default and the exact type options must
 * equal query()'s rows.
 */
async function checkOutput(sql: string, catalog: TypeCatalog = new TypeCatalog(), variants = OUTPUT_VARIANTS): Promise<number> {
  let rowCount = 0
  for (const options of [{}, EXACT]) {
    const expected = await db.query(sql, [], { rowMode: 'array', types: options })
    const columns = expected.fields.map((f) => ({ name: f.name, typeOid: f.typeOid }))
    for (const variant of variants) {
      const out = await wire.copyOut(copyToStatement(sql, variant))
      assert.equal(out.format, variant.format === 'binary' ? 1 : 0)
      assert.equal(out.command, `COPY ${expected.rows.length}`)
      const label = `${JSON.stringify(variant)} ${JSON.stringify(options)}`
      // The server frames one row per CopyData (the binary header rides with the first, the trailer alone).
      assert.equal(out.payloads.length, expected.rows.length + (variant.format === 'binary' ? 1 : 0), label)
      assert.deepStrictEqual(decodeAll(out.payloads, columns, catalog, options, variant), expected.rows, `as framed: ${label}`)
      const whole = Buffer.concat(out.payloads)
      assert.deepStrictEqual(decodeAll([whole], columns, catalog, options, variant), expected.rows, `in one piece: ${label}`)
      for (const seed of [1, 2, 3]) {
        assert.deepStrictEqual(decodeAll(randomChunks(whole, seed, 17), columns, catalog, options, variant), expected.rows, `split (seed ${seed}): ${label}`)
      }
      rowCount = expected.rows.length
    }
  }
  return rowCount
}

const SPECIAL_STRINGS = [
  'plain',
  '',
  ' ',
  'tab\there',
  'new\nline',
  'carriage\rreturn',
  'crlf\r\n',
  'back\\slash',
  '\\',
  '\\N',
  'N',
  '\\.',
  '.',
  'double"quote',
  '"',
  '""',
  "single'quote",
  'comma,here',
  'semi;colon',
  'pipe|here',
  'control\u0001\u0008\u000b\u000c\u001f\u007f',
  'ünïcødé ✓ 日本語 🎉',
  'NULL',
  '\\x41',
  '\\101',
  'ends with backslash \\',
  '\n',
  '\t',
  ',',
  ';',
  "'",
]

function sqlString(s: string): string {
  return `'${s.replaceAll("'", "''")}'`
}

test('COPY TO: text with every special character decodes as query() reads it, in every format', async () => {
  const list = SPECIAL_STRINGS.map(sqlString).join(', ')
  const sql = `SELECT i::int4 AS id, s AS t, NULLIF(s, 'plain') AS maybe, convert_to(s, 'UTF8') AS b, ARRAY[s, NULL, s]::text[] AS a, jsonb_build_object('k', s) AS j, s::varchar AS v, s::name AS n
    FROM unnest(ARRAY[${list}]::text[]) WITH ORDINALITY AS u(s, i) ORDER BY i`
  assert.equal(await checkOutput(sql), SPECIAL_STRINGS.length)
})

const TYPES_SELECT = `SELECT * FROM (VALUES
  (1, 1::int2, 2147483647::int4, 9007199254740993::int8, 1.5::float4, -0.1::float8, 12.3400::numeric, true,
   'txt'::text, 'vc'::varchar(10), 'c'::char(3), 'nm'::name, 'x'::"char", '\\x00ff5c0a0d09'::bytea, 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid,
   '{"a":[1,"x\\ty"],"b":null}'::json, '{"k":"v\\n","n":1.25}'::jsonb, '2024-02-29'::date, '12:34:56.789'::time, '12:34:56+05:30'::timetz,
   '2024-02-29 12:34:56.123456'::timestamp, '2024-02-29 12:34:56.123+00'::timestamptz, '1 year 2 mons 3 days 04:05:06.5'::interval,
   '192.168.0.1/24'::inet, '10.0.0.0/8'::cidr, '08:00:2b:01:02:03'::macaddr, B'1010'::bit(4), B'101'::varbit, '(1.5,2)'::point,
   '{1,NULL,3}'::int4[], ARRAY['a,b', 'c"d', 'e\\f', NULL, '', 'NULL']::text[], '[1,5)'::int4range, 12345::oid, '{{1,2},{3,4}}'::int8[],
   '[2024-01-01 00:00:00+00,2024-02-01 00:00:00+00)'::tstzrange, '{"2024-01-01","infinity"}'::date[], 'NaN'::numeric, 'Infinity'::float8),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (3, '-32768'::int2, '-2147483648'::int4, '-9223372036854775808'::int8, 'NaN'::float4, '-0'::float8, '-0.000001'::numeric, false,
   '', '', 'abc', '', '', '\\x'::bytea, '00000000-0000-0000-0000-000000000000'::uuid,
   '"just a string"'::json, '[]'::jsonb, '0044-03-15 BC'::date, '00:00:00'::time, '23:59:59.999999-03:30'::timetz,
   '4713-01-01 00:00:00 BC'::timestamp, 'infinity'::timestamptz, '-178000000 years'::interval,
   '::1'::inet, '2001:db8::/32'::cidr, 'ff:ff:ff:ff:ff:ff'::macaddr, B'0000'::bit(4), B''::varbit, '(-0,1e300)'::point,
   '{}'::int4[], '{}'::text[], 'empty'::int4range, 4294967295::oid, '{}'::int8[],
   '(,)'::tstzrange, '{}'::date[], '123456789012345678901234567890.123456789'::numeric, '-Infinity'::float8)
) AS t(id, i2, i4, i8, f4, f8, num, b, t, vc, bp, nm, ch, by, u, j, jb, d, tm, ttz, ts, tstz, iv, ip, cd, mac, bt, vb, pt, ia, ta, r, o, i8a, tr, da, nan, inf)`

test('COPY TO: a wide range of built-in types decodes as query() reads it, in every format', async () => {
  assert.equal(await checkOutput(TYPES_SELECT), 3)
})

test('COPY TO: values beyond a JS Date decode exactly with timestamps: string', async () => {
  const sql = `SELECT '294276-12-31 23:59:59.999999'::timestamp AS far, '294276-12-31 23:59:59.999999+00'::timestamptz AS fartz, '5874897-12-31'::date AS d`
  const variants: CopyFormatOptions[] = [{ format: 'binary' }, { format: 'text' }, { format: 'csv' }]
  const expected = await db.query(sql, [], { rowMode: 'array', types: EXACT })
  const columns = expected.fields.map((f) => ({ name: f.name, typeOid: f.typeOid }))
  for (const variant of variants) {
    const out = await wire.copyOut(copyToStatement(sql, variant))
    assert.deepStrictEqual(decodeAll(out.payloads, columns, new TypeCatalog(), EXACT, variant), expected.rows)
  }
})

test('COPY TO: thousands of rows, object rows, each framed alone', async () => {
  const sql = `SELECT i AS id, md5(i::text) AS h, i * 1.5 AS x, CASE WHEN i % 7 = 0 THEN NULL ELSE repeat(E'a\\tb', i % 5) END AS s,
    timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second 1 microsecond' AS at FROM generate_series(1, 3000) i`
  for (const variant of [{ format: 'binary' }, { format: 'text' }, { format: 'csv' }] as CopyFormatOptions[]) {
    const expected = await db.query(sql, [], { types: EXACT })
    const columns = expected.fields.map((f) => ({ name: f.name, typeOid: f.typeOid }))
    const out = await wire.copyOut(copyToStatement(sql, variant))
    const dec = createCopyDecoder(columns, new TypeCatalog().view(EXACT), { ...variant, rowMode: 'object' })
    const rows: unknown[] = []
    for (const p of out.payloads) dec.push(p, 0, p.length, rows)
    dec.finish()
    assert.deepStrictEqual(rows, expected.rows)
  }
})

test('COPY TO: IntervalStyle and TimeZone of the session do not change what text and CSV decode to', async () => {
  const other = await CopyWire.open([['TimeZone', 'America/St_Johns'], ['IntervalStyle', 'sql_standard']])
  try {
    const sql = `SELECT '2024-07-01 12:00:00.5+00'::timestamptz AS at, '-1 day -02:03:04.5'::interval AS iv, '1 year -2 mons'::interval AS iv2`
    const expected = await db.query(sql, [], { rowMode: 'array' })
    const columns = expected.fields.map((f) => ({ name: f.name, typeOid: f.typeOid }))
    for (const variant of [{ format: 'text' }, { format: 'csv' }] as CopyFormatOptions[]) {
      const out = await other.copyOut(copyToStatement(sql, variant))
      assert.match(out.payloads[0]!.toString(), /-02:30/)
      assert.deepStrictEqual(decodeAll(out.payloads, columns, new TypeCatalog(), {}, variant), expected.rows)
    }
  } finally {
    await other.close()
  }
})

/** A catalog that knows the enum, composite and domain created for a test (as a session learns them from pg_type). */
async function catalogWithUserTypes(base: string): Promise<TypeCatalog> {
  const catalog = new TypeCatalog()
  const { rows } = await db.query<{ oid: number; typname: string; typtype: string; typbasetype: number; typrelid: number }>(
    `SELECT oid::int4 AS oid, typname::text, typtype::text, typbasetype::int4, typrelid::int4 FROM pg_type WHERE typname IN ($1, $2, $3)`,
    [`${base}_e`, `${base}_c`, `${base}_d`],
  )
  const infos: TypeInfo[] = []
  for (const r of rows) {
    const attributes =
      r.typtype === 'c'
        ? (
            await db.query<{ name: string; oid: number }>(
              `SELECT attname::text AS name, atttypid::int4 AS oid FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
              [r.typrelid],
            )
          ).rows
        : []
    infos.push({ oid: r.oid, name: r.typname, schema: 'public', kind: r.typtype as TypeInfo['kind'], elem: 0, delimiter: ',', base: r.typbasetype, subtype: 0, attributes })
  }
  catalog.learn(infos)
  return catalog
}

test('COPY TO: enums, composites and domains decode through a catalog that knows them', async () => {
  const base = uniqueName('copy_fmt_types')
  cleanup.push(`DROP TYPE IF EXISTS ${base}_e; DROP TYPE IF EXISTS ${base}_c; DROP DOMAIN IF EXISTS ${base}_d`)
  await wire.exec(`CREATE TYPE ${base}_e AS ENUM ('sad', 'ok', 'happy, "really"');
    CREATE TYPE ${base}_c AS (n int4, s text, at timestamptz);
    CREATE DOMAIN ${base}_d AS numeric(10,2) CHECK (VALUE > 0)`)
  const catalog = await catalogWithUserTypes(base)
  const sql = `SELECT 'happy, "really"'::${base}_e AS mood, ROW(1, E'a,b\\t"c"', '2024-01-01 00:00:00+00')::${base}_c AS c, 12.5::${base}_d AS d
    UNION ALL SELECT 'sad', ROW(NULL, '', NULL)::${base}_c, NULL`
  assert.equal(await checkOutput(sql, catalog), 2)
})

// ---------------------------------------------------------------- COPY FROM

const TABLE_COLUMNS = `id int4, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, num numeric, b bool, t text, vc varchar(40), bp char(3), nm name, ch "char",
  by bytea, u uuid, j json, jb jsonb, d date, tm time, ttz timetz, ts timestamp, tstz timestamptz, iv interval, ip inet, cd cidr, mac macaddr,
  bt bit(4), vb varbit, pt point, ia int4[], ta text[], r int4range, o oid, i8a int8[], tr tstzrange, da date[], nan numeric, inf float8`

async function createTable(): Promise<{ name: string; columns: CopyColumn[] }> {
  const name = uniqueName('copy_fmt_in')
  cleanup.push(`DROP TABLE IF EXISTS ${name}`)
  await wire.exec(`CREATE TABLE ${name} (${TABLE_COLUMNS})`)
  const described = await db.query(`SELECT * FROM ${name} LIMIT 0`)
  return { name, columns: described.fields.map((f) => ({ name: f.name, typeOid: f.typeOid })) }
}

/** Encodes rows in a format and returns the bytes split as requested. */
function encode(columns: CopyColumn[], rows: readonly CopyRow[], options: CopyFormatOptions, catalog = new TypeCatalog()): Uint8Array {
  const enc = createCopyEncoder(columns, catalog, options)
  const w = new Writer()
  enc.writeHeader(w)
  for (const r of rows) enc.encodeRow(w, r)
  enc.writeTrailer(w)
  assert.equal(enc.rowCount, rows.length)
  return w.take().slice()
}

const INPUT_VARIANTS: CopyFormatOptions[] = [
  { format: 'binary' },
  { format: 'text' },
  { format: 'text', delimiter: '|' },
  { format: 'csv' },
  { format: 'csv', delimiter: ';', quote: "'", escape: '\\' },
]

async function roundTrip(table: string, columns: CopyColumn[], rows: readonly CopyRow[], variant: CopyFormatOptions, split: 'one' | 'random', types: TypeOptions = {}): Promise<unknown[]> {
  await wire.exec(`TRUNCATE ${table}`)
  const bytes = encode(columns, rows, variant)
  const chunks = split === 'one' ? [bytes] : randomChunks(bytes, 7, 40)
  const tag = await wire.copyIn(copyFromStatement(table, columns.map((c) => c.name), variant), chunks)
  assert.equal(tag, `COPY ${rows.length}`)
  return (await db.query(`SELECT * FROM ${table} ORDER BY id`, [], { rowMode: 'array', types })).rows
}

test('COPY FROM: the values query() returns go back in unchanged, in every format', async () => {
  const { name, columns } = await createTable()
  // Source rows: the server's own values as the client reads them, in both type modes.
  for (const types of [{}, EXACT]) {
    const source = (await db.query<unknown[]>(TYPES_SELECT, [], { rowMode: 'array', types })).rows
    assert.equal(source[0]!.length, columns.length)
    // A string given for json is JSON text (the parameter convention): a JSON string value goes back serialised.
    const json = columns.flatMap((c, i) => (c.typeOid === 114 || c.typeOid === 3802 ? [i] : []))
    const input = source.map((r) => r.map((v, i) => (json.includes(i) && typeof v === 'string' ? JSON.stringify(v) : v)))
    for (const variant of INPUT_VARIANTS) {
      for (const split of ['one', 'random'] as const) {
        const back = await roundTrip(name, columns, input, variant, split, types)
        assert.deepStrictEqual(back, source, `${JSON.stringify(variant)} ${split} ${JSON.stringify(types)}`)
      }
    }
  }
})

test('COPY FROM: strings with every special character, as arrays and as objects', async () => {
  const { name, columns } = await createTable()
  const rows = SPECIAL_STRINGS.map((s, i) => ({ id: i + 1, t: s, vc: s.slice(0, 40), by: Buffer.from(s), ta: [s, null, s], jb: { k: s, [s]: [s] }, j: [s] }))
  const expected = rows.map((r) => columns.map((c) => (c.name in r ? (r as Record<string, unknown>)[c.name] : null)))
  for (const variant of INPUT_VARIANTS) {
    const back = await roundTrip(name, columns, rows, variant, 'random')
    assert.deepStrictEqual(back, expected, JSON.stringify(variant))
    const backFromArrays = await roundTrip(name, columns, expected, variant, 'one')
    assert.deepStrictEqual(backFromArrays, expected, JSON.stringify(variant))
  }
})

test('COPY FROM binary: strings for typed columns are parsed as the server would, or refused', async () => {
  const { name, columns } = await createTable()
  const rows: CopyRow[] = [
    {
      id: 1,
      i2: '-12',
      i4: '42',
      i8: '9223372036854775807',
      f8: '1e-5',
      num: '  1.50  '.trim(),
      b: 't',
      u: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
      by: '\\x0102ff',
      j: '{"keep":   "spacing",  "n": 1.000000000000000000001}',
      jb: '{"n": 1.000000000000000000001}',
      nm: 'a name',
      d: '2024-02-29',
      tm: '12:34:56.123456',
      ttz: '12:00:00+05:30',
      ts: '2024-02-29T12:34:56.123456',
      tstz: '2024-02-29 12:34:56.789+05:30',
      ip: '10.1.2.3/16',
      cd: '10.1.0.0/16',
      mac: '08:00:2b:01:02:03',
      bt: '0101',
      vb: '1',
      ia: '{1, 2 ,NULL}',
      da: '{2024-01-01,infinity}',
      tr: undefined,
      r: '[1,5]',
      o: '4000000000',
    },
  ]
  const back = await roundTrip(name, columns, rows, { format: 'binary' }, 'one', EXACT)
  const asText = `SELECT j::text AS j, jb::text AS jb, ts::text AS ts, tstz::text AS tstz FROM ${name}`
  const binaryText = (await db.query(asText)).rows[0]
  assert.deepStrictEqual(binaryText, {
    j: '{"keep":   "spacing",  "n": 1.000000000000000000001}',
    jb: '{"n": 1.000000000000000000001}',
    ts: '2024-02-29 12:34:56.123456',
    tstz: '2024-02-29 07:04:56.789+00',
  })
  const text = await roundTrip(name, columns, rows, { format: 'text' }, 'one', EXACT)
  // The server parsed the text form; binary must have given exactly the same values.
  assert.deepStrictEqual(back, text)
  assert.deepStrictEqual((await db.query(asText)).rows[0], binaryText)

  const refused: [string, unknown, RegExp][] = [
    ['i4', 'forty-two', /^COPY row 2, column "i4" \(int4\): .*format: 'text'/],
    ['i4', ' 42', /int4/],
    ['b', 'true', /bool/],
    ['tstz', '2024-02-29 12:34:56', /UTC offset/],
    ['tstz', '294277-01-01 00:00:00+00', /timestamptz/],
    ['ts', '2024-02-29 24:00:01', /timestamp/],
    ['da', '{2024-01-01, today}', /date\[\]/],
    ['ta', '{a,b}', /text\[\]/],
    ['j', 42n, /json/],
    ['f4', '0.1', /float4/],
    ['iv', '1 day', /interval/],
    ['d', 'today', /date/],
    ['mac', '08:00:2b:01:02', /macaddr/],
  ]
  for (const [column, value, message] of refused) {
    const enc = createCopyEncoder(columns, new TypeCatalog(), { format: 'binary' })
    const w = new Writer()
    enc.writeHeader(w)
    enc.encodeRow(w, { id: 1, t: 'before' })
    const good = w.length
    assert.throws(
      () => enc.encodeRow(w, { id: 2, [column]: value }),
      (err: unknown) => err instanceof CopyRowError && err.row === 2 && err.column === column && message.test(err.message),
      `${column} = ${String(value)}`,
    )
    assert.equal(w.length, good, 'a refused row leaves nothing behind')
    enc.encodeRow(w, { id: 3, t: 'after' })
    enc.writeTrailer(w)
    await wire.exec(`TRUNCATE ${name}`)
    assert.equal(await wire.copyIn(copyFromStatement(name, columns.map((c) => c.name)), [w.take()]), 'COPY 2')
    assert.deepStrictEqual((await db.query(`SELECT id, t FROM ${name} ORDER BY id`)).rows, [
      { id: 1, t: 'before' },
      { id: 3, t: 'after' },
    ])
  }
  // What binary refuses, text sends for the server to parse.
  const accepted = await roundTrip(name, columns, [{ id: 1, i4: ' 42', b: 'true', f4: '0.1', iv: '1 day', mac: '0800.2b01.0203' }], { format: 'text' }, 'one')
  const r = accepted[0] as unknown[]
  assert.equal(r[2], 42)
  assert.equal(r[7], true)
  assert.equal(r[4], Math.fround(0.1))
})

test('COPY FROM: a subset of columns in a different order, objects with missing and extra keys', async () => {
  const { name } = await createTable()
  const columns: CopyColumn[] = [
    { name: 't', typeOid: 25 },
    { name: 'id', typeOid: 23 },
    { name: 'tstz', typeOid: 1184 },
  ]
  const at = new Date('2024-05-06T07:08:09.010Z')
  for (const variant of INPUT_VARIANTS) {
    await wire.exec(`TRUNCATE ${name}`)
    const bytes = encode(columns, [{ id: 1, t: 'a', extra: 'ignored' }, ['b', 2, at], { id: 3, tstz: undefined, t: undefined }], variant)
    await wire.copyIn(copyFromStatement(name, columns.map((c) => c.name), variant), [bytes])
    const rows = (await db.query(`SELECT id, t, tstz, i4 FROM ${name} ORDER BY id`)).rows
    assert.deepStrictEqual(rows, [
      { id: 1, t: 'a', tstz: null, i4: null },
      { id: 2, t: 'b', tstz: at, i4: null },
      { id: 3, t: null, tstz: null, i4: null },
    ], JSON.stringify(variant))
  }
})

test('COPY FROM: enums, composites and domains through a catalog that knows them', async () => {
  const base = uniqueName('copy_fmt_utypes')
  cleanup.push(`DROP TABLE IF EXISTS ${base}; DROP TYPE IF EXISTS ${base}_e; DROP TYPE IF EXISTS ${base}_c; DROP DOMAIN IF EXISTS ${base}_d`)
  await wire.exec(`CREATE TYPE ${base}_e AS ENUM ('sad', 'ok', 'happy, "really"');
    CREATE TYPE ${base}_c AS (n int4, s text, at timestamptz);
    CREATE DOMAIN ${base}_d AS numeric(10,2) CHECK (VALUE > 0);
    CREATE TABLE ${base} (id int4, mood ${base}_e, c ${base}_c, d ${base}_d)`)
  const catalog = await catalogWithUserTypes(base)
  const described = await db.query(`SELECT * FROM ${base} LIMIT 0`)
  const columns = described.fields.map((f) => ({ name: f.name, typeOid: f.typeOid }))
  const rows = [
    [1, 'happy, "really"', { n: 1, s: 'a,b\t"c"\\', at: new Date('2024-01-01T00:00:00Z') }, '12.50'],
    [2, 'sad', { n: null, s: '', at: null }, null],
  ]
  for (const variant of INPUT_VARIANTS) {
    await wire.exec(`TRUNCATE ${base}`)
    await wire.copyIn(copyFromStatement(base, columns.map((c) => c.name), variant), [encode(columns, rows, variant, catalog)])
    assert.deepStrictEqual((await db.query(`SELECT * FROM ${base} ORDER BY id`, [], { rowMode: 'array' })).rows, rows, JSON.stringify(variant))
  }
  // A domain's CHECK is the server's: binary data does not bypass it.
  await assert.rejects(wire.copyIn(copyFromStatement(base, ['id', 'd']), [encode([columns[0]!, columns[3]!], [[3, '-1']], {}, catalog)]), /violates check constraint/)
})

test('COPY statements: quoted names, odd option characters and a query ending in a comment', async () => {
  const table = uniqueName('copy_fmt "odd" name')
  const quoted = `"${table.replaceAll('"', '""')}"`
  cleanup.push(`DROP TABLE IF EXISTS ${quoted}`)
  await wire.exec(`CREATE TABLE ${quoted} ("a ""b""" text, "ÄÖ" int4)`)
  const columns: CopyColumn[] = [
    { name: 'a "b"', typeOid: 25 },
    { name: 'ÄÖ', typeOid: 23 },
  ]
  const variants: CopyFormatOptions[] = [{ format: 'csv', delimiter: "'", quote: '\\', escape: '"' }, { format: 'text', delimiter: '\x01' }, { format: 'csv', delimiter: '\\', quote: "'" }]
  for (const variant of variants) {
    await wire.exec(`TRUNCATE ${quoted}`)
    const rows = [["it's \\ \"x\" \x01 ,", 1], [null, null], ['', 3]]
    await wire.copyIn(copyFromStatement(quoted, columns.map((c) => c.name), variant), [encode(columns, rows, variant)])
    const out = await wire.copyOut(copyToStatement(`SELECT * FROM ${quoted} ORDER BY 2 -- a comment; with a semicolon`, variant))
    assert.deepStrictEqual(decodeAll(out.payloads, columns, new TypeCatalog(), {}, variant), rows.slice().sort((a, b) => Number(a[1] ?? 9) - Number(b[1] ?? 9)), JSON.stringify(variant))
  }
})

test('COPY both ways: a single text column holding \\. (the old end-of-data marker), empty strings and NULLs', async () => {
  const table = uniqueName('copy_fmt_one')
  cleanup.push(`DROP TABLE IF EXISTS ${table}`)
  await wire.exec(`CREATE TABLE ${table} (n serial, t text)`)
  const columns: CopyColumn[] = [{ name: 't', typeOid: 25 }]
  const values = ['\\.', '', null, '.', '\\', '\\N', 'x']
  for (const variant of INPUT_VARIANTS) {
    await wire.exec(`TRUNCATE ${table}`)
    const tag = await wire.copyIn(copyFromStatement(table, ['t'], variant), [encode(columns, values.map((v) => [v]), variant)])
    assert.equal(tag, `COPY ${values.length}`, JSON.stringify(variant))
    const out = await wire.copyOut(copyToStatement(`SELECT t FROM ${table} ORDER BY n`, variant))
    assert.deepStrictEqual(decodeAll(out.payloads, columns, new TypeCatalog(), {}, variant), values.map((v) => [v]), JSON.stringify(variant))
  }
})
