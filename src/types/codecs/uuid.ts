import type { Writer } from '../../protocol/writer.js'
import type { Codec, ResolvedTypeOptions } from '../codec.js'
import { utf8Read } from '../../protocol/utf8.js'
import { expectLength } from './binary.js'
import { malformed, wrongType } from './scalar-errors.js'

// uuid as the canonical lowercase string 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'.
// Parameters: strings of 32 hex digits, with or without the four dashes in
// their canonical places, in any case, go in binary; any other string (braces,
// other dash positions) goes as text for the server to accept or reject.

const HEX_CHARS = new Uint8Array(16)
for (let i = 0; i < 16; i++) HEX_CHARS[i] = '0123456789abcdef'.charCodeAt(i)

// Hex digit values by char code (both cases); -1 for anything else.
const HEX_VALUE = new Int8Array(128).fill(-1)
for (let i = 0; i < 10; i++) HEX_VALUE[0x30 + i] = i
for (let i = 0; i < 6; i++) HEX_VALUE[0x41 + i] = HEX_VALUE[0x61 + i] = 10 + i

// 0 for lower-case hex digits, 2 for '-', 64 for any other byte.
const CANONICAL_WEIGHT = new Uint8Array(256).fill(64)
for (const c of '0123456789abcdef') CANONICAL_WEIGHT[c.charCodeAt(0)] = 0
CANONICAL_WEIGHT[0x2d] = 2

/**
 * The canonical text of a binary uuid (pipegres/wire decodes with it too).
 * One String.fromCharCode call of the 36 character codes makes the string in
 * JS, where writing them into a scratch array and slicing it as Latin-1 cost a
 * call into C++ per value.
 */
export function decodeUuidBinary(buf: Uint8Array, start: number, end: number): string {
  expectLength('uuid', start, end, 16)
  const h = HEX_CHARS
  const b0 = buf[start + 0]!
  const b1 = buf[start + 1]!
  const b2 = buf[start + 2]!
  const b3 = buf[start + 3]!
  const b4 = buf[start + 4]!
  const b5 = buf[start + 5]!
  const b6 = buf[start + 6]!
  const b7 = buf[start + 7]!
  const b8 = buf[start + 8]!
  const b9 = buf[start + 9]!
  const b10 = buf[start + 10]!
  const b11 = buf[start + 11]!
  const b12 = buf[start + 12]!
  const b13 = buf[start + 13]!
  const b14 = buf[start + 14]!
  const b15 = buf[start + 15]!
  return String.fromCharCode(
    h[b0 >> 4]!, h[b0 & 15]!, h[b1 >> 4]!, h[b1 & 15]!, h[b2 >> 4]!, h[b2 & 15]!, h[b3 >> 4]!, h[b3 & 15]!, 0x2d, h[b4 >> 4]!, h[b4 & 15]!, h[b5 >> 4]!, h[b5 & 15]!, 0x2d, h[b6 >> 4]!, h[b6 & 15]!, h[b7 >> 4]!, h[b7 & 15]!, 0x2d, h[b8 >> 4]!, h[b8 & 15]!, h[b9 >> 4]!, h[b9 & 15]!, 0x2d, h[b10 >> 4]!, h[b10 & 15]!, h[b11 >> 4]!, h[b11 & 15]!, h[b12 >> 4]!, h[b12 & 15]!, h[b13 >> 4]!, h[b13 & 15]!, h[b14 >> 4]!, h[b14 & 15]!, h[b15 >> 4]!, h[b15 & 15]!,
  )
}

function decodeUuidText(buf: Uint8Array, start: number, end: number): string {
  if (end - start !== 36 || buf[start + 8] !== 0x2d || buf[start + 13] !== 0x2d || buf[start + 18] !== 0x2d || buf[start + 23] !== 0x2d) {
    throw malformed('uuid', 'not in canonical form')
  }
  // The server prints lower case only. Summing the table's weights checks every byte in one pass:
  // only the four dashes already found (2 each) and hex digits (0) add up to 8.
  let weight = 0
  for (let i = start; i < end; i++) weight += CANONICAL_WEIGHT[buf[i]!]!
  if (weight !== 8) throw malformed('uuid', 'not in canonical form')
  return utf8Read(buf, start, end)
}

/** Writes the 16 bytes of a uuid string in one of the two forms binary accepts; false for any other string. */
function writeUuidString(w: Writer, s: string): boolean {
  const dashed = s.length === 36
  if (!dashed && s.length !== 32) return false
  if (dashed && (s.charCodeAt(8) !== 0x2d || s.charCodeAt(13) !== 0x2d || s.charCodeAt(18) !== 0x2d || s.charCodeAt(23) !== 0x2d)) return false
  // Check every digit before writing anything.
  for (let i = 0; i < s.length; i++) {
    if (dashed && (i === 8 || i === 13 || i === 18 || i === 23)) continue
    const c = s.charCodeAt(i)
    if (c >= 128 || HEX_VALUE[c]! < 0) return false
  }
  w.ensure(16)
  const out = w.buf
  let at = w.pos
  for (let i = 0; i < s.length; i += 2) {
    if (dashed && (i === 8 || i === 13 || i === 18 || i === 23)) i++
    out[at++] = (HEX_VALUE[s.charCodeAt(i)]! << 4) | HEX_VALUE[s.charCodeAt(i + 1)]!
  }
  w.pos = at
  return true
}

export const uuidCodec: Codec = {
  name: 'uuid',
  decodeText: decodeUuidText,
  decodeBinary: decodeUuidBinary,
  encodeText: (v) => {
    if (typeof v === 'string') return v
    throw wrongType('uuid', 'a string', v)
  },
  encodeBinary: (w, v) => {
    if (typeof v === 'string') return writeUuidString(w, v)
    throw wrongType('uuid', 'a string', v)
  },
}

export function registerUuid(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(2950, uuidCodec) // uuid
}
