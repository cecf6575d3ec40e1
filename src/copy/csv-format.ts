import { ProtocolError } from '../errors.js'
import type { Writer } from '../protocol/writer.js'
import type { TypeCatalog } from '../types/catalog.js'
import type { TypeView } from '../types/view.js'
import { DelimitedCopyDecoder, DelimitedCopyEncoder, grown } from './delimited.js'
import type { ResolvedCopyOptions } from './options.js'
import type { CopyColumn } from './rows.js'

// CSV COPY as PostgreSQL reads and writes it: fields separated by the
// delimiter (',' by default), NULL as an unquoted empty field, the empty
// string as "". A value holding the delimiter, the quote, a newline or a
// carriage return is quoted, with each quote and escape character inside
// preceded by the escape character (by default the quote itself, so quotes
// double). Quotes may open and close anywhere in a field; a newline inside
// quotes is data. Backslashes mean nothing, and \. alone is quoted on output
// because older servers read it as the end of the data.

const LF = 0x0a
const CR = 0x0d

export class CsvCopyEncoder extends DelimitedCopyEncoder {
  readonly format = 'csv' as const
  private readonly quote: number
  private readonly escape: number

  constructor(columns: readonly CopyColumn[], catalog: TypeCatalog, options: ResolvedCopyOptions) {
    super(columns, catalog, options)
    this.quote = options.quote
    this.escape = options.escape
  }

  /** NULL is an unquoted empty field: nothing between the delimiters. */
  protected writeNull(_w: Writer): void {}

  /** Writes a non-null value, then quotes it in place when it needs quotes (every special byte is ASCII). */
  protected field(w: Writer, s: string): void {
    const q = this.quote
    if (s.length === 0) {
      w.u8(q)
      w.u8(q)
      return
    }
    const n = w.str(s)
    const d = this.delimiter
    let buf = w.buf
    const end = w.pos
    const start = end - n
    let p = start
    for (; p < end; p++) {
      const c = buf[p]!
      if (c === d || c === q || c === LF || c === CR) break
    }
    if (p === end && !(n === 2 && buf[start] === 0x5c && buf[start + 1] === 0x2e)) return
    const value = buf.slice(start, end)
    const e = this.escape
    w.truncate(w.length - n)
    w.ensure(n * 2 + 2)
    buf = w.buf
    let o = w.pos
    buf[o++] = q
    for (let k = 0; k < n; k++) {
      const c = value[k]!
      if (c === q || c === e) buf[o++] = e
      buf[o++] = c
    }
    buf[o++] = q
    w.pos = o
  }
}

export class CsvCopyDecoder extends DelimitedCopyDecoder {
  readonly format = 'csv' as const
  private readonly quote: number
  private readonly escape: number
  /** Where to resume looking for the end of a row carried over (relative to its start), and whether that point is inside quotes. */
  private scanFrom = 0
  private scanQuoted = false

  constructor(columns: readonly CopyColumn[], view: TypeView, options: ResolvedCopyOptions, rowMode: 'array' | 'object' = 'object') {
    super(columns, view, options, rowMode)
    this.quote = options.quote
    this.escape = options.escape
  }

  /** The newline outside quotes ending the row that starts at p, or -1 when it has not arrived. */
  protected rowEnd(buf: Uint8Array, p: number, end: number): number {
    const q = this.quote
    const e = this.escape
    let i = p + this.scanFrom
    let quoted = this.scanQuoted
    while (i < end) {
      const c = buf[i]!
      if (quoted) {
        if (c === e && e !== q) {
          // The escape makes a following quote or escape literal; undecidable until that byte arrives.
          if (i + 1 >= end) break
          const x = buf[i + 1]
          i += x === q || x === e ? 2 : 1
          continue
        }
        if (c === q) quoted = false
        i++
      } else if (c === LF) {
        this.scanFrom = 0
        this.scanQuoted = false
        return i
      } else {
        if (c === q) quoted = true
        i++
      }
    }
    this.scanFrom = i - p
    this.scanQuoted = quoted
    return -1
  }

  protected fields(buf: Uint8Array, s: number, e: number, row: Record<string | number, unknown>, n: number): number {
    const rows = this.rows
    const decoders = this.decoders
    const d = this.delimiter
    const q = this.quote
    const count = this.count
    let i = 0
    let p = s
    try {
      for (;;) {
        if (i === count) throw this.fieldCount(n, i + 1)
        let next: number
        let v: unknown
        // The common shapes decode straight from the payload: an unquoted field, or one quoted section with no escapes.
        const first = p < e ? buf[p] : -1
        if (first === q) {
          const close = this.simpleQuoted(buf, p + 1, e)
          if (close >= 0) {
            v = decoders[i]!(buf, p + 1, close)
            next = close + 1
          } else next = this.complex(buf, p, e, n)
        } else {
          let k = p
          while (k < e) {
            const c = buf[k]!
            if (c === d || c === q || c === CR) break
            k++
          }
          if (k < e && buf[k] !== d) next = this.complex(buf, p, e, n)
          else {
            v = k === p ? null : decoders[i]!(buf, p, k)
            next = k
          }
        }
        if (next < 0) {
          // complex() left the value in the scratch buffer: -2 - its length, or NULL.
          v = next === -1 ? null : decoders[i]!(this.scratch, 0, -2 - next)
          next = this.complexEnd
        }
        rows.put(row, i, v)
        i++
        if (next >= e) break
        p = next + 1
      }
    } catch (err) {
      throw this.fieldError(err, n, i)
    }
    return i
  }

  /**
   * For a field opening with a quote at p - 1: the closing quote's position
   * when the field is that one quoted section without escapes, followed by a
   * delimiter or the row end; -1 for anything else.
   */
  private simpleQuoted(buf: Uint8Array, p: number, e: number): number {
    const q = this.quote
    const x = this.escape
    for (; p < e; p++) {
      const c = buf[p]!
      if (c === q) return p + 1 === e || buf[p + 1] === this.delimiter ? p : -1
      if (c === x) return -1
    }
    return -1
  }

  /** Where complex() stopped: the delimiter or row end after the field. */
  private complexEnd = 0

  /**
   * Reads any field from p by PostgreSQL's rules into the scratch buffer.
   * Returns -1 for NULL (unquoted and empty), else -2 - the value's length;
   * sets complexEnd.
   */
  private complex(buf: Uint8Array, p: number, e: number, rowNumber: number): number {
    const out = (this.scratch = grown(this.scratch, e - p))
    const d = this.delimiter
    const q = this.quote
    const x = this.escape
    let o = 0
    let quoted = false
    let sawQuote = false
    while (p < e) {
      const c = buf[p]!
      if (!quoted) {
        if (c === d) break
        if (c === q) {
          quoted = sawQuote = true
          p++
          continue
        }
        if (c === CR) throw new ProtocolError(`malformed COPY csv data: row ${rowNumber} holds an unquoted carriage return`)
        out[o++] = c
        p++
      } else {
        if (c === x && p + 1 < e) {
          const y = buf[p + 1]!
          if (y === q || y === x) {
            out[o++] = y
            p += 2
            continue
          }
        }
        if (c === q) quoted = false
        else out[o++] = c
        p++
      }
    }
    if (quoted) throw new ProtocolError(`malformed COPY csv data: row ${rowNumber} has an unterminated quoted field`)
    this.complexEnd = p
    return !sawQuote && o === 0 ? -1 : -2 - o
  }

  protected checkEnd(): void {
    if (this.carried === 0) return
    if (this.scanQuoted) throw new ProtocolError(`COPY csv data ended inside a quoted field of row ${this.rowCount + 1}`)
    throw new ProtocolError(`COPY csv data ended in the middle of row ${this.rowCount + 1} (no final newline)`)
  }
}
