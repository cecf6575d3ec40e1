import type { Writer } from '../../protocol/writer.js'
import { CodecError } from '../codec.js'

// Fixed-width reads and writes shared by the binary codecs. Network byte order
// throughout. No Node APIs: the browser entry reuses the codecs.

const scratch = new DataView(new ArrayBuffer(8))

export function readInt16(b: Uint8Array, at: number): number {
  return (((b[at]! << 8) | b[at + 1]!) << 16) >> 16
}

export function readUint16(b: Uint8Array, at: number): number {
  return (b[at]! << 8) | b[at + 1]!
}

export function readInt32(b: Uint8Array, at: number): number {
  return (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!
}

export function readUint32(b: Uint8Array, at: number): number {
  return readInt32(b, at) >>> 0
}

/** A signed 64-bit integer as a bigint. */
export function readInt64(b: Uint8Array, at: number): bigint {
  const hi = readInt32(b, at)
  const lo = readUint32(b, at + 4)
  return (BigInt(hi) << 32n) | BigInt(lo)
}

/** A signed 64-bit integer as a number; throws CodecError beyond ±2^53 rather than lose digits. */
export function readInt64Number(b: Uint8Array, at: number): number {
  const hi = readInt32(b, at)
  const lo = readUint32(b, at + 4)
  // Safe when the high word only carries sign extension of a 53-bit value.
  if (hi >= -0x200000 && hi < 0x200000) return hi * 4294967296 + lo
  throw new CodecError(`64-bit integer ${readInt64(b, at)} does not fit a JavaScript number exactly`)
}

/** An unsigned 64-bit integer as a bigint. */
export function readUint64(b: Uint8Array, at: number): bigint {
  return (BigInt(readUint32(b, at)) << 32n) | BigInt(readUint32(b, at + 4))
}

export function readFloat32(b: Uint8Array, at: number): number {
  for (let i = 0; i < 4; i++) scratch.setUint8(i, b[at + i]!)
  return scratch.getFloat32(0)
}

export function readFloat64(b: Uint8Array, at: number): number {
  for (let i = 0; i < 8; i++) scratch.setUint8(i, b[at + i]!)
  return scratch.getFloat64(0)
}

/** Writes a signed 64-bit integer given as a bigint (the caller checks the range). */
export function writeInt64(w: Writer, v: bigint): void {
  w.i32(Number((v >> 32n) & 0xffffffffn) | 0)
  w.i32(Number(v & 0xffffffffn) | 0)
}

/** Writes a signed 64-bit integer given as a safe-integer number. */
export function writeInt64Number(w: Writer, v: number): void {
  const hi = Math.floor(v / 4294967296)
  w.i32(hi | 0)
  w.i32((v - hi * 4294967296) | 0)
}

export function writeFloat32(w: Writer, v: number): void {
  scratch.setFloat32(0, v)
  w.ensure(4)
  for (let i = 0; i < 4; i++) w.buf[w.pos++] = scratch.getUint8(i)
}

export function writeFloat64(w: Writer, v: number): void {
  scratch.setFloat64(0, v)
  w.ensure(8)
  for (let i = 0; i < 8; i++) w.buf[w.pos++] = scratch.getUint8(i)
}

/** Throws unless a binary value has exactly `n` bytes. */
export function expectLength(name: string, start: number, end: number, n: number): void {
  if (end - start !== n) throw new CodecError(`malformed binary ${name}: ${end - start} bytes where ${n} were expected`)
}

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n
