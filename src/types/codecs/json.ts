import type { Writer } from '../../protocol/writer.js'
import type { ArrayValuedCodec } from './array-shape.js'
import { CodecError, type Codec, type ResolvedTypeOptions } from '../codec.js'
import { utf8Read } from '../../protocol/utf8.js'
import { checkText } from './text-checks.js'
import { malformed, wrongType } from './scalar-errors.js'

// json and jsonb as parsed JS values; jsonpath as a string.
//
// Binary json is the JSON text; binary jsonb and jsonpath are a version byte
// (1) then the text. Any other version is refused rather than misread.
//
// Parameters: a JS value is serialised with JSON.stringify (with its usual
// rules: toJSON, undefined object members dropped). A STRING is taken as JSON
// text already serialised and passed through unchanged, the convention shared
// with pg and postgres.js: send '"text"' for a JSON string, or
// JSON.stringify(s). A value JSON.stringify cannot represent (undefined, a
// function, a symbol, a bigint anywhere inside) is refused.

function parseJson(name: string, s: string): unknown {
  try {
    return JSON.parse(s)
  } catch (err) {
    throw new CodecError(`malformed ${name} value: ${(err as Error).message}`, { cause: err })
  }
}

function decodeJsonText(buf: Uint8Array, start: number, end: number): unknown {
  return parseJson('json', utf8Read(buf, start, end))
}

function decodeJsonbBinary(buf: Uint8Array, start: number, end: number): unknown {
  if (end === start || buf[start] !== 1) throw malformed('jsonb', 'unknown binary format version')
  return parseJson('jsonb', utf8Read(buf, start + 1, end))
}

function decodeJsonbText(buf: Uint8Array, start: number, end: number): unknown {
  return parseJson('jsonb', utf8Read(buf, start, end))
}

/** The JSON text of a non-string parameter. */
function stringify(name: string, v: unknown): string {
  let s: string | undefined
  try {
    s = JSON.stringify(v)
  } catch (err) {
    // A bigint inside, a cycle, or a throwing toJSON: say which, never what.
    throw new CodecError(`${name} parameter cannot be serialised as JSON: ${(err as Error).message}`, { cause: err })
  }
  if (s === undefined) throw wrongType(name, 'a value JSON can represent, or a string of JSON text', v)
  return s
}

function jsonText(name: string, v: unknown): string {
  if (typeof v === 'string') {
    checkText(name, v)
    return v
  }
  return stringify(name, v)
}

// A JSON value may be a JS array, nested or not: in a json[] parameter an inner
// JS array is always one JSON value, never a further dimension.
export const jsonCodec: ArrayValuedCodec = {
  valuesAreArrays: 'always',
  name: 'json',
  decodeText: decodeJsonText,
  decodeBinary: decodeJsonText,
  encodeText: (v) => jsonText('json', v),
  encodeBinary: (w: Writer, v) => {
    if (typeof v === 'string') return false
    // JSON.stringify escapes lone surrogates and NUL, so its output needs no checks.
    w.str(stringify('json', v))
    return true
  },
}

export const jsonbCodec: ArrayValuedCodec = {
  valuesAreArrays: 'always',
  name: 'jsonb',
  decodeText: decodeJsonbText,
  decodeBinary: decodeJsonbBinary,
  encodeText: (v) => jsonText('jsonb', v),
  encodeBinary: (w: Writer, v) => {
    if (typeof v === 'string') return false
    const s = stringify('jsonb', v)
    w.u8(1)
    w.str(s)
    return true
  },
}

export const jsonpathCodec: Codec = {
  name: 'jsonpath',
  decodeText: utf8Read,
  decodeBinary: (buf, start, end) => {
    if (end === start || buf[start] !== 1) throw malformed('jsonpath', 'unknown binary format version')
    return utf8Read(buf, start + 1, end)
  },
  encodeText: (v) => {
    if (typeof v !== 'string') throw wrongType('jsonpath', 'a string', v)
    checkText('jsonpath', v)
    return v
  },
}

export function registerJson(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(114, jsonCodec) // json
  table.set(3802, jsonbCodec) // jsonb
  table.set(4072, jsonpathCodec) // jsonpath
}
