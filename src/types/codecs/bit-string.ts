import { utf8Read } from '../../protocol/utf8.js'
import type { Writer } from '../../protocol/writer.js'
import { CodecError, describeValue, type Codec, type ResolvedTypeOptions } from '../codec.js'
import { readInt32 } from './binary.js'

// bit(n) and bit varying as strings of '0' and '1'. Binary: int32 bit count,
// then the bits packed most significant first, the last byte padded with zeros.

const BIT_OID = 1560
const VARBIT_OID = 1562

const BYTE_BITS: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(2).padStart(8, '0'))

function decodeBinaryBits(name: string, buf: Uint8Array, start: number, end: number): string {
  if (end - start < 4) throw new CodecError(`malformed binary ${name}: ${end - start} bytes`)
  const n = readInt32(buf, start)
  if (n < 0 || end - start - 4 !== (n + 7) >>> 3) {
    throw new CodecError(`malformed binary ${name}: ${end - start - 4} bytes do not hold ${n} bits`)
  }
  const full = start + 4 + (n >>> 3)
  let s = ''
  for (let i = start + 4; i < full; i++) s += BYTE_BITS[buf[i]!]!
  const rest = n & 7
  return rest === 0 ? s : s + BYTE_BITS[buf[full]!]!.slice(0, rest)
}

function decodeTextBits(name: string, buf: Uint8Array, start: number, end: number): string {
  for (let i = start; i < end; i++) {
    if ((buf[i]! | 1) !== 0x31) throw new CodecError(`malformed ${name}: only 0 and 1 may appear in a bit string`)
  }
  return utf8Read(buf, start, end)
}

function isBitString(s: string): boolean {
  for (let i = 0; i < s.length; i++) if ((s.charCodeAt(i) | 1) !== 0x31) return false
  return true
}

function writeBits(w: Writer, s: string): void {
  const n = s.length
  const bytes = (n + 7) >>> 3
  w.ensure(4 + bytes)
  w.i32(n)
  const b = w.buf
  let p = w.pos
  for (let i = 0; i < n; i += 8) {
    let v = 0
    const stop = Math.min(n, i + 8)
    for (let j = i; j < stop; j++) v = (v << 1) | (s.charCodeAt(j) & 1)
    b[p++] = v << (8 - (stop - i))
  }
  w.pos = p
}

function makeBitCodec(name: string): Codec {
  const expects = (v: unknown) => new CodecError(`${name} needs a string of 0s and 1s; got ${describeValue(v)}`)
  return {
    name,
    decodeText: (buf, start, end) => decodeTextBits(name, buf, start, end),
    decodeBinary: (buf, start, end) => decodeBinaryBits(name, buf, start, end),
    encodeText(value) {
      if (typeof value !== 'string') throw expects(value)
      return value
    },
    encodeBinary(w, value) {
      if (typeof value !== 'string') throw expects(value)
      // Other notations ('X1F', 'B101') are the server's to read.
      if (!isBitString(value)) return false
      writeBits(w, value)
      return true
    },
  }
}

export const bitCodec: Codec = makeBitCodec('bit')
export const varbitCodec: Codec = makeBitCodec('varbit')

export function registerBitStringCodecs(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(BIT_OID, bitCodec)
  table.set(VARBIT_OID, varbitCodec)
}
