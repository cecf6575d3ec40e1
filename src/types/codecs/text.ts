import type { Writer } from '../../protocol/writer.js'
import { CodecError, type Codec, type ResolvedTypeOptions } from '../codec.js'
import { utf8Read } from '../../protocol/utf8.js'
import { checkText } from './text-checks.js'
import { malformed, wrongType } from './scalar-errors.js'

// Textual types as strings. Their binary form is the same UTF-8 bytes as their
// text, so one decoder serves both formats.
//
// Parameters: a string; as a documented convenience, a number, bigint or
// boolean is sent as String(value) ('42', 'true'). A string holding NUL or a
// lone surrogate is refused (see text-checks.ts).

const TEXT_EXPECTED = 'a string (or a number, bigint or boolean)'

/** The text of a parameter of a textual type, checked. */
export function textParam(name: string, v: unknown): string {
  let s: string
  if (typeof v === 'string') s = v
  else if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v)
  else throw wrongType(name, TEXT_EXPECTED, v)
  checkText(name, s)
  return s
}

/**
 * A textual type whose binary input reads the bytes as text too (text,
 * varchar, bpchar): parameters go in binary, written straight into the
 * message. Also the codec for extension types that behave as text (citext).
 */
export function textCodec(name: string): Codec {
  return {
    name,
    decodeText: utf8Read,
    decodeBinary: utf8Read,
    encodeText: (v) => textParam(name, v),
    encodeBinary: (w: Writer, v) => {
      w.str(textParam(name, v))
      return true
    },
  }
}

/**
 * A textual type whose parameters go as text: name (binary input rejects
 * over-long names that text input truncates), xml (binary input honours an
 * encoding declaration), unknown, cstring, and the system types whose binary
 * form the server reads as text anyway.
 */
export function textOnlyParamCodec(name: string): Codec {
  return { name, decodeText: utf8Read, decodeBinary: utf8Read, encodeText: (v) => textParam(name, v) }
}

/**
 * Types with a text form only, returned as strings: their binary form is
 * absent or internal, so results are requested in text (no decodeBinary).
 */
export function textOnlyCodec(name: string): Codec {
  return { name, decodeText: utf8Read, encodeText: (v) => textParam(name, v) }
}

// "char" (OID 18) is one byte. PostgreSQL prints byte 0 as '', ASCII as itself,
// and a byte with the high bit set as a backslash and three octal digits
// ('\201'); binary is the bare byte, decoded here to the same string.

function decodeCharBinary(buf: Uint8Array, start: number, end: number): string {
  if (end - start !== 1) throw malformed('"char"', 'not one byte')
  const c = buf[start]!
  if (c === 0) return ''
  if (c < 0x80) return String.fromCharCode(c)
  return '\\' + (c >> 6).toString() + ((c >> 3) & 7).toString() + (c & 7).toString()
}

/** The byte a "char" parameter stands for; refuses strings that PostgreSQL would silently cut to their first byte. */
function charByte(v: unknown): number {
  if (typeof v !== 'string') throw wrongType('"char"', "a string of one ASCII character, '' or an octal escape such as '\\201'", v)
  if (v.length === 0) return 0
  if (v.length === 1) {
    const c = v.charCodeAt(0)
    if (c > 0 && c < 0x80) return c
  } else if (v.length === 4 && v.charCodeAt(0) === 0x5c) {
    const a = v.charCodeAt(1) - 0x30
    const b = v.charCodeAt(2) - 0x30
    const c = v.charCodeAt(3) - 0x30
    if (a >= 0 && a <= 3 && b >= 0 && b <= 7 && c >= 0 && c <= 7) return (a << 6) | (b << 3) | c
  }
  throw new CodecError(`"char" holds one byte: a string of one ASCII character, '' or an octal escape such as '\\201'`)
}

export const charCodec: Codec = {
  name: 'char',
  decodeText: utf8Read,
  decodeBinary: decodeCharBinary,
  encodeText: (v) => {
    charByte(v)
    return v as string
  },
  encodeBinary: (w, v) => {
    w.u8(charByte(v))
    return true
  },
}

export function registerText(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(25, textCodec('text'))
  table.set(1043, textCodec('varchar'))
  table.set(1042, textCodec('bpchar'))
  table.set(1790, textCodec('refcursor'))
  table.set(19, textOnlyParamCodec('name'))
  table.set(142, textOnlyParamCodec('xml'))
  table.set(705, textOnlyParamCodec('unknown'))
  table.set(2275, textOnlyParamCodec('cstring'))
  table.set(18, charCodec)
}
