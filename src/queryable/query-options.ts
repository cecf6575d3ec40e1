import type { CopyFormatOptions, CopyRow } from '../copy/format.js'
import { ArgumentError } from '../errors.js'
import { Lsn } from '../replication/lsn.js'
import type { ResultLimits } from '../query/exchange.js'
import type { QueryRowMode, RowMode } from '../query/result.js'
import type { TraceBase } from './tracing.js'
import type { TypeCatalog } from '../types/catalog.js'
import { typeOptionFault, type TypeOptions } from '../types/codec.js'
import type { TypeView } from '../types/view.js'

// The options of every call that runs a query, and the checks on the ones
// that are shared by clients, pools and transactions.

/** Per-query options. */
export interface QueryOptions {
  /**
   * 'object' (default): rows keyed by column name; 'array': rows as arrays in
   * column order; 'columns' (query() only): no rows, but result.columns, one
   * array per column, typed arrays for fixed-width numeric, bool and date/time types.
   */
  rowMode?: QueryRowMode
  /** false: use an unnamed statement for this query instead of the prepared-statement cache. */
  prepare?: boolean
  /** Type options for this query only, e.g. { int8: 'number' }. */
  types?: TypeOptions
  /** Aborts the query: dropped if not sent yet, cancelled on the server if running. */
  signal?: AbortSignal
  /** Milliseconds after which the query is cancelled and rejects with a TimeoutError. */
  timeout?: number
  /**
   * Rows the result may have: one more, and the query is cancelled on the
   * server and rejects with a ResultLimitError (nothing is truncated silently).
   */
  maxRows?: number
  /** Bytes of row data (DataRow messages as received) the result may have; past them, as for maxRows. */
  maxBytes?: number
  /** A pool on several hosts sends it to a standby (see Pool). A client or transaction runs it where it is. */
  readOnly?: boolean
  /**
   * With readOnly: only a standby that has replayed this WAL position (from
   * `pool.writeLsn()`) may serve it; until one has, the primary does.
   */
  after?: string | Lsn
}

/** Where a pool sends a request: the routing options of every call. */
export interface RouteOptions {
  readOnly?: boolean
  after?: string | Lsn
}

/** Options of describe(). */
export interface DescribeOptions extends RouteOptions {
  signal?: AbortSignal
  timeout?: number
}

/** Options of stream(). */
export interface StreamOptions extends RowQueryOptions {
  /** Rows kept unread before the connection stops reading from the server (default 1000). */
  highWaterMark?: number
}

/** The options of stream() and cursor(), whose results come as rows. */
export interface RowQueryOptions extends Omit<QueryOptions, 'rowMode'> {
  rowMode?: RowMode
}

/** Options of cursor(). */
export interface CursorOptions extends RowQueryOptions {
  /** Rows per batch (default 1000). */
  batchSize?: number
}

/** Options of queryRaw(). */
export interface RawOptions extends RouteOptions {
  /**
   * 'binary' (default): columns of the types pipegres/wire decodes in binary
   * come in binary, the others in text. 'text': every column in text.
   */
  format?: 'binary' | 'text'
  prepare?: boolean
  signal?: AbortSignal
  timeout?: number
}

/** What queryRaw() resolves with. */
export interface RawResult {
  command: string
  rowCount: number | null
  /** Bytes written to the destination. */
  bytes: number
}

/** Options of copyFrom() and copyTo(). The client's queryTimeout does not apply to a COPY. */
export interface CopyOptions {
  /** Aborts the COPY: copyFrom() sends CopyFail (the server rolls it back), copyTo() cancels it. */
  signal?: AbortSignal
  /** Milliseconds after which the COPY is aborted with a TimeoutError. */
  timeout?: number
}

/** Options of copyFromRows(): the data format (binary by default) and the target columns. */
export interface CopyFromRowsOptions extends CopyFormatOptions, CopyOptions {
  /**
   * The columns the rows give values for, in the order of an array row.
   * Default: the keys of the first row if it is an object, else every column
   * of the table that is not generated, in table order.
   */
  columns?: readonly string[]
}

/** Options of copyToRows(): the data format (binary by default) and how rows are built. */
export interface CopyToRowsOptions extends CopyFormatOptions, CopyOptions {
  /** 'object' or 'array' (a client's default of 'lazy' gives objects: COPY rows are decoded as they arrive). */
  rowMode?: 'object' | 'array'
  types?: TypeOptions
  /** Rows kept unread before the connection stops reading from the server (default 1000). */
  highWaterMark?: number
}

/** What copyFromRows() takes: arrays (a value per column) or objects (keyed by column name). */
export type CopyRowSource = Iterable<CopyRow> | AsyncIterable<CopyRow>

export interface SimpleQueryOptions extends RouteOptions {
  rowMode?: RowMode
  signal?: AbortSignal
  timeout?: number
}

/** The defaults a queryable takes its options from. */
export interface QueryDefaults {
  readonly rowMode: RowMode
  readonly prepare: boolean
  readonly queryTimeout: number | undefined
  readonly catalog: TypeCatalog
  readonly view: TypeView
  /** What traces of this queryable's queries say of the connection (see tracing.ts). */
  readonly trace?: TraceBase
  /** maxRows and maxBytes for every query, unless it sets its own. */
  readonly limits?: ResultLimits | undefined
  /** Behind a transaction-mode pooler: statements that would leave state on a server session are refused (see pooler-mode.ts). */
  readonly refuseSessionState?: boolean
}

/** maxRows and maxBytes as given (a client's, a pool's or a query's own) over `base`; undefined when neither bounds anything. */
export function resolveLimits(maxRows: unknown, maxBytes: unknown, base: ResultLimits | undefined, where: string): ResultLimits | undefined {
  if (maxRows === undefined && maxBytes === undefined) return base
  return {
    maxRows: maxRows === undefined ? (base?.maxRows ?? Infinity) : checkLimit(maxRows, 'maxRows', where),
    maxBytes: maxBytes === undefined ? (base?.maxBytes ?? Infinity) : checkLimit(maxBytes, 'maxBytes', where),
  }
}

function checkLimit(v: unknown, name: string, where: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) throw new ArgumentError(`${where}${name} must be a positive whole number, not ${JSON.stringify(v)}`)
  return v
}

export function checkTypeOptions(o: TypeOptions | undefined, where: string): TypeOptions {
  if (o === undefined) return {}
  if (typeof o !== 'object' || o === null) throw new ArgumentError(`${where} must be an object`)
  for (const [k, v] of Object.entries(o)) {
    const fault = typeOptionFault(k, v)
    if (fault !== null) throw new ArgumentError(`${where}.${k} ${fault}`)
  }
  return o
}

export function checkRowMode(rowMode: unknown): RowMode {
  if (rowMode !== 'object' && rowMode !== 'array' && rowMode !== 'lazy') {
    const where = rowMode === 'columns' ? " ('columns' is for query() only)" : ''
    throw new ArgumentError(`rowMode must be 'object', 'array' or 'lazy', not ${JSON.stringify(rowMode)}${where}`)
  }
  return rowMode
}

/** copyToRows()'s row mode: COPY data is not DataRows, so there is nothing to read lazily. */
export function copyRowMode(rowMode: unknown, fallback: RowMode): 'object' | 'array' {
  if (rowMode === undefined) return fallback === 'array' ? 'array' : 'object'
  if (rowMode === 'lazy') throw new ArgumentError("copyToRows: rowMode must be 'object' or 'array': 'lazy' is for query results, COPY rows are decoded as they arrive")
  const mode = checkRowMode(rowMode)
  return mode === 'array' ? 'array' : 'object'
}

/** query()'s row mode: 'columns' too. */
export function checkQueryRowMode(rowMode: unknown): QueryRowMode {
  return rowMode === 'columns' ? rowMode : checkRowMode(rowMode)
}

// The options each call takes. A misspelt option (`{ timout: 5 }`) would
// otherwise be ignored without a word, and the query run without it.
const keys = (...names: string[]): ReadonlySet<string> => new Set(names)
export const queryOptionKeys = keys('rowMode', 'prepare', 'types', 'signal', 'timeout', 'maxRows', 'maxBytes', 'readOnly', 'after')
export const streamOptionKeys = keys(...queryOptionKeys, 'highWaterMark')
export const cursorOptionKeys = keys(...queryOptionKeys, 'batchSize')
export const reserveOptionKeys = keys('readOnly')
export const describeOptionKeys = keys('signal', 'timeout', 'readOnly', 'after')
export const rawOptionKeys = keys('format', 'prepare', 'signal', 'timeout', 'readOnly', 'after')
export const simpleQueryOptionKeys = keys('rowMode', 'signal', 'timeout', 'readOnly', 'after')
export const copyOptionKeys = keys('signal', 'timeout')
export const batchOptionKeys = keys('signal', 'timeout', 'readOnly', 'after')
export const batchQueryOptionKeys = keys('rowMode', 'prepare', 'types', 'maxRows', 'maxBytes')
const copyFormatKeys = ['format', 'delimiter', 'quote', 'escape']
export const copyFromRowsOptionKeys = keys(...copyOptionKeys, ...copyFormatKeys, 'columns')
export const copyToRowsOptionKeys = keys(...copyOptionKeys, ...copyFormatKeys, 'rowMode', 'types', 'highWaterMark')

/** Refuses options `what` does not take, naming them (undefined values are let through, as absent). */
export function checkOptionKeys(options: object, known: ReadonlySet<string>, what: string): void {
  if (typeof options !== 'object' || options === null) throw new ArgumentError(`${what} options must be an object`)
  for (const k in options) {
    if (!known.has(k) && Object.hasOwn(options, k) && (options as Record<string, unknown>)[k] !== undefined) {
      throw new ArgumentError(`unknown ${what} option "${k}" (${what} takes ${[...known].join(', ')})`)
    }
  }
}

/** Checks readOnly and after (a pool routes by them; elsewhere they change nothing, but a wrong one is still an error). */
export function checkRoute(options: RouteOptions): void {
  if (options.readOnly !== undefined && typeof options.readOnly !== 'boolean') throw new ArgumentError('readOnly must be true or false')
  if (options.after !== undefined) Lsn.from(options.after)
}
