// The one place that turns JS strings into UTF-8 bytes and back. Node's Buffer
// methods are several times faster than TextEncoder/TextDecoder for the short
// strings of the protocol, so they are used when the runtime has them; the
// browser build (no Buffer) falls back to the standard classes. They work on
// any Uint8Array, so callers never need to know which one they hold.

interface NodeBufferStatics {
  prototype: {
    utf8Write(this: Uint8Array, s: string, offset: number, length: number): number
    utf8Slice(this: Uint8Array, start: number, end: number): string
    latin1Slice(this: Uint8Array, start: number, end: number): string
  }
  byteLength(s: string, encoding: 'utf8'): number
}

const NodeBuffer = (globalThis as { Buffer?: NodeBufferStatics }).Buffer

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

/** Decodes UTF-8 bytes; malformed sequences become U+FFFD. */
export const utf8Read: (buf: Uint8Array, start: number, end: number) => string = NodeBuffer
  ? (buf, start, end) => {
      // Short ASCII (names, numbers, dates, command tags) is read faster as
      // Latin-1, which skips the UTF-8 validation, once a scan has shown it
      // holds no byte above 0x7f. Building it a character at a time would make
      // a string per character for the garbage collector.
      if (end - start < 16) {
        for (let i = start; i < end; i++) if (buf[i]! >= 0x80) return NodeBuffer.prototype.utf8Slice.call(buf, start, end)
        try {
          return NodeBuffer.prototype.latin1Slice.call(buf, start, end)
        } catch {
          // Not a real typed array (a Proxy standing in for one): read it by index.
          let s = ''
          for (let i = start; i < end; i++) s += String.fromCharCode(buf[i]!)
          return s
        }
      }
      return NodeBuffer.prototype.utf8Slice.call(buf, start, end)
    }
  : (buf, start, end) => decoder.decode(buf.subarray(start, end))

/**
 * Decodes bytes the caller knows are ASCII (text it assembled itself, such as
 * a uuid's hex digits): Latin-1 reads them without UTF-8's validation.
 */
export const asciiRead: (buf: Uint8Array, start: number, end: number) => string = NodeBuffer
  ? (buf, start, end) => NodeBuffer.prototype.latin1Slice.call(buf, start, end)
  : (buf, start, end) => decoder.decode(buf.subarray(start, end))

/** Decodes UTF-8 bytes, throwing a TypeError on a malformed sequence. */
export function utf8ReadStrict(buf: Uint8Array, start: number, end: number): string {
  return strictDecoder.decode(buf.subarray(start, end))
}
