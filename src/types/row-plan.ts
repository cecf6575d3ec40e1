import { ProtocolError } from '../errors.js'
import type { Decoder } from './codec.js'
import { lazyRowClass } from './lazy-row.js'
import { rowReader, type ReaderErrors, type RowReader } from './row-reader.js'

/** The part of a RowDescription field the decoders need. */
export interface ColumnInfo {
  name: string
  typeOid: number
}

/**
 * How to turn a DataRow of one statement into a JS row: one decoder per column,
 * chosen once when the statement is described, then a tight loop per row.
 * DataRow structure is checked as it is read: a column count that differs from
 * the description, or a length that runs past the message, is a protocol
 * violation and never a half-read row.
 */
export class RowPlan {
  readonly count: number
  readonly names: readonly string[]
  readonly decoders: readonly Decoder[]
  /** False when a column is named __proto__, which plain assignment would turn into a prototype change. */
  private readonly plainKeys: boolean

  /** Builds a row object from its decoded values in one step, or null where code cannot be generated. */
  private readonly make: RowMaker | null
  /** The decoded values of the row being built: one array per plan, reused for every row. */
  private readonly scratch: unknown[]
  /** The class of this plan's rows in rowMode 'lazy', made on first use. */
  private lazyClass: (new (bytes: Uint8Array, at: number) => Record<string, unknown>) | null = null
  /** The generated reader of kept() rows, made on first use; null where it cannot be generated. */
  private reader: RowReader | null | undefined = undefined

  constructor(columns: readonly ColumnInfo[], decoders: readonly Decoder[]) {
    this.count = columns.length
    this.names = columns.map((c) => c.name)
    this.decoders = decoders
    this.plainKeys = !this.names.includes('__proto__')
    this.scratch = new Array<unknown>(this.count).fill(null)
    this.make = this.plainKeys ? rowMaker(this.names) : null
  }

  private columnCount(buf: Uint8Array, start: number, end: number): void {
    if (end - start < 2) throw malformed()
    const n = (buf[start]! << 8) | buf[start + 1]!
    if (n !== this.count) throw wrongCount(n, this.count)
  }

  object(buf: Uint8Array, start: number, end: number): Record<string, unknown> {
    const make = this.make
    if (make === null) return this.objectByKeys(buf, start, end)
    const values = this.decode(this.scratch, buf, start, end)
    const row = new make(values)
    // The plan is cached with its statement: it must not keep the last row's values alive.
    for (let i = 0; i < values.length; i++) values[i] = null
    return row
  }

  /**
   * An object row that the caller keeps (query()'s collected result), from a
   * reader generated for this plan's columns (see row-reader.ts). The same
   * values, checks and errors as object().
   */
  kept(buf: Uint8Array, start: number, end: number): Record<string, unknown> {
    let reader = this.reader
    if (reader === undefined) reader = this.reader = this.plainKeys ? rowReader(this.names, this.decoders, readerErrors) : null
    return reader === null ? this.object(buf, start, end) : reader(buf, start, end)
  }

  /** Rows built key by key: where a column is named __proto__, or code generation is not allowed. */
  private objectByKeys(buf: Uint8Array, start: number, end: number): Record<string, unknown> {
    const values = this.decode(new Array<unknown>(this.count), buf, start, end)
    const row: Record<string, unknown> = {}
    const names = this.names
    for (let i = 0; i < this.count; i++) {
      if (this.plainKeys) row[names[i]!] = values[i]
      else Object.defineProperty(row, names[i]!, { value: values[i], enumerable: true, writable: true, configurable: true })
    }
    return row
  }

  /** A row of rowMode 'lazy' (see lazy-row.ts): the DataRow's structure is checked now, its values are decoded when read. */
  lazy(buf: Uint8Array, start: number, end: number): Record<string, unknown> {
    this.columnCount(buf, start, end)
    let p = start + 2
    for (let i = 0; i < this.count; i++) {
      if (p + 4 > end) throw truncated()
      const len = (buf[p]! << 24) | (buf[p + 1]! << 16) | (buf[p + 2]! << 8) | buf[p + 3]!
      p += 4
      if (len >= 0) p += len
      else if (len !== -1) throw truncated()
    }
    if (p !== end) throw truncated()
    return new (this.lazyClass ??= lazyRowClass(this))(buf, start)
  }

  /** A row in the given mode: the one call site per request type keeps the mode test out of each of them. */
  row(mode: string, buf: Uint8Array, start: number, end: number): unknown {
    return mode === 'object' ? this.object(buf, start, end) : mode === 'array' ? this.array(buf, start, end) : this.lazy(buf, start, end)
  }

  /** A row that a collected result keeps, in the given mode: object rows from kept(). */
  keptRow(mode: string, buf: Uint8Array, start: number, end: number): unknown {
    return mode === 'object' ? this.kept(buf, start, end) : this.row(mode, buf, start, end)
  }

  array(buf: Uint8Array, start: number, end: number): unknown[] {
    return this.decode(new Array<unknown>(this.count), buf, start, end)
  }

  /** Decodes every column of a DataRow into `values` (NULL as null) and returns it. */
  private decode(values: unknown[], buf: Uint8Array, start: number, end: number): unknown[] {
    this.columnCount(buf, start, end)
    const decoders = this.decoders
    let p = start + 2
    for (let i = 0; i < this.count; i++) {
      if (p + 4 > end) throw truncated()
      const len = (buf[p]! << 24) | (buf[p + 1]! << 16) | (buf[p + 2]! << 8) | buf[p + 3]!
      p += 4
      if (len >= 0) {
        if (p + len > end) throw truncated()
        values[i] = decoders[i]!(buf, p, p + len)
        p += len
      } else if (len === -1) values[i] = null
      else throw truncated()
    }
    if (p !== end) throw truncated()
    return values
  }
}

type RowMaker = new (values: readonly unknown[]) => Record<string, unknown>

/**
 * A constructor that assigns every column in order, so that V8 knows a row's
 * final shape up front: rows built key by key from {} go through a megamorphic
 * keyed store per column and, past four columns, outgrow their in-object
 * slots into a separate property array. Names are embedded as JSON string
 * literals, so no column name can be read as code. Null where the runtime
 * forbids code generation (a content security policy, or
 * --disallow-code-generation-from-strings).
 */
function rowMaker(names: readonly string[]): RowMaker | null {
  // Unprepared queries get a plan each: the constructors are shared by column names. The count
  // leads the key, or no columns and one column named '' would share the key ''.
  const key = `${names.length}\0${names.join('\0')}`
  const known = makers.get(key)
  if (known !== undefined) return known
  const body = names.map((name, i) => `this[${JSON.stringify(name)}] = v[${i}]`).join('\n')
  let make: { prototype: object }
  try {
    make = new Function('v', body) as { prototype: object }
  } catch {
    return null
  }
  // Rows stay plain objects: Object.prototype, constructor Object, deep-equal to literals.
  make.prototype = Object.prototype
  if (makers.size >= MAX_MAKERS) makers.clear()
  makers.set(key, make as unknown as RowMaker)
  return make as unknown as RowMaker
}

/** Row constructors by column names; bounded, as an application may make up column names without end. */
const makers = new Map<string, RowMaker>()
const MAX_MAKERS = 512

function malformed(): ProtocolError {
  return new ProtocolError('malformed DataRow message from server')
}

function wrongCount(n: number, count: number): ProtocolError {
  return new ProtocolError(`server sent a DataRow with ${n} columns where the RowDescription has ${count}`)
}

function truncated(): ProtocolError {
  return new ProtocolError('malformed DataRow message from server: a column length does not match the message length')
}

const readerErrors: ReaderErrors = { malformed, truncated, count: wrongCount }
