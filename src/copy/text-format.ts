import { ProtocolError } from '../errors.js'
import type { Writer } from '../protocol/writer.js'
import { utf8ReadStrict } from '../protocol/utf8.js'
import type { TypeView } from '../types/view.js'
import { DelimitedCopyDecoder, DelimitedCopyEncoder, grown } from './delimited.js'
import type { ResolvedCopyOptions } from './options.js'
import type { CopyColumn } from './rows.js'

// Text COPY: one line per row, fields separated by the delimiter (tab by
// default), \N for NULL. In a value, a backslash, a newline, a carriage return
// and the delimiter are written backslash-escaped. Reading, a backslash makes
// the next character literal, except the escapes \b \f \n \r \t \v, octal
// \NNN and hex \xHH; an unescaped newline ends the row (an escaped one is data).

const BACKSLASH = 0x5c
const LF = 0x0a
const CR = 0x0d
const TAB = 0x09

export class TextCopyEncoder extends DelimitedCopyEncoder {
  readonly format = 'text' as const

  protected writeNull(w: Writer): void {
    w.u8(BACKSLASH)
    w.u8(0x4e) // N
  }

  /** Writes a value, then escapes it in place if it holds a byte text COPY reads specially (all are ASCII, so never inside a multibyte character). */
  protected field(w: Writer, s: string): void {
    const n = w.str(s)
    const d = this.delimiter
    let buf = w.buf
    const end = w.pos
    let p = end - n
    for (; p < end; p++) {
      const c = buf[p]!
      if (c === BACKSLASH || c === LF || c === CR || c === d) break
    }
    if (p === end) return
    const tail = buf.slice(p, end)
    w.truncate(w.length - tail.length)
    w.ensure(tail.length * 2)
    buf = w.buf
    let q = w.pos
    for (let k = 0; k < tail.length; k++) {
      const c = tail[k]!
      if (c === BACKSLASH || c === d) {
        buf[q++] = BACKSLASH
        buf[q++] = c === TAB ? 0x74 /* t */ : c
      } else if (c === LF) {
        buf[q++] = BACKSLASH
        buf[q++] = 0x6e // n
      } else if (c === CR) {
        buf[q++] = BACKSLASH
        buf[q++] = 0x72 // r
      } else buf[q++] = c
    }
    w.pos = q
  }
}

/** The byte a one-letter escape stands for, or -1 when the letter stands for itself. */
function escapeByte(c: number): number {
  switch (c) {
    case 0x62: // b
      return 0x08
    case 0x66: // f
      return 0x0c
    case 0x6e: // n
      return LF
    case 0x72: // r
      return CR
    case 0x74: // t
      return TAB
    case 0x76: // v
      return 0x0b
    default:
      return -1
  }
}

function hexValue(c: number | undefined): number {
  if (c === undefined) return -1
  if (c >= 0x30 && c <= 0x39) return c - 0x30
  const l = c | 0x20
  return l >= 0x61 && l <= 0x66 ? l - 0x61 + 10 : -1
}

function isOctal(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x37
}

export class TextCopyDecoder extends DelimitedCopyDecoder {
  readonly format = 'text' as const
  /** Where to resume looking for the end of a row carried over, relative to its start. */
  private scanFrom = 0
  /** Set by the end-of-data marker \. on a line of its own. */
  private ended = false

  constructor(columns: readonly CopyColumn[], view: TypeView, options: ResolvedCopyOptions, rowMode: 'array' | 'object' = 'object') {
    super(columns, view, options, rowMode)
  }

  protected override beforeRow(): void {
    if (this.ended) throw new ProtocolError('malformed COPY text data: data after the end-of-data marker \\.')
  }

  protected rowEnd(buf: Uint8Array, p: number, end: number): number {
    let from = p + this.scanFrom
    for (;;) {
      const lf = buf.indexOf(LF, from)
      if (lf < 0 || lf >= end) {
        this.scanFrom = end - p
        return -1
      }
      // Escaped when preceded by an odd run of backslashes.
      let b = lf
      while (b > p && buf[b - 1] === BACKSLASH) b--
      if (((lf - b) & 1) === 0) {
        this.scanFrom = 0
        return lf
      }
      from = lf + 1
    }
  }

  /** The end-of-data marker \. is no row. */
  protected override row(buf: Uint8Array, s: number, e: number, out: unknown[]): void {
    if (e - s === 2 && buf[s] === BACKSLASH && buf[s + 1] === 0x2e /* . */) {
      this.ended = true
      return
    }
    super.row(buf, s, e, out)
  }

  protected fields(buf: Uint8Array, s: number, e: number, row: Record<string | number, unknown>, n: number): number {
    const rows = this.rows
    const decoders = this.decoders
    const d = this.delimiter
    const count = this.count
    let i = 0
    let p = s
    try {
      for (;;) {
        let q = p
        let escaped = false
        while (q < e) {
          const c = buf[q]!
          if (c === d) break
          if (c === BACKSLASH) {
            escaped = true
            q += 2
          } else if (c === CR) throw new ProtocolError(`malformed COPY text data: row ${n} holds an unescaped carriage return`)
          else q++
        }
        if (q > e) throw new ProtocolError(`malformed COPY text data: row ${n} ends with a lone backslash`)
        if (i === count) throw this.fieldCount(n, i + 1)
        let v: unknown
        if (!escaped) v = decoders[i]!(buf, p, q)
        else if (q - p === 2 && buf[p + 1] === 0x4e /* N */) v = null
        else {
          const len = this.unescape(buf, p, q, n)
          v = decoders[i]!(this.scratch, 0, len)
        }
        rows.put(row, i, v)
        i++
        if (q >= e) break
        p = q + 1
      }
    } catch (err) {
      throw this.fieldError(err, n, i)
    }
    return i
  }

  /** Undoes the escapes of the field [p, q) into the scratch buffer; returns its length. */
  private unescape(buf: Uint8Array, p: number, q: number, rowNumber: number): number {
    const out = (this.scratch = grown(this.scratch, q - p))
    let o = 0
    let numeric = false
    while (p < q) {
      const c = buf[p++]!
      if (c !== BACKSLASH) {
        out[o++] = c
        continue
      }
      const x = buf[p++]!
      if (isOctal(x)) {
        let v = x - 0x30
        if (p < q && isOctal(buf[p])) v = (v << 3) + (buf[p++]! - 0x30)
        if (p < q && isOctal(buf[p])) v = (v << 3) + (buf[p++]! - 0x30)
        out[o++] = v & 0xff
        numeric = true
      } else if (x === 0x78 /* x */ && p < q && hexValue(buf[p]) >= 0) {
        let v = hexValue(buf[p++])
        if (p < q && hexValue(buf[p]) >= 0) v = (v << 4) + hexValue(buf[p++])
        out[o++] = v
        numeric = true
      } else {
        const b = escapeByte(x)
        out[o++] = b < 0 ? x : b
      }
    }
    if (numeric) {
      // Numeric escapes can make any byte: the result must still be text the server could have sent.
      for (let k = 0; k < o; k++) {
        if (out[k] === 0) throw new ProtocolError(`malformed COPY text data: row ${rowNumber} holds an escaped NUL byte`)
      }
      try {
        utf8ReadStrict(out, 0, o)
      } catch {
        throw new ProtocolError(`malformed COPY text data: row ${rowNumber} holds escapes that are not valid UTF-8`)
      }
    }
    return o
  }

  protected checkEnd(): void {
    if (this.carried > 0) throw new ProtocolError(`COPY text data ended in the middle of row ${this.rowCount + 1} (no final newline)`)
  }
}
