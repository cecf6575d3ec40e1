import { CodecError, type Codec, type ResolvedTypeOptions } from '../codec.js'
import { isAssembledMessage } from '../../protocol/framer.js'
import { utf8Read } from '../../protocol/utf8.js'
import { malformed, wrongType } from './scalar-errors.js'

// bytea as a Node Buffer when the runtime has one, else a Uint8Array: a fresh
// copy, except for a big value that is most of a message assembled for it
// alone (see decodeByteaBinary). Text decoding reads both bytea_output
// formats: hex ('\x0a0b') and escape ('ab\000\\').
// Parameters: a Uint8Array (Buffer included) goes in binary as is; a string
// goes as text for the server to parse ('\x0a0b' or escape format). Other
// typed arrays are refused: their bytes depend on the platform's endianness.

interface NodeBufferStatics {
  allocUnsafe(n: number): Uint8Array
  from(buffer: ArrayBufferLike, byteOffset: number, length: number): Uint8Array
  prototype: { hexSlice(this: Uint8Array, start: number, end: number): string }
}
const NodeBuffer = (globalThis as { Buffer?: NodeBufferStatics }).Buffer

/**
 * A fresh array of n bytes. Node's allocUnsafe carves small buffers out of a
 * shared pool: one object instead of an ArrayBuffer plus a view per value,
 * which made bytea the most expensive column to decode.
 */
const allocate: (n: number) => Uint8Array = NodeBuffer ? (n) => NodeBuffer.allocUnsafe(n) : (n) => new Uint8Array(n)

/** n bytes of `buf` from `start`, sharing its memory. */
const view: (buf: Uint8Array, start: number, n: number) => Uint8Array = NodeBuffer
  ? (buf, start, n) => NodeBuffer.from(buf.buffer, buf.byteOffset + start, n)
  : (buf, start, n) => new Uint8Array(buf.buffer, buf.byteOffset + start, n)

/** Values from this size up may be returned without a copy (see decodeByteaBinary). */
const VIEW_MIN = 1024 * 1024

/**
 * A big value that is at least half of a message the framer assembled for
 * itself comes back as a view of that message rather than a copy, which would
 * need as much memory again at the moment the value is largest. Nothing else
 * writes to or reuses that memory (see isAssembledMessage), so the view cannot
 * change under its owner; keeping the whole message alive for the value costs
 * at most the value's size again, in practice the few bytes of the row around
 * it. Everything else is copied: a small Buffer never pins a big message, and
 * no value aliases a socket chunk or a buffer its reader reuses.
 */
function decodeByteaBinary(buf: Uint8Array, start: number, end: number): Uint8Array {
  const n = end - start
  if (n >= VIEW_MIN && 2 * n >= buf.buffer.byteLength && isAssembledMessage(buf)) return view(buf, start, n)
  const out = allocate(n)
  if (n < 64) for (let i = 0; i < n; i++) out[i] = buf[start + i]!
  else out.set(buf.subarray(start, end))
  return out
}

// Hex digit values; -1 for bytes that are not hex digits.
const HEX_VALUE = new Int8Array(256).fill(-1)
for (let i = 0; i < 10; i++) HEX_VALUE[0x30 + i] = i
for (let i = 0; i < 6; i++) HEX_VALUE[0x41 + i] = HEX_VALUE[0x61 + i] = 10 + i

function decodeByteaText(buf: Uint8Array, start: number, end: number): Uint8Array {
  if (end - start >= 2 && buf[start] === 0x5c && buf[start + 1] === 0x78) return decodeHex(buf, start + 2, end)
  return decodeEscape(buf, start, end)
}

function decodeHex(buf: Uint8Array, start: number, end: number): Uint8Array {
  if ((end - start) & 1) throw malformed('bytea', 'odd number of hex digits')
  const n = (end - start) >> 1
  const out = allocate(n)
  for (let i = 0, p = start; i < n; i++, p += 2) {
    const hi = HEX_VALUE[buf[p]!]!
    const lo = HEX_VALUE[buf[p + 1]!]!
    if ((hi | lo) < 0) throw malformed('bytea', 'invalid hex digit')
    out[i] = (hi << 4) | lo
  }
  return out
}

/** The escape format: '\\' for a backslash, '\ooo' (octal) for a byte, any other byte as itself. */
function decodeEscape(buf: Uint8Array, start: number, end: number): Uint8Array {
  let n = 0
  for (let p = start; p < end; n++) {
    if (buf[p] !== 0x5c) p++
    else if (p + 1 < end && buf[p + 1] === 0x5c) p += 2
    else if (p + 3 < end && isOctalEscape(buf, p)) p += 4
    else throw malformed('bytea', 'invalid escape sequence')
  }
  const out = allocate(n)
  for (let p = start, i = 0; p < end; i++) {
    const c = buf[p]!
    if (c !== 0x5c) {
      out[i] = c
      p++
    } else if (buf[p + 1] === 0x5c) {
      out[i] = 0x5c
      p += 2
    } else {
      out[i] = ((buf[p + 1]! - 0x30) << 6) | ((buf[p + 2]! - 0x30) << 3) | (buf[p + 3]! - 0x30)
      p += 4
    }
  }
  return out
}

function isOctalEscape(buf: Uint8Array, p: number): boolean {
  const a = buf[p + 1]! - 0x30
  const b = buf[p + 2]! - 0x30
  const c = buf[p + 3]! - 0x30
  return a >= 0 && a <= 3 && b >= 0 && b <= 7 && c >= 0 && c <= 7
}

const HEX_DIGITS = new TextEncoder().encode('0123456789abcdef')

/** Hex digits through a byte array, for runtimes without Buffer. */
function hexPortable(b: Uint8Array): string {
  const out = new Uint8Array(2 * b.length)
  for (let i = 0; i < b.length; i++) {
    out[2 * i] = HEX_DIGITS[b[i]! >> 4]!
    out[2 * i + 1] = HEX_DIGITS[b[i]! & 15]!
  }
  return utf8Read(out, 0, out.length)
}

/**
 * The hex text form '\x...' of some bytes. Built natively in one piece: a
 * string grown two digits at a time becomes a rope of millions of nodes.
 * Two characters per byte reach the engine's string length limit (about 2^29
 * in V8) at around 256 MiB, which is refused with a CodecError.
 */
export function byteaHex(b: Uint8Array): string {
  try {
    return '\\x' + (NodeBuffer ? NodeBuffer.prototype.hexSlice.call(b, 0, b.length) : hexPortable(b))
  } catch (err) {
    // Node throws ERR_STRING_TOO_LONG, engines a RangeError; anything else is not about size.
    if (!(err instanceof RangeError) && (err as { code?: unknown }).code !== 'ERR_STRING_TOO_LONG') throw err
    throw new CodecError(`a bytea of ${b.length} bytes is too long for its text form (two characters a byte)`, { cause: err })
  }
}

const BYTEA_EXPECTED = 'a Uint8Array, a Buffer or a string'

export const byteaCodec: Codec = {
  name: 'bytea',
  decodeText: decodeByteaText,
  decodeBinary: decodeByteaBinary,
  encodeText: (v) => {
    if (typeof v === 'string') return v
    if (v instanceof Uint8Array) return byteaHex(v)
    throw wrongType('bytea', BYTEA_EXPECTED, v)
  },
  encodeBinary: (w, v) => {
    if (v instanceof Uint8Array) {
      w.bytes(v)
      return true
    }
    if (typeof v === 'string') return false
    throw wrongType('bytea', BYTEA_EXPECTED, v)
  },
}

export function registerBytea(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(17, byteaCodec) // bytea
}
