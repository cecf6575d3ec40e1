// The one place that turns JS strings into UTF-8 bytes and back. Node's Buffer
// methods are several times faster than TextEncoder/TextDecoder for the short
// strings of the protocol, so they are used when the runtime has them; the
// browser build (no Buffer) falls back to the standard classes. They work on
// any Uint8Array, so callers never need to know which one they hold.

interface NodeBufferStatics {
  prototype: {
    utf8Write(this: Uint8Array, s: string, offset: number, length: number): number
    utf8Slice(this: Uint8Array, start: number, end: number): string
  }
  byteLength(s: string, encoding: 'utf8'): number
}

const NodeBuffer = (globalThis as { Buffer?: NodeBufferStatics }).Buffer

/** Strings up to this many bytes are made in JS when ASCII (see shortAscii); past it a Buffer slice is faster. */
const SHORT_MAX = 32

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true })
const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The number of bytes `s` takes in UTF-8. */
export const utf8Length: (s: string) => number = NodeBuffer
  ? (s) => NodeBuffer.byteLength(s, 'utf8')
  : (s) => {
      let n = 0
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i)
        if (c < 0x80) n += 1
        else if (c < 0x800) n += 2
        else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
          const d = s.charCodeAt(i + 1)
          if (d >= 0xdc00 && d <= 0xdfff) {
            n += 4
            i++
          } else n += 3
        } else n += 3
      }
      return n
    }

/**
 * Writes `s` as UTF-8 at `pos`; the caller guarantees `3 * s.length` bytes of room.
 * Returns the number of bytes written. Lone surrogates become U+FFFD, as in every
 * UTF-8 encoder.
 */
export const utf8Write: (buf: Uint8Array, pos: number, s: string) => number = NodeBuffer
  ? (buf, pos, s) => {
      // Short ASCII strings (names, numbers) are cheaper to copy by hand than to
      // cross into C++ for.
      const n = s.length
      if (n < 24) {
        let i = 0
        for (; i < n; i++) {
          const c = s.charCodeAt(i)
          if (c >= 0x80) break
          buf[pos + i] = c
        }
        if (i === n) return n
      }
      return NodeBuffer.prototype.utf8Write.call(buf, s, pos, buf.length - pos)
    }
  : (buf, pos, s) => encoder.encodeInto(s, buf.subarray(pos)).written

/**
 * Reads up to SHORT_MAX bytes as a string when all are ASCII, else returns
 * null. A case per length reads each byte once into a local, checks them all
 * with one OR, and makes the string with one String.fromCharCode call, which
 * V8 builds in place without leaving JS: two to four times as fast as a Buffer
 * slice (a call into C++ that costs ~45 ns whatever the length) for the short
 * values that fill most rows (names, emails, hashes, numbers, dates). A scan
 * followed by a slice, as before, cost more than the slice alone. The code is
 * generated from constants by the first short read, not at import (making it
 * costs about a millisecond); where code generation is forbidden the reader
 * answers null. Never attempted without Buffer (a browser would report the
 * attempt under a content security policy, and reads through TextDecoder anyway).
 */
type ShortAscii = (buf: Uint8Array, start: number, end: number) => string | null
// Set once, and the one call site below only ever calls what it is set to: a
// first call through a stand-in would leave that site polymorphic.
let shortAscii: ShortAscii | undefined

function makeShortAscii(): ShortAscii {
  const cases = ['case 0: return ""']
  for (let n = 1; n <= SHORT_MAX; n++) {
    const c = Array.from({ length: n }, (_, i) => `c${i}`)
    cases.push(`case ${n}: { ${c.map((v, i) => `const ${v} = b[s + ${i}]`).join('; ')}; return (${c.join(' | ')}) < 0x80 ? chars(${c.join(', ')}) : null }`)
  }
  try {
    return new Function('chars', `return function shortAscii(b, s, e) {\nswitch (e - s) {\n${cases.join('\n')}\n}\nreturn null\n}`)(String.fromCharCode) as ShortAscii
  } catch {
    return () => null
  }
}

/** Decodes UTF-8 bytes; malformed sequences become U+FFFD. */
export const utf8Read: (buf: Uint8Array, start: number, end: number) => string = NodeBuffer
  ? (buf, start, end) => {
      if (end - start <= SHORT_MAX) {
        const s = (shortAscii ??= makeShortAscii())(buf, start, end)
        if (s !== null) return s
      }
      return NodeBuffer.prototype.utf8Slice.call(buf, start, end)
    }
  : (buf, start, end) => decoder.decode(buf.subarray(start, end))

/** Decodes UTF-8 bytes, throwing a TypeError on a malformed sequence. */
export function utf8ReadStrict(buf: Uint8Array, start: number, end: number): string {
  return strictDecoder.decode(buf.subarray(start, end))
}
