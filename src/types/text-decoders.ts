import { utf8Read } from '../protocol/utf8.js'
import { Oid } from './oids.js'

// Decoders for values in text format, reading straight from the DataRow bytes.

export type Decoder = (buf: Uint8Array, start: number, end: number) => unknown

interface NodeBufferLike {
  from(ab: ArrayBufferLike, offset: number, length: number): Uint8Array
}
const NodeBuffer = (globalThis as { Buffer?: NodeBufferLike }).Buffer

export const decodeText: Decoder = utf8Read

export const decodeBool: Decoder = (buf, start) => buf[start] === 0x74 /* t */

/** Integers that fit a JS number: int2, int4, oid, xid, cid. Parsed from digits without a string. */
export const decodeInt: Decoder = (buf, start, end) => {
  let i = start
  let neg = false
  if (buf[i] === 0x2d /* - */) {
    neg = true
    i++
  }
  let n = 0
  for (; i < end; i++) n = n * 10 + (buf[i]! - 0x30)
  return neg ? -n : n
}

export const decodeInt8: Decoder = (buf, start, end) => BigInt(utf8Read(buf, start, end))

export const decodeFloat: Decoder = (buf, start, end) => Number(utf8Read(buf, start, end))

export const decodeJson: Decoder = (buf, start, end) => JSON.parse(utf8Read(buf, start, end))

function hexNibble(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30
  if (c >= 0x61 && c <= 0x66) return c - 0x57
  if (c >= 0x41 && c <= 0x46) return c - 0x37
  throw new TypeError(`invalid hex digit 0x${c.toString(16)} in bytea value`)
}

/** bytea in the hex output format (the server default since 9.0): \x0a0b... */
export const decodeBytea: Decoder = (buf, start, end) => {
  if (end - start < 2 || buf[start] !== 0x5c || buf[start + 1] !== 0x78) {
    throw new TypeError('bytea value is not in hex format (bytea_output must be "hex")')
  }
  const n = (end - start - 2) >> 1
  const out = new Uint8Array(n)
  for (let i = 0, p = start + 2; i < n; i++, p += 2) out[i] = (hexNibble(buf[p]!) << 4) | hexNibble(buf[p + 1]!)
  return NodeBuffer ? NodeBuffer.from(out.buffer, 0, n) : out
}

function digits(buf: Uint8Array, at: number, n: number): number {
  let v = 0
  for (let i = 0; i < n; i++) v = v * 10 + (buf[at + i]! - 0x30)
  return v
}

/**
 * timestamp and timestamptz in DateStyle ISO: `YYYY-MM-DD HH:MM:SS[.ffffff][+HH[:MM[:SS]]][ BC]`.
 * A timestamp without time zone is read as UTC. infinity/-infinity become
 * Infinity/-Infinity; microseconds beyond milliseconds are lost (a Date holds ms).
 */
export const decodeTimestamp: Decoder = (buf, start, end) => {
  const first = buf[start]
  if (first === 0x69 /* i */) return Infinity
  if (first === 0x2d /* - */ && buf[start + 1] === 0x69) return -Infinity
  let p = start
  while (p < end && buf[p] !== 0x2d) p++
  let year = digits(buf, start, p - start)
  const month = digits(buf, p + 1, 2)
  const day = digits(buf, p + 4, 2)
  p += 7
  const hour = digits(buf, p, 2)
  const minute = digits(buf, p + 3, 2)
  const second = digits(buf, p + 6, 2)
  p += 8
  let ms = 0
  if (buf[p] === 0x2e /* . */) {
    p++
    let scale = 100
    while (p < end && buf[p]! >= 0x30 && buf[p]! <= 0x39) {
      ms += (buf[p]! - 0x30) * scale
      scale /= 10
      p++
    }
    ms = Math.floor(ms)
  }
  let offset = 0
  const sign = buf[p]
  if (sign === 0x2b /* + */ || sign === 0x2d /* - */) {
    p++
    offset = digits(buf, p, 2) * 3600
    p += 2
    if (buf[p] === 0x3a) {
      offset += digits(buf, p + 1, 2) * 60
      p += 3
      if (buf[p] === 0x3a) {
        offset += digits(buf, p + 1, 2)
        p += 3
      }
    }
    if (sign === 0x2d) offset = -offset
  }
  if (end - p === 3 && buf[p + 1] === 0x42 /* B */) year = 1 - year
  const d = new Date(0)
  d.setUTCFullYear(year, month - 1, day)
  d.setUTCHours(hour, minute, second, ms)
  return new Date(d.getTime() - offset * 1000)
}

const textDecoders = new Map<number, Decoder>([
  [Oid.bool, decodeBool],
  [Oid.int2, decodeInt],
  [Oid.int4, decodeInt],
  [Oid.oid, decodeInt],
  [Oid.xid, decodeInt],
  [Oid.cid, decodeInt],
  [Oid.int8, decodeInt8],
  [Oid.float4, decodeFloat],
  [Oid.float8, decodeFloat],
  [Oid.json, decodeJson],
  [Oid.jsonb, decodeJson],
  [Oid.bytea, decodeBytea],
  [Oid.timestamp, decodeTimestamp],
  [Oid.timestamptz, decodeTimestamp],
])

/** The text decoder for a type; types without one come back as strings. */
export function textDecoderFor(oid: number): Decoder {
  return textDecoders.get(oid) ?? decodeText
}
