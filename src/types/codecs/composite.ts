import type { Writer } from '../../protocol/writer.js'
import { CodecError, describeValue, type Codec } from '../codec.js'
import type { ArrayValuedCodec } from './array-shape.js'
import { readInt32, readUint32 } from './binary.js'
import { COMMA, LPAREN, RPAREN, byteAt, decodeField, quoteCompositeField, scanField, skipSpace } from './literal-syntax.js'

// Composite types with known attributes (CREATE TYPE ... AS (...), table row
// types). JS: a plain object keyed by attribute name in attribute order.
// Binary (record_send): int32 column count, then per column uint32 type OID,
// int32 length (-1 for NULL) and the bytes. Text (record_out): '(1,"a b",,"")'
// where an empty field is NULL and "" an empty string.

export interface CompositeAttribute {
  readonly name: string
  readonly oid: number
  readonly codec: Codec
}

export function compositeCodec(name: string, attributes: readonly CompositeAttribute[]): Codec {
  const n = attributes.length
  const names = attributes.map((a) => a.name)
  const oids = attributes.map((a) => a.oid)
  const codecs = attributes.map((a) => a.codec)
  // Assigning a key named __proto__ would change the prototype instead of adding a property.
  const plainKeys = !names.includes('__proto__')
  const known = new Set(names)
  const binaryDecoders = codecs.every((c) => c.decodeBinary !== undefined)
  const binaryEncoders = codecs.every((c) => c.encodeBinary !== undefined)

  function set(obj: Record<string, unknown>, i: number, v: unknown): void {
    if (plainKeys) obj[names[i]!] = v
    else Object.defineProperty(obj, names[i]!, { value: v, enumerable: true, writable: true, configurable: true })
  }

  function fail(what: string): CodecError {
    return new CodecError(`malformed ${name} literal: ${what}`)
  }

  function decodeText(buf: Uint8Array, start: number, end: number): Record<string, unknown> {
    let p = skipSpace(buf, start, end)
    if (byteAt(buf, p, end) !== LPAREN) throw fail('it does not start with "("')
    p++
    const obj: Record<string, unknown> = {}
    if (n === 0) {
      if (byteAt(buf, p, end) !== RPAREN) throw fail('fields where the type has none')
      p++
    }
    for (let i = 0; i < n; i++) {
      p = scanField(buf, p, end, false, name)
      set(obj, i, decodeField(buf, codecs[i]!.decodeText))
      const c = buf[p++]
      if (c !== (i === n - 1 ? RPAREN : COMMA)) throw fail(c === RPAREN ? `fewer than ${n} fields` : `more than ${n} fields`)
    }
    if (skipSpace(buf, p, end) !== end) throw fail('junk after the closing ")"')
    return obj
  }

  function decodeBinary(buf: Uint8Array, start: number, end: number): Record<string, unknown> {
    if (end - start < 4) throw new CodecError(`malformed binary ${name}: no column count`)
    const count = readInt32(buf, start)
    if (count !== n) throw new CodecError(`binary ${name} value has ${count} columns where the type has ${n}`)
    let p = start + 4
    const obj: Record<string, unknown> = {}
    for (let i = 0; i < n; i++) {
      if (end - p < 8) throw new CodecError(`malformed binary ${name}: truncated column`)
      const oid = readUint32(buf, p)
      const len = readInt32(buf, p + 4)
      p += 8
      if (oid !== oids[i]) {
        throw new CodecError(`binary ${name} value has type OID ${oid} for attribute ${JSON.stringify(names[i])} where OID ${oids[i]!} was expected`)
      }
      let v: unknown = null
      if (len !== -1) {
        if (len < 0 || len > end - p) throw new CodecError(`malformed binary ${name}: column length ${len}`)
        v = codecs[i]!.decodeBinary!(buf, p, p + len)
        p += len
      }
      set(obj, i, v)
    }
    if (p !== end) throw new CodecError(`malformed binary ${name}: ${end - p} bytes after the last column`)
    return obj
  }

  /** The attribute values of an object (by name) or an array (by position). */
  function valuesOf(value: unknown): ArrayLike<unknown> {
    if (Array.isArray(value)) {
      if (value.length !== n) throw new CodecError(`${name} needs ${n} values when given as an array; got ${value.length}`)
      return value
    }
    if (typeof value !== 'object' || value === null || value instanceof Date || ArrayBuffer.isView(value)) {
      throw new CodecError(`${name} needs an object, an array or a string; got ${describeValue(value)}`)
    }
    const unknown = Object.keys(value).filter((k) => !known.has(k))
    if (unknown.length > 0) {
      throw new CodecError(`${name} has no attribute${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')}`)
    }
    const out: unknown[] = new Array(n)
    for (let i = 0; i < n; i++) out[i] = Object.hasOwn(value, names[i]!) ? (value as Record<string, unknown>)[names[i]!] : undefined
    return out
  }

  function encodeText(value: unknown): string {
    if (typeof value === 'string') return value
    const values = valuesOf(value)
    let s = '('
    for (let i = 0; i < n; i++) {
      if (i > 0) s += ','
      const v = values[i]
      if (v !== null && v !== undefined) s += quoteCompositeField(codecs[i]!.encodeText(v))
    }
    return s + ')'
  }

  function encodeBinary(w: Writer, value: unknown): boolean {
    if (typeof value === 'string') return false
    const values = valuesOf(value)
    const mark = w.length
    try {
      w.i32(n)
      for (let i = 0; i < n; i++) {
        w.i32(oids[i]!)
        const v = values[i]
        if (v === null || v === undefined) {
          w.i32(-1)
          continue
        }
        const at = w.reserve32()
        if (!codecs[i]!.encodeBinary!(w, v)) {
          w.truncate(mark)
          return false
        }
        w.patch32(at, w.length - at - 4)
      }
    } catch (e) {
      w.truncate(mark)
      throw e
    }
    return true
  }

  const codec: ArrayValuedCodec = {
    name,
    valuesAreArrays: true,
    decodeText,
    decodeBinary: binaryDecoders ? decodeBinary : undefined,
    encodeText,
    encodeBinary: binaryEncoders ? encodeBinary : undefined,
    preferBinary: codecs.every((c) => c.preferBinary !== false),
  }
  return codec
}
