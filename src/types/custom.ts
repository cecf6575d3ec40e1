import { utf8Read } from '../protocol/utf8.js'
import { copyBytes } from '../protocol/reader.js'
import { CodecError, type Codec } from './codec.js'

/**
 * A codec supplied by the application for a type pipegres does not know (an
 * extension type such as hstore or vector) or to change how a built-in type is
 * decoded. Give the text functions, the binary ones, or both: results are
 * requested in binary when `decodeBinary` is given.
 */
export interface CustomType {
  /** The type's name, optionally schema-qualified ('hstore', 'public.vector'); resolved through the catalog. */
  name?: string
  /** The type's OID, when known in advance (built-in types). */
  oid?: number
  /** Text form → value. */
  parse?: (text: string) => unknown
  /** Value → text form. */
  serialize?: (value: unknown) => string
  /** Binary form → value. The bytes are a copy the function may keep. */
  decodeBinary?: (bytes: Uint8Array) => unknown
  /** Value → binary form; return undefined to send this value in text instead. */
  encodeBinary?: (value: unknown) => Uint8Array | undefined
}

export function customCodec(t: CustomType): Codec {
  const label = t.name ?? `type ${t.oid}`
  const { parse, serialize, decodeBinary, encodeBinary } = t
  return {
    name: label,
    decodeText: parse ? (buf, start, end) => parse(utf8Read(buf, start, end)) : utf8Read,
    decodeBinary: decodeBinary ? (buf, start, end) => decodeBinary(copyBytes(buf, start, end)) : undefined,
    preferBinary: decodeBinary !== undefined,
    encodeText(value) {
      if (serialize) return serialize(value)
      if (typeof value === 'string') return value
      throw new CodecError(`${label} has no serialize function, so its parameters must be strings`)
    },
    encodeBinary: encodeBinary
      ? (w, value) => {
          const bytes = encodeBinary(value)
          if (bytes === undefined) return false
          if (!(bytes instanceof Uint8Array)) throw new CodecError(`encodeBinary of ${label} must return a Uint8Array`)
          w.bytes(bytes)
          return true
        }
      : undefined,
  }
}
