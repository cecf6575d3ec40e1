import type { Writer } from '../../protocol/writer.js'
import type { ArrayValuedCodec } from './array-shape.js'
import { CodecError, describeValue, type Codec, type ResolvedTypeOptions } from '../codec.js'
import { expectLength, readFloat64, readInt32, writeFloat64 } from './binary.js'
import { formatFloat, GeometricTextReader } from './geometric-text.js'
import type { Circle, Line, Path, Point, Polygon } from './geometric-values.js'

// The geometric types as plain objects of doubles. Binary is float8 after
// float8 (a path adds a closed flag and a count, a polygon a count); the text
// the server prints (PostgreSQL 12+: shortest round-trip digits) parses back
// to the very same doubles, so both formats decode to identical values.

export type { Box, Circle, Line, LineSegment, Path, Point, Polygon } from './geometric-values.js'

const POINT_OID = 600
const LSEG_OID = 601
const PATH_OID = 602
const BOX_OID = 603
const POLYGON_OID = 604
const LINE_OID = 628
const CIRCLE_OID = 718

// PostgreSQL's tolerance for "zero" in geometry (EPSILON in geo_decls.h).
const EPSILON = 1e-6

const reader = new GeometricTextReader()

function readPoint(b: Uint8Array, at: number): Point {
  return { x: readFloat64(b, at), y: readFloat64(b, at + 8) }
}

/** Reads `n` points at `at`. */
function readPoints(b: Uint8Array, at: number, n: number): Point[] {
  const points: Point[] = new Array(n)
  for (let i = 0; i < n; i++) points[i] = readPoint(b, at + 16 * i)
  return points
}

/** The point count at `at`, checked against the bytes that follow it. */
function pointCount(name: string, b: Uint8Array, at: number, end: number): number {
  if (end - at < 4) throw new CodecError(`malformed binary ${name}: ${end - at} bytes`)
  const n = readInt32(b, at)
  if (n < 0 || end - at - 4 !== n * 16) throw new CodecError(`malformed binary ${name}: ${end - at - 4} bytes do not hold ${n} points`)
  return n
}

function isNumber(v: unknown): v is number {
  return typeof v === 'number'
}

function isPoint(v: unknown): v is Point {
  return typeof v === 'object' && v !== null && isNumber((v as Point).x) && isNumber((v as Point).y)
}

function isPointPair(v: unknown): v is [Point, Point] {
  return Array.isArray(v) && v.length === 2 && isPoint(v[0]) && isPoint(v[1])
}

function isPointList(v: unknown): v is Point[] {
  if (!Array.isArray(v) || v.length === 0) return false
  for (let i = 0; i < v.length; i++) if (!isPoint(v[i])) return false
  return true
}

function isPath(v: unknown): v is Path {
  return typeof v === 'object' && v !== null && typeof (v as Path).closed === 'boolean' && isPointList((v as Path).points)
}

function isLine(v: unknown): v is Line {
  if (typeof v !== 'object' || v === null) return false
  const l = v as Line
  if (!isNumber(l.a) || !isNumber(l.b) || !isNumber(l.c)) return false
  // The server refuses such a line in both formats.
  if (Math.abs(l.a) <= EPSILON && Math.abs(l.b) <= EPSILON) throw new CodecError('line needs A and B not both zero')
  return true
}

function isCircle(v: unknown): v is Circle {
  if (typeof v !== 'object' || v === null) return false
  const c = v as Circle
  if (!isNumber(c.x) || !isNumber(c.y) || !isNumber(c.radius)) return false
  if (c.radius < 0) throw new CodecError('circle needs a radius of at least 0')
  return true
}

function writePoint(w: Writer, p: Point): void {
  writeFloat64(w, p.x)
  writeFloat64(w, p.y)
}

function pointText(p: Point): string {
  return `(${formatFloat(p.x)},${formatFloat(p.y)})`
}

function pointListText(points: readonly Point[]): string {
  let s = pointText(points[0]!)
  for (let i = 1; i < points.length; i++) s += ',' + pointText(points[i]!)
  return s
}

/**
 * A codec whose values are checked by `is`, written by `write` and printed
 * by `text`; strings go to the server as text.
 */
function geometricCodec<T>(
  name: string,
  shape: string,
  decodeText: (buf: Uint8Array, start: number, end: number) => T,
  decodeBinary: (buf: Uint8Array, start: number, end: number) => T,
  is: (v: unknown) => v is T,
  write: (w: Writer, v: T) => void,
  text: (v: T) => string,
): Codec {
  const expects = (v: unknown) => new CodecError(`${name} needs ${shape} or a string; got ${describeValue(v)}`)
  return {
    name,
    decodeText,
    decodeBinary,
    encodeText(value) {
      if (typeof value === 'string') return value
      if (!is(value)) throw expects(value)
      return text(value)
    },
    encodeBinary(w, value) {
      if (typeof value === 'string') return false
      if (!is(value)) throw expects(value)
      write(w, value)
      return true
    },
  }
}

export const pointCodec: Codec = geometricCodec<Point>(
  'point',
  '{ x, y } with number coordinates',
  (buf, start, end) => reader.point('point', buf, start, end),
  (buf, start, end) => {
    expectLength('point', start, end, 16)
    return readPoint(buf, start)
  },
  isPoint,
  writePoint,
  pointText,
)

export const lineCodec: Codec = geometricCodec<Line>(
  'line',
  '{ a, b, c } with number coefficients',
  (buf, start, end) => reader.line('line', buf, start, end),
  (buf, start, end) => {
    expectLength('line', start, end, 24)
    return { a: readFloat64(buf, start), b: readFloat64(buf, start + 8), c: readFloat64(buf, start + 16) }
  },
  isLine,
  (w, l) => {
    writeFloat64(w, l.a)
    writeFloat64(w, l.b)
    writeFloat64(w, l.c)
  },
  (l) => `{${formatFloat(l.a)},${formatFloat(l.b)},${formatFloat(l.c)}}`,
)

function pairCodec(name: string, open: string, close: string): Codec {
  return geometricCodec<[Point, Point]>(
    name,
    '[point, point] with points as { x, y }',
    (buf, start, end) => reader.pair(name, open === '[', buf, start, end),
    (buf, start, end) => {
      expectLength(name, start, end, 32)
      return [readPoint(buf, start), readPoint(buf, start + 16)]
    },
    isPointPair,
    (w, pair) => {
      writePoint(w, pair[0])
      writePoint(w, pair[1])
    },
    (pair) => `${open}${pointText(pair[0])},${pointText(pair[1])}${close}`,
  )
}

// Values that are JS arrays (of points): inside an array parameter such a value
// is one element, not a further dimension.
export const lsegCodec: ArrayValuedCodec = { ...pairCodec('lseg', '[', ']'), valuesAreArrays: true }
/** The server puts the corners in order (upper right first) whatever order they come in. */
export const boxCodec: ArrayValuedCodec = { ...pairCodec('box', '', ''), valuesAreArrays: true }

export const pathCodec: Codec = geometricCodec<Path>(
  'path',
  '{ closed, points } with at least one { x, y } point',
  (buf, start, end) => reader.path('path', buf, start, end),
  (buf, start, end) => {
    if (end - start < 1) throw new CodecError('malformed binary path: empty')
    const closed = buf[start] !== 0
    const n = pointCount('path', buf, start + 1, end)
    return { closed, points: readPoints(buf, start + 5, n) }
  },
  isPath,
  (w, p) => {
    w.u8(p.closed ? 1 : 0)
    w.i32(p.points.length)
    for (let i = 0; i < p.points.length; i++) writePoint(w, p.points[i]!)
  },
  (p) => (p.closed ? `(${pointListText(p.points)})` : `[${pointListText(p.points)}]`),
)

export const polygonCodec: ArrayValuedCodec = { valuesAreArrays: true, ...geometricCodec<Polygon>(
  'polygon',
  'an array of at least one { x, y } point',
  (buf, start, end) => reader.polygon('polygon', buf, start, end),
  (buf, start, end) => readPoints(buf, start + 4, pointCount('polygon', buf, start, end)),
  isPointList,
  (w, points) => {
    w.i32(points.length)
    for (let i = 0; i < points.length; i++) writePoint(w, points[i]!)
  },
  (points) => `(${pointListText(points)})`,
) }

export const circleCodec: Codec = geometricCodec<Circle>(
  'circle',
  '{ x, y, radius } with number values',
  (buf, start, end) => reader.circle('circle', buf, start, end),
  (buf, start, end) => {
    expectLength('circle', start, end, 24)
    return { x: readFloat64(buf, start), y: readFloat64(buf, start + 8), radius: readFloat64(buf, start + 16) }
  },
  isCircle,
  (w, c) => {
    writeFloat64(w, c.x)
    writeFloat64(w, c.y)
    writeFloat64(w, c.radius)
  },
  (c) => `<(${formatFloat(c.x)},${formatFloat(c.y)}),${formatFloat(c.radius)}>`,
)

export function registerGeometricCodecs(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(POINT_OID, pointCodec)
  table.set(LSEG_OID, lsegCodec)
  table.set(PATH_OID, pathCodec)
  table.set(BOX_OID, boxCodec)
  table.set(POLYGON_OID, polygonCodec)
  table.set(LINE_OID, lineCodec)
  table.set(CIRCLE_OID, circleCodec)
}
