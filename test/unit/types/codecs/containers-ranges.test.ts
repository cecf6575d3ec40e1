import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CodecError, type Codec } from '../../../../src/types/codec.js'
import { arrayCodec } from '../../../../src/types/codecs/array.js'
import { multirangeCodec } from '../../../../src/types/codecs/multirange.js'
import { rangeCodec } from '../../../../src/types/codecs/range.js'
import { Range } from '../../../../src/types/range.js'
import { bytes, date, decodeAt, encodeBinary, int4, int8, text, utf8 } from '../../../support/codecs/container-elements.js'

// Ranges and multiranges on exact bytes, no server.

const int4range = rangeCodec(int4, 'int4range')
const int8range = rangeCodec(int8, 'int8range')
const textrange = rangeCodec(text, 'textrange')
const int4multirange = multirangeCodec(int4range, 'int4multirange')
const textmultirange = multirangeCodec(textrange, 'textmultirange')

const decodeText = (c: Codec, s: string) => decodeAt(c.decodeText, utf8(s))
const decodeBinary = (c: Codec, b: Uint8Array) => decodeAt(c.decodeBinary!, b)

/** A Range as the decoders build it, field by field, so the expectations do not depend on the constructor's rules. */
function range<T>(lower: T | null, upper: T | null, lowerInclusive: boolean, upperInclusive: boolean): Range<T> {
  const r = new Range<T>(lower, upper)
  r.lowerInclusive = lowerInclusive
  r.upperInclusive = upperInclusive
  return r
}

test('Range: constructor, bounds, normalisation of unbounded sides, empty()', () => {
  const r = new Range(1, 5)
  assert.deepStrictEqual([r.lower, r.upper, r.lowerInclusive, r.upperInclusive, r.empty], [1, 5, true, false, false])
  assert.deepStrictEqual(new Range(1, 5, '[]'), range(1, 5, true, true))
  assert.deepStrictEqual(new Range(1, 5, '(]'), range(1, 5, false, true))
  assert.deepStrictEqual(new Range(1, 5, '()'), range(1, 5, false, false))
  // An unbounded side is never inclusive (PostgreSQL's '[,5]' is '(,5]').
  assert.deepStrictEqual(new Range(null, 5, '[]'), range(null, 5, false, true))
  assert.deepStrictEqual(new Range(1, null, '[]'), range(1, null, true, false))
  assert.deepStrictEqual(new Range(undefined, undefined), range(null, null, false, false))
  assert.deepStrictEqual(new Range(), range(null, null, false, false))
  const e = Range.empty()
  assert.deepStrictEqual([e.lower, e.upper, e.lowerInclusive, e.upperInclusive, e.empty], [null, null, false, false, true])
  assert.ok(e instanceof Range)
  assert.throws(() => new Range(1, 2, '[[' as '[)'), TypeError)
})

test('Range.toString prints PostgreSQL literals', () => {
  assert.equal(String(new Range(1, 5)), '[1,5)')
  assert.equal(String(new Range(1, 5, '(]')), '(1,5]')
  assert.equal(String(new Range(null, 5, '[]')), '(,5]')
  assert.equal(String(new Range(3n, null)), '[3,)')
  assert.equal(String(new Range(null, null)), '(,)')
  assert.equal(String(Range.empty()), 'empty')
  assert.equal(String(new Range('a b', 'c,d')), '["a b","c,d")')
  assert.equal(String(new Range('', 'x"y\\z')), '["","x""y\\\\z")')
  assert.equal(String(new Range('[', ']')), '["[","]")')
  assert.equal(String(new Range(new Date(Date.UTC(2024, 0, 2)), null)), '[2024-01-02T00:00:00.000Z,)')
})

test('binary ranges: flags byte and bounds, exact bytes both ways', () => {
  const cases: [Uint8Array, Range<number>][] = [
    [bytes([0x02], 4, 1, 4, 6), new Range(1, 6)],
    [bytes([0x06], 4, 1, 4, 6), new Range(1, 6, '[]')],
    [bytes([0x04], 4, 1, 4, 6), new Range(1, 6, '(]')],
    [bytes([0x00], 4, -1, 4, 6), new Range(-1, 6, '()')],
    [bytes([0x08], 4, 6), new Range(null, 6)],
    [bytes([0x0c], 4, 6), new Range<number>(null, 6, '(]')],
    [bytes([0x12], 4, 1), new Range(1, null)],
    [bytes([0x18]), new Range<number>(null, null)],
    [bytes([0x01]), Range.empty()],
  ]
  for (const [wire, r] of cases) {
    assert.deepStrictEqual(decodeBinary(int4range, wire), r, String(r))
    assert.deepStrictEqual(encodeBinary(int4range, r), wire, String(r))
  }
  // int8 bounds through the subtype codec.
  assert.deepStrictEqual(decodeBinary(int8range, encodeBinary(int8range, new Range(-(2n ** 63n), 2n ** 63n - 1n)) as Uint8Array), new Range(-(2n ** 63n), 2n ** 63n - 1n))
})

test('binary ranges: the unused NULL flags mean no bound, as in range_send', () => {
  assert.deepStrictEqual(decodeBinary(int4range, bytes([0x22], 4, 6)), range(null, 6, false, false))
  assert.deepStrictEqual(decodeBinary(int4range, bytes([0x42], 4, 1)), range(1, null, true, false))
})

test('range parameters: plain objects, strings as text, bounds that need text', () => {
  assert.deepStrictEqual(encodeBinary(int4range, { lower: 1, upper: 6 }), bytes([0x02], 4, 1, 4, 6))
  assert.deepStrictEqual(encodeBinary(int4range, { lower: 1, upper: 6, lowerInclusive: false, upperInclusive: true }), bytes([0x04], 4, 1, 4, 6))
  assert.deepStrictEqual(encodeBinary(int4range, { lower: null, upper: undefined, lowerInclusive: true }), bytes([0x18]))
  assert.deepStrictEqual(encodeBinary(int4range, { empty: true }), bytes([0x01]))
  assert.deepStrictEqual(encodeBinary(int4range, { lower: 1, upper: 2, empty: false }), bytes([0x02], 4, 1, 4, 2))
  assert.equal(int4range.encodeText({ lower: 1, upper: 6, upperInclusive: true }), '[1,6]')
  assert.equal(encodeBinary(int4range, '[1,5]'), false)
  assert.equal(int4range.encodeText('[1,5]'), '[1,5]')
  // A bound the subtype sends as text: the whole range goes as text.
  assert.equal(encodeBinary(int4range, new Range<unknown>(1, '5')), false)
  assert.equal(encodeBinary(int4range, new Range<unknown>('1', 5)), false)
  assert.equal(int4range.encodeText(new Range<unknown>(1, '5')), '[1,5)')
  const dr = rangeCodec(date, 'daterange')
  assert.equal(encodeBinary(dr, new Range('2024-01-01', '2024-02-01')), false)
  assert.equal(dr.encodeText(new Range('2024-01-01', null, '[]')), '[2024-01-01,)')
})

test('range parameters that cannot be ranges throw CodecError', () => {
  for (const bad of [5, true, null, [1, 2], { lower: 1 }, { upper: 1 }, new Date(0)]) {
    assert.throws(() => encodeBinary(int4range, bad), { name: 'CodecError', message: /int4range needs a Range, an object with lower and upper, or a string; got / })
    assert.throws(() => int4range.encodeText(bad), /int4range needs a Range/)
  }
  assert.throws(() => encodeBinary(int4range, { lower: 1, upper: 2, lowerInclusive: 'yes' }), { name: 'CodecError', message: /booleans; got a string/ })
  assert.throws(() => encodeBinary(int4range, new Range(1, 2 ** 31)), { name: 'CodecError', message: 'out of range for int4' })
  assert.throws(() => int4range.encodeText(new Range(1.5, 2)), /int4 needs an integer/)
})

test('text ranges: what range_out prints', () => {
  const cases: [Codec, string, Range<unknown>][] = [
    [int4range, '[1,6)', new Range(1, 6)],
    [int4range, '(,6)', new Range(null, 6)],
    [int4range, '[3,)', new Range(3, null)],
    [int4range, '(,)', new Range(null, null)],
    [int4range, 'empty', Range.empty()],
    [int4range, '(1,5]', new Range(1, 5, '(]')],
    [int4range, '[-5,-1]', new Range(-5, -1, '[]')],
    [textrange, '["a b","c,d")', new Range('a b', 'c,d')],
    [textrange, '["","x""y\\\\z")', new Range('', 'x"y\\z')],
    [textrange, '["[","]")', new Range('[', ']')],
    [textrange, '[a,é)', new Range('a', 'é')],
    [textrange, '["2024-01-01 00:00:00","2024-01-02 00:00:00")', new Range('2024-01-01 00:00:00', '2024-01-02 00:00:00')],
  ]
  for (const [codec, literal, r] of cases) {
    assert.deepStrictEqual(decodeText(codec, literal), r, literal)
    assert.equal(codec.encodeText(r), literal, literal)
  }
})

test('text ranges: what range_in accepts besides', () => {
  const cases: [Codec, string, Range<unknown>][] = [
    [int4range, '  EMPTY ', Range.empty()],
    [int4range, 'Empty', Range.empty()],
    [int4range, ' [1,6) ', new Range(1, 6)],
    [int4range, '[,6]', new Range(null, 6, '(]')],
    [int4range, '["1","6")', new Range(1, 6)],
    [textrange, '[a\\,b,c\\)d]', new Range('a,b', 'c)d', '[]')],
    [textrange, '[a"b,c"d,e)', new Range('ab,cd', 'e')],
    [textrange, '["a\\"b",)', new Range('a"b', null)],
    [textrange, '[ a , b )', new Range(' a ', ' b ')],
  ]
  for (const [codec, literal, r] of cases) assert.deepStrictEqual(decodeText(codec, literal), r, literal)
})

test('malformed range literals and binary ranges throw CodecError', () => {
  for (const literal of ['', ' ', 'emptyx', 'empt', '1,5)', '[1,5', '[1)', '[1,5)x', '[1,2,3)', '{1,2}', '["1,5)', '[1,"5)', '[1\\']) {
    assert.throws(() => decodeText(int4range, literal), { name: 'CodecError', message: /int4range/ }, JSON.stringify(literal))
  }
  assert.throws(() => decodeText(int4range, '[x,5)'), /bad int4 text/)
  const good = bytes([0x02], 4, 1, 4, 6)
  for (let n = 0; n < good.length; n++) assert.throws(() => decodeBinary(int4range, good.subarray(0, n)), CodecError, `truncated to ${n}`)
  assert.throws(() => decodeBinary(int4range, bytes(good, [0])), /bytes after the bounds/)
  assert.throws(() => decodeBinary(int4range, bytes([0x01], [0])), /after an empty range/)
  assert.throws(() => decodeBinary(int4range, bytes([0x02], -1, 4, 6)), /lower bound length -1/)
  assert.throws(() => decodeBinary(int4range, bytes([0x12], 5, 1)), /lower bound length 5/)
  assert.throws(() => decodeBinary(int4range, bytes([0x02], 4, 1, 9, 6)), /upper bound length 9/)
  assert.throws(() => decodeBinary(int4range, bytes([0x02], 2, [0, 1], 4, 6)), /int4/)
})

test('text range decoding never reads outside [start, end)', () => {
  const literal = utf8('[1,6)')
  for (const filler of [0x29, 0x5d, 0x2c, 0x22, 0x5c]) {
    const buf = new Uint8Array(literal.length + 4).fill(filler)
    buf.set(literal, 2)
    assert.deepStrictEqual(int4range.decodeText(buf, 2, 2 + literal.length), new Range(1, 6))
    assert.throws(() => int4range.decodeText(buf, 2, 2 + literal.length - 1), CodecError)
  }
})

test('binary multiranges: count, then length-prefixed ranges', () => {
  const wire = bytes(2, 17, [0x02], 4, 1, 4, 3, 9, [0x12], 4, 5)
  const value = [new Range(1, 3), new Range(5, null)]
  assert.deepStrictEqual(decodeBinary(int4multirange, wire), value)
  assert.deepStrictEqual(encodeBinary(int4multirange, value), wire)
  assert.deepStrictEqual(decodeBinary(int4multirange, bytes(0)), [])
  assert.deepStrictEqual(encodeBinary(int4multirange, []), bytes(0))
  assert.deepStrictEqual(encodeBinary(int4multirange, [{ lower: 1, upper: 3 }]), bytes(1, 17, [0x02], 4, 1, 4, 3))
  assert.equal(encodeBinary(int4multirange, '{[1,3)}'), false)
  assert.equal(encodeBinary(int4multirange, [new Range(1, 3), '[5,7)']), false)
  assert.equal(encodeBinary(int4multirange, [new Range<unknown>(1, '3')]), false)
  for (let n = 0; n < wire.length; n++) assert.throws(() => decodeBinary(int4multirange, wire.subarray(0, n)), CodecError, `truncated to ${n}`)
  assert.throws(() => decodeBinary(int4multirange, bytes(wire, [0])), /after the last range/)
  assert.throws(() => decodeBinary(int4multirange, bytes(-1)), /-1 ranges/)
  assert.throws(() => decodeBinary(int4multirange, bytes(1000, 1)), /1000 ranges/)
  assert.throws(() => decodeBinary(int4multirange, bytes(1, -1, [0x01])), /range length -1/)
})

test('text multiranges', () => {
  const cases: [Codec, string, Range<unknown>[]][] = [
    [int4multirange, '{}', []],
    [int4multirange, '{[1,3)}', [new Range(1, 3)]],
    [int4multirange, '{[1,3),[5,7)}', [new Range(1, 3), new Range(5, 7)]],
    [int4multirange, '{(,3),[5,)}', [new Range(null, 3), new Range(5, null)]],
    [textmultirange, '{["a]","b)"),["c\\\\","d""")}', [new Range('a]', 'b)'), new Range('c\\', 'd"')]],
  ]
  for (const [codec, literal, value] of cases) {
    assert.deepStrictEqual(decodeText(codec, literal), value, literal)
    assert.equal(codec.encodeText(value), literal, literal)
  }
  // Input forms: spaces, empty members.
  assert.deepStrictEqual(decodeText(int4multirange, ' { [1,3) , [5,7) } '), [new Range(1, 3), new Range(5, 7)])
  assert.deepStrictEqual(decodeText(int4multirange, '{ }'), [])
  assert.deepStrictEqual(decodeText(int4multirange, '{empty,[1,2)}'), [Range.empty(), new Range(1, 2)])
  assert.deepStrictEqual(decodeText(textmultirange, '{[a\\),b)}'), [new Range('a)', 'b')])
  assert.equal(int4multirange.encodeText('{[1,3)}'), '{[1,3)}')
  assert.equal(int4multirange.encodeText([Range.empty(), { lower: 1, upper: 2, upperInclusive: true }]), '{empty,[1,2]}')
  for (const literal of ['', '{', '{[1,3)', '{[1,3),}', '{[1,3)[5,7)}', '{[1,3)}x', '[1,3)', '{[1,3}', '{,}']) {
    assert.throws(() => decodeText(int4multirange, literal), { name: 'CodecError', message: /int4multirange/ }, JSON.stringify(literal))
  }
  for (const bad of [5, new Range(1, 2), [null], [undefined], [5]]) {
    assert.throws(() => encodeBinary(int4multirange, bad), CodecError)
    assert.throws(() => int4multirange.encodeText(bad), CodecError)
  }
})

test('arrays of multiranges: each multirange is one element, not a dimension', () => {
  const arr = arrayCodec(int4multirange, 4451, ',')
  const value = [[new Range(1, 3), new Range(5, 7)], [], [new Range(null, 0)]]
  assert.deepStrictEqual(decodeBinary(arr, encodeBinary(arr, value) as Uint8Array), value)
  assert.equal(arr.encodeText(value), '{"{[1,3),[5,7)}","{}","{(,0)}"}')
  assert.deepStrictEqual(decodeText(arr, arr.encodeText(value)), value)
  const twoDims = [[[new Range(1, 2)], []], [[], [new Range(3, 4)]]]
  assert.deepStrictEqual(decodeBinary(arr, encodeBinary(arr, twoDims) as Uint8Array), twoDims)
  assert.deepStrictEqual(decodeText(arr, arr.encodeText(twoDims)), twoDims)
  const ranges = arrayCodec(int4range, 3904, ',')
  const rs = [new Range(1, 2), null, Range.empty()]
  assert.equal(ranges.encodeText(rs), '{"[1,2)",NULL,empty}')
  assert.deepStrictEqual(decodeText(ranges, ranges.encodeText(rs)), rs)
  assert.deepStrictEqual(decodeBinary(ranges, encodeBinary(ranges, rs) as Uint8Array), rs)
})
