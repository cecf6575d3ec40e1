import type { ConnectOptions } from '../config/index.js'
import type { ConnectionConfig } from '../config/types.js'
import { ArgumentError, type PgNotice } from '../errors.js'
import { checkTypeOptions, queryDefaultKeys, queryDefaultsOf, type QueryDefaultOptions, type QueryDefaults } from './query-options.js'
import { traceBase, type TracingOptions } from '../trace/tracing.js'
import { TypeCatalog } from '../types/catalog.js'
import { defaultTypeOptions } from '../types/codec.js'
import type { CustomType } from '../types/custom.js'

// The settings a Client (and a Pool, for each of its connections) takes beyond
// the connection settings, checked once, the same way for both.

/** Settings of a Client: every connection setting, the defaults of its queries, plus how results are delivered. */
export interface ClientOptions extends ConnectOptions, TracingOptions, QueryDefaultOptions {
  /** Called with every NoticeResponse (RAISE NOTICE, warnings). Same as listening to 'notice'. */
  onNotice?: (notice: PgNotice) => void
  /** Codecs for types pipegres does not know, or to change how a type is decoded. */
  customTypes?: CustomType[]
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
}

export const clientKeys = [...queryDefaultKeys, 'onNotice', 'customTypes', 'reconnectMaxDelay', 'maxPending', 'textResults', 'traceParameters'] as const

export interface CheckedClientOptions {
  readonly reconnectMaxDelay: number
  readonly maxPending: number
  /** The type catalog of every connection of the client or pool, with its custom types registered. */
  readonly catalog: TypeCatalog
  readonly defaults: QueryDefaults
}

/** Checks the settings in the order a Client always has; an ArgumentError names the first one wrong. */
export function checkClientOptions(opts: ClientOptions, config: ConnectionConfig): CheckedClientOptions {
  const catalog = new TypeCatalog({ ...defaultTypeOptions, ...checkTypeOptions(opts.types, 'types') }, opts.textResults === true)
  const defaults = queryDefaultsOf(opts, {
    prepare: config.prepare !== false,
    catalog,
    trace: traceBase(config, opts.traceParameters === true),
    refuseSessionState: config.pooler === 'transaction',
  })
  if (opts.onNotice !== undefined && typeof opts.onNotice !== 'function') throw new ArgumentError('onNotice must be a function')
  if (opts.reconnectMaxDelay !== undefined && (typeof opts.reconnectMaxDelay !== 'number' || !(opts.reconnectMaxDelay >= 0))) {
    throw new ArgumentError('reconnectMaxDelay must be a number of milliseconds')
  }
  if (opts.maxPending !== undefined && (typeof opts.maxPending !== 'number' || !Number.isInteger(opts.maxPending) || opts.maxPending < 1)) {
    throw new ArgumentError('maxPending must be a positive integer')
  }
  if (opts.customTypes !== undefined && !Array.isArray(opts.customTypes)) throw new ArgumentError('customTypes must be an array')
  for (const t of opts.customTypes ?? []) registerCustomType(catalog, t)
  return { reconnectMaxDelay: opts.reconnectMaxDelay ?? 5000, maxPending: opts.maxPending ?? Infinity, catalog, defaults }
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
