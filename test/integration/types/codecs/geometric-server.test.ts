import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { Writer } from '../../../../src/protocol/writer.js'
import type { Codec } from '../../../../src/types/codec.js'
import { boxCodec, circleCodec, lineCodec, lsegCodec, pathCodec, pointCodec, polygonCodec, type Point } from '../../../../src/types/codecs/geometric.js'
import { echoParam } from '../../../support/codecs/raw-values.js'
import { param, select, testType, textParam, type Param } from '../../../support/codecs/type-roundtrip.js'

// The geometric types against what a real server sends and understands.

const pt = (x: number, y: number): Point => ({ x, y })

test('points, lines and segments decode to the same doubles from text and binary', async () => {
  await testType(pointCodec, 600, [
    ["'(1,2)'::point", pt(1, 2)],
    ["'(-0,0)'::point", pt(-0, 0)],
    ["'(NaN,Infinity)'::point", pt(NaN, Infinity)],
    ["'(-Infinity,1e-300)'::point", pt(-Infinity, 1e-300)],
    ["'(0.1,0.30000000000000004)'::point", pt(0.1, 0.30000000000000004)],
    ["'(1e300,5e-324)'::point", pt(1e300, 5e-324)],
    ["'( 1.5 , -2.5 )'::point", pt(1.5, -2.5)],
    ['point(1.0 / 3, 2.0 / 3)', pt(1 / 3, 2 / 3)],
    ["'(123456789012345678,0.000001)'::point", pt(123456789012345678, 0.000001)],
    ["'(1,2)'::point + '(0.1,0.2)'::point", pt(1.1, 2.2)],
  ])
  await testType(lineCodec, 628, [
    ["'{1,-1,0}'::line", { a: 1, b: -1, c: 0 }],
    ["'{0,2.5,NaN}'::line", { a: 0, b: 2.5, c: NaN }],
    ["'[(0,0),(1,1)]'::line", { a: 1, b: -1, c: 0 }],
    ["'[(0,3),(1,3)]'::line", { a: 0, b: -1, c: 3 }],
    ["'{-1e-300,Infinity,-0}'::line", { a: -1e-300, b: Infinity, c: -0 }],
  ])
  await testType(lsegCodec, 601, [
    ["'[(1,2),(3,4)]'::lseg", [pt(1, 2), pt(3, 4)]],
    ["'((3,4),(1,2))'::lseg", [pt(3, 4), pt(1, 2)]],
    ["'[(0,0),(0,0)]'::lseg", [pt(0, 0), pt(0, 0)]],
    ["lseg('(1,1)'::point, '(NaN,-Infinity)'::point)", [pt(1, 1), pt(NaN, -Infinity)]],
  ])
})

test('boxes come with the upper-right corner first, as the server stores them', async () => {
  await testType(boxCodec, 603, [
    ["'(1,2),(3,4)'::box", [pt(3, 4), pt(1, 2)]],
    ["'((3,4),(1,2))'::box", [pt(3, 4), pt(1, 2)]],
    ["'(3,2),(1,4)'::box", [pt(3, 4), pt(1, 2)]],
    ["'(0,0),(0,0)'::box", [pt(0, 0), pt(0, 0)]],
    ["'(NaN,1),(2,-Infinity)'::box", [pt(NaN, 1), pt(2, -Infinity)]],
    ["box('((0,0),(2,0),(1,5))'::polygon)", [pt(2, 5), pt(0, 0)]],
  ])
})

test('paths, polygons and circles decode alike from text and binary', async () => {
  await testType(pathCodec, 602, [
    ["'[(1,2),(3,4)]'::path", { closed: false, points: [pt(1, 2), pt(3, 4)] }],
    ["'((1,2),(3,4),(5,6))'::path", { closed: true, points: [pt(1, 2), pt(3, 4), pt(5, 6)] }],
    ["'(1,2),(3,4)'::path", { closed: true, points: [pt(1, 2), pt(3, 4)] }],
    ["'((0,0))'::path", { closed: true, points: [pt(0, 0)] }],
    ["'[(0,0)]'::path", { closed: false, points: [pt(0, 0)] }],
    ["popen('((1,2),(3,4))'::path)", { closed: false, points: [pt(1, 2), pt(3, 4)] }],
    ["pclose('[(-0,NaN),(Infinity,1e-7)]'::path)", { closed: true, points: [pt(-0, NaN), pt(Infinity, 1e-7)] }],
    [
      `'[${Array.from({ length: 100 }, (_, i) => `(${i},${i / 7})`).join(',')}]'::path`,
      { closed: false, points: Array.from({ length: 100 }, (_, i) => pt(i, i / 7)) },
    ],
  ])
  await testType(polygonCodec, 604, [
    ["'((0,0),(1,0),(1,1))'::polygon", [pt(0, 0), pt(1, 0), pt(1, 1)]],
    ["'(1,2)'::polygon", [pt(1, 2)]],
    ["'((1,2))'::polygon", [pt(1, 2)]],
    ["polygon('(1,2),(3,4)'::box)", [pt(1, 2), pt(1, 4), pt(3, 4), pt(3, 2)]],
    ["'((-0,NaN),(Infinity,-1e300))'::polygon", [pt(-0, NaN), pt(Infinity, -1e300)]],
  ])
  await testType(circleCodec, 718, [
    ["'<(1,2),3>'::circle", { x: 1, y: 2, radius: 3 }],
    ["'((1,2),3)'::circle", { x: 1, y: 2, radius: 3 }],
    ["'<(0,0),0>'::circle", { x: 0, y: 0, radius: 0 }],
    ["'<(-0,NaN),Infinity>'::circle", { x: -0, y: NaN, radius: Infinity }],
    ["'<(1,2),NaN>'::circle", { x: 1, y: 2, radius: NaN }],
    ["circle('(1,1),(3,3)'::box)", { x: 2, y: 2, radius: Math.SQRT2 }],
  ])
})

/** PostgreSQL's float8 order: NaN above everything, so box corners sort the same way. */
function float8Less(a: number, b: number): boolean {
  if (Number.isNaN(a)) return false
  if (Number.isNaN(b)) return true
  return a < b
}

function normalizedBox([p, q]: [Point, Point]): [Point, Point] {
  const [hx, lx] = float8Less(p.x, q.x) ? [q.x, p.x] : [p.x, q.x]
  const [hy, ly] = float8Less(p.y, q.y) ? [q.y, p.y] : [p.y, q.y]
  return [pt(hx, hy), pt(lx, ly)]
}

const double = fc.double()
const record = <T>(model: { [K in keyof T]: fc.Arbitrary<T[K]> }) => fc.record(model, { noNullPrototype: true })
const point = record({ x: double, y: double })
const points = fc.array(point, { minLength: 1, maxLength: 8 })

// [codec, OID, random values, what the server makes of a value]
const kinds: [Codec, number, fc.Arbitrary<unknown>, (v: never) => unknown][] = [
  [pointCodec, 600, point, (v) => v],
  [lineCodec, 628, record({ a: double, b: double, c: double }).filter((l) => !(Math.abs(l.a) <= 1e-6 && Math.abs(l.b) <= 1e-6)), (v) => v],
  [lsegCodec, 601, fc.tuple(point, point), (v) => v],
  [boxCodec, 603, fc.tuple(point, point), normalizedBox],
  [pathCodec, 602, record({ closed: fc.boolean(), points }), (v) => v],
  [polygonCodec, 604, points, (v) => v],
  [circleCodec, 718, record({ x: double, y: double, radius: fc.oneof(fc.double({ min: 0 }), fc.constant(NaN)) }), (v) => v],
]

test('property: random values sent in binary and in text come back as the same doubles in both formats', async () => {
  for (const [codec, oid, arbitrary, stored] of kinds) {
    const values = fc.sample(arbitrary, { numRuns: 60, seed: oid })
    const binary = values.map((v) => param(codec, oid, v))
    for (const p of binary) assert.equal(p.format, 1, 'goes in binary')
    const text = values.map((v): Param => textParam(oid, codec.encodeText(v)))
    // Each value twice: once as binary, once as the text our encoder wrote.
    const params = [...binary, ...text]
    const exprs = params.map((_, i) => `$${i + 1}`)
    const asText = await select(exprs, params, 0)
    const asBinary = await select(exprs, params, 1)
    values.forEach((v, i) => {
      const what = `${codec.name} ${codec.encodeText(v)}`
      const expected = stored(v as never)
      for (const j of [i, i + values.length]) {
        assert.deepStrictEqual(codec.decodeBinary!(asBinary[j]!, 0, asBinary[j]!.length), expected, what)
        assert.deepStrictEqual(codec.decodeText(asText[j]!, 0, asText[j]!.length), expected, what)
      }
      assert.deepEqual(asBinary[i + values.length], asBinary[i], `${what}: the same bytes from text and binary`)
    })
  }
})

test('strings go as text for the server to parse', async () => {
  for (const [codec, oid, s, printed] of [
    [pointCodec, 600, ' ( 1 , 2 ) ', '(1,2)'],
    [lineCodec, 628, '[(0,0),(1,1)]', '{1,-1,0}'],
    [boxCodec, 603, '1,2,3,4', '(3,4),(1,2)'],
    [polygonCodec, 604, '(0,0),(1,1)', '((0,0),(1,1))'],
    [circleCodec, 718, '1,2,3', '<(1,2),3>'],
  ] as const) {
    const w = new Writer(16)
    assert.equal(codec.encodeBinary!(w, s), false)
    assert.equal(await echoParam(oid, 0, Buffer.from(codec.encodeText(s)), '$1'), printed)
  }
})

test('values the encoders refuse are values the server refuses in binary too', async () => {
  const f8 = (...xs: number[]) => {
    const b = Buffer.alloc(8 * xs.length)
    xs.forEach((x, i) => b.writeDoubleBE(x, 8 * i))
    return b
  }
  await assert.rejects(echoParam(628, 1, f8(0, 0, 1), '$1'), /invalid line specification: A and B cannot both be zero/)
  await assert.rejects(echoParam(628, 1, f8(1e-7, -1e-7, 1), '$1'), /invalid line specification/)
  assert.equal(await echoParam(628, 1, f8(2e-6, 0, 1), '$1'), '{2e-06,0,1}')
  await assert.rejects(echoParam(718, 1, f8(0, 0, -1), '$1'), /invalid radius in external "circle" value/)
  await assert.rejects(echoParam(602, 1, Buffer.from([0, 0, 0, 0, 0]), '$1'), /invalid number of points in external "path" value/)
  await assert.rejects(echoParam(604, 1, Buffer.from([0, 0, 0, 0]), '$1'), /invalid number of points in external "polygon" value/)
  const w = new Writer(16)
  assert.throws(() => lineCodec.encodeBinary!(w, { a: 1e-7, b: -1e-7, c: 1 }), /line needs A and B not both zero/)
  assert.throws(() => circleCodec.encodeBinary!(w, { x: 0, y: 0, radius: -1 }), /circle needs a radius of at least 0/)
  assert.throws(() => pathCodec.encodeBinary!(w, { closed: true, points: [] }), /path needs/)
  assert.throws(() => polygonCodec.encodeBinary!(w, []), /polygon needs/)
  assert.equal(w.length, 0)
})
