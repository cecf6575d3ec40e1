import type { Field } from '../../index.js'
import { noBackend, type Backend } from './backend.js'
import type { ColumnInfo, Transform } from './transform.js'

// pipegres's results as postgres.js gives them: the rows array itself, with
// count, command, columns, statement and state on it. Without a transform
// the rows pipegres built are kept as they are; with one, each row is built
// here from pipegres's array rows, keys and values transformed.

export interface Column extends ColumnInfo {
  parser: undefined
}

/** A statement as postgres.js describes it. */
export interface Statement {
  name: string
  string: string
  types: number[]
  columns: Column[]
}

/** What postgres.js puts on a result array. */
export interface ResultMeta {
  count: number | null
  command: string
  columns: Column[]
  statement: Statement
  /** The backend of the connection that ran the query: its pid and secret (cancel key). */
  state: Backend
}

export type Result<T = Record<string, unknown>> = T[] & ResultMeta

// A statement's field list is shared by its executions: the columns made of it are kept with it, per transform.
const columnCache = new WeakMap<readonly Field[], WeakMap<Transform, Column[]>>()

// The last fields and transform asked for, and their columns: a pipelined run of one statement asks for the same each time.
let lastFields: readonly Field[] | undefined
let lastTransform: Transform | undefined
let lastColumns: Column[] = []

export function columnsOf(fields: readonly Field[], transform: Transform): Column[] {
  if (fields === lastFields && transform === lastTransform) return lastColumns
  const cols = cachedColumns(fields, transform)
  lastFields = fields
  lastTransform = transform
  lastColumns = cols
  return cols
}

function cachedColumns(fields: readonly Field[], transform: Transform): Column[] {
  let byTransform = columnCache.get(fields)
  if (byTransform === undefined) {
    byTransform = new WeakMap()
    columnCache.set(fields, byTransform)
  }
  let cols = byTransform.get(transform)
  if (cols === undefined) {
    const from = transform.column.from
    cols = fields.map((f) => ({ name: from ? from(f.name) : f.name, type: f.typeOid, table: f.tableOid, number: f.columnNumber, parser: undefined }))
    byTransform.set(transform, cols)
  }
  return cols
}

/**
 * postgres.js's result of rows as pipegres collected them (objects, or arrays
 * when `arrays` or a transform asked for them): the array itself, made the result.
 */
export function resultOf(rows: unknown[], fields: readonly Field[], command: string, count: number | null, transform: Transform, arrays: boolean, statement: Statement, state: Backend = noBackend): Result<unknown> {
  const columns = fields.length === 0 ? noColumns : columnsOf(fields, transform)
  if (transform.results) rows = transformRows(rows as unknown[][], columns, transform, arrays)
  const r = rows as Result<unknown>
  r.count = count
  r.command = command
  r.columns = columns
  if (statement.columns.length === 0 && columns.length > 0) statement.columns = columns
  r.statement = statement
  r.state = state
  return r
}

const noColumns: Column[] = []

function transformRows(rows: unknown[][], columns: Column[], t: Transform, arrays: boolean): unknown[] {
  const value = t.value.from
  const row = t.row.from
  const n = columns.length
  for (let i = 0; i < rows.length; i++) {
    const src = rows[i]!
    if (value !== undefined) for (let c = 0; c < n; c++) src[c] = value(src[c], columns[c]!)
    let out: unknown = src
    if (!arrays) {
      const o: Record<string, unknown> = {}
      for (let c = 0; c < n; c++) o[columns[c]!.name] = src[c]
      out = o
    }
    rows[i] = (row !== undefined ? row(out as Record<string, unknown>) : out) as unknown[]
  }
  return rows
}

/** An empty result with a statement's metadata (what forEach and cursors resolve with). */
export function emptyResult(statement: Statement, command = '', count: number | null = null, state: Backend = noBackend): Result<unknown> {
  const r = [] as unknown as Result<unknown>
  r.count = count
  r.command = command
  r.columns = statement.columns
  r.statement = statement
  r.state = state
  return r
}
