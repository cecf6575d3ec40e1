import type { Writer } from '../../protocol/writer.js'
import { BUILTIN_TYPES } from '../builtin-types.js'
import { CodecError, describeValue, type BinaryEncoder, type Codec, type Decoder, type ResolvedTypeOptions } from '../codec.js'
import type { ArrayValuedCodec } from './array-shape.js'
import { readInt32 } from './binary.js'
import { COMMA, LBRACE, RBRACE, byteAt, skipSpace } from './literal-syntax.js'
import { rangeLiteralEnd } from './range.js'

// Multirange types (PostgreSQL 14+). JS: an array of Range, [] for '{}'.
// Binary (multirange_send): int32 count, then each range as int32 length and
// the range's binary form. Text: '{[1,3),[5,7)}'.

export function multirangeCodec(range: Codec, name: string): Codec {
  const decodeText = range.decodeText
  const decodeBinary = range.decodeBinary
  const encodeText = range.encodeText
  const encodeBinary = range.encodeBinary
  const codec: ArrayValuedCodec = {
    name,
    valuesAreArrays: true,
    decodeText: (buf, start, end) => parseMultirangeText(buf, start, end, decodeText, name),
    decodeBinary: decodeBinary && ((buf, start, end) => decodeMultirangeBinary(buf, start, end, decodeBinary, name)),
    encodeText(value) {
      if (typeof value === 'string') return value
      const ranges = rangesOf(value, name)
      let s = '{'
      for (let i = 0; i < ranges.length; i++) s += (i > 0 ? ',' : '') + encodeText(ranges[i])
      return s + '}'
    },
    encodeBinary: encodeBinary && ((w, value) => typeof value !== 'string' && encodeMultirangeBinary(w, rangesOf(value, name), encodeBinary)),
    preferBinary: range.preferBinary !== false,
  }
  return codec
}

function rangesOf(value: unknown, name: string): readonly unknown[] {
  if (!Array.isArray(value)) throw new CodecError(`${name} needs an array of ranges or a string; got ${describeValue(value)}`)
  for (const r of value) {
    if (r === null || r === undefined) throw new CodecError(`${name} cannot hold a null range`)
  }
  return value
}

function parseMultirangeText(buf: Uint8Array, start: number, end: number, decode: Decoder, name: string): unknown[] {
  let p = skipSpace(buf, start, end)
  if (byteAt(buf, p, end) !== LBRACE) throw new CodecError(`malformed ${name} literal: it does not start with "{"`)
  p = skipSpace(buf, p + 1, end)
  const out: unknown[] = []
  if (byteAt(buf, p, end) === RBRACE) p++
  else {
    for (;;) {
      const e = rangeLiteralEnd(buf, p, end, name)
      out.push(decode(buf, p, e))
      p = skipSpace(buf, e, end)
      const c = byteAt(buf, p++, end)
      if (c === RBRACE) break
      if (c !== COMMA) throw new CodecError(`malformed ${name} literal: expected "," or "}" after a range`)
      p = skipSpace(buf, p, end)
    }
  }
  if (skipSpace(buf, p, end) !== end) throw new CodecError(`malformed ${name} literal: junk after the closing "}"`)
  return out
}

function decodeMultirangeBinary(buf: Uint8Array, start: number, end: number, decode: Decoder, name: string): unknown[] {
  if (end - start < 4) throw new CodecError(`malformed binary ${name}: no range count`)
  const n = readInt32(buf, start)
  let p = start + 4
  if (n < 0 || n * 5 > end - p) throw new CodecError(`malformed binary ${name}: ${n} ranges in ${end - p} bytes`)
  const out: unknown[] = new Array(n)
  for (let i = 0; i < n; i++) {
    if (end - p < 4) throw new CodecError(`malformed binary ${name}: truncated range`)
    const len = readInt32(buf, p)
    p += 4
    if (len < 0 || len > end - p) throw new CodecError(`malformed binary ${name}: range length ${len}`)
    out[i] = decode(buf, p, p + len)
    p += len
  }
  if (p !== end) throw new CodecError(`malformed binary ${name}: ${end - p} bytes after the last range`)
  return out
}

function encodeMultirangeBinary(w: Writer, ranges: readonly unknown[], encode: BinaryEncoder): boolean {
  const mark = w.length
  try {
    w.i32(ranges.length)
    for (const r of ranges) {
      const at = w.reserve32()
      if (!encode(w, r)) {
        w.truncate(mark)
        return false
      }
      w.patch32(at, w.length - at - 4)
    }
  } catch (e) {
    w.truncate(mark)
    throw e
  }
  return true
}

/** Adds the codec of every built-in multirange type whose range codec is already in `table`. */
export function registerMultiranges(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  for (const [rangeOid, , , , , kind, , , , multirangeOid] of BUILTIN_TYPES) {
    if (kind !== 'r' || multirangeOid === 0 || table.has(multirangeOid)) continue
    const range = table.get(rangeOid)
    const row = BUILTIN_TYPES.find((r) => r[0] === multirangeOid)
    if (range !== undefined && row !== undefined) table.set(multirangeOid, multirangeCodec(range, row[1]))
  }
}
