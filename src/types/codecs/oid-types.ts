import type { Writer } from '../../protocol/writer.js'
import type { Codec, ResolvedTypeOptions } from '../codec.js'
import { utf8Read } from '../../protocol/utf8.js'
import { parseBigIntText, parseIntText } from './ascii-numbers.js'
import { expectLength, readUint16, readUint32, readUint64, writeInt64 } from './binary.js'
import { intParam } from './integers.js'
import { malformed, outOfRange, wrongType } from './scalar-errors.js'

// Unsigned 32-bit identifiers: oid, xid, cid and the reg* types, plus xid8 and tid.
//
// For oid, xid and cid the text is the number, so both formats give the same number.
// The reg* types differ: their text form is a name ('pg_class', 'int4',
// 'now()'...) while their binary form is the bare OID. decodeText returns the
// name and decodeBinary the number, and preferBinary is false so that results
// are requested in text: a name is what a user reading regclass wants. As
// parameters, a number is sent as a binary OID and a string as text, which the
// server resolves as a name (or a numeric OID).

const UINT32_MAX = 4294967295
const UINT64_MAX = 2n ** 64n - 1n

function decodeUint32Binary(name: string): (buf: Uint8Array, start: number, end: number) => number {
  return (buf, start, end) => {
    expectLength(name, start, end, 4)
    return readUint32(buf, start)
  }
}

function uint32Param(name: string): { encodeText: (v: unknown) => string; encodeBinary: (w: Writer, v: unknown) => boolean } {
  return {
    encodeText: (v) => (typeof v === 'string' ? v : String(intParam(v, name, 0, UINT32_MAX))),
    encodeBinary: (w, v) => {
      if (typeof v === 'string') return false
      w.i32(intParam(v, name, 0, UINT32_MAX))
      return true
    },
  }
}

/** oid, xid, cid: a number in both formats. */
export function uint32Codec(name: string): Codec {
  return {
    name,
    decodeText: (buf, start, end) => parseIntText(buf, start, end, name, 0, UINT32_MAX),
    decodeBinary: decodeUint32Binary(name),
    ...uint32Param(name),
  }
}

/** A reg* type: its name in text, its OID in binary; results requested in text. */
export function regCodec(name: string): Codec {
  return {
    name,
    decodeText: utf8Read,
    decodeBinary: decodeUint32Binary(name),
    preferBinary: false,
    ...uint32Param(name),
  }
}

const XID8_EXPECTED = 'a bigint, a non-negative safe-integer number or a string'

export const xid8Codec: Codec = {
  name: 'xid8',
  decodeText: (buf, start, end) => parseBigIntText(buf, start, end, 'xid8', 0n, UINT64_MAX),
  decodeBinary: (buf, start, end) => {
    expectLength('xid8', start, end, 8)
    return readUint64(buf, start)
  },
  encodeText: (v) => (typeof v === 'string' ? v : xid8Param(v).toString()),
  encodeBinary: (w, v) => {
    if (typeof v === 'string') return false
    // writeInt64 writes the low 64 bits, which is the unsigned value's bit pattern.
    writeInt64(w, xid8Param(v))
    return true
  },
}

function xid8Param(v: unknown): bigint {
  if (typeof v === 'bigint') {
    if (v < 0n || v > UINT64_MAX) throw outOfRange('xid8')
    return v
  }
  if (typeof v === 'number' && Number.isSafeInteger(v)) {
    if (v < 0) throw outOfRange('xid8')
    return BigInt(v)
  }
  throw wrongType('xid8', XID8_EXPECTED, v)
}

/**
 * tid, a tuple's physical address, as PostgreSQL prints it: '(block,offset)'.
 * Binary is a uint32 block and a uint16 offset, formatted the same way.
 * Parameters are strings in that form (sent as text).
 */
export const tidCodec: Codec = {
  name: 'tid',
  decodeText: utf8Read,
  decodeBinary: (buf, start, end) => {
    expectLength('tid', start, end, 6)
    return `(${readUint32(buf, start)},${readUint16(buf, start + 4)})`
  },
  encodeText: (v) => {
    if (typeof v === 'string') return v
    throw wrongType('tid', "a string such as '(0,1)'", v)
  },
}

/**
 * int2vector and oidvector (system catalog columns such as pg_index.indkey):
 * number[]. Text is the numbers separated by spaces; binary is the array format
 * with one dimension, read here directly rather than through the array codecs.
 */
function vectorCodec(name: string, elemName: string, elemOid: number, min: number, max: number): Codec {
  const elemSize = elemOid === 21 ? 2 : 4
  return {
    name,
    decodeText: (buf, start, end) => {
      const out: number[] = []
      if (start === end) return out
      let from = start
      for (let i = start; i <= end; i++) {
        if (i === end || buf[i] === 0x20) {
          out.push(parseIntText(buf, from, i, elemName, min, max))
          from = i + 1
        }
      }
      return out
    },
    decodeBinary: (buf, start, end) => {
      if (end - start < 12) throw malformed(name, 'too short')
      const ndim = readUint32(buf, start)
      if (readUint32(buf, start + 8) !== elemOid) throw malformed(name, 'unexpected element type')
      const out: number[] = []
      if (ndim === 0) {
        if (end - start !== 12) throw malformed(name, 'trailing bytes')
        return out
      }
      if (ndim !== 1 || end - start < 20) throw malformed(name, 'not a one-dimensional array')
      const n = readUint32(buf, start + 12)
      if (end - start !== 20 + n * (4 + elemSize)) throw malformed(name, 'length does not match its elements')
      let p = start + 20
      for (let i = 0; i < n; i++, p += 4 + elemSize) {
        if (readUint32(buf, p) !== elemSize) throw malformed(name, 'element of the wrong size (or NULL)')
        out.push(elemSize === 2 ? (((buf[p + 4]! << 8) | buf[p + 5]!) << 16) >> 16 : readUint32(buf, p + 4))
      }
      return out
    },
    encodeText: (v) => {
      if (typeof v === 'string') return v
      if (!Array.isArray(v)) throw wrongType(name, `an array of ${elemName} numbers or a string`, v)
      let s = ''
      for (let i = 0; i < v.length; i++) s += (i === 0 ? '' : ' ') + String(intParam(v[i], elemName, min, max))
      return s
    },
  }
}

export const int2vectorCodec: Codec = vectorCodec('int2vector', 'int2', 21, -32768, 32767)
export const oidvectorCodec: Codec = vectorCodec('oidvector', 'oid', 26, 0, UINT32_MAX)

const REG_TYPES: readonly [number, string][] = [
  [24, 'regproc'],
  [2202, 'regprocedure'],
  [2203, 'regoper'],
  [2204, 'regoperator'],
  [2205, 'regclass'],
  [2206, 'regtype'],
  [3734, 'regconfig'],
  [3769, 'regdictionary'],
  [4089, 'regnamespace'],
  [4096, 'regrole'],
  [4191, 'regcollation'],
]

export function registerOidTypes(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(26, uint32Codec('oid'))
  table.set(28, uint32Codec('xid'))
  table.set(29, uint32Codec('cid'))
  for (const [oid, name] of REG_TYPES) table.set(oid, regCodec(name))
  table.set(5069, xid8Codec)
  table.set(27, tidCodec)
  table.set(22, int2vectorCodec)
  table.set(30, oidvectorCodec)
}
