import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { CodecError, type Codec } from '../../../../src/types/codec.js'
import { arrayCodec } from '../../../../src/types/codecs/array.js'
import { compositeCodec } from '../../../../src/types/codecs/composite.js'
import { formatArrayLiteral, parseArrayLiteral, parseCompositeLiteral, formatCompositeLiteral } from '../../../../src/types/codecs/literal.js'
import { multirangeCodec } from '../../../../src/types/codecs/multirange.js'
import { rangeCodec } from '../../../../src/types/codecs/range.js'
import { recordCodec } from '../../../../src/types/codecs/record.js'
import { int4OrNull, rangeArb, rectangular, textOrNull, trickyString, withLowerBounds } from '../../../support/fixtures/container-arbitraries.js'
import { OutOfBoundsRead, decodeAt, encodeBinary, guarded, indexedInt4, indexedText, int4, text, utf8 } from '../../../support/codecs/container-elements.js'

// Property tests without a server: every value the encoders accept decodes back
// to itself in both formats, and no byte string makes a decoder fail with
// anything but a CodecError.

const int4Array = arrayCodec(int4, 23, ',')
const textArray = arrayCodec(text, 25, ',')
const int4range = rangeCodec(int4, 'int4range')
const textrange = rangeCodec(text, 'textrange')
const int4multirange = multirangeCodec(int4range, 'int4multirange')
const pair = compositeCodec('pair', [
  { name: 'a', oid: 23, codec: int4 },
  { name: 'b', oid: 25, codec: text },
  { name: 'c', oid: 1009, codec: textArray },
])

function depth(v: unknown): number {
  let n = 0
  while (Array.isArray(v)) {
    n++
    v = v[0]
  }
  return n
}

function roundTrips(codec: Codec, value: unknown): void {
  const viaText = decodeAt(codec.decodeText, utf8(codec.encodeText(value)))
  const wire = encodeBinary(codec, value)
  assert.notEqual(wire, false)
  const viaBinary = decodeAt(codec.decodeBinary!, wire as Uint8Array)
  assert.deepStrictEqual(viaText, value)
  assert.deepStrictEqual(viaBinary, value)
  const lbs = (value as { lowerBounds?: number[] }).lowerBounds
  const keep = lbs !== undefined && lbs.some((b) => b !== 1) ? lbs : undefined
  assert.deepStrictEqual((viaText as { lowerBounds?: number[] }).lowerBounds, keep)
  assert.deepStrictEqual((viaBinary as { lowerBounds?: number[] }).lowerBounds, keep)
}

test('random int4 and text arrays round-trip in both formats', () => {
  fc.assert(fc.property(rectangular(int4OrNull), (v) => roundTrips(int4Array, v)), { numRuns: 300 })
  fc.assert(fc.property(rectangular(textOrNull), (v) => roundTrips(textArray, v)), { numRuns: 300 })
})

test('random lower bounds round-trip in both formats', () => {
  const arb = rectangular(int4OrNull, 3).chain((v) =>
    fc.array(fc.integer({ min: -1000, max: 1000 }), { minLength: depth(v), maxLength: depth(v) }).map((lbs) => withLowerBounds(v, lbs)),
  )
  fc.assert(fc.property(arb, (v) => roundTrips(int4Array, v)), { numRuns: 200 })
})

test('random ranges and multiranges round-trip in both formats', () => {
  fc.assert(fc.property(rangeArb(fc.integer({ min: -2147483648, max: 2147483647 })), (r) => roundTrips(int4range, r)), { numRuns: 300 })
  fc.assert(fc.property(rangeArb(trickyString), (r) => roundTrips(textrange, r)), { numRuns: 300 })
  fc.assert(fc.property(fc.array(rangeArb(fc.integer()), { maxLength: 5 }), (m) => roundTrips(int4multirange, m)), { numRuns: 200 })
})

test('random composites (with arrays inside, and arrays of them) round-trip in both formats', () => {
  const value = fc.record({ a: int4OrNull, b: textOrNull, c: fc.option(rectangular(textOrNull, 2, 3), { nil: null }) }, { noNullPrototype: true })
  fc.assert(fc.property(value, (v) => roundTrips(pair, v)), { numRuns: 300 })
  const pairs = arrayCodec(pair, 16400, ',')
  fc.assert(fc.property(fc.array(fc.option(value, { nil: null }), { maxLength: 4 }), (v) => roundTrips(pairs, v)), { numRuns: 100 })
})

test('literal helpers round-trip random strings', () => {
  fc.assert(
    fc.property(rectangular(textOrNull, 3), fc.constantFrom(',', ';'), (v, d) => {
      assert.deepStrictEqual(parseArrayLiteral(formatArrayLiteral(v, d), d), v)
    }),
  )
  fc.assert(
    fc.property(fc.array(textOrNull, { minLength: 2, maxLength: 6 }), (fields) => {
      assert.deepStrictEqual(parseCompositeLiteral(formatCompositeLiteral(fields)), fields)
    }),
  )
})

function onlyCodecErrors(decode: (buf: Uint8Array, start: number, end: number) => unknown, b: Uint8Array, guard = true): void {
  // Node's UTF-8 decoding refuses a Proxy, so decoders that use it run unguarded.
  const g = guard ? guarded(b) : { buf: b, start: 0, end: b.length }
  try {
    decode(g.buf, g.start, g.end)
  } catch (e) {
    if (e instanceof OutOfBoundsRead || !(e instanceof CodecError)) throw e
  }
}

/** A valid encoding with some bytes changed, cut short or extended. */
function mutated(valid: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  return valid.chain((b) =>
    fc
      .tuple(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }), fc.nat({ max: b.length }), fc.boolean())
      .map(([edits, cut, doCut]) => {
        const out = Uint8Array.from(b)
        for (const [at, v] of edits) if (out.length > 0) out[at % out.length] = v
        return doCut ? out.subarray(0, cut) : out
      }),
  )
}

test('decoders fed damaged or random bytes stay in bounds and throw nothing but CodecError', () => {
  // Values are encoded with the usual codecs and decoded with twins whose
  // elements read byte by byte, so that every read goes through the guard.
  const ints = arrayCodec(indexedInt4, 23, ',')
  const texts = arrayCodec(indexedText, 25, ',')
  const irange = rangeCodec(indexedInt4, 'int4range')
  const trange = rangeCodec(indexedText, 'textrange')
  const guardedPair = compositeCodec('pair', [
    { name: 'a', oid: 23, codec: indexedInt4 },
    { name: 'b', oid: 25, codec: indexedText },
    { name: 'c', oid: 1009, codec: texts },
  ])
  const record = recordCodec(() => indexedText)
  const cases: [Codec, Codec, fc.Arbitrary<unknown>][] = [
    [int4Array, ints, rectangular(int4OrNull)],
    [textArray, texts, rectangular(textOrNull)],
    [int4range, irange, rangeArb(fc.integer({ min: -2147483648, max: 2147483647 }))],
    [textrange, trange, rangeArb(trickyString)],
    [int4multirange, multirangeCodec(irange, 'int4multirange'), fc.array(rangeArb(fc.integer({ min: -2147483648, max: 2147483647 })), { maxLength: 3 })],
    [pair, guardedPair, fc.record({ a: int4OrNull, b: textOrNull, c: fc.option(rectangular(textOrNull, 2, 2), { nil: null }) }, { noNullPrototype: true })],
  ]
  for (const [encoder, decoder, values] of cases) {
    const binary = values.map((v) => encodeBinary(encoder, v) as Uint8Array)
    const textual = values.map((v) => utf8(encoder.encodeText(v)))
    fc.assert(fc.property(mutated(binary), (b) => onlyCodecErrors(decoder.decodeBinary!, b)), { numRuns: 300 })
    fc.assert(fc.property(mutated(textual), (b) => onlyCodecErrors(decoder.decodeText, b)), { numRuns: 300 })
    fc.assert(fc.property(fc.uint8Array({ maxLength: 40 }), (b) => onlyCodecErrors(decoder.decodeBinary!, b)), { numRuns: 200 })
    fc.assert(fc.property(fc.uint8Array({ maxLength: 40 }), (b) => onlyCodecErrors(decoder.decodeText, b)), { numRuns: 200 })
  }
  fc.assert(fc.property(mutated(fc.constant(Uint8Array.of(0, 0, 0, 1, 0, 0, 0, 23, 0, 0, 0, 4, 0, 0, 0, 1))), (b) => onlyCodecErrors(record.decodeBinary!, b)), { numRuns: 300 })
  fc.assert(fc.property(mutated(fc.constant(utf8('(1,"a b",,"x""y")'))), (b) => onlyCodecErrors(record.decodeText, b, false)), { numRuns: 300 })
})
