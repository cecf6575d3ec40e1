import { ProtocolError } from '../errors.js'
import type { Decoder } from '../types/codec.js'
import type { TypeView } from '../types/view.js'
import { IncrementalDecoder } from './incremental.js'
import type { ResolvedCopyOptions } from './options.js'
import { RowBuilder, typeLabel, type CopyColumn } from './rows.js'

// What the text and CSV decoders share: rows are lines, fields are split by a
// delimiter and decoded from their text form, and escaped or quoted fields are
// undone into a scratch buffer first.

/** Grows a scratch buffer to hold at least n bytes. */
export function grown(buf: Uint8Array, n: number): Uint8Array {
  return buf.length >= n ? buf : new Uint8Array(Math.max(n, buf.length * 2))
}

export abstract class DelimitedCopyDecoder extends IncrementalDecoder {
  abstract override readonly format: 'text' | 'csv'
  protected readonly count: number
  protected readonly decoders: readonly Decoder[]
  protected readonly names: readonly string[]
  protected readonly typeNames: readonly string[]
  protected readonly rows: RowBuilder
  protected readonly delimiter: number
  protected scratch: Uint8Array = new Uint8Array(256)

  constructor(columns: readonly CopyColumn[], view: TypeView, options: ResolvedCopyOptions, rowMode: 'array' | 'object') {
    super()
    this.rows = new RowBuilder(columns, rowMode)
    this.count = columns.length
    this.names = columns.map((c) => c.name)
    this.typeNames = columns.map((c) => typeLabel(view, c.typeOid))
    this.decoders = columns.map((c) => view.codec(c.typeOid).decodeText)
    this.delimiter = options.delimiter
  }

  protected consume(buf: Uint8Array, p: number, end: number, out: unknown[]): number {
    while (p < end) {
      this.beforeRow()
      const lf = this.rowEnd(buf, p, end)
      if (lf < 0) return p
      this.row(buf, p, lf, out)
      p = lf + 1
    }
    return p
  }

  /** Called before each row is looked for (text refuses data after its end marker). */
  protected beforeRow(): void {}
  /** The newline ending the row that starts at p, or -1 when it has not arrived. */
  protected abstract rowEnd(buf: Uint8Array, p: number, end: number): number
  /** Decodes the row [s, e) (without its newline) and appends it to out. */
  protected abstract row(buf: Uint8Array, s: number, e: number, out: unknown[]): void

  protected fieldCount(row: number, fields: number): ProtocolError {
    const count = this.count
    return new ProtocolError(
      `malformed COPY ${this.format} data: row ${row} has ${fields === count + 1 ? 'more than ' + count : fields} field${fields === 1 ? '' : 's'} where ${count} column${count === 1 ? ' was' : 's were'} expected`,
    )
  }
}
