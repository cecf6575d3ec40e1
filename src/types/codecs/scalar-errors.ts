import { CodecError, describeValue } from '../codec.js'

// Error constructors shared by the scalar codecs, so every message has the same
// shape. Messages describe a parameter's JS type, never its content (values may
// be secrets); a malformed server value may be described, it came from the server.

/** "int4 needs an integer number, a bigint or a string; got a non-integer number". */
export function needs(name: string, expected: string, got: string): CodecError {
  return new CodecError(`${name} needs ${expected}; got ${got}`)
}

/** A JS value that cannot stand for the type: "int4 needs an integer number, a bigint or a string; got a boolean". */
export function wrongType(name: string, expected: string, value: unknown): CodecError {
  return needs(name, expected, describeValue(value))
}

export function outOfRange(name: string): CodecError {
  return new CodecError(`value out of range for ${name}`)
}

/** Bytes from the server that are not a valid value of the type. */
export function malformed(name: string, detail: string): CodecError {
  return new CodecError(`malformed ${name} value: ${detail}`)
}
