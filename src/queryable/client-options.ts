import type { ConnectOptions } from '../config/index.js'
import { ArgumentError, type PgNotice } from '../errors.js'
import type { RowMode } from '../query/extended-query.js'
import { checkRowMode, resolveLimits } from './query-options.js'
import type { ResultLimits } from '../query/exchange.js'
import type { TracingOptions } from './tracing.js'
import type { TypeCatalog } from '../types/catalog.js'
import type { TypeOptions } from '../types/codec.js'
import type { CustomType } from '../types/custom.js'

// The settings a Client (and a Pool, for each of its connections) takes beyond
// the connection settings, checked once, the same way for both.

/** Settings of a Client: every connection setting, plus how results are delivered. */
export interface ClientOptions extends ConnectOptions, TracingOptions {
  /** Called with every NoticeResponse (RAISE NOTICE, warnings). Same as listening to 'notice'. */
  onNotice?: (notice: PgNotice) => void
  /** Default row shape for this client's queries. */
  rowMode?: RowMode
  /** How int8, numeric, timestamps and dates come back (see TypeOptions). */
  types?: TypeOptions
  /** Codecs for types pipegres does not know, or to change how a type is decoded. */
  customTypes?: CustomType[]
  /** Default timeout of every query, in milliseconds (cancelled on the server when it runs out). */
  queryTimeout?: number
  /**
   * Reconnection after a lost connection: the first attempt is immediate, then
   * each failed attempt doubles the wait up to this many milliseconds (default 5000).
   */
  reconnectMaxDelay?: number
  /**
   * Most queries the client holds at once (waiting to be written, or written
   * and not yet answered; see pendingQueries): one issued beyond that is
   * refused at once with an ArgumentError instead of queued. Default: no limit.
   */
  maxPending?: number
  /**
   * Every column comes back as the text PostgreSQL prints (NULL as null),
   * whatever its type, and no type is looked up in pg_type; `types` and
   * `customTypes` are then not used. Parameters go as given: strings,
   * numbers, bigints and booleans as text, Uint8Arrays as binary. For layers
   * that convert values themselves, as pipegres/pg does with pg's parsers.
   */
  textResults?: boolean
  /** Default maxRows of every query (see QueryOptions.maxRows); a query's own wins. */
  maxRows?: number
  /** Default maxBytes of every query (see QueryOptions.maxBytes); a query's own wins. */
  maxBytes?: number
}

export const clientKeys = ['onNotice', 'rowMode', 'types', 'customTypes', 'queryTimeout', 'reconnectMaxDelay', 'maxPending', 'textResults', 'traceParameters', 'maxRows', 'maxBytes'] as const

export interface CheckedClientOptions {
  readonly rowMode: RowMode
  readonly reconnectMaxDelay: number
  readonly maxPending: number
  readonly customTypes: readonly CustomType[]
  readonly limits: ResultLimits | undefined
}

/** Checks the settings in the order a Client always has; an ArgumentError names the first one wrong. */
export function checkClientOptions(opts: ClientOptions): CheckedClientOptions {
  const rowMode = opts.rowMode !== undefined ? checkRowMode(opts.rowMode) : 'object'
  if (opts.onNotice !== undefined && typeof opts.onNotice !== 'function') throw new ArgumentError('onNotice must be a function')
  if (opts.queryTimeout !== undefined && (typeof opts.queryTimeout !== 'number' || !(opts.queryTimeout > 0))) {
    throw new ArgumentError('queryTimeout must be a positive number of milliseconds')
  }
  if (opts.reconnectMaxDelay !== undefined && (typeof opts.reconnectMaxDelay !== 'number' || !(opts.reconnectMaxDelay >= 0))) {
    throw new ArgumentError('reconnectMaxDelay must be a number of milliseconds')
  }
  if (opts.maxPending !== undefined && (typeof opts.maxPending !== 'number' || !Number.isInteger(opts.maxPending) || opts.maxPending < 1)) {
    throw new ArgumentError('maxPending must be a positive integer')
  }
  if (opts.customTypes !== undefined && !Array.isArray(opts.customTypes)) throw new ArgumentError('customTypes must be an array')
  const limits = resolveLimits(opts.maxRows, opts.maxBytes, undefined, '')
  return { rowMode, reconnectMaxDelay: opts.reconnectMaxDelay ?? 5000, maxPending: opts.maxPending ?? Infinity, customTypes: opts.customTypes ?? [], limits }
}

/** registerType() of a Client or a Pool: the description is checked before the catalog takes it. */
export function registerCustomType(catalog: TypeCatalog, custom: CustomType): void {
  if (typeof custom !== 'object' || custom === null) throw new ArgumentError('registerType needs a type description')
  if (custom.name === undefined && custom.oid === undefined) throw new ArgumentError('registerType needs a name or an oid')
  for (const fn of ['parse', 'serialize', 'decodeBinary', 'encodeBinary'] as const) {
    if (custom[fn] !== undefined && typeof custom[fn] !== 'function') throw new ArgumentError(`registerType: ${fn} must be a function`)
  }
  catalog.register(custom)
}

/** A duration option in milliseconds: `dflt` when absent. */
export function nonNegative(v: number | undefined, dflt: number, name: string): number {
  if (v === undefined) return dflt
  if (typeof v !== 'number' || !(v >= 0)) throw new ArgumentError(`${name} must be a non-negative number of milliseconds`)
  return v
}
