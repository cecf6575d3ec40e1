import type { Writer } from '../../protocol/writer.js'
import type { Codec, ResolvedTypeOptions } from '../codec.js'
import { utf8Read } from '../../protocol/utf8.js'
import { expectLength, readFloat32, readFloat64, writeFloat32, writeFloat64 } from './binary.js'
import { malformed, needs, outOfRange, wrongType } from './scalar-errors.js'

// float4 and float8 as numbers. NaN, ±Infinity and -0 survive both formats and
// both directions. PostgreSQL (12+, extra_float_digits >= 1, the default) prints
// the shortest text that reads back as the same value, so text decoding is
// exact too; float4 text is passed through Math.fround so that it yields the
// same double as the binary float32 does.

// Exact powers of ten: every one up to 1e22 is a double without rounding.
const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]

/**
 * A float in PostgreSQL's output syntax. Short values (at most 15 significant
 * digits, decimal exponent within ±22) are computed directly: an exact integer
 * times or divided by an exact power of ten is correctly rounded, so this gives
 * the same double as Number() without making a string. Anything longer goes
 * through Number().
 */
export function parseFloatText(buf: Uint8Array, start: number, end: number, name: string): number {
  let i = start
  const neg = end > start && buf[i] === 0x2d
  if (neg) i++
  let m = 0
  let digits = 0
  let scale = 0
  let c = 0
  for (; i < end; i++) {
    c = buf[i]! - 0x30
    if (c < 0 || c > 9) break
    m = m * 10 + c
    digits++
  }
  if (i < end && buf[i] === 0x2e /* . */) {
    for (i++; i < end; i++) {
      c = buf[i]! - 0x30
      if (c < 0 || c > 9) break
      m = m * 10 + c
      digits++
      scale++
    }
  }
  if (i === end && digits > 0 && digits <= 15 && scale <= 22) {
    const v = scale === 0 ? m : m / POW10[scale]!
    return neg ? -v : v
  }
  return parseFloatSlow(buf, start, end, name)
}

function parseFloatSlow(buf: Uint8Array, start: number, end: number, name: string): number {
  const n = end - start
  if (n === 0) throw malformed(name, 'empty')
  // Number() would also accept hex, binary, whitespace and the empty string:
  // only PostgreSQL's own output syntax gets there.
  for (let i = start; i < end; i++) {
    const c = buf[i]!
    if (!((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45)) {
      return parseFloatSpecial(buf, start, end, name)
    }
  }
  const v = Number(utf8Read(buf, start, end))
  if (v !== v) throw malformed(name, 'not a number')
  return v
}

function parseFloatSpecial(buf: Uint8Array, start: number, end: number, name: string): number {
  const s = utf8Read(buf, start, end)
  if (s === 'NaN') return NaN
  if (s === 'Infinity') return Infinity
  if (s === '-Infinity') return -Infinity
  throw malformed(name, 'not a number')
}

const FLOAT_EXPECTED = 'a number, a bigint or a string'

/** A parameter as a number; a bigint must be exactly representable. */
function floatParam(name: string, v: unknown): number {
  if (typeof v === 'number') return v
  if (typeof v === 'bigint') {
    const n = Number(v)
    if (!Number.isFinite(n) || BigInt(n) !== v) {
      throw needs(name, FLOAT_EXPECTED, 'a bigint that a double cannot hold exactly')
    }
    return n
  }
  throw wrongType(name, FLOAT_EXPECTED, v)
}

/** A number as float4, rounded to the nearest float32 as PostgreSQL would; like PostgreSQL, refuses values that overflow to infinity or underflow to zero. */
function float4Param(v: unknown): number {
  const n = floatParam('float4', v)
  const f = Math.fround(n)
  if ((f === Infinity || f === -Infinity) && Number.isFinite(n)) throw outOfRange('float4')
  if (f === 0 && n !== 0) throw outOfRange('float4')
  return f
}

/** The shortest text that reads back as `n`, keeping the sign of -0. */
function floatText(n: number): string {
  return n === 0 && 1 / n < 0 ? '-0' : String(n)
}

export const float4Codec: Codec = {
  name: 'float4',
  decodeText: (buf, start, end) => Math.fround(parseFloatText(buf, start, end, 'float4')),
  decodeBinary: (buf, start, end) => {
    expectLength('float4', start, end, 4)
    return readFloat32(buf, start)
  },
  // The text of the float32 value (not of the double) so that the server reads the same float32 binary would send.
  encodeText: (v) => (typeof v === 'string' ? v : floatText(float4Param(v))),
  encodeBinary: (w: Writer, v) => {
    if (typeof v === 'string') return false
    writeFloat32(w, float4Param(v))
    return true
  },
}

export const float8Codec: Codec = {
  name: 'float8',
  decodeText: (buf, start, end) => parseFloatText(buf, start, end, 'float8'),
  decodeBinary: (buf, start, end) => {
    expectLength('float8', start, end, 8)
    return readFloat64(buf, start)
  },
  encodeText: (v) => (typeof v === 'string' ? v : floatText(floatParam('float8', v))),
  encodeBinary: (w: Writer, v) => {
    if (typeof v === 'string') return false
    writeFloat64(w, floatParam('float8', v))
    return true
  },
}

export function registerFloats(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(700, float4Codec) // float4
  table.set(701, float8Codec) // float8
}
