import { ArgumentError, PipegresError } from '../errors.js'
import { CodecError } from '../types/codec.js'
import type { TypeView } from '../types/view.js'

// What the COPY encoders and decoders share about rows: how a row given by
// the application yields the value of each column, how a decoded row is
// built, and the error that names the row and column a value belongs to.

/** A row to copy in: values by column position, or an object keyed by column name. */
export type CopyRow = readonly unknown[] | Readonly<Record<string, unknown>>

/** A column of COPY data: its exact name and its type. */
export interface CopyColumn {
  readonly name: string
  readonly typeOid: number
}

/**
 * A row that cannot be written as COPY data. `row` is one more than the
 * number of rows the encoder had written (the row's position in the input, as
 * long as no earlier row was skipped); `column` is the column's name,
 * undefined when the row as a whole is wrong (not an array or object, wrong length).
 */
export class CopyRowError extends PipegresError {
  readonly row: number
  readonly column: string | undefined
  constructor(row: number, column: string | undefined, message: string, options?: { cause?: unknown }) {
    super('PG_PARAMETER', message, options)
    this.row = row
    this.column = column
  }
  override get name(): string {
    return 'CopyRowError'
  }
}

/**
 * Reads the values of rows for a fixed list of columns. An array row must
 * have one value per column; an object row gives each column the property of
 * its name, and a missing property (or undefined) is NULL, as undefined is for
 * query parameters. Properties that are not columns are ignored.
 */
export class RowReader {
  readonly count: number
  readonly names: readonly string[]
  /** Columns whose name every object inherits (toString, constructor, __proto__...): read only as own properties. */
  private readonly inherited: readonly boolean[]
  private readonly anyInherited: boolean

  constructor(columns: readonly CopyColumn[]) {
    this.count = columns.length
    this.names = columns.map((c) => c.name)
    this.inherited = this.names.map((n) => n in Object.prototype)
    this.anyInherited = this.inherited.includes(true)
  }

  /** Checks the shape of a row; returns true for an array row, false for an object row. Throws CopyRowError. */
  isArray(row: unknown, rowNumber: number): boolean {
    if (Array.isArray(row)) {
      if (row.length !== this.count) {
        throw new CopyRowError(rowNumber, undefined, `COPY row ${rowNumber} has ${row.length} value${row.length === 1 ? '' : 's'} where ${this.count} column${this.count === 1 ? ' is' : 's are'} copied`)
      }
      return true
    }
    if (typeof row !== 'object' || row === null || ArrayBuffer.isView(row)) {
      throw new CopyRowError(rowNumber, undefined, `COPY row ${rowNumber} must be an array of values or an object keyed by column name; got ${row === null ? 'null' : typeof row}`)
    }
    return false
  }

  /** The value of column i of an object row. */
  objectValue(row: Readonly<Record<string, unknown>>, i: number): unknown {
    const name = this.names[i]!
    if (this.anyInherited && this.inherited[i] && !Object.hasOwn(row, name)) return undefined
    return row[name]
  }
}

/** A type's name for messages: the catalog's, but 'text[]' rather than '_text' for arrays. */
export function typeLabel(view: TypeView, oid: number): string {
  const name = view.typeName(oid)
  const codecName = view.codec(oid).name
  return name.startsWith('_') && codecName.endsWith('[]') ? codecName : name
}

/** Turns a failure to encode a value into the error naming where it happened; other errors pass through. */
export function valueError(err: unknown, rowNumber: number, column: string, typeName: string): unknown {
  if (err instanceof CopyRowError) return err
  if (err instanceof CodecError || err instanceof ArgumentError) {
    return new CopyRowError(rowNumber, column, `COPY row ${rowNumber}, column ${JSON.stringify(column)} (${typeName}): ${err.message}`, { cause: err })
  }
  return err
}

/** The error for a value the server sent that its column's codec cannot read. */
export function decodeError(err: unknown, rowNumber: number, column: string, typeName: string): unknown {
  if (err instanceof CodecError) {
    return new CodecError(`COPY row ${rowNumber}, column ${JSON.stringify(column)} (${typeName}): ${err.message}`, { cause: err })
  }
  return err
}

/**
 * Builds decoded rows as arrays or as objects keyed by column name (a later
 * column of the same name wins, as in query results).
 */
export class RowBuilder {
  readonly count: number
  readonly objects: boolean
  private readonly names: readonly string[]
  /** False when a column is named __proto__, which plain assignment would turn into a prototype change. */
  private readonly plainKeys: boolean

  constructor(columns: readonly CopyColumn[], mode: 'array' | 'object') {
    if (mode !== 'array' && mode !== 'object') throw new ArgumentError(`COPY rowMode must be 'array' or 'object'; got ${String(mode)}`)
    this.objects = mode === 'object'
    this.count = columns.length
    this.names = columns.map((c) => c.name)
    this.plainKeys = !this.names.includes('__proto__')
  }

  start(): Record<string | number, unknown> {
    return this.objects ? {} : (new Array(this.count) as unknown as Record<number, unknown>)
  }

  put(row: Record<string | number, unknown>, i: number, v: unknown): void {
    if (!this.objects) row[i] = v
    else if (this.plainKeys) row[this.names[i]!] = v
    else Object.defineProperty(row, this.names[i]!, { value: v, enumerable: true, writable: true, configurable: true })
  }
}
