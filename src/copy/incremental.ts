import type { Writer } from '../protocol/writer.js'
import type { CopyFormat } from './options.js'
import type { CopyRow } from './rows.js'

/**
 * Writes rows as COPY data into a Writer, where the caller frames them in
 * CopyData messages. The bytes of a row are written whole or not at all: a row
 * that throws (CopyRowError, naming its row and column) leaves the writer as it
 * was before that row, with every earlier row complete.
 */
export interface CopyEncoder {
  readonly format: CopyFormat
  /** Rows written so far. */
  readonly rowCount: number
  /** What comes before the first row: the binary signature and header; nothing in text and CSV. */
  writeHeader(w: Writer): void
  /** One row: an array with a value per column, or an object keyed by column name (missing or undefined is NULL). */
  encodeRow(w: Writer, row: CopyRow): void
  /** What comes after the last row: the binary trailer; nothing in text and CSV. */
  writeTrailer(w: Writer): void
}

/**
 * Turns the payloads of COPY TO STDOUT's CopyData messages into rows. Any
 * split of the data into payloads gives the same rows; rows that arrive whole
 * are decoded in place. After an error the decoder refuses further data.
 */
export interface CopyDecoder {
  readonly format: CopyFormat
  /** Rows decoded so far. */
  readonly rowCount: number
  /**
   * Decodes the rows the bytes [start, end) complete and appends them to `out`;
   * returns how many. Keeps an incomplete row's bytes (copied) for the next
   * payload. Throws ProtocolError on malformed data (never a wrong row) and
   * CodecError, naming the row and column, when a value cannot be decoded.
   */
  push(buf: Uint8Array, start: number, end: number, out: unknown[]): number
  /** At CopyDone: throws ProtocolError if the data stopped inside a row (or, in binary, before the trailer). */
  finish(): void
}

const EMPTY = new Uint8Array(0)
/** A carry buffer grown past this for one huge row is dropped once emptied. */
const KEEP_CARRY = 1 << 20

/**
 * The split handling every format shares: a payload is decoded in place as
 * far as it holds whole rows; only the incomplete tail is copied, and the next
 * payload is appended to it, so a copy happens only where a row was split.
 */
export abstract class IncrementalDecoder implements CopyDecoder {
  abstract readonly format: CopyFormat
  rowCount = 0
  private carry: Uint8Array = EMPTY
  /** Bytes held in `carry`: the start of a row (or header) whose end has not arrived. */
  protected carried = 0
  private failure: unknown = undefined

  /** Decodes every complete unit from p on; returns where the first incomplete one starts (end when none). */
  protected abstract consume(buf: Uint8Array, p: number, end: number, out: unknown[]): number
  /** Throws if the data may not end here. */
  protected abstract checkEnd(): void

  push(buf: Uint8Array, start: number, end: number, out: unknown[]): number {
    if (this.failure !== undefined) throw this.failure
    const before = out.length
    try {
      if (this.carried === 0) {
        const p = this.consume(buf, start, end, out)
        if (p < end) this.keep(buf, p, end)
      } else {
        this.append(buf, start, end)
        const p = this.consume(this.carry, 0, this.carried, out)
        if (p > 0) {
          this.carry.copyWithin(0, p, this.carried)
          this.carried -= p
        }
        if (this.carried === 0 && this.carry.length > KEEP_CARRY) this.carry = EMPTY
      }
    } catch (err) {
      this.failure = err
      throw err
    }
    return out.length - before
  }

  finish(): void {
    if (this.failure !== undefined) throw this.failure
    try {
      this.checkEnd()
    } catch (err) {
      this.failure = err
      throw err
    }
  }

  private keep(buf: Uint8Array, start: number, end: number): void {
    const n = end - start
    if (this.carry.length < n) this.carry = new Uint8Array(Math.max(n * 2, 256))
    this.carry.set(buf.subarray(start, end), 0)
    this.carried = n
  }

  private append(buf: Uint8Array, start: number, end: number): void {
    const n = end - start
    const need = this.carried + n
    if (this.carry.length < need) {
      const next = new Uint8Array(Math.max(need, this.carry.length * 2))
      next.set(this.carry.subarray(0, this.carried), 0)
      this.carry = next
    }
    this.carry.set(buf.subarray(start, end), this.carried)
    this.carried = need
  }
}
