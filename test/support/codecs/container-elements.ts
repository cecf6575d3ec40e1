// Small, strict element codecs for the container tests, independent of the
// scalar codecs so that a container test fails only for a container bug. They
// follow the Codec contract: strings go as text (except for text itself), and a
// malformed value throws.

import { Writer } from '../../../src/protocol/writer.js'
import { utf8Read } from '../../../src/protocol/utf8.js'
import { CodecError, describeValue, type Codec } from '../../../src/types/codec.js'
import { expectLength, readFloat64, readInt32, readInt64, readInt16, writeFloat64, writeInt64 } from '../../../src/types/codecs/binary.js'

function strictInt(buf: Uint8Array, start: number, end: number, name: string): string {
  const s = utf8Read(buf, start, end)
  if (!/^-?\d+$/.test(s)) throw new CodecError(`bad ${name} text ${JSON.stringify(s)}`)
  return s
}

export const int4: Codec = {
  name: 'int4',
  decodeText: (buf, start, end) => Number(strictInt(buf, start, end, 'int4')),
  decodeBinary: (buf, start, end) => {
    expectLength('int4', start, end, 4)
    return readInt32(buf, start)
  },
  encodeText: (v) => {
    if (typeof v === 'string') return v
    return String(int4Value(v))
  },
  encodeBinary: (w: Writer, v) => {
    if (typeof v === 'string') return false
    w.i32(int4Value(v))
    return true
  },
}

function int4Value(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new CodecError(`int4 needs an integer number or a string; got ${describeValue(v)}`)
  if (v < -2147483648 || v > 2147483647) throw new CodecError('out of range for int4')
  return v
}

export const int2: Codec = {
  name: 'int2',
  decodeText: (buf, start, end) => Number(strictInt(buf, start, end, 'int2')),
  decodeBinary: (buf, start, end) => {
    expectLength('int2', start, end, 2)
    return readInt16(buf, start)
  },
  encodeText: (v) => String(v),
  encodeBinary: (w, v) => {
    if (typeof v !== 'number') return false
    w.i16(v)
    return true
  },
}

export const int8: Codec = {
  name: 'int8',
  decodeText: (buf, start, end) => BigInt(strictInt(buf, start, end, 'int8')),
  decodeBinary: (buf, start, end) => {
    expectLength('int8', start, end, 8)
    return readInt64(buf, start)
  },
  encodeText: (v) => (typeof v === 'string' ? v : String(int8Value(v))),
  encodeBinary: (w, v) => {
    if (typeof v === 'string') return false
    writeInt64(w, int8Value(v))
    return true
  },
}

function int8Value(v: unknown): bigint {
  if (typeof v === 'bigint') return v
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v)
  throw new CodecError(`int8 needs a bigint, an integer or a string; got ${describeValue(v)}`)
}

/** text, varchar, unknown: strings in both formats, binary parameters. */
export function textLike(name: string): Codec {
  return {
    name,
    decodeText: utf8Read,
    decodeBinary: utf8Read,
    encodeText: (v) => {
      if (typeof v !== 'string') throw new CodecError(`${name} needs a string; got ${describeValue(v)}`)
      return v
    },
    encodeBinary: (w, v) => {
      if (typeof v !== 'string') throw new CodecError(`${name} needs a string; got ${describeValue(v)}`)
      w.str(v)
      return true
    },
  }
}

export const text = textLike('text')

function floatText(v: number): string {
  if (Number.isNaN(v)) return 'NaN'
  if (v === Infinity) return 'Infinity'
  if (v === -Infinity) return '-Infinity'
  if (Object.is(v, -0)) return '-0'
  return String(v)
}

export const float8: Codec = {
  name: 'float8',
  decodeText: (buf, start, end) => {
    const s = utf8Read(buf, start, end)
    const v = Number(s)
    if (Number.isNaN(v) && s !== 'NaN') throw new CodecError(`bad float8 text ${JSON.stringify(s)}`)
    return v
  },
  decodeBinary: (buf, start, end) => {
    expectLength('float8', start, end, 8)
    return readFloat64(buf, start)
  },
  encodeText: (v) => {
    if (typeof v === 'string') return v
    if (typeof v !== 'number') throw new CodecError(`float8 needs a number; got ${describeValue(v)}`)
    return floatText(v)
  },
  encodeBinary: (w, v) => {
    if (typeof v === 'string') return false
    if (typeof v !== 'number') throw new CodecError(`float8 needs a number; got ${describeValue(v)}`)
    writeFloat64(w, v)
    return true
  },
}

export const bool: Codec = {
  name: 'bool',
  decodeText: (buf, start, end) => {
    if (end - start !== 1 || (buf[start] !== 0x74 && buf[start] !== 0x66)) throw new CodecError('bad bool text')
    return buf[start] === 0x74
  },
  decodeBinary: (buf, start, end) => {
    expectLength('bool', start, end, 1)
    return buf[start] !== 0
  },
  encodeText: (v) => {
    if (typeof v === 'string') return v
    if (typeof v !== 'boolean') throw new CodecError(`bool needs a boolean; got ${describeValue(v)}`)
    return v ? 't' : 'f'
  },
  encodeBinary: (w, v) => {
    if (typeof v === 'string') return false
    if (typeof v !== 'boolean') throw new CodecError(`bool needs a boolean; got ${describeValue(v)}`)
    w.u8(v ? 1 : 0)
    return true
  },
}

function hex(b: Uint8Array): string {
  let s = '\\x'
  for (const x of b) s += x.toString(16).padStart(2, '0')
  return s
}

export const bytea: Codec = {
  name: 'bytea',
  decodeText: (buf, start, end) => {
    const s = utf8Read(buf, start, end)
    if (!/^\\x([0-9a-f]{2})*$/.test(s)) throw new CodecError('bad bytea text')
    const out = new Uint8Array((s.length - 2) / 2)
    for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 + 2 * i, 4 + 2 * i), 16)
    return out
  },
  decodeBinary: (buf, start, end) => {
    const out = new Uint8Array(end - start)
    out.set(buf.subarray(start, end))
    return out
  },
  encodeText: (v) => {
    if (typeof v === 'string') return v
    if (!(v instanceof Uint8Array)) throw new CodecError(`bytea needs a Uint8Array; got ${describeValue(v)}`)
    return hex(v)
  },
  encodeBinary: (w, v) => {
    if (typeof v === 'string') return false
    if (!(v instanceof Uint8Array)) throw new CodecError(`bytea needs a Uint8Array; got ${describeValue(v)}`)
    w.bytes(v)
    return true
  },
}

/** numeric as its exact decimal string; binary decoding only (parameters go as text). */
export const numeric: Codec = {
  name: 'numeric',
  decodeText: utf8Read,
  decodeBinary: (buf, start, end) => {
    const ndigits = readInt16(buf, start)
    const weight = readInt16(buf, start + 2)
    const sign = readInt16(buf, start + 4) & 0xffff
    const dscale = readInt16(buf, start + 6)
    expectLength('numeric', start, end, 8 + 2 * ndigits)
    if (sign === 0xc000) return 'NaN'
    if (sign === 0xd000) return 'Infinity'
    if (sign === 0xf000) return '-Infinity'
    const digits: number[] = []
    for (let i = 0; i < ndigits; i++) digits.push(readInt16(buf, start + 8 + 2 * i))
    let int = ''
    for (let i = 0; i <= weight; i++) {
      const d = digits[i] ?? 0
      int += i === 0 ? String(d) : String(d).padStart(4, '0')
    }
    if (int === '') int = '0'
    let frac = ''
    for (let i = weight + 1; frac.length < dscale; i++) frac += String(i < 0 ? 0 : (digits[i] ?? 0)).padStart(4, '0')
    frac = frac.slice(0, dscale)
    return (sign === 0x4000 ? '-' : '') + int + (dscale > 0 ? '.' + frac : '')
  },
  encodeText: (v) => {
    if (typeof v === 'string') return v
    if (typeof v === 'number' || typeof v === 'bigint') return String(v)
    throw new CodecError(`numeric needs a string or number; got ${describeValue(v)}`)
  },
}

const pad = (n: number, w: number) => String(n).padStart(w, '0')

function civil(days: number): string {
  // Days since 2000-01-01 to a proleptic Gregorian date (years 1..9999).
  const ms = Date.UTC(2000, 0, 1) + days * 86400000
  const d = new Date(ms)
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}`
}

/** date as the server's ISO text; binary decoding only (parameters go as text). */
export const date: Codec = {
  name: 'date',
  decodeText: utf8Read,
  decodeBinary: (buf, start, end) => {
    expectLength('date', start, end, 4)
    const d = readInt32(buf, start)
    if (d === 0x7fffffff) return 'infinity'
    if (d === -0x80000000) return '-infinity'
    return civil(d)
  },
  encodeText: (v) => {
    if (typeof v !== 'string') throw new CodecError(`date needs a string; got ${describeValue(v)}`)
    return v
  },
  encodeBinary: (_w, v) => {
    if (typeof v !== 'string') throw new CodecError(`date needs a string; got ${describeValue(v)}`)
    return false
  },
}

function timestampText(buf: Uint8Array, start: number, end: number, zone: string): string {
  expectLength('timestamp', start, end, 8)
  const us = readInt64(buf, start)
  if (us === 0x7fffffffffffffffn) return 'infinity'
  if (us === -0x8000000000000000n) return '-infinity'
  const days = Number(us / 86400000000n) - (us % 86400000000n < 0n ? 1 : 0)
  let rest = Number(us - BigInt(days) * 86400000000n)
  const micro = rest % 1000000
  rest = (rest - micro) / 1000000
  const t = `${pad(Math.floor(rest / 3600), 2)}:${pad(Math.floor(rest / 60) % 60, 2)}:${pad(rest % 60, 2)}`
  const frac = micro === 0 ? '' : '.' + pad(micro, 6).replace(/0+$/, '')
  return `${civil(days)} ${t}${frac}${zone}`
}

/** timestamp / timestamptz (TimeZone UTC) as the server's ISO text. */
export function timestamp(zone: '' | '+00'): Codec {
  return {
    name: zone === '' ? 'timestamp' : 'timestamptz',
    decodeText: utf8Read,
    decodeBinary: (buf, start, end) => timestampText(buf, start, end, zone),
    encodeText: (v) => {
      if (typeof v !== 'string') throw new CodecError(`timestamp needs a string; got ${describeValue(v)}`)
      return v
    },
    encodeBinary: () => false,
  }
}

/** The element codecs by OID, as a registry table would hold them. */
export function testTable(): Map<number, Codec> {
  return new Map<number, Codec>([
    [16, bool],
    [17, bytea],
    [20, int8],
    [21, int2],
    [23, int4],
    [25, text],
    [701, float8],
    [705, textLike('unknown')],
    [1043, textLike('varchar')],
    [1082, date],
    [1114, timestamp('')],
    [1184, timestamp('+00')],
    [1700, numeric],
  ])
}

/** Places bytes in the middle of a larger buffer (as in a socket chunk) and decodes them there. */
export function decodeAt(decode: (buf: Uint8Array, start: number, end: number) => unknown, bytes: Uint8Array): unknown {
  const buf = new Uint8Array(bytes.length + 7)
  buf.fill(0x7b)
  buf.set(bytes, 3)
  return decode(buf, 3, 3 + bytes.length)
}

/** Bytes from a list of parts: numbers are int32 (big-endian), strings UTF-8, arrays raw bytes. */
export function bytes(...parts: (number | string | readonly number[] | Uint8Array)[]): Uint8Array {
  const out: number[] = []
  for (const p of parts) {
    if (typeof p === 'number') out.push((p >>> 24) & 255, (p >>> 16) & 255, (p >>> 8) & 255, p & 255)
    else if (typeof p === 'string') out.push(...new TextEncoder().encode(p))
    else out.push(...p)
  }
  return Uint8Array.from(out)
}

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s)

/**
 * The binary encoding of a value, or false when the codec asked for text. The
 * writer holds a prefix first (and is small, so it must grow mid-value): a
 * false or a throw must leave exactly the prefix behind.
 */
export function encodeBinary(codec: Codec, value: unknown): Uint8Array | false {
  const w = new Writer(16)
  w.bytes(Uint8Array.from([9, 9, 9]))
  let ok: boolean
  try {
    ok = codec.encodeBinary!(w, value)
  } catch (e) {
    if (w.length !== 3) throw new Error(`encodeBinary threw and left ${w.length - 3} bytes behind`)
    throw e
  }
  const out = w.take()
  if (!ok) {
    if (out.length !== 3) throw new Error(`encodeBinary returned false and left ${out.length - 3} bytes behind`)
    return false
  }
  return Uint8Array.from(out.subarray(3))
}

export class OutOfBoundsRead extends Error {}

/**
 * The bytes inside a larger buffer whose every indexed read outside
 * [start, end) throws OutOfBoundsRead: proof that a decoder stays in bounds.
 */
export function guarded(bytes: Uint8Array): { buf: Uint8Array; start: number; end: number } {
  const backing = new Uint8Array(bytes.length + 4).fill(0x7d)
  backing.set(bytes, 2)
  const start = 2
  const end = 2 + bytes.length
  const buf = new Proxy(backing, {
    get(target, key) {
      if (typeof key === 'string' && /^-?\d+$/.test(key)) {
        const i = Number(key)
        if (i < start || i >= end) throw new OutOfBoundsRead(`read at ${i} outside [${start}, ${end})`)
        return target[i]
      }
      const v = Reflect.get(target, key) as unknown
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })
  return { buf, start, end }
}

/** Element codecs that read their bytes one index at a time (so through a guard), ASCII text only. */
function asciiOf(buf: Uint8Array, start: number, end: number): string {
  let s = ''
  for (let i = start; i < end; i++) s += String.fromCharCode(buf[i]!)
  return s
}

export const indexedText: Codec = { ...text, name: 'text', decodeText: asciiOf, decodeBinary: asciiOf }
export const indexedInt4: Codec = {
  ...int4,
  decodeText: (buf, start, end) => {
    const s = asciiOf(buf, start, end)
    if (!/^-?\d+$/.test(s)) throw new CodecError('bad int4 text')
    return Number(s)
  },
}
