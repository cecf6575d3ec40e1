import { utf8ReadStrict } from '../protocol/utf8.js'
import { WireProtocolError } from './errors.js'

// UTF-8 and C strings over plain Uint8Arrays. Fixed-width reads come
// from types/codecs/binary.ts, shared with the Node client. Callers check
// bounds before reading; these never do.

/** The UTF-8 text of b[start, end); throws a WireProtocolError on invalid UTF-8. */
export function utf8Text(b: Uint8Array, start: number, end: number): string {
  // Most values are short ASCII (numbers, dates, names): build those directly
  // rather than pay for a subarray and a decoder call each.
  if (end - start <= 32) {
    let s = ''
    let i = start
    for (; i < end; i++) {
      const c = b[i]!
      if (c >= 0x80) break
      s += String.fromCharCode(c)
    }
    if (i === end) return s
  }
  // Strict: a byte sequence that is not UTF-8 means the stream is not what we
  // think it is, so it must not turn into U+FFFD silently.
  try {
    return utf8ReadStrict(b, start, end)
  } catch {
    throw new WireProtocolError('invalid UTF-8 in a text value (the server must send client_encoding UTF8)')
  }
}

/** Where the NUL ending a C string that starts at `start` is, or -1 if none before `end`. */
export function findNul(b: Uint8Array, start: number, end: number): number {
  for (let i = start; i < end; i++) if (b[i] === 0) return i
  return -1
}
