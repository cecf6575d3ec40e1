import { WireProtocolError } from './errors.js'

// Big-endian reads and UTF-8 over plain Uint8Arrays, using only what browsers
// and Node share. Callers check bounds before reading; these never do.

// fatal: a byte sequence that is not UTF-8 means the stream is not what we
// think it is, so it must not turn into U+FFFD silently. ignoreBOM: a value
// that starts with U+FEFF keeps it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

const scratch = new DataView(new ArrayBuffer(8))

function load(b: Uint8Array, at: number, n: number): void {
  for (let i = 0; i < n; i++) scratch.setUint8(i, b[at + i]!)
}

export function readI16(b: Uint8Array, at: number): number {
  return (((b[at]! << 8) | b[at + 1]!) << 16) >> 16
}

export function readU16(b: Uint8Array, at: number): number {
  return (b[at]! << 8) | b[at + 1]!
}

export function readI32(b: Uint8Array, at: number): number {
  return (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!
}

export function readU32(b: Uint8Array, at: number): number {
  return readI32(b, at) >>> 0
}

export function readI64(b: Uint8Array, at: number): bigint {
  load(b, at, 8)
  return scratch.getBigInt64(0)
}

export function readF32(b: Uint8Array, at: number): number {
  load(b, at, 4)
  return scratch.getFloat32(0)
}

export function readF64(b: Uint8Array, at: number): number {
  load(b, at, 8)
  return scratch.getFloat64(0)
}

/** The UTF-8 text of b[start, end); throws a WireProtocolError on invalid UTF-8. */
export function utf8Text(b: Uint8Array, start: number, end: number): string {
  // Most values are short ASCII (numbers, dates, names): build those directly
  // rather than pay for a subarray and a decoder call each.
  if (end - start <= 32) {
    let s = ''
    let i = start
    for (; i < end; i++) {
      const c = b[i]!
      if (c >= 0x80) break
      s += String.fromCharCode(c)
    }
    if (i === end) return s
  }
  try {
    return utf8.decode(b.subarray(start, end))
  } catch {
    throw new WireProtocolError('invalid UTF-8 in a text value (the server must send client_encoding UTF8)')
  }
}

/** Where the NUL ending a C string that starts at `start` is, or -1 if none before `end`. */
export function findNul(b: Uint8Array, start: number, end: number): number {
  for (let i = start; i < end; i++) if (b[i] === 0) return i
  return -1
}

const HEX = '0123456789abcdef'

/** Lower-case hex of b[start, end). */
export function hexOf(b: Uint8Array, start: number, end: number): string {
  let s = ''
  for (let i = start; i < end; i++) {
    const c = b[i]!
    s += HEX[c >> 4]! + HEX[c & 15]!
  }
  return s
}
