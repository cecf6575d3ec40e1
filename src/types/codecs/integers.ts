import type { Writer } from '../../protocol/writer.js'
import type { Codec, ResolvedTypeOptions } from '../codec.js'
import { parseBigIntText, parseIntText } from './ascii-numbers.js'
import { expectLength, INT64_MAX, INT64_MIN, readInt16, readInt32, readInt64, readUint32, writeInt64, writeInt64Number } from './binary.js'
import { malformed, needs, outOfRange, wrongType } from './scalar-errors.js'

// int2, int4 and int8. int2 and int4 are numbers; int8 follows the int8 type
// option: a bigint (default), a number (refused rather than rounded beyond
// 2^53) or a decimal string. Parameters may be integer numbers, bigints, or
// strings (sent as text for the server to parse).

const INT_EXPECTED = 'an integer number, a bigint or a string'

/** A parameter as a number in [min, max], for the types that fit a double. */
export function intParam(v: unknown, name: string, min: number, max: number): number {
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw needs(name, INT_EXPECTED, 'a non-integer number')
    if (v < min || v > max) throw outOfRange(name)
    return v
  }
  if (typeof v === 'bigint') {
    if (v < min || v > max) throw outOfRange(name)
    return Number(v)
  }
  throw wrongType(name, INT_EXPECTED, v)
}

function intCodec(name: string, min: number, max: number, size: 2 | 4): Codec {
  return {
    name,
    decodeText: (buf, start, end) => parseIntText(buf, start, end, name, min, max),
    decodeBinary:
      size === 2
        ? (buf, start, end) => {
            expectLength(name, start, end, 2)
            return readInt16(buf, start)
          }
        : (buf, start, end) => {
            expectLength(name, start, end, 4)
            return readInt32(buf, start)
          },
    encodeText: (v) => (typeof v === 'string' ? v : String(intParam(v, name, min, max))),
    encodeBinary:
      size === 2
        ? (w: Writer, v) => {
            if (typeof v === 'string') return false
            w.i16(intParam(v, name, min, max))
            return true
          }
        : (w: Writer, v) => {
            if (typeof v === 'string') return false
            w.i32(intParam(v, name, min, max))
            return true
          },
  }
}

export const int2Codec: Codec = intCodec('int2', -32768, 32767, 2)
export const int4Codec: Codec = intCodec('int4', -2147483648, 2147483647, 4)

const INT8_EXPECTED = 'a bigint, a safe-integer number or a string'

function int8Text(v: unknown): string {
  if (typeof v === 'string') return v
  if (typeof v === 'bigint') {
    if (v < INT64_MIN || v > INT64_MAX) throw outOfRange('int8')
    return v.toString()
  }
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw unsafeNumber(v)
    return String(v)
  }
  throw wrongType('int8', INT8_EXPECTED, v)
}

function unsafeNumber(v: number): Error {
  // Beyond 2^53 a number may already hold a rounded value: sending it would store a number nobody wrote.
  return Number.isInteger(v)
    ? needs('int8', INT8_EXPECTED, 'a number beyond 2^53 (use a bigint)')
    : needs('int8', INT8_EXPECTED, 'a non-integer number')
}

function encodeInt8Binary(w: Writer, v: unknown): boolean {
  if (typeof v === 'bigint') {
    if (v < INT64_MIN || v > INT64_MAX) throw outOfRange('int8')
    writeInt64(w, v)
    return true
  }
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw unsafeNumber(v)
    writeInt64Number(w, v)
    return true
  }
  if (typeof v === 'string') return false
  throw wrongType('int8', INT8_EXPECTED, v)
}

/** A signed 64-bit integer as a bigint, through one exact double when the value allows it (one allocation instead of four). */
export function readInt64Fast(b: Uint8Array, at: number): bigint {
  const hi = readInt32(b, at)
  if (hi >= -0x200000 && hi < 0x200000) return BigInt(hi * 4294967296 + readUint32(b, at + 4))
  return readInt64(b, at)
}

function tooBigForNumber(): Error {
  return malformed('int8', "does not fit a JavaScript number exactly (use the int8 type option 'bigint' or 'string')")
}

const int8Bigint: Codec = {
  name: 'int8',
  decodeText: (buf, start, end) => parseBigIntText(buf, start, end, 'int8', INT64_MIN, INT64_MAX),
  decodeBinary: (buf, start, end) => {
    expectLength('int8', start, end, 8)
    return readInt64Fast(buf, start)
  },
  encodeText: int8Text,
  encodeBinary: encodeInt8Binary,
}

const int8Number: Codec = {
  name: 'int8',
  decodeText: (buf, start, end) => {
    try {
      return parseIntText(buf, start, end, 'int8', -Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)
    } catch {
      // Distinguish a value too big for a number from a malformed one.
      parseBigIntText(buf, start, end, 'int8', INT64_MIN, INT64_MAX)
      throw tooBigForNumber()
    }
  },
  decodeBinary: (buf, start, end) => {
    expectLength('int8', start, end, 8)
    const hi = readInt32(buf, start)
    const v = hi * 4294967296 + readUint32(buf, start + 4)
    // hi * 2^32 + lo is exact whenever |hi| < 2^21, which covers every safe integer.
    if (hi < -0x200000 || hi >= 0x200000 || v > Number.MAX_SAFE_INTEGER || v < -Number.MAX_SAFE_INTEGER) throw tooBigForNumber()
    return v
  },
  encodeText: int8Text,
  encodeBinary: encodeInt8Binary,
}

const int8String: Codec = {
  name: 'int8',
  decodeText: (buf, start, end) => parseBigIntText(buf, start, end, 'int8', INT64_MIN, INT64_MAX).toString(),
  decodeBinary: (buf, start, end) => {
    expectLength('int8', start, end, 8)
    return readInt64Fast(buf, start).toString()
  },
  encodeText: int8Text,
  encodeBinary: encodeInt8Binary,
}

/** The int8 codec for the int8 type option. */
export function int8Codec(mode: ResolvedTypeOptions['int8']): Codec {
  return mode === 'number' ? int8Number : mode === 'string' ? int8String : int8Bigint
}

export function registerIntegers(table: Map<number, Codec>, options: ResolvedTypeOptions): void {
  table.set(21, int2Codec) // int2
  table.set(23, int4Codec) // int4
  table.set(20, int8Codec(options.int8)) // int8
}
