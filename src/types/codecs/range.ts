import type { Writer } from '../../protocol/writer.js'
import { BUILTIN_TYPES } from '../builtin-types.js'
import { CodecError, describeValue, type BinaryEncoder, type Codec, type Decoder, type ResolvedTypeOptions, type TextEncoder } from '../codec.js'
import { Range, formatRange, type RangeLike } from '../range.js'
import { readInt32 } from './binary.js'
import { BACKSLASH, COMMA, LBRACKET, LPAREN, QUOTE, RBRACKET, RPAREN, byteAt, decodeField, scanField, skipSpace } from './literal-syntax.js'

// Range types. JS: Range<T> with bounds of the subtype's JS type.
// Binary (range_send): a flags byte, then the present bounds, each as int32
// length and the subtype's binary form. Text (range_out): 'empty' or
// '[lower,upper)' with an empty side for an unbounded one and bounds quoted
// like composite fields (plus '[' and ']').

// Flag bits of rangetypes.h.
const EMPTY = 0x01
const LB_INC = 0x02
const UB_INC = 0x04
const LB_INF = 0x08
const UB_INF = 0x10
const LB_NULL = 0x20
const UB_NULL = 0x40

export function rangeCodec(subtype: Codec, name: string): Codec {
  const decodeText = subtype.decodeText
  const decodeBinary = subtype.decodeBinary
  const encodeText = subtype.encodeText
  const encodeBinary = subtype.encodeBinary
  return {
    name,
    decodeText: (buf, start, end) => parseRangeText(buf, start, end, decodeText, name),
    decodeBinary: decodeBinary && ((buf, start, end) => decodeRangeBinary(buf, start, end, decodeBinary, name)),
    encodeText(value) {
      if (typeof value === 'string') return value
      return encodeRangeText(asRange(value, name), encodeText)
    },
    encodeBinary: encodeBinary && ((w, value) => typeof value !== 'string' && encodeRangeBinary(w, asRange(value, name), encodeBinary)),
    preferBinary: subtype.preferBinary !== false,
  }
}

function isEmptyWord(buf: Uint8Array, p: number, end: number): boolean {
  return (
    end - p >= 5 &&
    (buf[p]! | 0x20) === 0x65 &&
    (buf[p + 1]! | 0x20) === 0x6d &&
    (buf[p + 2]! | 0x20) === 0x70 &&
    (buf[p + 3]! | 0x20) === 0x74 &&
    (buf[p + 4]! | 0x20) === 0x79
  )
}

function malformedText(name: string, what: string): CodecError {
  return new CodecError(`malformed ${name} literal: ${what}`)
}

export function parseRangeText(buf: Uint8Array, start: number, end: number, decode: Decoder, name: string): Range<unknown> {
  let p = skipSpace(buf, start, end)
  if (isEmptyWord(buf, p, end)) {
    if (skipSpace(buf, p + 5, end) !== end) throw malformedText(name, 'junk after "empty"')
    return Range.empty()
  }
  const open = byteAt(buf, p, end)
  if (open !== LBRACKET && open !== LPAREN) throw malformedText(name, 'it does not start with "[", "(" or "empty"')
  p = scanField(buf, p + 1, end, true, name)
  if (buf[p] !== COMMA) throw malformedText(name, 'missing "," between the bounds')
  const lower = decodeField(buf, decode)
  p = scanField(buf, p + 1, end, true, name)
  const close = buf[p]
  if (close !== RBRACKET && close !== RPAREN) throw malformedText(name, 'missing the closing "]" or ")"')
  const upper = decodeField(buf, decode)
  if (skipSpace(buf, p + 1, end) !== end) throw malformedText(name, 'junk after the closing bracket')
  return new Range(lower, upper, open === LBRACKET ? (close === RBRACKET ? '[]' : '[)') : close === RBRACKET ? '(]' : '()')
}

/** The index just past the range literal that starts at `p` (inside a multirange literal). */
export function rangeLiteralEnd(buf: Uint8Array, p: number, end: number, name: string): number {
  if (isEmptyWord(buf, p, end)) return p + 5
  let quoted = false
  for (let q = p + 1; q < end; q++) {
    const c = buf[q]
    if (c === BACKSLASH) q++
    else if (c === QUOTE) quoted = !quoted
    else if (!quoted && (c === RBRACKET || c === RPAREN)) return q + 1
  }
  throw malformedText(name, 'unterminated range')
}

function malformedBinary(name: string, what: string): CodecError {
  return new CodecError(`malformed binary ${name}: ${what}`)
}

export function decodeRangeBinary(buf: Uint8Array, start: number, end: number, decode: Decoder, name: string): Range<unknown> {
  if (end - start < 1) throw malformedBinary(name, 'no flags byte')
  const flags = buf[start]!
  if (flags & EMPTY) {
    if (end - start !== 1) throw malformedBinary(name, 'bytes after an empty range')
    return Range.empty()
  }
  let p = start + 1
  let lower: unknown = null
  let upper: unknown = null
  if ((flags & (LB_INF | LB_NULL)) === 0) {
    if (end - p < 4) throw malformedBinary(name, 'truncated lower bound')
    const len = readInt32(buf, p)
    p += 4
    if (len < 0 || len > end - p) throw malformedBinary(name, `lower bound length ${len}`)
    lower = decode(buf, p, p + len)
    p += len
  }
  if ((flags & (UB_INF | UB_NULL)) === 0) {
    if (end - p < 4) throw malformedBinary(name, 'truncated upper bound')
    const len = readInt32(buf, p)
    p += 4
    if (len < 0 || len > end - p) throw malformedBinary(name, `upper bound length ${len}`)
    upper = decode(buf, p, p + len)
    p += len
  }
  if (p !== end) throw malformedBinary(name, `${end - p} bytes after the bounds`)
  const r = new Range(lower, upper)
  r.lowerInclusive = lower !== null && (flags & LB_INC) !== 0
  r.upperInclusive = upper !== null && (flags & UB_INC) !== 0
  return r
}

interface RangeFields extends RangeLike<unknown> {
  empty: boolean
}

/** A Range, or a plain object with `lower` and `upper` (inclusivity defaults to '[)'), as the fields the encoders need. */
export function asRange(value: unknown, name: string): RangeFields {
  if (value instanceof Range) return value
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const o = value as Partial<Record<keyof RangeFields, unknown>>
    if (o.empty === true) return Range.empty()
    if ('lower' in o && 'upper' in o) {
      const li = o.lowerInclusive ?? true
      const ui = o.upperInclusive ?? false
      if (typeof li !== 'boolean' || typeof ui !== 'boolean') {
        throw new CodecError(`${name} needs lowerInclusive and upperInclusive to be booleans; got ${describeValue(typeof li !== 'boolean' ? li : ui)}`)
      }
      return { lower: o.lower ?? null, upper: o.upper ?? null, lowerInclusive: li, upperInclusive: ui, empty: false }
    }
  }
  throw new CodecError(`${name} needs a Range, an object with lower and upper, or a string; got ${describeValue(value)}`)
}

export function encodeRangeText(r: RangeFields, encode: TextEncoder): string {
  return r.empty ? 'empty' : formatRange(r, encode)
}

/** Writes a range in binary; returns false, having written nothing, when a bound asks to go as text. */
export function encodeRangeBinary(w: Writer, r: RangeFields, encode: BinaryEncoder): boolean {
  if (r.empty) {
    w.u8(EMPTY)
    return true
  }
  const lower = r.lower ?? null
  const upper = r.upper ?? null
  const mark = w.length
  w.u8((lower === null ? LB_INF : r.lowerInclusive ? LB_INC : 0) | (upper === null ? UB_INF : r.upperInclusive ? UB_INC : 0))
  try {
    if (lower !== null && !writeBound(w, lower, encode)) {
      w.truncate(mark)
      return false
    }
    if (upper !== null && !writeBound(w, upper, encode)) {
      w.truncate(mark)
      return false
    }
  } catch (e) {
    w.truncate(mark)
    throw e
  }
  return true
}

function writeBound(w: Writer, v: unknown, encode: BinaryEncoder): boolean {
  const at = w.reserve32()
  if (!encode(w, v)) return false
  w.patch32(at, w.length - at - 4)
  return true
}

/** Adds the codec of every built-in range type whose subtype codec is already in `table`. */
export function registerRanges(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  for (const [oid, typname, , , , kind, , , subtype] of BUILTIN_TYPES) {
    if (kind !== 'r' || table.has(oid)) continue
    const sub = table.get(subtype)
    if (sub !== undefined) table.set(oid, rangeCodec(sub, typname))
  }
}
