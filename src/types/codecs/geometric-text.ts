import { CodecError } from '../codec.js'
import type { Box, Circle, Line, LineSegment, Path, Point, Polygon } from './geometric-values.js'

// The text forms the server prints for geometric types, read straight from
// the bytes: point (x,y), line {a,b,c}, lseg [(x,y),(x,y)], box (x,y),(x,y),
// open path [(x,y),...], closed path and polygon ((x,y),...), circle <(x,y),r>.
// Numbers are float8 output: digits, '.', 'e', signs, NaN, Infinity.

const EMPTY = new Uint8Array(0)

const COMMA = 0x2c
const OPEN_PAREN = 0x28
const CLOSE_PAREN = 0x29
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_ANGLE = 0x3c
const CLOSE_ANGLE = 0x3e

function isNumberChar(c: number): boolean {
  // 0-9 . + - e E and the letters of NaN and Infinity.
  return (
    (c >= 0x30 && c <= 0x39) ||
    c === 0x2e ||
    c === 0x2b ||
    c === 0x2d ||
    c === 0x65 ||
    c === 0x45 ||
    c === 0x49 ||
    c === 0x4e ||
    c === 0x61 ||
    c === 0x66 ||
    c === 0x69 ||
    c === 0x6e ||
    c === 0x74 ||
    c === 0x79
  )
}

/** A float8 the way the server prints it (-0 keeps its sign). */
export function formatFloat(v: number): string {
  return v === 0 && 1 / v < 0 ? '-0' : String(v)
}

/** Reads one value at a time; decoding is synchronous, so one instance is shared. */
export class GeometricTextReader {
  private buf: Uint8Array = EMPTY
  private start = 0
  private at = 0
  private end = 0
  private name = ''

  private begin(name: string, buf: Uint8Array, start: number, end: number): void {
    this.name = name
    this.buf = buf
    this.start = start
    this.at = start
    this.end = end
  }

  private fail(): CodecError {
    // Let go of the socket chunk.
    this.buf = EMPTY
    return new CodecError(`malformed ${this.name}: unexpected text at character ${this.at - this.start}`)
  }

  private expect(c: number): void {
    if (this.at >= this.end || this.buf[this.at] !== c) throw this.fail()
    this.at++
  }

  private eat(c: number): boolean {
    if (this.at < this.end && this.buf[this.at] === c) {
      this.at++
      return true
    }
    return false
  }

  private finish<T>(v: T): T {
    if (this.at !== this.end) throw this.fail()
    this.buf = EMPTY
    return v
  }

  private number(): number {
    const from = this.at
    let s = ''
    while (this.at < this.end && isNumberChar(this.buf[this.at]!)) s += String.fromCharCode(this.buf[this.at++]!)
    const v = Number(s)
    // Number('') is 0, and anything it cannot read is NaN.
    if (s.length === 0 || (v !== v && s !== 'NaN')) {
      this.at = from
      throw this.fail()
    }
    return v
  }

  private readPoint(): Point {
    this.expect(OPEN_PAREN)
    const x = this.number()
    this.expect(COMMA)
    const y = this.number()
    this.expect(CLOSE_PAREN)
    return { x, y }
  }

  /** Points separated by commas, up to and including `close`. */
  private readPointList(close: number): Point[] {
    const points = [this.readPoint()]
    while (this.eat(COMMA)) points.push(this.readPoint())
    this.expect(close)
    return points
  }

  point(name: string, buf: Uint8Array, start: number, end: number): Point {
    this.begin(name, buf, start, end)
    return this.finish(this.readPoint())
  }

  line(name: string, buf: Uint8Array, start: number, end: number): Line {
    this.begin(name, buf, start, end)
    this.expect(OPEN_BRACE)
    const a = this.number()
    this.expect(COMMA)
    const b = this.number()
    this.expect(COMMA)
    const c = this.number()
    this.expect(CLOSE_BRACE)
    return this.finish({ a, b, c })
  }

  /** lseg is bracketed: [(x,y),(x,y)]; box is not: (x,y),(x,y). */
  pair(name: string, bracketed: boolean, buf: Uint8Array, start: number, end: number): LineSegment | Box {
    this.begin(name, buf, start, end)
    if (bracketed) this.expect(OPEN_BRACKET)
    const p = this.readPoint()
    this.expect(COMMA)
    const q = this.readPoint()
    if (bracketed) this.expect(CLOSE_BRACKET)
    return this.finish([p, q])
  }

  path(name: string, buf: Uint8Array, start: number, end: number): Path {
    this.begin(name, buf, start, end)
    if (this.eat(OPEN_BRACKET)) return this.finish({ closed: false, points: this.readPointList(CLOSE_BRACKET) })
    this.expect(OPEN_PAREN)
    return this.finish({ closed: true, points: this.readPointList(CLOSE_PAREN) })
  }

  polygon(name: string, buf: Uint8Array, start: number, end: number): Polygon {
    this.begin(name, buf, start, end)
    this.expect(OPEN_PAREN)
    return this.finish(this.readPointList(CLOSE_PAREN))
  }

  circle(name: string, buf: Uint8Array, start: number, end: number): Circle {
    this.begin(name, buf, start, end)
    this.expect(OPEN_ANGLE)
    const { x, y } = this.readPoint()
    this.expect(COMMA)
    const radius = this.number()
    this.expect(CLOSE_ANGLE)
    return this.finish({ x, y, radius })
  }
}
