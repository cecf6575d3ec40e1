import { CodecError, type Decoder } from '../codec.js'

// Byte-level pieces of PostgreSQL's container literals, shared by the array,
// composite, record, range and multirange codecs. Two escaping dialects exist:
//   arrays (array_out/array_in): quote with "", escape " and \ with a backslash;
//   composites and ranges (record_out, range_out): quote with "", double " and \
//     on output; on input a backslash escapes the next byte anywhere and "" inside
//     quotes is one quote.
// Every structural byte is ASCII, and UTF-8 continuation bytes are >= 0x80, so
// scanning bytes never splits a multi-byte character.

export const QUOTE = 0x22 // "
export const BACKSLASH = 0x5c // \
export const LBRACE = 0x7b // {
export const RBRACE = 0x7d // }
export const LPAREN = 0x28 // (
export const RPAREN = 0x29 // )
export const LBRACKET = 0x5b // [
export const RBRACKET = 0x5d // ]
export const COMMA = 0x2c // ,

/** array_isspace and C isspace agree on these: space, \t, \n, \v, \f, \r. */
export function isSpace(c: number | undefined): boolean {
  return c === 0x20 || (c !== undefined && c >= 0x09 && c <= 0x0d)
}

/** The byte at p, or -1 at and past the end: the bytes after a value belong to something else. */
export function byteAt(buf: Uint8Array, p: number, end: number): number {
  return p < end ? buf[p]! : -1
}

export function skipSpace(buf: Uint8Array, p: number, end: number): number {
  while (p < end && isSpace(buf[p])) p++
  return p
}

// Unescaping needs somewhere to put the bytes. One spare buffer is lent out and
// taken back; a decoder that runs while it is lent (an escaped composite inside
// an escaped array element) simply gets a fresh one, so nesting is safe.
let spare: Uint8Array | null = new Uint8Array(1024)
const SPARE_LIMIT = 1 << 20

export function takeScratch(n: number): Uint8Array {
  const s = spare
  if (s !== null && s.length >= n) {
    spare = null
    return s
  }
  return new Uint8Array(Math.max(n, 1024))
}

export function releaseScratch(s: Uint8Array): void {
  if (s.length <= SPARE_LIMIT && (spare === null || spare.length < s.length)) spare = s
}

/** What scanField found: no bytes at all (NULL, or an unbounded range side), bytes usable as they are, or bytes to unescape. */
export const FIELD_EMPTY = 0
export const FIELD_PLAIN = 1
export const FIELD_ESCAPED = 2

/** The result of the last scanField call; read it before calling anything that may scan again. */
export const field = { start: 0, end: 0, kind: FIELD_EMPTY }

function isFieldEnd(c: number, bracket: boolean): boolean {
  return c === COMMA || c === RPAREN || (bracket && c === RBRACKET)
}

/**
 * Scans one field of a composite (record_in rules) or one bound of a range
 * (range_parse_bound rules: `]` also ends it) from `p`, and returns the index of
 * the byte that ends it (`,`, `)` or `]`). The field is described in `field`.
 */
export function scanField(buf: Uint8Array, p: number, end: number, bracket: boolean, name: string): number {
  // The common quoted field: "...", no escapes, followed by its terminator.
  if (p < end && buf[p] === QUOTE) {
    let q = p + 1
    while (q < end && buf[q] !== QUOTE && buf[q] !== BACKSLASH) q++
    if (q + 1 < end && buf[q] === QUOTE && isFieldEnd(buf[q + 1]!, bracket)) {
      field.start = p + 1
      field.end = q
      field.kind = FIELD_PLAIN
      return q + 1
    }
  }
  let q = p
  let escaped = false
  let quoted = false
  for (;;) {
    if (q >= end) throw new CodecError(`malformed ${name} literal: unexpected end of input`)
    const c = buf[q]!
    if (c === BACKSLASH) {
      escaped = true
      q += 2
    } else if (c === QUOTE) {
      escaped = true
      if (quoted && q + 1 < end && buf[q + 1] === QUOTE) q += 2
      else {
        quoted = !quoted
        q++
      }
    } else if (!quoted && isFieldEnd(c, bracket)) break
    else q++
  }
  field.start = p
  field.end = q
  field.kind = q === p ? FIELD_EMPTY : escaped ? FIELD_ESCAPED : FIELD_PLAIN
  return q
}

/**
 * Decodes the field the last scanField call found with `decode`: null when it
 * was empty, straight from `buf` when plain, else from an unescaped copy.
 */
export function decodeField(buf: Uint8Array, decode: Decoder): unknown {
  const kind = field.kind
  const start = field.start
  const end = field.end
  if (kind === FIELD_EMPTY) return null
  if (kind === FIELD_PLAIN) return decode(buf, start, end)
  const scratch = takeScratch(end - start)
  const n = unescapeField(buf, start, end, scratch)
  const v = decode(scratch, 0, n)
  releaseScratch(scratch)
  return v
}

/** Removes the quoting of a field scanned by scanField into `out`; returns the byte count. */
export function unescapeField(buf: Uint8Array, start: number, end: number, out: Uint8Array): number {
  let n = 0
  let quoted = false
  for (let q = start; q < end; ) {
    const c = buf[q]!
    if (c === BACKSLASH) {
      out[n++] = buf[q + 1]!
      q += 2
    } else if (c === QUOTE) {
      if (quoted && q + 1 < end && buf[q + 1] === QUOTE) {
        out[n++] = QUOTE
        q += 2
      } else {
        quoted = !quoted
        q++
      }
    } else {
      out[n++] = c
      q++
    }
  }
  return n
}

/**
 * Removes the escapes of an array element (array_in rules) into `out`; returns
 * the byte count. An unquoted element also loses its trailing unescaped whitespace.
 */
export function unescapeArrayElement(buf: Uint8Array, start: number, end: number, quoted: boolean, out: Uint8Array): number {
  let n = 0
  let keep = 0
  for (let q = start; q < end; q++) {
    let c = buf[q]!
    if (c === BACKSLASH) {
      c = buf[++q]!
      out[n++] = c
      keep = n
    } else {
      out[n++] = c
      if (quoted || !isSpace(c)) keep = n
    }
  }
  return keep
}

/** True when the bytes spell NULL in any letter case (an unquoted array element meaning SQL NULL). */
export function isNullWord(buf: Uint8Array, p: number, end: number): boolean {
  return (
    end - p === 4 &&
    (buf[p]! | 0x20) === 0x6e &&
    (buf[p + 1]! | 0x20) === 0x75 &&
    (buf[p + 2]! | 0x20) === 0x6c &&
    (buf[p + 3]! | 0x20) === 0x6c
  )
}

function isSpaceChar(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d)
}

/** An array element's text as array_out prints it: quoted when it could be misread, with \ before " and \. */
export function quoteArrayElement(s: string, delimiter: string): string {
  const d = delimiter.charCodeAt(0)
  let quote = s.length === 0 || (s.length === 4 && s.toLowerCase() === 'null')
  let escape = false
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === QUOTE || c === BACKSLASH) {
      escape = true
      break
    }
    if (c === LBRACE || c === RBRACE || c === d || isSpaceChar(c)) quote = true
  }
  if (escape) return `"${s.replace(/["\\]/g, '\\$&')}"`
  return quote ? `"${s}"` : s
}

function quoteDoubling(s: string, bracket: boolean): string {
  let quote = s.length === 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === QUOTE || c === BACKSLASH) return `"${s.replace(/["\\]/g, '$&$&')}"`
    if (c === LPAREN || c === RPAREN || c === COMMA || isSpaceChar(c) || (bracket && (c === LBRACKET || c === RBRACKET))) quote = true
  }
  return quote ? `"${s}"` : s
}

/** A composite field's text as record_out prints it (not for NULL, which is an empty field). */
export function quoteCompositeField(s: string): string {
  return quoteDoubling(s, false)
}

/** A range bound's text as range_out prints it (not for an unbounded side, which is empty). */
export function quoteRangeBound(s: string): string {
  return quoteDoubling(s, true)
}
