import { utf8Read } from '../protocol/utf8.js'
import { copyBytes } from '../protocol/reader.js'
import { CodecError, describeValue, type Codec } from './codec.js'

// What a type without a codec (an extension type nobody registered, say) looks
// like: requested in text and returned as the string PostgreSQL prints, which
// is always useful. Parameters of such types go as text, or as raw binary when
// given bytes.

export const unknownTypeCodec: Codec = {
  name: 'unknown type',
  decodeText: utf8Read,
  decodeBinary: (buf, start, end) => copyBytes(buf, start, end),
  preferBinary: false,
  encodeText(value) {
    switch (typeof value) {
      case 'string':
        return value
      case 'number':
      case 'bigint':
      case 'boolean':
        return String(value)
      default:
        throw new CodecError(`a parameter of a type without a codec needs a string (its text form) or bytes (its binary form); got ${describeValue(value)}`)
    }
  },
  encodeBinary(w, value) {
    if (!(value instanceof Uint8Array)) return false
    w.bytes(value)
    return true
  },
}

/** Enum values are their labels, in both formats. */
export function enumCodec(name: string): Codec {
  return {
    name,
    decodeText: utf8Read,
    decodeBinary: utf8Read,
    encodeText(value) {
      if (typeof value !== 'string') throw new CodecError(`enum ${name} needs a string label; got ${describeValue(value)}`)
      return value
    },
    encodeBinary(w, value) {
      if (typeof value !== 'string') throw new CodecError(`enum ${name} needs a string label; got ${describeValue(value)}`)
      w.str(value)
      return true
    },
  }
}
