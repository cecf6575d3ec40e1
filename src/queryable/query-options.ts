import type { CopyFormatOptions } from '../copy/options.js'
import type { CopyRow } from '../copy/rows.js'
import type { Request, SentTrace } from '../connection/request.js'
import type { Abortable } from '../query/abort.js'
import { ArgumentError } from '../errors.js'
import { Lsn } from '../types/lsn.js'
import type { QuerySettings, ResultLimits } from '../query/exchange.js'
import type { QueryRowMode, RowMode } from '../query/result.js'
import type { TraceBase } from '../trace/tracing.js'
import type { TypeCatalog } from '../types/catalog.js'
import { typeOptionFault, type TypeOptions } from '../types/codec.js'
import type { TypeView } from '../types/view.js'

// The options of every call that runs a query, and the checks on the ones
// that are shared by clients, pools and transactions.

/**
 * The per-query options that become a query's settings (QuerySettings in
 * query/exchange.ts): query(), stream(), cursor() and each statement of a
 * batch take them. A new one is declared here, resolved in settingsOf() below,
 * and read by the request that uses it; every call that takes these options
 * knows it from `settingOptionNames`.
 */
export interface QuerySettingOptions {
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
  /**
   * Rows the result may have: one more, and the query is cancelled on the
   * server and rejects with a ResultLimitError (nothing is truncated silently).
   */
  maxRows?: number
  /** Bytes of row data (DataRow messages as received) the result may have; past them, as for maxRows. */
  maxBytes?: number
  /**
   * query() only (elsewhere it changes nothing): a read identical to one of
   * this client's or pool's still in flight (same text, parameters, types,
   * row mode and options) is not sent; it gets a result of its own from that
   * execution's reply. See the README's "Coalescing identical reads".
   */
  coalesce?: boolean
}

/**
 * @internal A query option (query, simple query, describe, cursor): an object
 * that is given the query's request (to abort it without an AbortSignal) and
 * that the connection which takes the query fills in (SentTrace), for
 * pipegres/postgres's cancel() and result.state. A symbol, so that option
 * checks never see it.
 */
export const sentTo: unique symbol = Symbol('pipegres.sentTo')
/** @internal The method of a queryable that runs a query into a CollectInto (see Queryable[collectInto]). */
export const collectInto: unique symbol = Symbol('pipegres.collectInto')

/** @internal What a `sentTo` object learns of its query. */
export interface QuerySink extends SentTrace {
  request?: Abortable | undefined
  /** While queries are traced: the trace, which the connection fills in instead. */
  via?: SentTrace | null | undefined
}

/**
 * @internal Links a request about to be handed to a connection with its
 * `sentTo` object: the connection fills that object in, or, when the request
 * is traced, the trace's context, which the object then reads through `via`.
 */
export function linkSentTo(sink: QuerySink, req: Request): void {
  sink.request = req as unknown as Abortable
  if (req.sentTrace == null) req.sentTrace = sink
  else if (req.sentTrace !== sink) sink.via = req.sentTrace
}

/** Per-query options. */
export interface QueryOptions extends QuerySettingOptions {
  /** @internal */
  [sentTo]?: QuerySink
  /** Aborts the query: dropped if not sent yet, cancelled on the server if running. */
  signal?: AbortSignal
  /** Milliseconds after which the query is cancelled and rejects with a TimeoutError. */
  timeout?: number
  /** A pool on several hosts sends it to a standby (see Pool). A client or transaction runs it where it is. */
  readOnly?: boolean
  /**
   * With readOnly: only a standby that has replayed this WAL position (from
   * `pool.writeLsn()`) may serve it; until one has, the primary does.
   */
  after?: string | Lsn
}

/** The per-query options a Client or a Pool also takes, as the default of all its queries. */
export interface QueryDefaultOptions {
  /** Default row shape for this client's queries. */
  rowMode?: RowMode
  /** How int8, numeric, timestamps and dates come back (see TypeOptions). */
  types?: TypeOptions
  /** Default timeout of every query, in milliseconds (cancelled on the server when it runs out). */
  queryTimeout?: number
  /** Default maxRows of every query (see QueryOptions.maxRows); a query's own wins. */
  maxRows?: number
  /** Default maxBytes of every query (see QueryOptions.maxBytes); a query's own wins. */
  maxBytes?: number
  /** Default of QueryOptions.coalesce: identical reads in flight share one execution; a query's own wins. */
  coalesce?: boolean
}

// Records rather than lists: the compiler insists that each names every
// option of its interface, so an option added to one is known at once to
// every call that takes it, and to the key check of each.
const settingOptionNames: Record<keyof QuerySettingOptions, true> = { rowMode: true, prepare: true, types: true, maxRows: true, maxBytes: true, coalesce: true }
const queryOnlyOptionNames: Record<Exclude<keyof QueryOptions, keyof QuerySettingOptions | typeof sentTo>, true> = { signal: true, timeout: true, readOnly: true, after: true }
const queryDefaultOptionNames: Record<keyof QueryDefaultOptions, true> = { rowMode: true, types: true, queryTimeout: true, maxRows: true, maxBytes: true, coalesce: true }
const settingKeys = Object.keys(settingOptionNames) as (keyof QuerySettingOptions)[]
/** The options of a Client or Pool that are defaults of its queries. */
export const queryDefaultKeys = Object.keys(queryDefaultOptionNames) as (keyof QueryDefaultOptions)[]

/** Where a pool sends a request: the routing options of every call. */
export interface RouteOptions {
  readOnly?: boolean
  after?: string | Lsn
}

/** Options of describe(). */
export interface DescribeOptions extends RouteOptions {
  /** @internal */
  [sentTo]?: QuerySink
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
  /** @internal */
  [sentTo]?: QuerySink
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
  /** The client's or pool's coalesce option: every query's, unless it sets its own. */
  readonly coalesce?: boolean
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

/** A query's prepare option: true or false; 'always' says what a connection is behind, so it is a client's or pool's setting. */
function checkPrepare(prepare: unknown): boolean {
  if (typeof prepare === 'boolean') return prepare
  const where = prepare === 'always' ? " ('always' is a setting of the client or pool, in its options or connection string)" : ''
  throw new ArgumentError(`prepare must be true or false, not ${JSON.stringify(prepare)}${where}`)
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
export const batchQueryOptionKeys = keys(...settingKeys)
export const queryOptionKeys = keys(...settingKeys, ...Object.keys(queryOnlyOptionNames))
export const streamOptionKeys = keys(...queryOptionKeys, 'highWaterMark')
export const cursorOptionKeys = keys(...queryOptionKeys, 'batchSize')
export const reserveOptionKeys = keys('readOnly')
export const describeOptionKeys = keys('signal', 'timeout', 'readOnly', 'after')
export const rawOptionKeys = keys('format', 'prepare', 'signal', 'timeout', 'readOnly', 'after')
export const simpleQueryOptionKeys = keys('rowMode', 'signal', 'timeout', 'readOnly', 'after')
export const copyOptionKeys = keys('signal', 'timeout')
export const batchOptionKeys = keys('signal', 'timeout', 'readOnly', 'after')
const copyFormatKeys = ['format', 'delimiter', 'quote', 'escape']
export const copyFromRowsOptionKeys = keys(...copyOptionKeys, ...copyFormatKeys, 'columns')
export const copyToRowsOptionKeys = keys(...copyOptionKeys, ...copyFormatKeys, 'rowMode', 'types', 'highWaterMark')

export function checkTimeout(t: unknown): number | undefined {
  if (t === undefined) return undefined
  if (typeof t !== 'number' || !(t > 0) || t > 2147483647) throw new ArgumentError(`timeout must be a positive number of milliseconds, not ${JSON.stringify(t)}`)
  return t
}

export function checkSignal(s: unknown): AbortSignal | undefined {
  if (s === undefined) return undefined
  if (!(s instanceof AbortSignal)) throw new ArgumentError('signal must be an AbortSignal')
  return s
}

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

/**
 * A query's settings: the queryable's defaults themselves when the options
 * change none of them (no allocation for the common case), else one object
 * with the options over the defaults. Every option is checked here, unknown
 * ones included, before a request exists.
 */
export function settingsOf(d: QueryDefaults, options: QueryOptions | undefined, known: ReadonlySet<string>, what: string, columns = false): QuerySettings {
  if (options === undefined) return d
  checkOptionKeys(options, known, what)
  checkSignal(options.signal)
  checkTimeout(options.timeout)
  checkRoute(options)
  if (!settingKeys.some((k) => options[k] !== undefined)) return d
  return {
    rowMode: options.rowMode === undefined ? d.rowMode : columns ? checkQueryRowMode(options.rowMode) : checkRowMode(options.rowMode),
    prepare: options.prepare !== undefined ? checkPrepare(options.prepare) && d.prepare : d.prepare,
    view: options.types !== undefined ? d.catalog.view(checkTypeOptions(options.types, 'types')) : d.view,
    limits: resolveLimits(options.maxRows, options.maxBytes, d.limits, ''),
    coalesce: options.coalesce === undefined ? d.coalesce : checkCoalesce(options.coalesce),
  }
}

function checkCoalesce(v: unknown): boolean {
  if (typeof v !== 'boolean') throw new ArgumentError(`coalesce must be true or false, not ${JSON.stringify(v)}`)
  return v
}

/** What a Client or Pool resolves once from its options and configuration, for every query it runs. */
export interface QueryDefaultsBase {
  readonly prepare: boolean
  readonly catalog: TypeCatalog
  readonly trace: TraceBase
  readonly refuseSessionState: boolean
}

/** The defaults of a Client's or Pool's queries: its options (checked here) over what its configuration says. */
export function queryDefaultsOf(opts: QueryDefaultOptions, base: QueryDefaultsBase): QueryDefaults {
  const rowMode = opts.rowMode !== undefined ? checkRowMode(opts.rowMode) : 'object'
  if (opts.queryTimeout !== undefined && (typeof opts.queryTimeout !== 'number' || !(opts.queryTimeout > 0))) {
    throw new ArgumentError('queryTimeout must be a positive number of milliseconds')
  }
  const limits = resolveLimits(opts.maxRows, opts.maxBytes, undefined, '')
  const coalesce = opts.coalesce === undefined ? false : checkCoalesce(opts.coalesce)
  return { ...base, rowMode, queryTimeout: opts.queryTimeout, view: base.catalog.view(), limits, coalesce }
}
