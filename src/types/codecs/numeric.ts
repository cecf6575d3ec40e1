import type { Writer } from '../../protocol/writer.js'
import type { Codec, ResolvedTypeOptions } from '../codec.js'
import { utf8Read } from '../../protocol/utf8.js'
import { readInt16, readUint16 } from './binary.js'
import { malformed, wrongType } from './scalar-errors.js'

// numeric as a string (the default: exactly PostgreSQL's text output, trailing
// zeros of the scale included, and 'NaN', 'Infinity', '-Infinity') or as a
// number (Number of that string, the nearest double).
//
// Binary numeric is a header of four int16 (ndigits, weight, sign, dscale)
// then ndigits base-10000 digits; the first digit is worth 10000^weight, and
// dscale is the number of decimal digits shown after the point. Decoding
// reproduces numeric_out's text from those fields.

const NUMERIC_POS = 0x0000
const NUMERIC_NEG = 0x4000
const NUMERIC_NAN = 0xc000
const NUMERIC_PINF = 0xd000
const NUMERIC_NINF = 0xf000
const DSCALE_MAX = 0x3fff
const WEIGHT_MAX = 0x7fff

// The decimal text is assembled as ASCII here, then turned into a string in one call.
let scratch = new Uint8Array(256)

/** Appends the 4 decimal digits of a base-10000 digit. */
function put4(out: Uint8Array, p: number, dig: number): void {
  const d1 = (dig / 1000) | 0
  dig -= d1 * 1000
  const d2 = (dig / 100) | 0
  dig -= d2 * 100
  const d3 = (dig / 10) | 0
  out[p] = 0x30 + d1
  out[p + 1] = 0x30 + d2
  out[p + 2] = 0x30 + d3
  out[p + 3] = 0x30 + dig - d3 * 10
}

function digitAt(buf: Uint8Array, at: number): number {
  const d = readUint16(buf, at)
  if (d > 9999) throw malformed('numeric', 'digit out of range')
  return d
}

/** PostgreSQL's text for a binary numeric. */
export function numericBinaryToString(buf: Uint8Array, start: number, end: number): string {
  if (end - start < 8) throw malformed('numeric', 'shorter than its header')
  const ndigits = readUint16(buf, start)
  const weight = readInt16(buf, start + 2)
  const sign = readUint16(buf, start + 4)
  const dscale = readUint16(buf, start + 6)
  if (end - start !== 8 + 2 * ndigits) throw malformed('numeric', 'length does not match its digit count')
  if (sign !== NUMERIC_POS && sign !== NUMERIC_NEG) {
    if (sign === NUMERIC_NAN) return 'NaN'
    if (sign === NUMERIC_PINF) return 'Infinity'
    if (sign === NUMERIC_NINF) return '-Infinity'
    throw malformed('numeric', 'invalid sign')
  }
  if (dscale > DSCALE_MAX) throw malformed('numeric', 'invalid scale')
  const digits = start + 8
  // Sign, integer digits (at least '0'), point, scale, and room for a whole last group.
  const size = 2 + (weight >= 0 ? (weight + 1) * 4 : 1) + 1 + dscale + 4
  const out = size <= scratch.length ? scratch : size <= 4096 ? (scratch = new Uint8Array(size * 2)) : new Uint8Array(size)
  let p = 0
  if (sign === NUMERIC_NEG) out[p++] = 0x2d
  if (weight < 0) out[p++] = 0x30
  else {
    // The first group without its leading zeros, the others in full.
    const first = ndigits > 0 ? digitAt(buf, digits) : 0
    if (first >= 1000) {
      put4(out, p, first)
      p += 4
    } else if (first >= 100) {
      out[p++] = 0x30 + ((first / 100) | 0)
      out[p++] = 0x30 + (((first / 10) | 0) % 10)
      out[p++] = 0x30 + (first % 10)
    } else if (first >= 10) {
      out[p++] = 0x30 + ((first / 10) | 0)
      out[p++] = 0x30 + (first % 10)
    } else out[p++] = 0x30 + first
    for (let d = 1; d <= weight; d++, p += 4) put4(out, p, d < ndigits ? digitAt(buf, digits + 2 * d) : 0)
  }
  // Digits past the scale are dropped, as numeric_recv truncates them too.
  let lastUsed = weight
  if (dscale > 0) {
    out[p++] = 0x2e
    const stop = p + dscale
    for (let d = weight + 1; p < stop; d++, p += 4) {
      put4(out, p, d >= 0 && d < ndigits ? digitAt(buf, digits + 2 * d) : 0)
      lastUsed = d
    }
    p = stop
  }
  for (let d = Math.max(lastUsed + 1, 0); d < ndigits; d++) digitAt(buf, digits + 2 * d)
  return utf8Read(out, 0, p)
}

/** Checks PostgreSQL's numeric output syntax and returns the text unchanged. */
export function numericTextToString(buf: Uint8Array, start: number, end: number): string {
  let i = start
  if (i < end && buf[i] === 0x2d) i++
  if (i < end && (buf[i] === 0x4e /* N */ || buf[i] === 0x49) /* I */) {
    const s = utf8Read(buf, start, end)
    if (s === 'NaN' || s === 'Infinity' || s === '-Infinity') return s
    throw malformed('numeric', 'not a number')
  }
  let digits = 0
  let point = false
  for (; i < end; i++) {
    const c = buf[i]!
    if (c >= 0x30 && c <= 0x39) digits++
    else if (c === 0x2e && !point) point = true
    else throw malformed('numeric', 'not a number')
  }
  if (digits === 0) throw malformed('numeric', 'no digits')
  return utf8Read(buf, start, end)
}

function writeHeader(w: Writer, ndigits: number, weight: number, sign: number, dscale: number): void {
  w.i16(ndigits)
  w.i16(weight)
  w.i16(sign)
  w.i16(dscale)
}

/** NaN, [+-]Infinity and [+-]inf in any case, as numeric_in accepts them; false for anything else. */
function writeSpecial(w: Writer, s: string): boolean {
  const l = s.toLowerCase()
  const sign =
    l === 'nan'
      ? NUMERIC_NAN
      : l === 'infinity' || l === '+infinity' || l === 'inf' || l === '+inf'
        ? NUMERIC_PINF
        : l === '-infinity' || l === '-inf'
          ? NUMERIC_NINF
          : -1
  if (sign < 0) return false
  writeHeader(w, 0, 0, sign, 0)
  return true
}

/**
 * Writes binary numeric for a string in numeric syntax (sign, digits, point,
 * exponent) and returns true; returns false, writing nothing, for anything
 * else (whitespace, underscores, hex...) and for values beyond the binary
 * format's limits, so that the server parses the text and reports any error
 * in its own words.
 */
export function writeNumericString(w: Writer, s: string): boolean {
  const n = s.length
  let i = 0
  let neg = false
  const c0 = s.charCodeAt(0)
  if (c0 === 0x2b) i++
  else if (c0 === 0x2d) {
    neg = true
    i++
  }
  const intStart = i
  while (i < n && isDigit(s.charCodeAt(i))) i++
  const intLen = i - intStart
  let fracStart = i
  let fracLen = 0
  if (i < n && s.charCodeAt(i) === 0x2e) {
    fracStart = ++i
    while (i < n && isDigit(s.charCodeAt(i))) i++
    fracLen = i - fracStart
  }
  if (intLen + fracLen === 0) return writeSpecial(w, s)
  let exp = 0
  if (i < n && (s.charCodeAt(i) | 0x20) === 0x65 /* e or E */) {
    i++
    let expNeg = false
    const c = s.charCodeAt(i)
    if (c === 0x2b) i++
    else if (c === 0x2d) {
      expNeg = true
      i++
    }
    const expStart = i
    while (i < n && isDigit(s.charCodeAt(i))) exp = exp * 10 + (s.charCodeAt(i++) - 0x30)
    if (i === expStart || i - expStart > 9) return false
    if (expNeg) exp = -exp
  }
  if (i !== n) return false

  const nd = intLen + fracLen
  // Decimal digit k counts across the point: digitOf(s, k, intStart, intLen, shift) reads s[intStart + k] or s[fracStart + k - intLen].
  const shift = fracStart - intLen
  const dscale = Math.max(0, fracLen - exp)
  if (dscale > DSCALE_MAX) return false
  let first = 0
  while (first < nd && digitOf(s, first, intStart, intLen, shift) === 0) first++
  if (first === nd) {
    // Zero has no digits and no sign.
    writeHeader(w, 0, 0, NUMERIC_POS, dscale)
    return true
  }
  let last = nd - 1
  while (digitOf(s, last, intStart, intLen, shift) === 0) last--
  // Digit k is worth 10^(point - 1 - k).
  const point = intLen + exp
  const weight = Math.floor((point - 1 - first) / 4)
  if (weight > WEIGHT_MAX) return false
  const lastWeight = Math.floor((point - 1 - last) / 4)
  writeHeader(w, weight - lastWeight + 1, weight, neg ? NUMERIC_NEG : NUMERIC_POS, dscale)
  for (let g = weight; g >= lastWeight; g--) {
    let v = 0
    for (let e = 4 * g + 3; e >= 4 * g; e--) {
      const k = point - 1 - e
      v = v * 10 + (k >= first && k <= last ? digitOf(s, k, intStart, intLen, shift) : 0)
    }
    w.i16(v)
  }
  return true
}

function digitOf(s: string, k: number, intStart: number, intLen: number, shift: number): number {
  return s.charCodeAt(k < intLen ? intStart + k : shift + k) - 0x30
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39
}

const NUMERIC_EXPECTED = 'a string, a number or a bigint'

function encodeNumericBinary(w: Writer, v: unknown): boolean {
  if (typeof v === 'string') return writeNumericString(w, v)
  if (typeof v === 'number') {
    if (v !== v) writeHeader(w, 0, 0, NUMERIC_NAN, 0)
    else if (v === Infinity) writeHeader(w, 0, 0, NUMERIC_PINF, 0)
    else if (v === -Infinity) writeHeader(w, 0, 0, NUMERIC_NINF, 0)
    // The shortest decimal that reads back as this double ('0.1', '1e+21', '5e-7').
    else writeNumericString(w, String(v))
    return true
  }
  if (typeof v === 'bigint') {
    writeNumericString(w, v.toString())
    return true
  }
  throw wrongType('numeric', NUMERIC_EXPECTED, v)
}

function encodeNumericText(v: unknown): string {
  if (typeof v === 'string') return v
  if (typeof v === 'number') return String(v)
  if (typeof v === 'bigint') return v.toString()
  throw wrongType('numeric', NUMERIC_EXPECTED, v)
}

const numericString: Codec = {
  name: 'numeric',
  decodeText: numericTextToString,
  decodeBinary: numericBinaryToString,
  encodeText: encodeNumericText,
  encodeBinary: encodeNumericBinary,
}

const numericNumber: Codec = {
  name: 'numeric',
  decodeText: (buf, start, end) => Number(numericTextToString(buf, start, end)),
  decodeBinary: (buf, start, end) => Number(numericBinaryToString(buf, start, end)),
  encodeText: encodeNumericText,
  encodeBinary: encodeNumericBinary,
}

/** The numeric codec for the numeric type option. */
export function numericCodec(mode: ResolvedTypeOptions['numeric']): Codec {
  return mode === 'number' ? numericNumber : numericString
}

export function registerNumeric(table: Map<number, Codec>, options: ResolvedTypeOptions): void {
  table.set(1700, numericCodec(options.numeric)) // numeric
}
