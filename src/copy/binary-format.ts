import { ArgumentError, ProtocolError } from '../errors.js'
import type { Writer } from '../protocol/writer.js'
import type { TypeCatalog } from '../types/catalog.js'
import type { Decoder } from '../types/codec.js'
import type { TypeView } from '../types/view.js'
import { BinaryValueWriter, copyCodecs } from './binary-values.js'
import { IncrementalDecoder, type CopyEncoder } from './incremental.js'
import { decodeError, RowBuilder, RowReader, typeLabel, valueError, type CopyColumn, type CopyRow } from './rows.js'

// Binary COPY: an 11-byte signature, an int32 of flags and an int32 header
// extension length (then that many bytes); each tuple an int16 field count
// and, per field, an int32 length (-1 for NULL) and the value's binary form,
// which is the layout of a DataRow body; an int16 -1 as the trailer.

const SIGNATURE = new Uint8Array([0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00]) // PGCOPY\n\377\r\n\0
const HEADER_SIZE = 19
/** Flag bit 16: an OID field per tuple, which servers stopped sending in PostgreSQL 12. */
const FLAG_OIDS = 0x10000
/** Flag bits 0-15 mark incompatible format changes: a reader must stop at any it does not know. */
const CRITICAL_FLAGS = 0xffff
/** A tuple's field count is an int16. */
const MAX_FIELDS = 32767

export class BinaryCopyEncoder implements CopyEncoder {
  readonly format = 'binary' as const
  rowCount = 0
  private readonly reader: RowReader
  private readonly writers: readonly BinaryValueWriter[]

  /** `catalog` supplies the codecs; the type options do not matter for writing. */
  constructor(columns: readonly CopyColumn[], catalog: TypeCatalog) {
    if (columns.length > MAX_FIELDS) throw new ArgumentError(`binary COPY holds at most ${MAX_FIELDS} columns; got ${columns.length}`)
    this.reader = new RowReader(columns)
    const codecs = copyCodecs(catalog)
    this.writers = columns.map((c) => new BinaryValueWriter(codecs, catalog, c.typeOid))
  }

  writeHeader(w: Writer): void {
    w.bytes(SIGNATURE)
    w.i32(0)
    w.i32(0)
  }

  encodeRow(w: Writer, row: CopyRow): void {
    const n = this.rowCount + 1
    const reader = this.reader
    const isArray = reader.isArray(row, n)
    const writers = this.writers
    const count = writers.length
    const mark = w.length
    let i = 0
    try {
      w.i16(count)
      for (; i < count; i++) {
        const v = isArray ? (row as readonly unknown[])[i] : reader.objectValue(row as Readonly<Record<string, unknown>>, i)
        if (v === null || v === undefined) {
          w.i32(-1)
          continue
        }
        const at = w.reserve32()
        writers[i]!.write(w, v)
        w.patch32(at, w.length - at - 4)
      }
    } catch (err) {
      w.truncate(mark)
      throw valueError(err, n, reader.names[i]!, writers[i]!.typeName)
    }
    this.rowCount = n
  }

  writeTrailer(w: Writer): void {
    w.i16(-1)
  }
}

const enum State {
  Header,
  Rows,
  Done,
}

export class BinaryCopyDecoder extends IncrementalDecoder {
  readonly format = 'binary' as const
  private state = State.Header
  private readonly count: number
  private readonly decoders: readonly Decoder[]
  private readonly names: readonly string[]
  private readonly typeNames: readonly string[]
  private readonly rows: RowBuilder

  constructor(columns: readonly CopyColumn[], view: TypeView, rowMode: 'array' | 'object' = 'object') {
    super()
    this.rows = new RowBuilder(columns, rowMode)
    this.count = columns.length
    this.names = columns.map((c) => c.name)
    this.typeNames = columns.map((c) => typeLabel(view, c.typeOid))
    this.decoders = columns.map((c, i) => {
      const d = view.codec(c.typeOid).decodeBinary
      if (d === undefined) {
        throw new ArgumentError(`column ${JSON.stringify(c.name)} is of type ${this.typeNames[i]}, which pipegres cannot read in binary; use format 'text' or 'csv'`)
      }
      return d
    })
  }

  protected consume(buf: Uint8Array, p: number, end: number, out: unknown[]): number {
    for (;;) {
      if (this.state === State.Rows) {
        if (end - p < 2) return p
        const n = ((buf[p]! << 24) >> 16) | buf[p + 1]!
        if (n === -1) {
          this.state = State.Done
          p += 2
          continue
        }
        if (n !== this.count) {
          throw new ProtocolError(
            `malformed binary COPY data: row ${this.rowCount + 1} has ${n} field${n === 1 ? '' : 's'} where ${this.count} column${this.count === 1 ? ' was' : 's were'} expected`,
          )
        }
        const rowEnd = this.tupleEnd(buf, p + 2, end)
        if (rowEnd < 0) return p
        out.push(this.row(buf, p + 2))
        p = rowEnd
      } else if (this.state === State.Header) {
        if (end - p < HEADER_SIZE) return p
        for (let i = 0; i < SIGNATURE.length; i++) {
          if (buf[p + i] !== SIGNATURE[i]) throw new ProtocolError('malformed binary COPY data: the signature is missing')
        }
        const flags = readInt32(buf, p + 11)
        if ((flags & CRITICAL_FLAGS) !== 0) throw new ProtocolError(`binary COPY data has unknown critical flags ${(flags & CRITICAL_FLAGS).toString(16)}`)
        if ((flags & FLAG_OIDS) !== 0) throw new ProtocolError('binary COPY data carries row OIDs, which pipegres does not read')
        const extension = readInt32(buf, p + 15)
        if (extension < 0) throw new ProtocolError('malformed binary COPY data: negative header extension length')
        if (end - p < HEADER_SIZE + extension) return p
        p += HEADER_SIZE + extension
        this.state = State.Rows
      } else {
        if (p < end) throw new ProtocolError('malformed binary COPY data: data after the trailer')
        return p
      }
    }
  }

  /** Where the tuple whose fields start at p ends, or -1 when it has not all arrived. Throws on a negative length. */
  private tupleEnd(buf: Uint8Array, p: number, end: number): number {
    for (let i = 0; i < this.count; i++) {
      if (end - p < 4) return -1
      const len = readInt32(buf, p)
      p += 4
      if (len >= 0) {
        if (end - p < len) return -1
        p += len
      } else if (len !== -1) {
        throw new ProtocolError(`malformed binary COPY data: row ${this.rowCount + 1}, column ${JSON.stringify(this.names[i])} has length ${len}`)
      }
    }
    return p
  }

  /** Decodes a tuple already known to be complete and well formed. */
  private row(buf: Uint8Array, p: number): unknown {
    const rows = this.rows
    const row = rows.start()
    const decoders = this.decoders
    const n = this.rowCount + 1
    let i = 0
    try {
      for (; i < decoders.length; i++) {
        const len = readInt32(buf, p)
        p += 4
        if (len < 0) rows.put(row, i, null)
        else {
          rows.put(row, i, decoders[i]!(buf, p, p + len))
          p += len
        }
      }
    } catch (err) {
      throw decodeError(err, n, this.names[i]!, this.typeNames[i]!)
    }
    this.rowCount = n
    return row
  }

  protected checkEnd(): void {
    if (this.state === State.Done) return
    if (this.state === State.Header) throw new ProtocolError('binary COPY data ended before its header was complete')
    if (this.carried > 0) throw new ProtocolError(`binary COPY data ended in the middle of row ${this.rowCount + 1}`)
    throw new ProtocolError('binary COPY data ended without its trailer')
  }
}

function readInt32(b: Uint8Array, at: number): number {
  return (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!
}
