import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { Writer } from '../../../../src/protocol/writer.js'
import { CodecError, defaultTypeOptions, type Codec, type Decoder } from '../../../../src/types/codec.js'
import {
  boxCodec,
  circleCodec,
  lineCodec,
  lsegCodec,
  pathCodec,
  pointCodec,
  polygonCodec,
  registerGeometricCodecs,
  type Point,
} from '../../../../src/types/codecs/geometric.js'
import { formatFloat } from '../../../../src/types/codecs/geometric-text.js'

// point, line, lseg, box, path, polygon and circle on exact bytes, without a server.

function decode(f: Decoder | undefined, bytes: Uint8Array | string): unknown {
  const v = typeof bytes === 'string' ? Buffer.from(bytes) : bytes
  const buf = new Uint8Array(v.length + 6).fill(0x31)
  buf.set(v, 3)
  return f!(buf, 3, 3 + v.length)
}

function encode(c: Codec, value: unknown): Uint8Array | false {
  const w = new Writer(64)
  w.u8(0x55)
  const ok = c.encodeBinary!(w, value)
  const out = w.take()
  assert.equal(out[0], 0x55)
  if (!ok) {
    assert.equal(out.length, 1, 'nothing written when the value goes as text')
    return false
  }
  return out.slice(1)
}

/** Big-endian float8s. */
function f8(...xs: number[]): Uint8Array {
  const b = Buffer.alloc(8 * xs.length)
  xs.forEach((x, i) => b.writeDoubleBE(x, 8 * i))
  return new Uint8Array(b)
}
const cat = (...parts: (Uint8Array | number[])[]) => new Uint8Array(parts.flatMap((p) => Array.from(p)))
const i32 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]
const pt = (x: number, y: number): Point => ({ x, y })

test('registers the seven geometric types by OID', () => {
  const table = new Map<number, Codec>()
  registerGeometricCodecs(table, defaultTypeOptions)
  assert.deepEqual(
    [...table].map(([oid, c]) => [oid, c.name]),
    [
      [600, 'point'],
      [601, 'lseg'],
      [602, 'path'],
      [603, 'box'],
      [604, 'polygon'],
      [628, 'line'],
      [718, 'circle'],
    ],
  )
  assert.equal(table.get(600), pointCodec)
})

// [codec, JS value, binary bytes, text]
const cases: [Codec, unknown, Uint8Array, string][] = [
  [pointCodec, pt(1, 2), f8(1, 2), '(1,2)'],
  [pointCodec, pt(-0, 0), f8(-0, 0), '(-0,0)'],
  [pointCodec, pt(NaN, Infinity), f8(NaN, Infinity), '(NaN,Infinity)'],
  [pointCodec, pt(-Infinity, 1.5e-7), f8(-Infinity, 1.5e-7), '(-Infinity,1.5e-7)'],
  [pointCodec, pt(1e300, -2.2250738585072014e-308), f8(1e300, -2.2250738585072014e-308), '(1e+300,-2.2250738585072014e-308)'],
  [pointCodec, pt(0.1, 123456789012345680000), f8(0.1, 123456789012345680000), '(0.1,123456789012345680000)'],
  [lineCodec, { a: 1, b: -1, c: 0 }, f8(1, -1, 0), '{1,-1,0}'],
  [lineCodec, { a: 0, b: 2.5, c: NaN }, f8(0, 2.5, NaN), '{0,2.5,NaN}'],
  [lsegCodec, [pt(1, 2), pt(3, 4)], f8(1, 2, 3, 4), '[(1,2),(3,4)]'],
  [boxCodec, [pt(3, 4), pt(1, 2)], f8(3, 4, 1, 2), '(3,4),(1,2)'],
  [pathCodec, { closed: false, points: [pt(1, 2), pt(3, 4)] }, cat([0], i32(2), f8(1, 2, 3, 4)), '[(1,2),(3,4)]'],
  [pathCodec, { closed: true, points: [pt(1, 2), pt(3, 4), pt(5, 6)] }, cat([1], i32(3), f8(1, 2, 3, 4, 5, 6)), '((1,2),(3,4),(5,6))'],
  [pathCodec, { closed: true, points: [pt(0, 0)] }, cat([1], i32(1), f8(0, 0)), '((0,0))'],
  [pathCodec, { closed: false, points: [pt(0, 0)] }, cat([0], i32(1), f8(0, 0)), '[(0,0)]'],
  [polygonCodec, [pt(0, 0), pt(1, 0), pt(1, 1)], cat(i32(3), f8(0, 0, 1, 0, 1, 1)), '((0,0),(1,0),(1,1))'],
  [polygonCodec, [pt(-1, 2)], cat(i32(1), f8(-1, 2)), '((-1,2))'],
  [circleCodec, { x: 1, y: 2, radius: 3 }, f8(1, 2, 3), '<(1,2),3>'],
  [circleCodec, { x: 0, y: 0, radius: 0 }, f8(0, 0, 0), '<(0,0),0>'],
  [circleCodec, { x: 0, y: 0, radius: Infinity }, f8(0, 0, Infinity), '<(0,0),Infinity>'],
]

test('decoding and encoding exact bytes and text', () => {
  for (const [codec, value, bytes, text] of cases) {
    const what = `${codec.name} ${text}`
    assert.deepStrictEqual(decode(codec.decodeBinary, bytes), value, what)
    assert.deepStrictEqual(decode(codec.decodeText, text), value, what)
    assert.deepStrictEqual(encode(codec, value), bytes, what)
    assert.equal(codec.encodeText(value), text, what)
  }
})

test('text the server may print in other spellings of numbers', () => {
  assert.deepStrictEqual(decode(pointCodec.decodeText, '(1.5e+20,-1e-05)'), pt(1.5e20, -1e-5))
  assert.deepStrictEqual(decode(pointCodec.decodeText, '(-0,-Infinity)'), pt(-0, -Infinity))
  assert.deepStrictEqual(decode(pointCodec.decodeText, '(1.0000000000000002,0.30000000000000004)'), pt(1.0000000000000002, 0.30000000000000004))
  // extra_float_digits below 1 gives rounded digits and capital E never appears, but a plain E still parses.
  assert.deepStrictEqual(decode(pointCodec.decodeText, '(1E3,2)'), pt(1000, 2))
})

test('malformed text is refused', () => {
  const bad: [Codec, string][] = [
    [pointCodec, ''],
    [pointCodec, '(1,2'],
    [pointCodec, '(1,2))'],
    [pointCodec, '(1;2)'],
    [pointCodec, '( 1,2)'],
    [pointCodec, '(,2)'],
    [pointCodec, '(1,)'],
    [pointCodec, '(1,2) '],
    [pointCodec, '(0x10,2)'],
    [pointCodec, '(inf,2)'],
    [pointCodec, '(1e,2)'],
    [pointCodec, '(NaNa,2)'],
    [pointCodec, '(--1,2)'],
    [lineCodec, '{1,2}'],
    [lineCodec, '(1,2,3)'],
    [lineCodec, '{1,2,3,4}'],
    [lsegCodec, '(1,2),(3,4)'],
    [lsegCodec, '[(1,2),(3,4)'],
    [boxCodec, '[(1,2),(3,4)]'],
    [boxCodec, '(1,2)'],
    [pathCodec, '[(1,2),(3,4))'],
    [pathCodec, '((1,2),(3,4)]'],
    [pathCodec, '()'],
    [pathCodec, '[]'],
    [pathCodec, '[(1,2),]'],
    [polygonCodec, '[(1,2)]'],
    [polygonCodec, '((1,2)'],
    [circleCodec, '<(1,2)>'],
    [circleCodec, '<(1,2),3'],
    [circleCodec, '((1,2),3)'],
  ]
  for (const [codec, text] of bad) {
    assert.throws(() => decode(codec.decodeText, text), new RegExp(`^CodecError: malformed ${codec.name}: unexpected text at character \\d+$`), `${codec.name} ${text}`)
  }
})

test('malformed binary values are refused, including every truncation', () => {
  assert.throws(() => decode(pointCodec.decodeBinary, f8(1)), /malformed binary point: 8 bytes where 16 were expected/)
  assert.throws(() => decode(pointCodec.decodeBinary, f8(1, 2, 3)), /24 bytes where 16/)
  assert.throws(() => decode(lineCodec.decodeBinary, f8(1, 2)), /malformed binary line/)
  assert.throws(() => decode(lsegCodec.decodeBinary, f8(1, 2, 3)), /malformed binary lseg/)
  assert.throws(() => decode(boxCodec.decodeBinary, f8(1, 2, 3, 4, 5)), /malformed binary box/)
  assert.throws(() => decode(circleCodec.decodeBinary, f8(1, 2)), /malformed binary circle/)
  assert.throws(() => decode(pathCodec.decodeBinary, new Uint8Array([])), /malformed binary path: empty/)
  assert.throws(() => decode(pathCodec.decodeBinary, cat([0], i32(2), f8(1, 2))), /malformed binary path: 16 bytes do not hold 2 points/)
  assert.throws(() => decode(pathCodec.decodeBinary, cat([0], i32(-1))), /do not hold -1 points/)
  assert.throws(() => decode(polygonCodec.decodeBinary, cat(i32(1), f8(1, 2, 3))), /malformed binary polygon: 24 bytes do not hold 1 points/)
  assert.throws(() => decode(polygonCodec.decodeBinary, cat(i32(0x7fffffff), f8(1, 2))), CodecError)
  for (const [codec, , bytes] of cases) {
    for (let n = 0; n < bytes.length; n++) {
      assert.throws(() => codec.decodeBinary!(bytes, 0, n), CodecError, `${codec.name} prefix of ${n}`)
    }
  }
})

test('strings go as text; wrong shapes are refused naming what is expected', () => {
  for (const [codec] of cases) {
    assert.equal(encode(codec, '(1,2)'), false)
    assert.equal(codec.encodeText('anything'), 'anything')
  }
  const wrong: [Codec, unknown, string][] = [
    [pointCodec, [1, 2], 'point needs { x, y } with number coordinates or a string; got an array'],
    [pointCodec, { x: 1 }, 'point needs { x, y } with number coordinates or a string; got an object (Object)'],
    [pointCodec, { x: 1, y: 2n }, 'point needs { x, y }'],
    [pointCodec, { x: '1', y: 2 }, 'point needs { x, y }'],
    [pointCodec, null, 'got null'],
    [lineCodec, { a: 1, b: 2 }, 'line needs { a, b, c } with number coefficients or a string; got an object (Object)'],
    [lineCodec, { a: 0, b: 0, c: 1 }, 'line needs A and B not both zero'],
    [lineCodec, { a: 1e-7, b: -1e-7, c: 1 }, 'line needs A and B not both zero'],
    [lsegCodec, [pt(1, 2)], 'lseg needs [point, point] with points as { x, y } or a string; got an array'],
    [lsegCodec, { 0: pt(1, 2), 1: pt(3, 4) }, 'lseg needs [point, point]'],
    [boxCodec, [pt(1, 2), pt(3, 4), pt(5, 6)], 'box needs [point, point]'],
    [boxCodec, [pt(1, 2), [3, 4]], 'box needs [point, point]'],
    [pathCodec, [pt(1, 2)], 'path needs { closed, points } with at least one { x, y } point or a string; got an array'],
    [pathCodec, { closed: true, points: [] }, 'path needs { closed, points }'],
    [pathCodec, { closed: 1, points: [pt(1, 2)] }, 'path needs { closed, points }'],
    [pathCodec, { closed: false, points: [pt(1, 2), { x: 1 }] }, 'path needs { closed, points }'],
    [polygonCodec, [], 'polygon needs an array of at least one { x, y } point or a string; got an array'],
    [polygonCodec, { closed: true, points: [pt(1, 2)] }, 'polygon needs an array of at least one { x, y } point'],
    [polygonCodec, [pt(1, 2), undefined], 'polygon needs an array'],
    [circleCodec, { x: 1, y: 2 }, 'circle needs { x, y, radius } with number values or a string; got an object (Object)'],
    [circleCodec, { x: 1, y: 2, radius: -1 }, 'circle needs a radius of at least 0'],
    [circleCodec, 5, 'circle needs { x, y, radius } with number values or a string; got a number'],
  ]
  for (const [codec, value, message] of wrong) {
    assert.throws(() => encode(codec, value), (e: unknown) => e instanceof CodecError && e.message.includes(message), `${codec.name} ${message}`)
    assert.throws(() => codec.encodeText(value), (e: unknown) => e instanceof CodecError && e.message.includes(message), `${codec.name} text ${message}`)
  }
  // A NaN radius is a radius the server accepts.
  assert.notEqual(encode(circleCodec, { x: 0, y: 0, radius: NaN }), false)
})

test('formatFloat keeps the sign of zero and prints what float8in reads', () => {
  assert.equal(formatFloat(-0), '-0')
  assert.equal(formatFloat(0), '0')
  assert.equal(formatFloat(NaN), 'NaN')
  assert.equal(formatFloat(-Infinity), '-Infinity')
  assert.equal(formatFloat(1e21), '1e+21')
  assert.equal(formatFloat(5e-324), '5e-324')
})

const double = fc.double()
// Plain objects, as the decoders make them (fast-check's records have no prototype by default).
const record = <T>(model: { [K in keyof T]: fc.Arbitrary<T[K]> }) => fc.record(model, { noNullPrototype: true })
const point = record({ x: double, y: double })
const values: [Codec, fc.Arbitrary<unknown>][] = [
  [pointCodec, point],
  [lineCodec, record({ a: double, b: double, c: double }).filter((l) => !(Math.abs(l.a) <= 1e-6 && Math.abs(l.b) <= 1e-6))],
  [lsegCodec, fc.tuple(point, point)],
  [boxCodec, fc.tuple(point, point)],
  [pathCodec, record({ closed: fc.boolean(), points: fc.array(point, { minLength: 1, maxLength: 20 }) })],
  [polygonCodec, fc.array(point, { minLength: 1, maxLength: 20 })],
  [circleCodec, record({ x: double, y: double, radius: fc.oneof(fc.double({ min: 0 }), fc.constant(NaN)) })],
]

test('property: every geometric value round-trips through binary and through text', () => {
  for (const [codec, arbitrary] of values) {
    fc.assert(
      fc.property(arbitrary, (v) => {
        const bytes = encode(codec, v)
        assert.notEqual(bytes, false)
        assert.deepStrictEqual(decode(codec.decodeBinary, bytes as Uint8Array), v)
        assert.deepStrictEqual(decode(codec.decodeText, codec.encodeText(v)), v)
      }),
      { numRuns: 300 },
    )
  }
})
