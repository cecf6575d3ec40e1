import type { Writer } from '../../protocol/writer.js'
import type { Codec, ResolvedTypeOptions } from '../codec.js'
import { utf8Read } from '../../protocol/utf8.js'
import { expectLength, readUint32 } from './binary.js'
import { malformed, outOfRange, wrongType } from './scalar-errors.js'

// pg_lsn as PostgreSQL prints it: two upper-case hex numbers without leading
// zeros, 'hi/lo' (e.g. '16/B374D848'). Binary is the uint64, formatted the
// same way. Parameters: a string of that form (any case, leading zeros
// allowed) goes in binary, a bigint too; other strings go as text.

const UINT64_MAX = 2n ** 64n - 1n

export function hexUpper(n: number): string {
  return n.toString(16).toUpperCase()
}

function decodeLsnBinary(buf: Uint8Array, start: number, end: number): string {
  expectLength('pg_lsn', start, end, 8)
  return hexUpper(readUint32(buf, start)) + '/' + hexUpper(readUint32(buf, start + 4))
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

function decodeLsnText(buf: Uint8Array, start: number, end: number): string {
  let slash = -1
  for (let i = start; i < end; i++) {
    const c = buf[i]!
    if (c === 0x2f && slash < 0) slash = i
    else if (!isHex(c)) throw malformed('pg_lsn', 'not hi/lo in hex')
  }
  if (slash <= start || slash === end - 1 || slash - start > 8 || end - slash - 1 > 8) throw malformed('pg_lsn', 'not hi/lo in hex')
  return utf8Read(buf, start, end)
}

/** The two halves of an LSN string, or null when it is not 1-8 hex digits, '/', 1-8 hex digits. */
export function parseLsn(s: string): [number, number] | null {
  const slash = s.indexOf('/')
  if (slash < 1 || slash > 8 || s.length - slash - 1 < 1 || s.length - slash - 1 > 8) return null
  for (let i = 0; i < s.length; i++) if (i !== slash && !isHex(s.charCodeAt(i))) return null
  return [parseInt(s.slice(0, slash), 16), parseInt(s.slice(slash + 1), 16)]
}

function lsnBigint(v: bigint): bigint {
  if (v < 0n || v > UINT64_MAX) throw outOfRange('pg_lsn')
  return v
}

const LSN_EXPECTED = "a string such as '16/B374D848' or a bigint"

export const pgLsnCodec: Codec = {
  name: 'pg_lsn',
  decodeText: decodeLsnText,
  decodeBinary: decodeLsnBinary,
  encodeText: (v) => {
    if (typeof v === 'string') return v
    if (typeof v === 'bigint') {
      const n = lsnBigint(v)
      return hexUpper(Number(n >> 32n)) + '/' + hexUpper(Number(n & 0xffffffffn))
    }
    throw wrongType('pg_lsn', LSN_EXPECTED, v)
  },
  encodeBinary: (w: Writer, v) => {
    if (typeof v === 'string') {
      const parts = parseLsn(v)
      if (!parts) return false
      w.i32(parts[0])
      w.i32(parts[1])
      return true
    }
    if (typeof v === 'bigint') {
      const n = lsnBigint(v)
      w.i32(Number(n >> 32n))
      w.i32(Number(n & 0xffffffffn))
      return true
    }
    throw wrongType('pg_lsn', LSN_EXPECTED, v)
  },
}

export function registerLsn(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(3220, pgLsnCodec) // pg_lsn
}
