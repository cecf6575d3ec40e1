import { ProtocolError } from '../errors.js'
import type { Writer } from '../protocol/writer.js'
import type { TypeCatalog } from '../types/catalog.js'
import type { Codec, Decoder } from '../types/codec.js'
import type { TypeView } from '../types/view.js'
import { IncrementalDecoder, type CopyEncoder } from './incremental.js'
import type { ResolvedCopyOptions } from './options.js'
import { decodeError, RowBuilder, RowReader, typeLabel, valueError, type CopyColumn, type CopyRow } from './rows.js'

// What the text and CSV formats share: rows are lines, fields are split by a
// delimiter and hold the values' text forms; the formats differ in how a value
// is escaped or quoted, and how NULL is written.

const LF = 0x0a

/** Grows a scratch buffer to hold at least n bytes. */
export function grown(buf: Uint8Array, n: number): Uint8Array {
  return buf.length >= n ? buf : new Uint8Array(Math.max(n, buf.length * 2))
}

export abstract class DelimitedCopyEncoder implements CopyEncoder {
  abstract readonly format: 'text' | 'csv'
  rowCount = 0
  private readonly reader: RowReader
  private readonly codecs: readonly Codec[]
  private readonly typeNames: readonly string[]
  protected readonly delimiter: number

  /** `catalog` supplies the codecs (text forms do not depend on type options). */
  constructor(columns: readonly CopyColumn[], catalog: TypeCatalog, options: ResolvedCopyOptions) {
    const view = catalog.view()
    this.reader = new RowReader(columns)
    this.codecs = columns.map((c) => view.codec(c.typeOid))
    this.typeNames = columns.map((c) => typeLabel(view, c.typeOid))
    this.delimiter = options.delimiter
  }

  writeHeader(_w: Writer): void {}
  writeTrailer(_w: Writer): void {}

  encodeRow(w: Writer, row: CopyRow): void {
    const n = this.rowCount + 1
    const reader = this.reader
    const isArray = reader.isArray(row, n)
    const codecs = this.codecs
    const mark = w.length
    let i = 0
    try {
      for (; i < codecs.length; i++) {
        if (i > 0) w.u8(this.delimiter)
        const v = isArray ? (row as readonly unknown[])[i] : reader.objectValue(row as Readonly<Record<string, unknown>>, i)
        if (v === null || v === undefined) this.writeNull(w)
        else this.field(w, codecs[i]!.encodeText(v))
      }
      w.u8(LF)
    } catch (err) {
      w.truncate(mark)
      throw valueError(err, n, reader.names[i]!, this.typeNames[i]!)
    }
    this.rowCount = n
  }

  /** NULL as the format writes it. */
  protected abstract writeNull(w: Writer): void
  /** A non-null value's text form, escaped or quoted as the format needs. */
  protected abstract field(w: Writer, s: string): void
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
  protected row(buf: Uint8Array, s: number, e: number, out: unknown[]): void {
    const n = this.rowCount + 1
    const row = this.rows.start()
    const count = this.count
    // A row of no columns is an empty line; otherwise the format splits the fields.
    if (count === 0) {
      if (e !== s) throw this.fieldCount(n, 1)
    } else {
      const fields = this.fields(buf, s, e, row, n)
      if (fields !== count) throw this.fieldCount(n, fields)
    }
    this.rowCount = n
    out.push(row)
  }

  /**
   * Decodes the fields of row n, [s, e), into `row` and returns how many it
   * read; a field past the last column, or one that does not decode, is
   * thrown through fieldError.
   */
  protected abstract fields(buf: Uint8Array, s: number, e: number, row: Record<string | number, unknown>, n: number): number

  /** What field i of row n failed with, naming its column (the last one for a field past them). */
  protected fieldError(err: unknown, n: number, i: number): unknown {
    const c = Math.min(i, this.count - 1)
    return decodeError(err, n, this.names[c]!, this.typeNames[c]!)
  }

  protected fieldCount(row: number, fields: number): ProtocolError {
    const count = this.count
    return new ProtocolError(
      `malformed COPY ${this.format} data: row ${row} has ${fields === count + 1 ? 'more than ' + count : fields} field${fields === 1 ? '' : 's'} where ${count} column${count === 1 ? ' was' : 's were'} expected`,
    )
  }
}
