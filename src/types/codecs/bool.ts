import type { Codec, ResolvedTypeOptions } from '../codec.js'
import { malformed, wrongType } from './scalar-errors.js'

// bool as a boolean: text 't' or 'f', binary one byte 1 or 0.

export const boolCodec: Codec = {
  name: 'bool',
  decodeText: (buf, start, end) => {
    if (end - start === 1) {
      const c = buf[start]
      if (c === 0x74 /* t */) return true
      if (c === 0x66 /* f */) return false
    }
    throw malformed('bool', "neither 't' nor 'f'")
  },
  decodeBinary: (buf, start, end) => {
    if (end - start === 1) {
      const c = buf[start]
      if (c === 1) return true
      if (c === 0) return false
    }
    throw malformed('bool', 'not one byte 0 or 1')
  },
  encodeText: (v) => {
    if (typeof v === 'boolean') return v ? 't' : 'f'
    if (typeof v === 'string') return v
    throw wrongType('bool', 'a boolean or a string', v)
  },
  encodeBinary: (w, v) => {
    if (typeof v === 'boolean') {
      w.u8(v ? 1 : 0)
      return true
    }
    if (typeof v === 'string') return false
    throw wrongType('bool', 'a boolean or a string', v)
  },
}

export function registerBool(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(16, boolCodec) // bool
}
