import { ProtocolError } from '../errors.js'
import type { Decoder } from './codec.js'
import type { ColumnInfo } from './row-plan.js'

/** The values of one column of a result read with rowMode 'columns'. */
export type ColumnValues = Int16Array | Int32Array | Float32Array | Float64Array | BigInt64Array | Uint8Array | unknown[]

/** A columnar result: one entry per column name (a later column of the same name wins). */
export type Columns = Record<string, ColumnValues>

/**
 * Which rows of a typed-array column are NULL: bit `i % 8` of byte `i >> 3`
 * is set for row i (whose slot in the typed array holds 0, or NaN for a float
 * or date column). null for a column without NULLs, and for plain-array
 * columns, whose NULLs are null values.
 */
export type NullBitmaps = Record<string, Uint8Array | null>

// How a column is stored: a kind per fixed-width type read straight from its
// binary form, or Plain (its decoder's values in an array).
const enum Kind {
  Plain,
  Int2,
  Int4,
  Int8,
  Float4,
  Float8,
  Bool,
  /** Days since 2000-01-01, stored as epoch milliseconds. */
  Date,
  /** Microseconds since 2000-01-01, stored as epoch milliseconds. */
  Timestamp,
}

const kindByOid = new Map<number, Kind>([
  [21, Kind.Int2],
  [23, Kind.Int4],
  [20, Kind.Int8],
  [700, Kind.Float4],
  [701, Kind.Float8],
  [16, Kind.Bool],
  [1082, Kind.Date],
  [1114, Kind.Timestamp],
  [1184, Kind.Timestamp],
])

/** Bytes of a binary value of each kind. */
const widths = [0, 2, 4, 8, 4, 8, 1, 4, 8]

const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1
const DAY_MS = 86_400_000
/** 2000-01-01, PostgreSQL's epoch, in Unix epoch milliseconds. */
const PG_EPOCH_MS = 946_684_800_000

function typedArray(kind: Kind, size: number): Exclude<ColumnValues, unknown[]> {
  switch (kind) {
    case Kind.Int2:
      return new Int16Array(size)
    case Kind.Int4:
      return new Int32Array(size)
    case Kind.Int8:
      return new BigInt64Array(size)
    case Kind.Float4:
      return new Float32Array(size)
    case Kind.Bool:
      return new Uint8Array(size)
    default:
      return new Float64Array(size)
  }
}

class Column {
  values: ColumnValues
  /** The typed array's bytes, for values copied in byte by byte. */
  bytes: Uint8Array | null
  nulls: Uint8Array | null = null

  constructor(
    readonly name: string,
    readonly kind: Kind,
    readonly decode: Decoder,
    capacity: number,
  ) {
    if (kind === Kind.Plain) {
      this.values = []
      this.bytes = null
    } else {
      const a = typedArray(kind, capacity)
      this.values = a
      this.bytes = new Uint8Array(a.buffer)
    }
  }

  grow(capacity: number): void {
    if (this.kind === Kind.Plain) return
    const a = typedArray(this.kind, capacity)
    a.set(this.values as never)
    this.values = a
    this.bytes = new Uint8Array(a.buffer)
    if (this.nulls !== null) {
      const n = new Uint8Array((capacity + 7) >> 3)
      n.set(this.nulls)
      this.nulls = n
    }
  }

  setNull(row: number, capacity: number): void {
    if (this.kind === Kind.Plain) {
      ;(this.values as unknown[]).push(null)
      return
    }
    this.nulls ??= new Uint8Array((capacity + 7) >> 3)
    this.nulls[row >> 3]! |= 1 << (row & 7)
    if (this.kind === Kind.Float4 || this.kind === Kind.Float8 || this.kind === Kind.Date || this.kind === Kind.Timestamp) {
      ;(this.values as Float32Array | Float64Array)[row] = Number.NaN
    }
  }
}

/**
 * Builds a result column by column straight from DataRow bytes, without a
 * row object: binary int2/int4/int8/float4/float8/bool/date/timestamp(tz)
 * columns into typed arrays (int8 as BigInt64Array, dates and timestamps as
 * epoch milliseconds in a Float64Array, ±infinity as ±Infinity), the others
 * (and these in text format) into arrays of their decoded values.
 */
export class ColumnBuilder {
  private readonly columns: Column[]
  private rows = 0
  private capacity = 64

  constructor(fields: readonly ColumnInfo[], formats: ArrayLike<number>, decoders: readonly Decoder[]) {
    this.columns = fields.map((f, i) => {
      const format = formats.length === 0 ? 0 : formats.length === 1 ? formats[0]! : formats[i]!
      return new Column(f.name, format === 1 ? (kindByOid.get(f.typeOid) ?? Kind.Plain) : Kind.Plain, decoders[i]!, this.capacity)
    })
  }

  /** Adds one DataRow, its body [start, end) in buf. */
  push(buf: Uint8Array, start: number, end: number): void {
    const columns = this.columns
    if (end - start < 2 || ((buf[start]! << 8) | buf[start + 1]!) !== columns.length) {
      throw new ProtocolError(`server sent a DataRow whose column count does not match the RowDescription's ${columns.length}`)
    }
    const row = this.rows
    if (row === this.capacity) {
      this.capacity *= 2
      for (const c of columns) c.grow(this.capacity)
    }
    let p = start + 2
    for (let i = 0; i < columns.length; i++) {
      if (p + 4 > end) throw truncated()
      const len = (buf[p]! << 24) | (buf[p + 1]! << 16) | (buf[p + 2]! << 8) | buf[p + 3]!
      p += 4
      const c = columns[i]!
      if (len === -1) {
        c.setNull(row, this.capacity)
        continue
      }
      if (len < 0 || p + len > end) throw truncated()
      if (c.kind === Kind.Plain) (c.values as unknown[]).push(c.decode(buf, p, p + len))
      else {
        if (len !== widths[c.kind]) throw new ProtocolError(`server sent a ${len}-byte binary value in column "${c.name}" of a fixed-width type`)
        store(c, row, buf, p)
      }
      p += len
    }
    if (p !== end) throw truncated()
    this.rows = row + 1
  }

  /** The columns and the NULL bitmaps of their typed arrays, trimmed to the rows read. */
  finish(): { columns: Columns; nulls: NullBitmaps } {
    const columns: Columns = {}
    const nulls: NullBitmaps = {}
    const n = this.rows
    for (const c of this.columns) {
      const values = c.kind === Kind.Plain ? c.values : (c.values as Exclude<ColumnValues, unknown[]>).subarray(0, n)
      const bitmap = c.nulls === null ? null : c.nulls.subarray(0, (n + 7) >> 3)
      // A column named __proto__ must be a key, not a change of prototype.
      Object.defineProperty(columns, c.name, { value: values, enumerable: true, writable: true, configurable: true })
      Object.defineProperty(nulls, c.name, { value: bitmap, enumerable: true, writable: true, configurable: true })
    }
    return { columns, nulls }
  }
}

/** Stores the big-endian binary value at buf[p] in row `row` of a typed-array column. */
function store(c: Column, row: number, buf: Uint8Array, p: number): void {
  switch (c.kind) {
    case Kind.Int4:
      ;(c.values as Int32Array)[row] = (buf[p]! << 24) | (buf[p + 1]! << 16) | (buf[p + 2]! << 8) | buf[p + 3]!
      return
    case Kind.Int2:
      ;(c.values as Int16Array)[row] = (buf[p]! << 8) | buf[p + 1]!
      return
    case Kind.Bool:
      ;(c.values as Uint8Array)[row] = buf[p]! === 0 ? 0 : 1
      return
    case Kind.Int8:
    case Kind.Float8:
    case Kind.Float4:
      // The bytes as they are, in the machine's order: no BigInt or DataView per value.
      copyWord(c.bytes!, row * widths[c.kind]!, buf, p, widths[c.kind]!)
      return
    case Kind.Date: {
      const days = (buf[p]! << 24) | (buf[p + 1]! << 16) | (buf[p + 2]! << 8) | buf[p + 3]!
      ;(c.values as Float64Array)[row] = days === 0x7fffffff ? Infinity : days === -0x80000000 ? -Infinity : PG_EPOCH_MS + days * DAY_MS
      return
    }
    case Kind.Timestamp: {
      const hi = (buf[p]! << 24) | (buf[p + 1]! << 16) | (buf[p + 2]! << 8) | buf[p + 3]!
      const lo = ((buf[p + 4]! << 24) | (buf[p + 5]! << 16) | (buf[p + 6]! << 8) | buf[p + 7]!) >>> 0
      let ms: number
      if (hi === 0x7fffffff && lo === 0xffffffff) ms = Infinity
      else if (hi === -0x80000000 && lo === 0) ms = -Infinity
      else ms = PG_EPOCH_MS + (hi * 4294967296 + lo) / 1000
      ;(c.values as Float64Array)[row] = ms
      return
    }
  }
}

function copyWord(to: Uint8Array, at: number, from: Uint8Array, p: number, width: number): void {
  if (littleEndian) for (let k = 0; k < width; k++) to[at + k] = from[p + width - 1 - k]!
  else for (let k = 0; k < width; k++) to[at + k] = from[p + k]!
}

function truncated(): ProtocolError {
  return new ProtocolError('malformed DataRow message from server: a column length does not match the message length')
}
