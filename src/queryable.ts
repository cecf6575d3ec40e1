import type { Request } from './connection/request.js'
import { ArgumentError } from './errors.js'
import { abortErrorOf } from './query/abort.js'
import { Cursor } from './query/cursor.js'
import { ExtendedQuery, type RowMode } from './query/extended-query.js'
import { RawPassThrough, type RawDestination } from './query/raw.js'
import type { Result, Row } from './query/result.js'
import type { RowSink } from './query/row-sink.js'
import { RowStream } from './query/stream.js'
import { binaryDecodable } from './wire/formats.js'
import { SimpleQuery } from './query/simple-query.js'
import { buildQuery } from './query/sql-template.js'
import { declaredTypes } from './query/typed.js'
import type { TypeCatalog } from './types/catalog.js'
import type { TypeOptions } from './types/codec.js'
import type { TypeView } from './types/view.js'

// What every object that runs queries shares (a client, a transaction, a
// reserved pool connection, a pool): turning user calls into requests, with the
// same argument checks and options everywhere, and handing them to a sender.

/** Per-query options. */
export interface QueryOptions {
  /** 'object' (default): rows keyed by column name; 'array': rows as arrays in column order. */
  rowMode?: RowMode
  /** false: use an unnamed statement for this query instead of the prepared-statement cache. */
  prepare?: boolean
  /** Type options for this query only, e.g. { int8: 'number' }. */
  types?: TypeOptions
  /** Aborts the query: dropped if not sent yet, cancelled on the server if running. */
  signal?: AbortSignal
  /** Milliseconds after which the query is cancelled and rejects with a TimeoutError. */
  timeout?: number
}

/** Options of stream(). */
export interface StreamOptions extends QueryOptions {
  /** Rows kept unread before the connection stops reading from the server (default 1000). */
  highWaterMark?: number
}

/** Options of cursor(). */
export interface CursorOptions extends QueryOptions {
  /** Rows per batch (default 1000). */
  batchSize?: number
}

/** Options of queryRaw(). */
export interface RawOptions {
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

export interface SimpleQueryOptions {
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
}

const typeOptionChoices: Record<keyof TypeOptions, readonly string[]> = {
  int8: ['bigint', 'number', 'string'],
  numeric: ['string', 'number'],
  timestamps: ['date', 'string'],
  dates: ['string', 'date'],
}

export function checkTypeOptions(o: TypeOptions | undefined, where: string): TypeOptions {
  if (o === undefined) return {}
  if (typeof o !== 'object' || o === null) throw new ArgumentError(`${where} must be an object`)
  for (const [k, v] of Object.entries(o)) {
    const choices = typeOptionChoices[k as keyof TypeOptions]
    if (choices === undefined) throw new ArgumentError(`${where}.${k} is not a type option (known: ${Object.keys(typeOptionChoices).join(', ')})`)
    if (v !== undefined && !choices.includes(v as string)) throw new ArgumentError(`${where}.${k} must be one of ${choices.map((c) => `'${c}'`).join(', ')}`)
  }
  return o
}

export function checkRowMode(rowMode: unknown): RowMode {
  if (rowMode !== 'object' && rowMode !== 'array') throw new ArgumentError(`rowMode must be 'object' or 'array', not ${JSON.stringify(rowMode)}`)
  return rowMode
}

function checkTimeout(t: unknown): number | undefined {
  if (t === undefined) return undefined
  if (typeof t !== 'number' || !(t > 0) || t > 2147483647) throw new ArgumentError(`timeout must be a positive number of milliseconds, not ${JSON.stringify(t)}`)
  return t
}

function checkSignal(s: unknown): AbortSignal | undefined {
  if (s === undefined) return undefined
  if (!(s instanceof AbortSignal)) throw new ArgumentError('signal must be an AbortSignal')
  return s
}

function positiveInt(v: unknown, name: string, dflt: number): number {
  if (v === undefined) return dflt
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 2147483647) throw new ArgumentError(`${name} must be a positive integer, not ${JSON.stringify(v)}`)
  return v
}

const noop = (): void => {}

/** Builds the request for query(); throws ArgumentError for bad arguments. */
export function makeQuery(d: QueryDefaults, text: unknown, values: unknown, options: QueryOptions | undefined, sink: RowSink | null = null): ExtendedQuery {
  if (typeof text !== 'string') throw new ArgumentError(`query text must be a string, not ${text === null ? 'null' : typeof text}`)
  if (values !== undefined && !Array.isArray(values)) throw new ArgumentError('query values must be an array')
  let rowMode = d.rowMode
  let prepare = d.prepare
  let view = d.view
  let signal: AbortSignal | undefined
  let timeout = d.queryTimeout
  if (options !== undefined) {
    if (typeof options !== 'object' || options === null) throw new ArgumentError('query options must be an object')
    if (options.rowMode !== undefined) rowMode = checkRowMode(options.rowMode)
    if (options.prepare !== undefined) prepare = options.prepare === true && prepare
    if (options.types !== undefined) view = d.catalog.view(checkTypeOptions(options.types, 'types'))
    signal = checkSignal(options.signal)
    if (options.timeout !== undefined) timeout = checkTimeout(options.timeout)
  }
  const vals = (values ?? []) as unknown[]
  const req = new ExtendedQuery(text, vals, rowMode, prepare, view, vals.length === 0 ? null : declaredTypes(vals), sink)
  if (signal?.aborted) req.abort(abortErrorOf(signal))
  else req.watch(signal, timeout)
  return req
}

export function makeSimpleQuery(d: QueryDefaults, text: unknown, options: SimpleQueryOptions | undefined): SimpleQuery {
  if (typeof text !== 'string') throw new ArgumentError('query text must be a string')
  if (text.includes('\0')) throw new ArgumentError('query text cannot contain a NUL character')
  const rowMode = options?.rowMode !== undefined ? checkRowMode(options.rowMode) : d.rowMode
  const signal = checkSignal(options?.signal)
  const timeout = options?.timeout !== undefined ? checkTimeout(options.timeout) : d.queryTimeout
  const req = new SimpleQuery(text, rowMode, d.view)
  if (signal?.aborted) req.abort(abortErrorOf(signal))
  else req.watch(signal, timeout)
  return req
}

/**
 * The query methods, on top of a way to send requests. Subclasses say where
 * requests go (a connection, a transaction's connection, the pool).
 */
export abstract class Queryable {
  protected abstract defaults(): QueryDefaults
  /** Hands a request over; it settles itself. */
  protected abstract dispatch(req: Request): void
  /**
   * Hands over a request that keeps its connection to itself until it is done
   * (a cursor): a pool gives it a connection of its own.
   */
  protected dispatchExclusive(req: ExtendedQuery): void {
    this.dispatch(req)
  }

  /**
   * Runs a query written as a tagged template; every interpolated value is sent
   * as a parameter. `const { rows } = await db.sql\`SELECT * FROM users WHERE id = ${id}\``
   */
  readonly sql = <R = Row>(strings: TemplateStringsArray, ...values: unknown[]): Promise<Result<R>> => {
    let built
    try {
      built = buildQuery(strings, values)
    } catch (err) {
      return Promise.reject(err as Error)
    }
    return this.query<R>(built.text, built.values)
  }

  /**
   * Runs one statement with the extended protocol. Values are sent as
   * parameters `$1, $2, ...`; the statement is prepared once per connection and
   * reused by text (unless `prepare: false`).
   */
  query<R = Row>(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<Result<R>> {
    let req: ExtendedQuery
    try {
      req = makeQuery(this.defaults(), text, values, options)
    } catch (err) {
      return Promise.reject(err as Error)
    }
    if (!req.dropped) this.dispatch(req)
    return req.promise as Promise<Result<R>>
  }

  /**
   * Streams the rows of a query: `for await (const row of db.stream(sql, values))`.
   * The query is sent when iteration begins; rows arrive as the server sends
   * them, and reading from the server pauses while more than `highWaterMark`
   * rows wait unread. Leaving the loop early cancels the query.
   */
  stream<R = Row>(text: string, values?: readonly unknown[], options?: StreamOptions): RowStream<R> {
    let s: RowStream<R>
    try {
      s = new RowStream<R>(positiveInt(options?.highWaterMark, 'highWaterMark', 1000))
    } catch (err) {
      s = new RowStream<R>(1)
      s.bind(null, noop, err as Error)
      return s
    }
    try {
      s.bind(makeQuery(this.defaults(), text, values, options, s), (req) => this.dispatch(req), null)
    } catch (err) {
      s.bind(null, noop, err as Error)
    }
    return s
  }

  /**
   * Reads a query's rows in batches through a portal:
   * `for await (const rows of db.cursor(sql, values, { batchSize: 1000 }))`.
   * The connection is the cursor's alone until it is exhausted or closed
   * (leaving the loop early closes it).
   */
  cursor<R = Row>(text: string, values?: readonly unknown[], options?: CursorOptions): Cursor<R> {
    let c: Cursor<R>
    try {
      c = new Cursor<R>(positiveInt(options?.batchSize, 'batchSize', 1000))
    } catch (err) {
      c = new Cursor<R>(1)
      c.bind(null, noop, err as Error)
      return c
    }
    try {
      c.bind(makeQuery(this.defaults(), text, values, options, c), (req) => this.dispatchExclusive(req), null)
    } catch (err) {
      c.bind(null, noop, err as Error)
    }
    return c
  }

  /**
   * Runs a query and writes its result, as the server's own protocol messages
   * (RowDescription, DataRow..., CommandComplete, or the ErrorResponse), into
   * `destination` (an HTTP response, a file) without decoding it, respecting
   * the destination's backpressure. pipegres/wire parses those bytes back,
   * in a browser too. The destination is not ended: several results may follow
   * one another in it.
   */
  queryRaw(text: string, values: readonly unknown[] | undefined, destination: RawDestination, options?: RawOptions): Promise<RawResult> {
    let req: ExtendedQuery
    let sink: RawPassThrough
    try {
      const d = destination as Partial<RawDestination> | null
      if (typeof d !== 'object' || d === null || typeof d.write !== 'function' || typeof d.once !== 'function' || typeof d.off !== 'function') {
        throw new ArgumentError('queryRaw() needs a writable stream to write into')
      }
      const format = options?.format ?? 'binary'
      if (format !== 'binary' && format !== 'text') throw new ArgumentError(`format must be 'binary' or 'text', not ${JSON.stringify(format)}`)
      sink = new RawPassThrough(destination, format === 'text' ? () => false : binaryDecodable)
      const { signal, timeout, prepare } = options ?? {}
      req = makeQuery(this.defaults(), text, values, { signal, timeout, prepare }, sink)
    } catch (err) {
      return Promise.reject(err as Error)
    }
    sink.attach(req)
    if (!req.dropped) this.dispatch(req)
    return req.promise.then((r) => ({ command: r.command, rowCount: r.rowCount, bytes: sink.bytes }))
  }

  /**
   * Runs a query string with the simple protocol: several statements separated
   * by semicolons, no parameters, one result per statement.
   */
  simpleQuery<R = Row>(text: string, options?: SimpleQueryOptions): Promise<Result<R>[]> {
    let req: SimpleQuery
    try {
      req = makeSimpleQuery(this.defaults(), text, options)
    } catch (err) {
      return Promise.reject(err as Error)
    }
    if (!req.dropped) this.dispatch(req)
    return req.promise as Promise<Result<R>[]>
  }
}
