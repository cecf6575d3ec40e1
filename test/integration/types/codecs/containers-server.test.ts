// test-tags: matrix, pglite
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CodecError, defaultTypeOptions, type Codec } from '../../../../src/types/codec.js'
import { arrayCodec } from '../../../../src/types/codecs/array.js'
import { readFloat64 } from '../../../../src/types/codecs/binary.js'
import { registerContainers } from '../../../support/codecs/register-containers.js'
import { Range } from '../../../../src/types/range.js'
import { utf8Read } from '../../../../src/protocol/utf8.js'
import { fetchValue, echoParam } from '../../../support/codecs/raw-values.js'
import { decodeAt, encodeBinary, testTable } from '../../../support/codecs/container-elements.js'
import { decodeBoth, echoAll, lowerBoundsOf } from '../../../support/codecs/container-checks.js'

// Arrays against a real server: decoders on the bytes it sends in text and in
// binary (which must decode to identical values), encoders by what it reads.

const table = testTable()
// box, to see the ';' delimiter on the wire: both formats as '(x1,y1),(x2,y2)'.
table.set(603, {
  name: 'box',
  decodeText: utf8Read,
  decodeBinary: (buf, start) => {
    const f = (i: number) => String(readFloat64(buf, start + 8 * i))
    return `(${f(0)},${f(1)}),(${f(2)},${f(3)})`
  },
  encodeText: (v) => String(v),
})
registerContainers(table, defaultTypeOptions)
const codec = (oid: number): Codec => table.get(oid)!
const major = Math.floor(Number((await fetchValue("current_setting('server_version_num')", 0))!.toString()) / 10000)

function withBounds<T extends unknown[]>(v: T, lbs: number[]): T {
  Object.defineProperty(v, 'lowerBounds', { value: lbs, enumerable: false })
  return v
}

async function checkDecoded(oid: number, cases: [string, unknown, number[]?][]): Promise<void> {
  const values = await decodeBoth(codec(oid), cases.map(([expr]) => expr))
  cases.forEach(([expr, expected, lbs], i) => {
    assert.deepStrictEqual(values[i], expected, expr)
    assert.deepStrictEqual(lowerBoundsOf(values[i]), lbs, `lower bounds of ${expr}`)
  })
}

test('int4[]: NULLs, empty, multi-dimensional, lower bounds, extremes', async () => {
  await checkDecoded(1007, [
    ["'{1,2,NULL}'::int4[]", [1, 2, null]],
    ["'{}'::int4[]", []],
    ['ARRAY[NULL]::int4[]', [null]],
    ["'{-2147483648,2147483647}'::int4[]", [-2147483648, 2147483647]],
    ["'{{1,2},{3,4}}'::int4[]", [[1, 2], [3, 4]]],
    ["'{{{1},{2}},{{3},{NULL}}}'::int4[]", [[[1], [2]], [[3], [null]]]],
    ['array_fill(7, ARRAY[1,1,1,1,1,2])', [[[[[[7, 7]]]]]]],
    ["'[0:2]={1,2,3}'::int4[]", [1, 2, 3], [0]],
    ["'[2:3][1:2]={{1,2},{3,4}}'::int4[]", [[1, 2], [3, 4]], [2, 1]],
    ["'[-5:-5][7:8]={{NULL,1}}'::int4[]", [[null, 1]], [-5, 7]],
    ["'[1:2]={1,2}'::int4[]", [1, 2]],
    ["('{1,2,3}'::int4[])[2:3]", [2, 3]],
  ])
})

test('text[]: every element that needs quotes or escapes, non-ASCII, 2-D', async () => {
  const strings = ['a b', '', 'NULL', 'null', 'x"y', 'a\\b', '{}', '{', '}', ',', ';', 'é😀', '\ttab', ' lead', 'trail ', '(', ')', "'", 'plain', 'x'.repeat(2000)]
  const sql = (s: string) => `'${s.replaceAll("'", "''")}'`
  await checkDecoded(1009, [
    [`ARRAY[${strings.map(sql).join(',')}]::text[]`, strings],
    ["ARRAY[NULL, 'NULL', '']::text[]", [null, 'NULL', '']],
    ["ARRAY[['a','b c'],['\"',NULL]]::text[]", [['a', 'b c'], ['"', null]]],
    ["'[0:0]={\"x y\"}'::text[]", ['x y'], [0]],
  ])
})

test('float8[], bool[], bytea[], numeric[], date[], timestamp[], int8[] elements', async () => {
  await checkDecoded(1022, [["'{1.5,-0,Infinity,-Infinity,NaN,1e308,5e-324,NULL}'::float8[]", [1.5, -0, Infinity, -Infinity, NaN, 1e308, 5e-324, null]]])
  await checkDecoded(1000, [["'{t,f,NULL}'::bool[]", [true, false, null]]])
  await checkDecoded(1001, [["ARRAY['\\x0102'::bytea, '', NULL, '\\x7b7d2c22'::bytea]", [Uint8Array.of(1, 2), new Uint8Array(0), null, Uint8Array.of(0x7b, 0x7d, 0x2c, 0x22)]]])
  if (major >= 14) {
    await checkDecoded(1231, [
      ["'{1.50,-0.001,NaN,123456789012345678901234567890.123,0,Infinity,-Infinity}'::numeric[]", ['1.50', '-0.001', 'NaN', '123456789012345678901234567890.123', '0', 'Infinity', '-Infinity']],
    ])
  } else {
    // numeric has Infinity from PostgreSQL 14 on.
    await checkDecoded(1231, [["'{1.50,-0.001,NaN,123456789012345678901234567890.123,0}'::numeric[]", ['1.50', '-0.001', 'NaN', '123456789012345678901234567890.123', '0']]])
    await assert.rejects(fetchValue("'{Infinity}'::numeric[]", 0), /SQLSTATE 22P02/, `PostgreSQL ${major} has no numeric Infinity`)
  }
  await checkDecoded(1182, [["'{2024-02-29,infinity,-infinity,0001-01-01}'::date[]", ['2024-02-29', 'infinity', '-infinity', '0001-01-01']]])
  await checkDecoded(1115, [["'{\"2024-01-01 00:00:00\",\"2024-01-01 12:34:56.789\",infinity}'::timestamp[]", ['2024-01-01 00:00:00', '2024-01-01 12:34:56.789', 'infinity']]])
  await checkDecoded(1185, [["ARRAY['2024-01-01 00:00:00+00'::timestamptz]", ['2024-01-01 00:00:00+00']]])
  await checkDecoded(1016, [["'{-9223372036854775808,9223372036854775807,NULL}'::int8[]", [-9223372036854775808n, 9223372036854775807n, null]]])
})

test('box[] uses ";" between elements', async () => {
  assert.equal((await fetchValue("ARRAY['(1,1),(0,0)'::box, '(2.5,2),(1,1)']", 0))!.toString(), '{(1,1),(0,0);(2.5,2),(1,1)}')
  await checkDecoded(1020, [["ARRAY['(1,1),(0,0)'::box, '(2.5,2),(1,1)']", ['(1,1),(0,0)', '(2.5,2),(1,1)']]])
  assert.equal(await echoParam(1020, 0, new TextEncoder().encode(codec(1020).encodeText(['(3,3),(1,1)', '(4,4),(2,2)']))), '{(3,3),(1,1);(4,4),(2,2)}')
})

test('arrays of ranges, multiranges and records', async () => {
  await checkDecoded(3905, [["'{\"[1,3)\",empty,NULL,\"(,5]\"}'::int4range[]", [new Range(1, 3), Range.empty(), null, new Range(null, 6)]]])
  if (major >= 14) await checkDecoded(6150, [["ARRAY['{[1,3),[5,7)}'::int4multirange, '{}', NULL]", [[new Range(1, 3), new Range(5, 7)], [], null]]])
  // Multiranges came with PostgreSQL 14.
  else await assert.rejects(fetchValue("ARRAY['{[1,3)}'::int4multirange]", 0), /SQLSTATE 42704/, `PostgreSQL ${major} has no multiranges`)
  // record[]: typed in binary; text has only strings (see record.ts), so binary alone here.
  const b = await fetchValue("ARRAY[ROW(1, 'a'::text), NULL, ROW(2, NULL::text)]", 1)
  assert.deepStrictEqual(decodeAt(codec(2287).decodeBinary!, b!), [[1, 'a'], null, [2, null]])
  const t = await fetchValue("ARRAY[ROW(1, 'a b'::text), NULL]", 0)
  assert.deepStrictEqual(decodeAt(codec(2287).decodeText, t!), [['1', 'a b'], null])
})

test('int4[] parameters: binary, text, lower bounds, typed arrays, strings', async () => {
  const values: unknown[] = [
    [1, 2, null],
    [],
    [[1, 2], [3, 4]],
    withBounds([1, 2, 3], [0]),
    withBounds([[1, 2], [3, 4]], [-3, 5]),
    Int32Array.from([7, -8]),
    [[[[[[1, 2]]]]]],
    [null, null],
  ]
  const printed = ['{1,2,NULL}', '{}', '{{1,2},{3,4}}', '[0:2]={1,2,3}', '[-3:-2][5:6]={{1,2},{3,4}}', '{7,-8}', '{{{{{{1,2}}}}}}', '{NULL,NULL}']
  const expected = values.map((v) => (v instanceof Int32Array ? Array.from(v) : v))
  for (const forceText of [false, true]) {
    const r = await echoAll(codec(1007), 1007, values, forceText)
    assert.deepStrictEqual(r.formats, values.map(() => (forceText ? 0 : 1)))
    assert.deepStrictEqual(r.printed, printed)
    assert.deepStrictEqual(r.decoded, expected)
    r.decoded.forEach((v, i) => assert.deepStrictEqual(lowerBoundsOf(v), lowerBoundsOf(values[i])))
  }
  // An element that is a string: the whole array goes as text, and the server parses it.
  const mixed = await echoAll(codec(1007), 1007, [[1, '2', null], '{5,6}', '[3:3]={9}'])
  assert.deepStrictEqual(mixed.formats, [0, 0, 0])
  assert.deepStrictEqual(mixed.printed, ['{1,2,NULL}', '{5,6}', '[3:3]={9}'])
  assert.deepStrictEqual(lowerBoundsOf(mixed.decoded[2]), [3])
})

test('text[], float8[], bool[], bytea[], int8[] parameters in both formats', async () => {
  const strings = [['a b', '', 'NULL', 'null', 'x"y', 'a\\b', '{}', ',', 'é😀', '\t', ' lead', 'trail ', null]]
  const cases: [number, unknown[]][] = [
    [1009, strings],
    [1009, [[['a', 'b'], ['{', '}']]]],
    [1022, [[1.5, -0, Infinity, -Infinity, NaN, 5e-324, null]]],
    [1000, [[true, false, null]]],
    [1001, [[Uint8Array.of(1, 2), new Uint8Array(0), null]]],
    [1016, [[-9223372036854775808n, 9223372036854775807n], BigInt64Array.from([1n, -2n])]],
  ]
  for (const [oid, values] of cases) {
    for (const forceText of [false, true]) {
      const r = await echoAll(codec(oid), oid, values, forceText)
      const expected = values.map((v) => (ArrayBuffer.isView(v) ? Array.from(v as BigInt64Array) : v))
      assert.deepStrictEqual(r.decoded, expected, `${codec(oid).name} forceText=${forceText}`)
    }
  }
  assert.deepStrictEqual((await echoAll(codec(1009), 1009, strings)).printed, [
    '{"a b","","NULL","null","x\\"y","a\\\\b","{}",",",é😀,"\t"," lead","trail ",NULL}',
  ])
})

test('arrays of dates and timestamps given as strings go as text', async () => {
  const r = await echoAll(codec(1182), 1182, [['2024-02-29', null, 'infinity']])
  assert.deepStrictEqual(r.formats, [0])
  assert.deepStrictEqual(r.decoded, [['2024-02-29', null, 'infinity']])
  const ts = await echoAll(codec(1115), 1115, [['2024-01-01 12:34:56.5']])
  assert.deepStrictEqual(ts.decoded, [['2024-01-01 12:34:56.5']])
})

test('the server refuses what it must: sanity of the encoders by contrast', async () => {
  // A binary array whose element OID is not the parameter's element type is refused,
  // which is why the encoder writes the element OID it was built with.
  const wrong = arrayCodec(table.get(23)!, 20, ',')
  await assert.rejects(echoParam(1007, 1, encodeBinary(wrong, [1]) as Uint8Array), /SQLSTATE 42804/)
  assert.throws(() => encodeBinary(codec(1007), [[1], [2, 3]]), CodecError)
})
