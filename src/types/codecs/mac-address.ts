import { utf8Read } from '../../protocol/utf8.js'
import type { Writer } from '../../protocol/writer.js'
import { CodecError, describeValue, type Codec, type ResolvedTypeOptions } from '../codec.js'

// macaddr (6 bytes) and macaddr8 (8 bytes, EUI-64) as the server prints them:
// lower-case hex pairs joined by ':'. Binary is the bytes themselves.

const MACADDR_OID = 829
const MACADDR8_OID = 774

const HEX_PAIRS: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

function decodeBinaryMac(name: string, size: number, buf: Uint8Array, start: number, end: number): string {
  if (end - start !== size) throw new CodecError(`malformed binary ${name}: ${end - start} bytes where ${size} were expected`)
  let s = HEX_PAIRS[buf[start]!]!
  for (let i = start + 1; i < end; i++) s += ':' + HEX_PAIRS[buf[i]!]!
  return s
}

function decodeTextMac(name: string, size: number, buf: Uint8Array, start: number, end: number): string {
  if (end - start !== size * 3 - 1) throw new CodecError(`malformed ${name}: ${end - start} characters`)
  for (let i = start; i < end; i += 3) {
    const hi = buf[i]!
    const lo = buf[i + 1]!
    if (!isLowerHex(hi) || !isLowerHex(lo) || (i + 2 < end && buf[i + 2] !== 0x3a)) {
      throw new CodecError(`malformed ${name}: unexpected character in text value`)
    }
  }
  return utf8Read(buf, start, end)
}

function isLowerHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66)
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30
  if (c >= 0x61 && c <= 0x66) return c - 0x57
  if (c >= 0x41 && c <= 0x46) return c - 0x37
  return -1
}

const scratch = new Uint8Array(8)
// Bit k set: a separator follows byte k (0-based). Filled by readPairs.
let separatorsAfter = 0
let separator = 0

/**
 * Reads hex pairs, each optionally followed by one separator (':', '-' or
 * '.', the same one throughout, never after the last pair), into scratch.
 * Returns the number of bytes, or -1.
 */
function readPairs(s: string): number {
  let count = 0
  let i = 0
  separatorsAfter = 0
  separator = 0
  while (i < s.length) {
    if (count === 8 || i + 1 >= s.length) return -1
    const hi = hexValue(s.charCodeAt(i))
    const lo = hexValue(s.charCodeAt(i + 1))
    if (hi < 0 || lo < 0) return -1
    scratch[count++] = (hi << 4) | lo
    i += 2
    const c = s.charCodeAt(i)
    if (c === 0x3a || c === 0x2d || c === 0x2e) {
      if (separator === 0) separator = c
      else if (c !== separator) return -1
      separatorsAfter |= 1 << (count - 1)
      i++
      if (i === s.length) return -1
    }
  }
  return count
}

// The layouts macaddr_in reads (separator positions and characters):
// xx:xx:xx:xx:xx:xx, xx-xx-..., xxxxxx:xxxxxx, xxxxxx-xxxxxx, xxxx.xxxx.xxxx,
// xxxx-xxxx-xxxx, xxxxxxxxxxxx.
function isMacaddrLayout(): boolean {
  if (separatorsAfter === 0) return true
  if (separatorsAfter === 0b11111 || separatorsAfter === 0b00100) return separator === 0x3a || separator === 0x2d
  if (separatorsAfter === 0b01010) return separator === 0x2e || separator === 0x2d
  return false
}

function writeScratch(w: Writer, from: number, n: number): void {
  w.ensure(n)
  for (let i = 0; i < n; i++) w.buf[w.pos++] = scratch[from + i]!
}

export const macaddrCodec: Codec = {
  name: 'macaddr',
  decodeText: (buf, start, end) => decodeTextMac('macaddr', 6, buf, start, end),
  decodeBinary: (buf, start, end) => decodeBinaryMac('macaddr', 6, buf, start, end),
  encodeText(value) {
    if (typeof value !== 'string') throw new CodecError(`macaddr needs a string; got ${describeValue(value)}`)
    return value
  },
  encodeBinary(w, value) {
    if (typeof value !== 'string') throw new CodecError(`macaddr needs a string; got ${describeValue(value)}`)
    if (readPairs(value) !== 6 || !isMacaddrLayout()) return false
    writeScratch(w, 0, 6)
    return true
  },
}

export const macaddr8Codec: Codec = {
  name: 'macaddr8',
  decodeText: (buf, start, end) => decodeTextMac('macaddr8', 8, buf, start, end),
  decodeBinary: (buf, start, end) => decodeBinaryMac('macaddr8', 8, buf, start, end),
  encodeText(value) {
    if (typeof value !== 'string') throw new CodecError(`macaddr8 needs a string; got ${describeValue(value)}`)
    return value
  },
  encodeBinary(w, value) {
    if (typeof value !== 'string') throw new CodecError(`macaddr8 needs a string; got ${describeValue(value)}`)
    const n = readPairs(value)
    if (n === 8) writeScratch(w, 0, 8)
    else if (n === 6) {
      // An EUI-48 address becomes EUI-64 with FF:FE in the middle, as macaddr8_in does.
      writeScratch(w, 0, 3)
      w.u8(0xff)
      w.u8(0xfe)
      writeScratch(w, 3, 3)
    } else return false
    return true
  },
}

export function registerMacAddressCodecs(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(MACADDR_OID, macaddrCodec)
  table.set(MACADDR8_OID, macaddr8Codec)
}
