import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CodecError, defaultTypeOptions, type Codec } from '../../../../src/types/codec.js'
import { arrayCodec, registerArrays } from '../../../../src/types/codecs/array.js'
import { compositeCodec } from '../../../../src/types/codecs/composite.js'
import { registerContainers } from '../../../support/codecs/register-containers.js'
import { multirangeCodec } from '../../../../src/types/codecs/multirange.js'
import { rangeCodec } from '../../../../src/types/codecs/range.js'
import { recordCodec } from '../../../../src/types/codecs/record.js'
import {
  OutOfBoundsRead,
  bool,
  bytea,
  bytes,
  decodeAt,
  encodeBinary,
  float8,
  guarded,
  indexedInt4,
  indexedText,
  int4,
  int8,
  testTable,
  text,
  utf8,
} from '../../../support/codecs/container-elements.js'

// Arrays on exact bytes, no server: binary and text, both directions.

const int4Array = arrayCodec(int4, 23, ',')
const textArray = arrayCodec(text, 25, ',')
const boxLike = arrayCodec({ ...text, name: 'box' }, 603, ';')

const decodeText = (c: Codec, s: string) => decodeAt(c.decodeText, utf8(s))
const decodeBinary = (c: Codec, b: Uint8Array) => decodeAt(c.decodeBinary!, b)
const lowerBounds = (v: unknown) => (v as { lowerBounds?: number[] }).lowerBounds

function withBounds<T extends unknown[]>(v: T, lbs: number[]): T {
  Object.defineProperty(v, 'lowerBounds', { value: lbs, enumerable: false })
  return v
}

test('arrayCodec names the type after its element and follows the element for binary support', () => {
  assert.equal(int4Array.name, 'int4[]')
  assert.equal(int4Array.preferBinary, true)
  const textOnly = arrayCodec({ name: 'x', decodeText: () => 1, encodeText: String }, 1, ',')
  assert.equal(textOnly.decodeBinary, undefined)
  assert.equal(textOnly.encodeBinary, undefined)
  assert.equal(arrayCodec({ ...int4, preferBinary: false }, 23, ',').preferBinary, false)
})

test('binary int4[]: one dimension with a NULL, exact bytes both ways', () => {
  const wire = bytes(1, 1, 23, 3, 1, 4, 1, 4, 2, -1)
  assert.deepStrictEqual(decodeBinary(int4Array, wire), [1, 2, null])
  assert.deepStrictEqual(encodeBinary(int4Array, [1, 2, null]), wire)
  // undefined (a hole) is NULL too.
  assert.deepStrictEqual(encodeBinary(int4Array, [1, 2, undefined]), wire)
  // No NULL: the flag is 0.
  assert.deepStrictEqual(encodeBinary(int4Array, [7]), bytes(1, 0, 23, 1, 1, 4, 7))
  assert.deepStrictEqual(decodeBinary(int4Array, bytes(1, 0, 23, 1, 1, 4, 7)), [7])
})

test('binary empty arrays: no dimensions', () => {
  const wire = bytes(0, 0, 23)
  assert.deepStrictEqual(decodeBinary(int4Array, wire), [])
  assert.deepStrictEqual(encodeBinary(int4Array, []), wire)
  // An array with an empty dimension is empty too, in any shape.
  assert.deepStrictEqual(encodeBinary(int4Array, [[], []]), wire)
  assert.deepStrictEqual(decodeBinary(int4Array, bytes(2, 0, 23, 0, 1, 3, 1)), [])
})

test('binary multi-dimensional arrays and lower bounds', () => {
  const wire = bytes(2, 0, 23, 2, 1, 2, 1, 4, 1, 4, 2, 4, 3, 4, 4)
  assert.deepStrictEqual(decodeBinary(int4Array, wire), [
    [1, 2],
    [3, 4],
  ])
  assert.equal(lowerBounds(decodeBinary(int4Array, wire)), undefined)
  assert.deepStrictEqual(encodeBinary(int4Array, [[1, 2], [3, 4]]), wire)

  const shifted = bytes(2, 0, 23, 2, 2, 2, -5, 4, 1, 4, 2, 4, 3, 4, 4)
  const v = decodeBinary(int4Array, shifted) as unknown[]
  assert.deepStrictEqual(v, [[1, 2], [3, 4]])
  assert.deepStrictEqual(lowerBounds(v), [2, -5])
  // Not enumerable: iteration, JSON and equality see a plain array.
  assert.deepStrictEqual(Object.keys(v), ['0', '1'])
  assert.equal(JSON.stringify(v), '[[1,2],[3,4]]')
  assert.deepStrictEqual(encodeBinary(int4Array, v), shifted)

  const zero = bytes(1, 0, 23, 3, 0, 4, 1, 4, 2, 4, 3)
  assert.deepStrictEqual(lowerBounds(decodeBinary(int4Array, zero)), [0])
  assert.deepStrictEqual(encodeBinary(int4Array, withBounds([1, 2, 3], [0])), zero)
  // Bounds of 1 are the default: no property, and encoding them changes nothing.
  assert.deepStrictEqual(encodeBinary(int4Array, withBounds([1, 2, 3], [1])), bytes(1, 0, 23, 3, 1, 4, 1, 4, 2, 4, 3))

  const three = decodeBinary(int4Array, bytes(3, 0, 23, 1, 1, 1, 1, 2, 1, 4, 8, 4, 9)) as unknown[]
  assert.deepStrictEqual(three, [[[8, 9]]])
})

test('binary text[] and bytea[] elements, copied out of the chunk', () => {
  const wire = bytes(1, 1, 25, 4, 1, 3, 'a b', 0, -1, 2, 'é')
  assert.deepStrictEqual(decodeBinary(textArray, wire), ['a b', '', null, 'é'])
  assert.deepStrictEqual(encodeBinary(textArray, ['a b', '', null, 'é']), wire)

  const byteaArray = arrayCodec(bytea, 17, ',')
  const chunk = bytes(1, 0, 17, 2, 1, 2, [1, 2], 0)
  const out = byteaArray.decodeBinary!(chunk, 0, chunk.length) as Uint8Array[]
  assert.deepStrictEqual(out, [Uint8Array.from([1, 2]), new Uint8Array(0)])
  chunk.fill(0)
  assert.deepStrictEqual(out[0], Uint8Array.from([1, 2]), 'decoded bytes must not alias the chunk')
  // A Uint8Array inside a bytea[] is an element, not a dimension.
  assert.deepStrictEqual(encodeBinary(byteaArray, [Uint8Array.from([1, 2]), new Uint8Array(0)]), bytes(1, 0, 17, 2, 1, 2, [1, 2], 0))
})

test('binary float8[], bool[], int8[] elements', () => {
  const f = arrayCodec(float8, 701, ',')
  const v = [1.5, -0, Infinity, NaN]
  const enc = encodeBinary(f, v) as Uint8Array
  assert.deepStrictEqual(decodeBinary(f, enc), v)
  const b = arrayCodec(bool, 16, ',')
  assert.deepStrictEqual(encodeBinary(b, [true, false]), bytes(1, 0, 16, 2, 1, 1, [1], 1, [0]))
  const i8 = arrayCodec(int8, 20, ',')
  const big = [-(2n ** 63n), 2n ** 63n - 1n]
  assert.deepStrictEqual(decodeBinary(i8, encodeBinary(i8, big) as Uint8Array), big)
})

test('typed arrays are one-dimensional arrays', () => {
  const wire = bytes(1, 0, 23, 3, 1, 4, 1, 4, -2, 4, 3)
  assert.deepStrictEqual(encodeBinary(int4Array, Int32Array.from([1, -2, 3])), wire)
  assert.equal(int4Array.encodeText(Int32Array.from([1, -2, 3])), '{1,-2,3}')
  assert.deepStrictEqual(encodeBinary(int4Array, new Int32Array(0)), bytes(0, 0, 23))
  const f = arrayCodec(float8, 701, ',')
  assert.deepStrictEqual(decodeBinary(f, encodeBinary(f, Float64Array.from([0.5, -1])) as Uint8Array), [0.5, -1])
  const i8 = arrayCodec(int8, 20, ',')
  assert.deepStrictEqual(decodeBinary(i8, encodeBinary(i8, BigInt64Array.from([5n, -6n])) as Uint8Array), [5n, -6n])
  assert.throws(() => encodeBinary(int4Array, new DataView(new ArrayBuffer(4))), CodecError)
})

test('a string goes as text; an element that needs text sends the whole array as text', () => {
  assert.equal(encodeBinary(int4Array, '{1,2}'), false)
  assert.equal(int4Array.encodeText('{1,2}'), '{1,2}')
  assert.equal(encodeBinary(int4Array, [1, '2', 3]), false)
  assert.equal(encodeBinary(int4Array, [[1, 2], [3, '4']]), false)
  assert.equal(int4Array.encodeText([1, '2', 3]), '{1,2,3}')
})

test('encoders refuse what is not an array, ragged arrays, too many dimensions, bad elements', () => {
  for (const bad of [5, true, {}, new Date(0), 5n]) {
    assert.throws(() => encodeBinary(int4Array, bad), { name: 'CodecError', message: /int4\[\] needs an array or a string; got / })
    assert.throws(() => int4Array.encodeText(bad), { name: 'CodecError', message: /int4\[\] needs an array/ })
  }
  for (const ragged of [[[1, 2], [3]], [[1, 2], 3], [1, [2]], [[1], [[2]]], [[], [1]], [[[1]], [[1], [2]]]]) {
    assert.throws(() => encodeBinary(int4Array, ragged), { name: 'CodecError', message: /int4\[\] value is not rectangular: the sub-arrays of dimension \d/ })
    assert.throws(() => int4Array.encodeText(ragged), { name: 'CodecError', message: /not rectangular/ })
  }
  assert.throws(() => encodeBinary(int4Array, [[1, 2], [3]]), /dimension 2/)
  const six = [[[[[[1]]]]]]
  assert.deepStrictEqual(decodeBinary(int4Array, encodeBinary(int4Array, six) as Uint8Array), six)
  assert.equal(int4Array.encodeText(six), '{{{{{{1}}}}}}')
  assert.throws(() => encodeBinary(int4Array, [six]), { name: 'CodecError', message: /more than 6 dimensions/ })
  assert.throws(() => int4Array.encodeText([six]), /more than 6 dimensions/)
  // The element codec's own errors come through, and nothing is left written.
  assert.throws(() => encodeBinary(int4Array, [1, 2 ** 31]), { name: 'CodecError', message: 'out of range for int4' })
  assert.throws(() => encodeBinary(int4Array, [1, true]), /int4 needs an integer/)
  assert.throws(() => int4Array.encodeText([1.5]), /int4 needs an integer/)
})

test('lowerBounds on an array parameter is checked', () => {
  assert.throws(() => encodeBinary(int4Array, withBounds([1, 2], [0, 0])), { name: 'CodecError', message: /lowerBounds that is not an array of 1 integers/ })
  assert.throws(() => encodeBinary(int4Array, withBounds([1, 2], [0.5])), /not an integer/)
  assert.throws(() => int4Array.encodeText(withBounds([1, 2], ['0' as unknown as number])), /not an integer/)
  assert.throws(() => encodeBinary(int4Array, withBounds([1, 2], [2147483647])), /out of range/)
  assert.throws(() => encodeBinary(int4Array, withBounds([1], [-2147483649])), /out of range/)
  assert.deepStrictEqual(encodeBinary(int4Array, withBounds([1], [2147483647])), bytes(1, 0, 23, 1, 2147483647, 4, 1))
  // An empty array has no bounds to keep.
  assert.deepStrictEqual(encodeBinary(int4Array, withBounds([], [5])), bytes(0, 0, 23))
  assert.equal(int4Array.encodeText(withBounds([], [5])), '{}')
})

test('malformed binary arrays throw CodecError, at every truncation', () => {
  const good = bytes(2, 1, 25, 2, 1, 1, 0, 1, 'a', -1)
  assert.deepStrictEqual(decodeBinary(textArray, good), [['a'], [null]])
  for (let n = 0; n < good.length; n++) {
    assert.throws(() => decodeBinary(textArray, good.subarray(0, n)), CodecError, `truncated to ${n}`)
  }
  assert.throws(() => decodeBinary(textArray, bytes(good, [0])), /after the last element/)
  assert.throws(() => decodeBinary(int4Array, bytes(1, 0, 25, 1, 1, 4, 1)), { name: 'CodecError', message: /elements of type OID 25 where OID 23/ })
  assert.throws(() => decodeBinary(int4Array, bytes(1, 2, 23, 1, 1, 4, 1)), /flags 2/)
  assert.throws(() => decodeBinary(int4Array, bytes(7, 0, 23)), /7 dimensions/)
  assert.throws(() => decodeBinary(int4Array, bytes(-1, 0, 23)), /-1 dimensions/)
  assert.throws(() => decodeBinary(int4Array, bytes(1, 0, 23, -1, 1)), /length -1/)
  assert.throws(() => decodeBinary(int4Array, bytes(2, 0, 23, 65536, 1, 65536, 1, 4, 1)), /do not fit/)
  assert.throws(() => decodeBinary(int4Array, bytes(1, 0, 23, 1, 1, -2)), /element length -2/)
  assert.throws(() => decodeBinary(int4Array, bytes(1, 0, 23, 1, 1, 5, 1)), /element length 5/)
  assert.throws(() => decodeBinary(int4Array, bytes(0, 0, 23, 0)), /after an empty array/)
  // The element decoder's own check.
  assert.throws(() => decodeBinary(int4Array, bytes(1, 0, 23, 1, 1, 2, [0, 1])), /int4/)
  // Element OID 0 skips the check (for callers that cannot know it).
  assert.deepStrictEqual(decodeBinary(arrayCodec(int4, 0, ','), bytes(1, 0, 99, 1, 1, 4, 1)), [1])
})

test('text decoding: what array_out prints', () => {
  const cases: [Codec, string, unknown][] = [
    [int4Array, '{}', []],
    [int4Array, '{1,2,3}', [1, 2, 3]],
    [int4Array, '{-2147483648,NULL,2147483647}', [-2147483648, null, 2147483647]],
    [int4Array, '{{1,2},{3,4}}', [[1, 2], [3, 4]]],
    [int4Array, '{{{1}},{{2}}}', [[[1]], [[2]]]],
    [int4Array, '{{{{{{1}}}}}}', [[[[[[1]]]]]]],
    [textArray, '{"a b","",NULL,"NULL","null","x\\"y","a\\\\b","{}",",",é}', ['a b', '', null, 'NULL', 'null', 'x"y', 'a\\b', '{}', ',', 'é']],
    [textArray, '{"\\\\"}', ['\\']],
    [textArray, '{"\\""}', ['"']],
    [textArray, '{"(1,\\"a b\\")"}', ['(1,"a b")']],
    [boxLike, '{(1,1),(0,0);(2,2),(1,1)}', ['(1,1),(0,0)', '(2,2),(1,1)']],
    [boxLike, '{"a;b";c}', ['a;b', 'c']],
  ]
  for (const [codec, literal, expected] of cases) {
    const v = decodeText(codec, literal)
    assert.deepStrictEqual(v, expected, literal)
    assert.equal(lowerBounds(v), undefined)
  }
})

test('text decoding: what array_in accepts besides (whitespace, escapes, case, decoration)', () => {
  const cases: [Codec, string, unknown][] = [
    [int4Array, '  { 1 ,\t2\n}  ', [1, 2]],
    [int4Array, '{ { 1 } , { 2 } }', [[1], [2]]],
    [int4Array, '{NULL,null,NuLl}', [null, null, null]],
    [textArray, '{ a b ,c}', ['a b', 'c']],
    [textArray, '{a\\,b,\\\\,\\"}', ['a,b', '\\', '"']],
    [textArray, '{ a\\  , \\ b}', ['a ', ' b']],
    [textArray, '{\\NULL,"NULL"}', ['NULL', 'NULL']],
    [textArray, '{ "a" , "b c" }', ['a', 'b c']],
    [int4Array, '[1:2]={1,2}', [1, 2]],
    [int4Array, '[+1:+2] = {1,2}', [1, 2]],
  ]
  for (const [codec, literal, expected] of cases) assert.deepStrictEqual(decodeText(codec, literal), expected, literal)
})

test('text decoding keeps non-default lower bounds', () => {
  const a = decodeText(int4Array, '[0:2]={1,2,3}')
  assert.deepStrictEqual(a, [1, 2, 3])
  assert.deepStrictEqual(lowerBounds(a), [0])
  const b = decodeText(int4Array, '[-2:-1][1:2]={{1,2},{3,4}}')
  assert.deepStrictEqual(b, [[1, 2], [3, 4]])
  assert.deepStrictEqual(lowerBounds(b), [-2, 1])
  assert.equal(lowerBounds(decodeText(int4Array, '[1:1][1:2]={{1,2}}')), undefined)
  assert.deepStrictEqual(lowerBounds(decodeText(int4Array, '[2147483647:2147483647]={1}')), [2147483647])
  assert.deepStrictEqual(lowerBounds(decodeText(int4Array, '[-2147483648:-2147483648]={1}')), [-2147483648])
})

test('malformed array literals throw CodecError naming the type', () => {
  const bad = [
    '',
    ' ',
    '1,2',
    '{',
    '{1,2',
    '{1,2,',
    '{1,,2}',
    '{,1}',
    '{1,}',
    '{1 2 3',
    '{1,2}x',
    '{1,2}}',
    '{{1},2}',
    '{1,{2}}',
    '{{1,2},{3}}',
    '{{1},{2,3}}',
    '{{}}',
    '{{},{}}',
    '{"1}',
    '{"1"x}',
    '{1"2"}',
    '{1{2}}',
    '{{{{{{{1}}}}}}}',
    '[1:2]{1,2}',
    '[1:2]={1}',
    '[1:2]={{1},{2}}',
    '[0:1][0:1]={1,2}',
    '[1:0]={}',
    '[3:1]={1}',
    '[x]={1}',
    '[1:2={1,2}',
    '[2147483647:2147483648]={1,2}',
    '[99999999999:99999999999]={1}',
    '[1:1][1:1][1:1][1:1][1:1][1:1][1:1]={{{{{{{1}}}}}}}',
    '{\\',
    '{"\\',
    '{1,2\\}',
  ]
  for (const literal of bad) {
    assert.throws(() => decodeText(int4Array, literal), { name: 'CodecError', message: /int4\[\]/ }, JSON.stringify(literal))
  }
  // An element the element decoder rejects.
  assert.throws(() => decodeText(int4Array, '{x}'), /bad int4 text/)
  assert.throws(() => decodeText(int4Array, '{""}'), /bad int4 text/)
})

test('text decoding never reads outside [start, end)', () => {
  // The bytes around the value look like more of the array: a decoder that read
  // past its end would see a different value, or none.
  const literal = utf8('{1,2}')
  for (const filler of [0x7d, 0x2c, 0x22, 0x5c, 0x20]) {
    const buf = new Uint8Array(literal.length + 4).fill(filler)
    buf.set(literal, 2)
    assert.deepStrictEqual(int4Array.decodeText(buf, 2, 2 + literal.length), [1, 2])
    // And a truncated literal inside that buffer fails instead of borrowing bytes.
    assert.throws(() => int4Array.decodeText(buf, 2, 2 + literal.length - 1), CodecError)
  }
})

test('text encoding: array_out quoting rules, NULL, nesting, decoration', () => {
  assert.equal(int4Array.encodeText([]), '{}')
  assert.equal(int4Array.encodeText([1, null, -3, undefined]), '{1,NULL,-3,NULL}')
  assert.equal(int4Array.encodeText([[1, 2], [3, 4]]), '{{1,2},{3,4}}')
  assert.equal(int4Array.encodeText([[], []]), '{}')
  assert.equal(int4Array.encodeText(withBounds([[1, 2], [3, 4]], [0, -3])), '[0:1][-3:-2]={{1,2},{3,4}}')
  assert.equal(int4Array.encodeText(withBounds([7], [1])), '{7}')
  assert.equal(
    textArray.encodeText(['a', 'a b', '', 'NULL', 'nULl', 'NULLS', 'x"y', 'a\\b', '{', '}', ',', ';', 'é', 'tab\there', 'nl\n', 'v\v', 'f\f', 'r\r', "'"]),
    '{a,"a b","","NULL","nULl",NULLS,"x\\"y","a\\\\b","{","}",",",;,é,"tab\there","nl\n","v\v","f\f","r\r",\'}',
  )
  assert.equal(textArray.encodeText([null]), '{NULL}')
  // box uses ';' between elements, so ',' needs no quotes but ';' does.
  assert.equal(boxLike.encodeText(['(1,1),(0,0)', 'a;b']), '{(1,1),(0,0);"a;b"}')
})

test('text round trips through the parser, including every character that needs care', () => {
  const values = ['', ' ', 'NULL', 'null', '"', '\\', '\\"', '{}', '{', '}', ',', ';', ' lead', 'trail ', 'a b', 'é€😀', '\t\n\v\f\r', 'x'.repeat(3000)]
  for (const v of values) {
    const literal = textArray.encodeText([v, [v].length === 1 ? v : v])
    assert.deepStrictEqual(decodeText(textArray, literal), [v, v], JSON.stringify(v))
    assert.deepStrictEqual(decodeText(boxLike, boxLike.encodeText([v])), [v], JSON.stringify(v))
  }
  const nested = [[['a', null], ['"', '\\']], [['{', '}'], ['', ' ']]]
  assert.deepStrictEqual(decodeText(textArray, textArray.encodeText(nested)), nested)
})

test('an escaped element decoded by a decoder that unescapes too (composite in an array)', () => {
  const pair = compositeCodec('pair', [
    { name: 'a', oid: 23, codec: int4 },
    { name: 'b', oid: 25, codec: text },
  ])
  const pairs = arrayCodec(pair, 99, ',')
  // The array unescapes '(1,"x""y")' into its scratch; the composite must not reuse it while reading.
  const literal = '{"(1,\\"x\\"\\"y\\")","(2,\\"a\\\\\\\\b\\")",NULL,"(,)"}'
  assert.deepStrictEqual(decodeText(pairs, literal), [{ a: 1, b: 'x"y' }, { a: 2, b: 'a\\b' }, null, { a: null, b: null }])
  const value = [{ a: 1, b: 'x"y' }, { a: 2, b: 'a\\b' }, null, { a: null, b: '' }]
  assert.deepStrictEqual(decodeText(pairs, pairs.encodeText(value)), value)
  // Composites given positionally are elements, not a second dimension.
  assert.deepStrictEqual(decodeText(pairs, pairs.encodeText([[3, 'c'], { a: 4, b: 'd' }])), [{ a: 3, b: 'c' }, { a: 4, b: 'd' }])
  assert.deepStrictEqual(
    decodeBinary(pairs, encodeBinary(pairs, [[[3, 'c']], [[4, 'd']]]) as Uint8Array),
    [[{ a: 3, b: 'c' }], [{ a: 4, b: 'd' }]],
  )
})

test('registerArrays adds the arrays of the registered element types, with their delimiters', () => {
  const table = testTable()
  table.set(603, { ...text, name: 'box' })
  registerArrays(table, defaultTypeOptions)
  assert.equal(table.get(1007)!.name, 'int4[]')
  assert.equal(table.get(1009)!.name, 'text[]')
  assert.equal(table.get(1020)!.encodeText(['a,b', 'c;d']), '{a,b;"c;d"}')
  // Element types without a codec get no array; int2vector and oidvector are not arrays in text.
  assert.equal(table.has(1000 + 28), false)
  assert.equal(table.has(22), false)
  assert.equal(table.has(30), false)
  // A codec already there is kept.
  const mine = { ...int4, name: 'mine' }
  const t2 = testTable()
  t2.set(1007, mine)
  registerArrays(t2, defaultTypeOptions)
  assert.equal(t2.get(1007), mine)
})

test('registerContainers: ranges, multiranges, record and arrays of all of them', () => {
  const table = testTable()
  registerContainers(table, defaultTypeOptions)
  const names = (oids: number[]) => oids.map((o) => table.get(o)?.name)
  assert.deepStrictEqual(names([3904, 3926, 3906, 3912, 3908, 3910]), ['int4range', 'int8range', 'numrange', 'daterange', 'tsrange', 'tstzrange'])
  assert.deepStrictEqual(names([4451, 4536, 4532, 4535, 4533, 4534]), ['int4multirange', 'int8multirange', 'nummultirange', 'datemultirange', 'tsmultirange', 'tstzmultirange'])
  assert.deepStrictEqual(names([3905, 6150, 2249, 2287]), ['int4range[]', 'int4multirange[]', 'record', 'record[]'])
})

test('decoders never read outside [start, end), whatever the input (every truncation of valid values)', () => {
  const ints = arrayCodec(indexedInt4, 23, ',')
  const texts = arrayCodec(indexedText, 25, ',')
  const range = rangeCodec(indexedText, 'textrange')
  const multirange = multirangeCodec(range, 'textmultirange')
  const comp = compositeCodec('c', [
    { name: 'a', oid: 23, codec: indexedInt4 },
    { name: 'b', oid: 25, codec: indexedText },
  ])
  const record = recordCodec(() => indexedText)
  const textCases: [Codec, string[]][] = [
    [ints, ['{1,2,NULL}', '[0:1][2:3]={{1,2},{3,4}}', ' { 1 , 2 } ', '{}']],
    [texts, ['{"a b","x\\"y",a\\,b,NULL, c }', '{{"{}",""},{\\\\,"\\\\"}}']],
    [range, ['["a b","c""d")', '(,a\\,b]', 'empty', '[a,)']],
    [multirange, ['{["a]",b),(c,d]}', '{}', ' { [a,b) } ']],
    [comp, ['(1,"a ""b""")', '(,)', '(2,a\\,b)']],
    [record, ['(1,"a b",,x)', '()']],
  ]
  const tryDecode = (decode: (b: Uint8Array, s: number, e: number) => unknown, bytes: Uint8Array, label: string) => {
    const g = guarded(bytes)
    try {
      decode(g.buf, g.start, g.end)
    } catch (e) {
      if (e instanceof OutOfBoundsRead || !(e instanceof CodecError)) assert.fail(`${label}: ${String(e)}`)
    }
  }
  for (const [codec, literals] of textCases) {
    for (const literal of literals) {
      const all = utf8(literal)
      for (let n = 0; n <= all.length; n++) tryDecode(codec.decodeText, all.subarray(0, n), `${codec.name} ${JSON.stringify(literal.slice(0, n))}`)
      const g = guarded(all)
      assert.doesNotThrow(() => codec.decodeText(g.buf, g.start, g.end), literal)
    }
  }
  const binaryCases: [Codec, unknown][] = [
    [ints, [[1, null], [3, 4]]],
    [texts, ['a', null, '']],
    [range, { lower: 'a', upper: 'b' }],
    [multirange, [{ lower: 'a', upper: null }]],
    [comp, { a: 1, b: 'x' }],
  ]
  for (const [codec, value] of binaryCases) {
    const all = encodeBinary(codec, value) as Uint8Array
    for (let n = 0; n <= all.length; n++) tryDecode(codec.decodeBinary!, all.subarray(0, n), `${codec.name} binary cut at ${n}`)
  }
  const rec = bytes(2, 23, 4, [0x61, 0x62, 0x63, 0x64], 25, -1)
  for (let n = 0; n <= rec.length; n++) tryDecode(record.decodeBinary!, rec.subarray(0, n), `record binary cut at ${n}`)
})
