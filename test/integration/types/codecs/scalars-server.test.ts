// test-tags: matrix, pglite
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { RawConnection, echoParam, fetchValue } from '../../../support/codecs/raw-values.js'
import { checkDecoding, decodeIn, selectRow, type TypeCases } from '../../../support/codecs/type-roundtrip.js'
import { Money } from '../../../../src/types/money.js'
import { Writer } from '../../../../src/protocol/writer.js'
import type { Codec, TypeOptions } from '../../../../src/types/codec.js'
import { codecOf } from '../../../support/codecs/scalar-table.js'
import { NOT_ON_PGLITE, serverOnly } from '../../../support/target.js'

// Scalar decoders against the bytes a real server sends, in text and in binary
// (which must decode to identical values), and scalar encoders against what the
// server understood.

const major = Math.floor(Number((await fetchValue("current_setting('server_version_num')", 0))!.toString()) / 10000)
// numeric has Infinity from PostgreSQL 14 on: before it the server refuses it, as text (22P02) and in binary (22P03).
const numericInfinity = major >= 14
const isNumericInfinity = (v: unknown) => v === Infinity || v === -Infinity || (typeof v === 'string' && /inf/i.test(v))

/** The one value of `SELECT expr` and its type. */
async function select(expr: string, format: 0 | 1, conn?: RawConnection): Promise<{ oid: number; bytes: Buffer | null }> {
  const { values, oids } = await selectRow([expr], [], format, conn)
  return { oid: oids[0]!, bytes: values[0]! }
}

/** Checks that each expression has type `oid` and decodes to its expected value, from text and binary alike. */
async function checkAll(oid: number, cases: TypeCases, options: TypeOptions = {}): Promise<void> {
  await checkDecoding(codecOf(oid, options), cases, { oid })
}

test('bool', async () => {
  await checkAll(16, [
    ['true', true],
    ['false', false],
    ["'yes'::bool", true],
  ])
})

test('int2, int4, int8 (as bigint, number and string) at their limits', async () => {
  await checkAll(21, [
    ['0::int2', 0],
    ['32767::int2', 32767],
    ['(-32768)::int2', -32768],
    ['(-1)::int2', -1],
  ])
  await checkAll(23, [
    ['0', 0],
    ['2147483647', 2147483647],
    ['(-2147483648)::int4', -2147483648],
    ['-12345', -12345],
  ])
  await checkAll(20, [
    ['0::int8', 0n],
    ['9223372036854775807::int8', 9223372036854775807n],
    ['(-9223372036854775808)::int8', -9223372036854775808n],
    ['9007199254740993::int8', 9007199254740993n],
    ['(-4294967296)::int8', -4294967296n],
  ])
  await checkAll(
    20,
    [
      ['9007199254740991::int8', 9007199254740991],
      ['(-9007199254740991)::int8', -9007199254740991],
      ['(-1)::int8', -1],
    ],
    { int8: 'number' },
  )
  await checkAll(
    20,
    [
      ['9223372036854775807::int8', '9223372036854775807'],
      ['(-9223372036854775808)::int8', '-9223372036854775808'],
    ],
    { int8: 'string' },
  )
  // Refused in both formats rather than rounded.
  const c = codecOf(20, { int8: 'number' })
  for (const format of [0, 1] as const) {
    const { bytes } = await select('9007199254740992::int8', format)
    assert.throws(() => decodeIn(format ? c.decodeBinary! : c.decodeText, bytes!), { name: 'CodecError', message: /does not fit a JavaScript number/ })
  }
})

test('oid, xid, cid, xid8, tid, int2vector, oidvector', async () => {
  await checkAll(26, [
    ['4294967295::oid', 4294967295],
    ['0::oid', 0],
    ["'pg_class'::regclass::oid", 1259],
  ])
  await checkAll(28, [["'4294967295'::xid", 4294967295], ["'3'::xid", 3]])
  await checkAll(29, [["'0'::cid", 0], ["'4294967295'::cid", 4294967295]])
  await checkAll(5069, [
    ["'18446744073709551615'::xid8", 18446744073709551615n],
    ["'0'::xid8", 0n],
  ])
  await checkAll(27, [
    ["'(0,1)'::tid", '(0,1)'],
    ["'(4294967295,65535)'::tid", '(4294967295,65535)'],
  ])
  await checkAll(22, [
    ["'1 2 3'::int2vector", [1, 2, 3]],
    ["''::int2vector", []],
    ["'-32768 32767'::int2vector", [-32768, 32767]],
    ['(SELECT indkey FROM pg_index WHERE indexrelid = 2662)', [1]],
  ])
  await checkAll(30, [
    ["'1 4294967295'::oidvector", [1, 4294967295]],
    ["''::oidvector", []],
    ["(SELECT proargtypes FROM pg_proc WHERE oid = 'int4pl'::regproc)", [23, 23]],
  ])
})

test('reg* types: the name in text, the OID in binary', async () => {
  const cases: [number, string, string][] = [
    [24, "'now'::regproc", 'now'],
    [2202, "'now()'::regprocedure", 'now()'],
    [2203, "'||/'::regoper", '||/'],
    [2204, "'+(int4,int4)'::regoperator", '+(integer,integer)'],
    [2205, "'pg_class'::regclass", 'pg_class'],
    [2206, "'int4'::regtype", 'integer'],
    [3734, "'english'::regconfig", 'english'],
    [3769, "'simple'::regdictionary", 'simple'],
    [4089, "'pg_catalog'::regnamespace", 'pg_catalog'],
    [4096, "'pg_monitor'::regrole", 'pg_monitor'],
    [4191, `'"C"'::regcollation`, '"C"'],
  ]
  for (const [oid, expr, name] of cases) {
    const c = codecOf(oid)
    const text = await select(expr, 0)
    assert.equal(text.oid, oid)
    assert.equal(decodeIn(c.decodeText, text.bytes!), name)
    const binary = await select(expr, 1)
    const expectedOid = Number((await select(`(${expr})::oid`, 0)).bytes!.toString())
    assert.equal(decodeIn(c.decodeBinary!, binary.bytes!), expectedOid, expr)
  }
})

test('float4: specials, -0, subnormals, rounding; text gives the same float32 as binary', async () => {
  await checkAll(700, [
    ["'NaN'::float4", NaN],
    ["'Infinity'::float4", Infinity],
    ["'-Infinity'::float4", -Infinity],
    ["'-0'::float4", -0],
    ["'0'::float4", 0],
    ["'0.1'::float4", Math.fround(0.1)],
    ["'1.5'::float4", 1.5],
    ["'3.4028235e38'::float4", Math.fround(3.4028235e38)],
    ["'-3.4028235e38'::float4", -Math.fround(3.4028235e38)],
    ["'1e-45'::float4", Math.fround(1e-45)],
    ["'1.17549435e-38'::float4", Math.fround(1.17549435e-38)],
    ["'16777217'::float4", 16777216],
    ["'3.14159265358979'::float4", Math.fround(3.14159265358979)],
  ])
})

test('float8: specials, -0, subnormals, extremes', async () => {
  await checkAll(701, [
    ["'NaN'::float8", NaN],
    ["'Infinity'::float8", Infinity],
    ["'-Infinity'::float8", -Infinity],
    ["'-0'::float8", -0],
    ['0.1::float8', 0.1],
    ["'1.7976931348623157e308'::float8", Number.MAX_VALUE],
    ["'-1.7976931348623157e308'::float8", -Number.MAX_VALUE],
    ["'5e-324'::float8", 5e-324],
    ["'2.2250738585072014e-308'::float8", 2.2250738585072014e-308],
    ["'1e21'::float8", 1e21],
    ["'1e-7'::float8", 1e-7],
    ['123456789.123::float8', 123456789.123],
    ['0.1::float8 + 0.2::float8', 0.30000000000000004],
    ['pi()', Math.PI],
  ])
})

test('numeric: exactly PostgreSQL text, with scale, huge weight, tiny scale and specials', async () => {
  const thousand = '9'.repeat(1000)
  await checkAll(1700, [
    ["'12.300'::numeric", '12.300'],
    ["'-0.00012'::numeric", '-0.00012'],
    ["'NaN'::numeric", 'NaN'],
    ...(numericInfinity
      ? ([
          ["'Infinity'::numeric", 'Infinity'],
          ["'-Infinity'::numeric", '-Infinity'],
        ] as const)
      : []),
    ["'0'::numeric", '0'],
    ["'0.00'::numeric", '0.00'],
    ["'-0.000'::numeric", '0.000'],
    ["'10000'::numeric", '10000'],
    ["'9999.9999'::numeric", '9999.9999'],
    ["'0.0001'::numeric", '0.0001'],
    ["'1e-130'::numeric", `0.${'0'.repeat(129)}1`],
    ["'1e1000'::numeric", '1' + '0'.repeat(1000)],
    [`'-${thousand}.${thousand}'::numeric`, `-${thousand}.${thousand}`],
    ["'1e-16383'::numeric", `0.${'0'.repeat(16382)}1`],
    ["'1e131071'::numeric", '1' + '0'.repeat(131071)],
    ["'12.5'::numeric(10, 4)", '12.5000'],
    ['1::numeric / 3', '0.33333333333333333333'],
    ["'12.3400'::numeric * 2", '24.6800'],
    ['factorial(30)', '265252859812191058636308480000000'],
  ])
  await checkAll(
    1700,
    [
      ["'12.300'::numeric", 12.3],
      ["'NaN'::numeric", NaN],
      ...(numericInfinity ? ([["'-Infinity'::numeric", -Infinity]] as const) : []),
      ["'0.1'::numeric", 0.1],
    ],
    { numeric: 'number' },
  )
  if (!numericInfinity) await assert.rejects(fetchValue("'Infinity'::numeric", 0), /SQLSTATE 22P02/, `PostgreSQL ${major} has no numeric Infinity`)
})

test('money: minor units from text and binary', async () => {
  await checkAll(790, [
    ["'1234.56'::money", new Money(123456n)],
    ["'-1.00'::money", new Money(-100n)],
    ["'($1.00)'::money", new Money(-100n)],
    ["'0'::money", new Money(0n)],
    ["'92233720368547758.07'::money", new Money(9223372036854775807n)],
    ["'-92233720368547758.08'::money", new Money(-9223372036854775808n)],
  ])
})

test('text types: empty, non-ASCII, 4-byte UTF-8, large', async () => {
  await checkAll(25, [
    ["''::text", ''],
    ["'héllo wörld'::text", 'héllo wörld'],
    ["'😀𝄞 日本'::text", '😀𝄞 日本'],
    ["E'tab\\there\\nnewline'", 'tab\there\nnewline'],
    ["repeat('ab', 100000)", 'ab'.repeat(100000)],
  ])
  await checkAll(1043, [["'abc'::varchar(5)", 'abc'], ["''::varchar", '']])
  await checkAll(1042, [["'ab'::char(4)", 'ab  '], ["'é'::char(2)", 'é ']])
  await checkAll(19, [["'pg_class'::name", 'pg_class'], ['current_database()', (await select('current_database()::text', 0)).bytes!.toString()]])
  await checkAll(18, [
    [`'a'::"char"`, 'a'],
    [`''::"char"`, ''],
    // PostgreSQL 15 reads and writes bytes above 127 as \ooo; before it, "char" input kept a string's
    // first byte (the backslash here) and the output of a high byte was that byte, raw.
    ...(major >= 15
      ? ([
          [`'\\201'::"char"`, '\\201'],
          [`'\\377'::"char"`, '\\377'],
        ] as const)
      : ([[`'\\201'::"char"`, '\\']] as const)),
    [`'\\'::"char"`, '\\'],
  ])
  await checkAll(142, [["'<a>é</a>'::xml", '<a>é</a>']])
  await checkAll(1790, [["'cursor 1'::refcursor", 'cursor 1']])
  await checkAll(2275, [["'c string'::cstring", 'c string']])
  await checkAll(194, [["(SELECT ev_action FROM pg_rewrite WHERE ev_class = 'pg_tables'::regclass)", (await select("(SELECT ev_action::text FROM pg_rewrite WHERE ev_class = 'pg_tables'::regclass)", 0)).bytes!.toString()]])
})

test('bytea: empty, all byte values, large; hex and escape output', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
  const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
  const large = Buffer.alloc(300000, 0x5c)
  const cases: [string, unknown][] = [
    ["''::bytea", Buffer.alloc(0)],
    ["'\\x00ff5c27'::bytea", Buffer.from([0, 255, 0x5c, 0x27])],
    ["'\\x" + all.toString('hex') + "'::bytea", all],
    ["decode(repeat('5c', 300000), 'hex')", large],
  ]
  await checkAll(17, cases)
  // bytea_output = 'escape', on a connection of its own.
  const conn = await RawConnection.open()
  try {
    await conn.run("SET bytea_output = 'escape'", [], 0)
    const c = codecOf(17)
    for (const [expr, expected] of cases) {
      const text = await select(expr, 0, conn)
      assert.deepStrictEqual(decodeIn(c.decodeText, text.bytes!), expected, `${expr} in escape format`)
    }
    assert.equal((await select("'\\x00ff5c27'::bytea", 0, conn)).bytes!.toString('latin1'), "\\000\\377\\\\'", 'the server really used the escape format')
  } finally {
    // run() leaves the socket unreferenced; keep the event loop alive until it has closed.
    const keepAlive = setInterval(() => {}, 1000)
    await conn.close().finally(() => clearInterval(keepAlive))
  }
})

test('uuid: canonical lowercase in both formats', async () => {
  await checkAll(2950, [
    ["'00000000-0000-0000-0000-000000000000'::uuid", '00000000-0000-0000-0000-000000000000'],
    ["'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid", 'ffffffff-ffff-ffff-ffff-ffffffffffff'],
    ["'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid", 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'],
    ["'{a0eebc999c0b4ef8bb6d6bb9bd380a11}'::uuid", 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'],
  ])
})

test('json, jsonb, jsonpath', async () => {
  await checkAll(114, [
    [`'{"a": [1, 2.5, "é😀"], "b": null}'::json`, { a: [1, 2.5, 'é😀'], b: null }],
    [`'null'::json`, null],
    [`'"s"'::json`, 's'],
    [`'{"a":1,"a":2}'::json`, { a: 2 }],
    [`'  [ ]  '::json`, []],
  ])
  await checkAll(3802, [
    [`'{"b": 1, "a": [true, null, "x"]}'::jsonb`, { a: [true, null, 'x'], b: 1 }],
    [`'[1.5e300, -0, 1e-7, 12.50]'::jsonb`, [1.5e300, 0, 1e-7, 12.5]],
    [`'"é"'::jsonb`, 'é'],
    [`'{}'::jsonb`, {}],
  ])
  await checkAll(4072, [
    [`'$.a[*] ? (@ > 1)'::jsonpath`, '$."a"[*]?(@ > 1)'],
    [`'strict $'::jsonpath`, 'strict $'],
  ])
})

test('pg_lsn, void and the text-only system types', async () => {
  await checkAll(3220, [
    ["'0/0'::pg_lsn", '0/0'],
    ["'0/1'::pg_lsn", '0/1'],
    ["'16/B374D848'::pg_lsn", '16/B374D848'],
    ["'00000016/0b374d84'::pg_lsn", '16/B374D84'],
    ["'FFFFFFFF/FFFFFFFF'::pg_lsn", 'FFFFFFFF/FFFFFFFF'],
  ])
  await checkAll(2278, [['pg_sleep(0)', null]])
  for (const [oid, expr] of [
    [2970, 'txid_current_snapshot()'],
    [5038, 'pg_current_snapshot()'],
    [1033, "makeaclitem(10, 10, 'SELECT', false)"],
  ] as const) {
    const expected = (await select(`(${expr})::text`, 0)).bytes!.toString()
    assert.match(expected, /\S/)
    await checkAll(oid, [[expr, expected]])
  }
})

// Encoders, judged by what the server understood: every value through
// encodeBinary (when it accepts) and through encodeText, echoed back as text.

function binaryOf(codec: Codec, v: unknown): Uint8Array | false {
  if (!codec.encodeBinary) return false
  const w = new Writer()
  return codec.encodeBinary(w, v) ? w.take() : false
}

interface EncodeCase {
  oid: number
  value: unknown
  expected: string
  /** The echo expression ($1::text by default). */
  expr?: string
  /** Whether encodeBinary must accept the value (true) or decline it (false). */
  binary: boolean
  /** false when encodeText refuses the value by design. */
  text?: boolean
  /** What a server before PostgreSQL 15 echoes for the text form, where it reads it otherwise ("char": the first byte). */
  textBefore15?: string
}

async function checkEncode(cases: EncodeCase[]): Promise<void> {
  for (const k of cases) {
    const codec = codecOf(k.oid)
    const label = `${codec.name} ${typeof k.value === 'bigint' ? `${k.value}n` : String(k.value).slice(0, 40)}`
    const bin = binaryOf(codec, k.value)
    assert.equal(bin !== false, k.binary, `${label}: binary ${k.binary ? 'accepted' : 'declined'}`)
    if (!numericInfinity && k.oid === 1700 && isNumericInfinity(k.value)) {
      if (bin) await assert.rejects(echoParam(k.oid, 1, bin, k.expr), /SQLSTATE 22P03/, `${label} in binary, refused by PostgreSQL ${major}`)
      await assert.rejects(echoParam(k.oid, 0, Buffer.from(codec.encodeText(k.value)), k.expr), /SQLSTATE 22P02/, `${label} in text, refused by PostgreSQL ${major}`)
      continue
    }
    if (bin) assert.equal(await echoParam(k.oid, 1, bin, k.expr), k.expected, `${label} in binary`)
    if (k.text === false) continue
    const text = codec.encodeText(k.value)
    const expected = major < 15 && k.textBefore15 !== undefined ? k.textBefore15 : k.expected
    assert.equal(await echoParam(k.oid, 0, Buffer.from(text), k.expr), expected, `${label} in text`)
  }
}

test('encoders: bool and integers', async () => {
  await checkEncode([
    { oid: 16, value: true, expected: 'true', binary: true },
    { oid: 16, value: false, expected: 'false', binary: true },
    { oid: 16, value: 'yes', expected: 'true', binary: false },
    { oid: 21, value: 32767, expected: '32767', binary: true },
    { oid: 21, value: -32768, expected: '-32768', binary: true },
    { oid: 21, value: -12n, expected: '-12', binary: true },
    { oid: 21, value: '77', expected: '77', binary: false },
    { oid: 23, value: 2147483647, expected: '2147483647', binary: true },
    { oid: 23, value: -2147483648n, expected: '-2147483648', binary: true },
    { oid: 23, value: -0, expected: '0', binary: true },
    { oid: 20, value: 9223372036854775807n, expected: '9223372036854775807', binary: true },
    { oid: 20, value: -9223372036854775808n, expected: '-9223372036854775808', binary: true },
    { oid: 20, value: 9007199254740991, expected: '9007199254740991', binary: true },
    { oid: 20, value: -9007199254740991, expected: '-9007199254740991', binary: true },
    { oid: 20, value: -4294967297, expected: '-4294967297', binary: true },
    { oid: 20, value: '-5', expected: '-5', binary: false },
    { oid: 26, value: 4294967295, expected: '4294967295', binary: true },
    { oid: 28, value: 4294967295, expected: '4294967295', binary: true },
    { oid: 29, value: 7, expected: '7', binary: true },
    { oid: 5069, value: 18446744073709551615n, expected: '18446744073709551615', binary: true },
    { oid: 5069, value: 2n ** 63n, expected: '9223372036854775808', binary: true },
    { oid: 2205, value: 1259, expected: 'pg_class', binary: true },
    { oid: 2205, value: 'pg_type', expected: 'pg_type', binary: false },
    { oid: 2206, value: 23, expected: 'integer', binary: true },
    { oid: 24, value: 'now', expected: 'now', binary: false },
    { oid: 4096, value: 'pg_monitor', expected: 'pg_monitor', binary: false },
    { oid: 22, value: [1, -2, 32767], expected: '1 -2 32767', binary: false },
    { oid: 30, value: [23, 4294967295], expected: '23 4294967295', binary: false },
    { oid: 27, value: '(4294967295,65535)', expected: '(4294967295,65535)', binary: false },
  ])
})

test('encoders: floats, numeric, money', async () => {
  await checkEncode([
    { oid: 700, value: 0.1, expected: '0.1', binary: true },
    { oid: 700, value: -0, expected: '-0', binary: true },
    { oid: 700, value: NaN, expected: 'NaN', binary: true },
    { oid: 700, value: -Infinity, expected: '-Infinity', binary: true },
    { oid: 700, value: 16777217, expected: '1.6777216e+07', binary: true },
    { oid: 700, value: 1e-45, expected: '1e-45', binary: true },
    { oid: 700, value: 3.4028234663852886e38, expected: '3.4028235e+38', binary: true },
    { oid: 700, value: 1.17549435e-38, expected: '1.1754944e-38', binary: true },
    { oid: 700, value: '2.5', expected: '2.5', binary: false },
    { oid: 701, value: 0.1, expected: '0.1', binary: true },
    { oid: 701, value: -0, expected: '-0', binary: true },
    { oid: 701, value: 5e-324, expected: '5e-324', binary: true },
    { oid: 701, value: Number.MAX_VALUE, expected: '1.7976931348623157e+308', binary: true },
    { oid: 701, value: NaN, expected: 'NaN', binary: true },
    { oid: 701, value: Infinity, expected: 'Infinity', binary: true },
    { oid: 701, value: 2n ** 60n, expected: '1.152921504606847e+18', binary: true },
    { oid: 1700, value: '12.300', expected: '12.300', binary: true },
    { oid: 1700, value: '-0.00012', expected: '-0.00012', binary: true },
    { oid: 1700, value: '-0.00', expected: '0.00', binary: true },
    { oid: 1700, value: 'NaN', expected: 'NaN', binary: true },
    { oid: 1700, value: 'Infinity', expected: 'Infinity', binary: true },
    { oid: 1700, value: '-inf', expected: '-Infinity', binary: true },
    { oid: 1700, value: '1.5E+3', expected: '1500', binary: true },
    { oid: 1700, value: '1e-130', expected: `0.${'0'.repeat(129)}1`, binary: true },
    { oid: 1700, value: '1e1000', expected: '1' + '0'.repeat(1000), binary: true },
    { oid: 1700, value: ' 12 ', expected: '12', binary: false },
    { oid: 1700, value: 0.1, expected: '0.1', binary: true },
    { oid: 1700, value: 1e21, expected: '1000000000000000000000', binary: true },
    { oid: 1700, value: 5e-7, expected: '0.0000005', binary: true },
    { oid: 1700, value: -1.5e-7, expected: '-0.00000015', binary: true },
    { oid: 1700, value: NaN, expected: 'NaN', binary: true },
    { oid: 1700, value: -Infinity, expected: '-Infinity', binary: true },
    { oid: 1700, value: 123456789012345678901234567890n, expected: '123456789012345678901234567890', binary: true },
    { oid: 1700, value: -10000n, expected: '-10000', binary: true },
    { oid: 790, value: new Money(-123456n), expected: '-$1,234.56', binary: true, text: false },
    { oid: 790, value: new Money(9223372036854775807n), expected: '$92,233,720,368,547,758.07', binary: true, text: false },
    { oid: 790, value: 12n, expected: '$12.00', binary: false },
    { oid: 790, value: 12.34, expected: '$12.34', binary: false },
    { oid: 790, value: '-$5.00', expected: '-$5.00', binary: false },
  ])
})

test('encoders: text types, bytea, uuid, json, jsonpath, pg_lsn', async () => {
  const large = Buffer.alloc(1 << 20)
  for (let i = 0; i < large.length; i++) large[i] = (i * 7919) & 255
  const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex')
  await checkEncode([
    { oid: 25, value: 'héllo 😀𝄞', expected: 'héllo 😀𝄞', binary: true },
    { oid: 25, value: '', expected: '', binary: true },
    { oid: 25, value: 42, expected: '42', binary: true },
    { oid: 25, value: 12345678901234567890n, expected: '12345678901234567890', binary: true },
    { oid: 25, value: true, expected: 'true', binary: true },
    { oid: 1043, value: 'varchar ü', expected: 'varchar ü', binary: true },
    { oid: 1042, value: 'ab', expected: 'ab  |', binary: true, expr: "format('%s|', $1::char(4))" },
    { oid: 19, value: 'pg_class', expected: 'pg_class', binary: false },
    { oid: 142, value: '<a>é</a>', expected: '<a>é</a>', binary: false },
    { oid: 1790, value: 'c1', expected: 'c1', binary: true },
    { oid: 18, value: 'a', expected: '97', binary: true, expr: '$1::int4' },
    { oid: 18, value: '', expected: '0', binary: true, expr: '$1::int4' },
    { oid: 18, value: '\\201', expected: '-127', binary: true, expr: '$1::int4', textBefore15: '92' },
    { oid: 18, value: '\\377', expected: '-1', binary: true, expr: '$1::int4', textBefore15: '92' },
    { oid: 17, value: Buffer.from([0, 255, 0x5c, 0x27]), expected: '\\x00ff5c27', binary: true },
    { oid: 17, value: new Uint8Array(0), expected: '\\x', binary: true },
    { oid: 17, value: large, expected: md5(large), binary: true, expr: 'md5($1)' },
    { oid: 17, value: '\\x0a0b', expected: '\\x0a0b', binary: false },
    { oid: 17, value: 'ab\\000', expected: '\\x616200', binary: false },
    { oid: 2950, value: 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', expected: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', binary: true },
    { oid: 2950, value: 'a0eebc999c0b4ef8bb6d6bb9bd380a11', expected: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', binary: true },
    { oid: 2950, value: 'ffffffff-ffff-ffff-ffff-ffffffffffff', expected: 'ffffffff-ffff-ffff-ffff-ffffffffffff', binary: true },
    { oid: 2950, value: '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}', expected: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', binary: false },
    { oid: 114, value: { a: [1, 'é'], b: null }, expected: '{"a":[1,"é"],"b":null}', binary: true },
    { oid: 114, value: '{"raw": 1}', expected: '{"raw": 1}', binary: false },
    { oid: 3802, value: { b: 1, a: [true, null] }, expected: '{"a": [true, null], "b": 1}', binary: true },
    { oid: 3802, value: null, expected: 'null', binary: true },
    { oid: 3802, value: '"just a string"', expected: '"just a string"', binary: false },
    { oid: 3802, value: [1.5e300, 1e-7], expected: `[${'15' + '0'.repeat(299)}, 0.0000001]`, binary: true },
    { oid: 4072, value: '$.a', expected: '$."a"', binary: false },
    { oid: 3220, value: '16/B374D848', expected: '16/B374D848', binary: true },
    { oid: 3220, value: '00000016/0b374d84', expected: '16/B374D84', binary: true },
    { oid: 3220, value: 2n ** 64n - 1n, expected: 'FFFFFFFF/FFFFFFFF', binary: true },
    { oid: 3220, value: 0n, expected: '0/0', binary: true },
  ])
})
