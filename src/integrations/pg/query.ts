import { EventEmitter } from 'node:events'
import { TimeoutError, type Client as CoreClient, type Result as CoreResult } from '../../index.js'
import { Result, toPgError, toPgResult } from './result.js'
import { typeSource, type TypeParserSource } from './types.js'
import { isSubmittable, runSubmittable, type SubmitRunner } from './submit.js'
import { prepareValue } from './values.js'

// One place for pg's query(text | config, values?, callback?) on a client, a
// pool and a pool's client: argument forms, named statements, the choice of
// protocol, callbacks, and pg's Query objects.

export type Callback = (err: Error | null, result?: Result | Result[]) => void

/** What pipegres runs a query on: a Client, a Pool or a ReservedClient. */
export type Runner = Pick<CoreClient, 'query' | 'simpleQuery'>

export interface QueryConfig {
  text: string
  values?: unknown[]
  name?: string
  rowMode?: 'array'
  types?: TypeParserSource
  queryMode?: 'extended'
  query_timeout?: number
  callback?: Callback
}

/** true: every parameterized statement is prepared and reused; false: unnamed statements (as pg); 'auto': see Session. */
export type PrepareMode = boolean | 'auto'

const TX_START = /(^|;)\s*(BEGIN|START\s+TRANSACTION)\b/i
const TX_END = /^\s*(COMMIT|END|ABORT|ROLLBACK)\b(?!\s+(TO|PREPARED)\b)(?![^;]*\bAND\s+CHAIN\b)/i

/**
 * Where a query runs and how: the parsers of the client or pool, its named
 * statements, and whether its parameterized statements are prepared.
 *
 * 'auto' prepares them (pipegres's statement cache: no parse and plan per
 * execution) except inside a transaction block. A cached statement whose
 * result columns changed under it (ALTER TABLE) fails once with 0A000, where
 * pg's unnamed statement would not: outside a transaction the query is then
 * run again unnamed, so the difference never shows; inside one that error
 * would abort the transaction, so there statements stay unnamed. Whether a
 * block is open is judged from the statements this session sent (BEGIN or
 * START TRANSACTION, then COMMIT, ROLLBACK, END or ABORT), erring towards
 * "open".
 */
export class Session {
  /** Named statements seen on this connection, name to text (pg refuses a name reused for another text). */
  readonly names = new Map<string, string>()
  private inBlock = false

  constructor(
    readonly types: TypeParserSource,
    private readonly prepare: PrepareMode,
    /** False for a pool's shared connections, on which no transaction block is ever left open. */
    private readonly dedicated: boolean,
    private readonly serverSaysBlock: () => boolean = () => false,
  ) {}

  /** Notes a statement's effect on the transaction state before it is sent. */
  sent(text: string): void {
    if (!this.dedicated) return
    if (TX_END.test(text)) this.inBlock = false
    if (TX_START.test(text)) this.inBlock = true
  }

  usePrepared(): boolean {
    if (this.prepare !== 'auto') return this.prepare
    return !(this.inBlock || this.serverSaysBlock())
  }

  /** The connection went back to its pool, which rolled back any open block. */
  reset(): void {
    this.inBlock = false
  }
}

/**
 * pg's text form of a value, with bytes as bytea text: pipegres would send a
 * Buffer as bytea text on a statement's first execution and as raw bytes once
 * the parameter's type is known, which differ for a non-bytea parameter.
 */
function toParam(v: unknown): string | null {
  const p = prepareValue(v)
  return Buffer.isBuffer(p) ? '\\x' + p.toString('hex') : p
}

function isStalePlan(err: unknown): boolean {
  return (err as { code?: unknown }).code === '0A000' && /cached plan must not change result type/.test((err as Error).message)
}

/**
 * pg.Query: an event emitter for a query's rows ('row' per row, then 'end'
 * with the result, or 'error'), which client.query() runs and returns.
 */
export class Query extends EventEmitter {
  text: string
  values: unknown[] | undefined
  name: string | undefined
  rowMode: 'array' | undefined
  types: TypeParserSource | undefined
  callback: Callback | undefined
  /** pg's row limit per round trip; results come whole here, and pipeline mode refuses it as pg does. */
  rows: number | undefined

  constructor(config: string | QueryConfig, values?: unknown[] | Callback, callback?: Callback) {
    super()
    const c = normalize(config, values, callback)
    this.text = c.text
    this.values = c.values
    this.name = c.name
    this.rowMode = c.rowMode
    this.types = c.types
    this.callback = c.callback
    this.rows = (c as { rows?: number }).rows
  }
}

function normalize(config: unknown, values: unknown, callback: unknown): QueryConfig {
  if (config === null || config === undefined) throw new TypeError('Client was passed a null or undefined query')
  const c: QueryConfig = typeof config === 'string' ? { text: config } : { ...(config as QueryConfig) }
  if (typeof c.text !== 'string' && c.text !== null && typeof c.name !== 'string') {
    throw new TypeError(`${NEITHER}: the text must be a string${c.text === undefined ? '' : `, not ${typeof c.text}`}`)
  }
  if (typeof values === 'function') c.callback = values as Callback
  else if (values !== undefined && values !== null) c.values = values as unknown[]
  if (typeof callback === 'function') c.callback = callback as Callback
  // A named statement is run again by its name alone; a null text is an empty query, as pg sends it.
  if (c.text === undefined && c.name !== undefined) return c
  if (c.text === null) c.text = ''
  if (typeof c.text !== 'string') throw new TypeError(`query text must be a string, not ${c.text === null ? 'null' : typeof c.text}`)
  if (c.values !== undefined && !Array.isArray(c.values)) throw new TypeError('query values must be an array')
  return c
}

function run(session: Session, runner: Runner, config: QueryConfig, timeout: number | undefined): Promise<Result | Result[]> {
  let c = config
  /** A name this query introduces: forgotten if the query fails, so it can be prepared again. */
  let fresh: string | undefined
  const name = c.name
  if (name !== undefined) {
    const known = session.names.get(name)
    if ((c.text as string | undefined) === undefined) {
      if (known === undefined) return Promise.reject(new Error(`no prepared statement named '${name}' on this connection, and no text given`))
      c = { ...c, text: known }
    } else if (known !== undefined && known !== c.text) {
      return Promise.reject(new Error(`Prepared statements must be unique - '${name}' was used for a different statement`))
    }
    if (known === undefined) fresh = name
    session.names.set(name, c.text)
  }
  session.sent(c.text)
  const types = typeSource(c.types, 'the query types option') ?? session.types
  const rowMode = c.rowMode
  const extended = (c.values !== undefined && c.values.length > 0) || c.name !== undefined || c.queryMode === 'extended'
  if (!extended) {
    // pg sends a query without parameters with the simple protocol: several statements give several results.
    return runner.simpleQuery<unknown[]>(c.text, { rowMode: 'array', timeout }).then((results) => {
      if (results.length === 0) return new Result(rowMode)
      const out = results.map((r) => toPgResult(r, types, rowMode))
      return out.length === 1 ? out[0]! : out
    })
  }
  const values = (c.values ?? []).map(toParam)
  const text = c.text
  const convert = (r: CoreResult<unknown[]>): Result => toPgResult(r, types, rowMode)
  if (c.name === undefined && !session.usePrepared()) return runner.query<unknown[]>(text, values, { rowMode: 'array', prepare: false, timeout }).then(convert)
  return runner.query<unknown[]>(text, values, { rowMode: 'array', prepare: true, timeout }).then(convert, (err: unknown) => {
    if (fresh !== undefined) session.names.delete(fresh)
    if (!isStalePlan(err)) throw err
    // Run again unnamed; in a transaction block the first failure aborted it, and that error is the one to report.
    return runner.query<unknown[]>(text, values, { rowMode: 'array', prepare: false, timeout }).then(convert, (again: unknown) => {
      throw (again as { code?: unknown }).code === '25P02' ? err : again
    })
  })
}

/** How a client runs pg's query(...): hooks of the client issuing it. */
export interface QueryHost {
  /** Called once the query is over, after its callback, promise or 'end'/'error' (pg's 'drain' follows them). */
  settled?: () => void
  /** pg's pipeline mode: a portal kept open across round trips (a submittable, the rows option) is refused. */
  pipeline?: boolean
  /** A query failed on its query_timeout. */
  timedOut?: () => void
}

/**
 * pg's Promise option: a library's promises (bluebird's, say) in place of
 * native ones, made from the native promise with the library's resolve().
 */
export function promiseWrapper(lib: unknown): <T>(v: T) => T {
  const resolve = typeof lib === 'function' && lib !== Promise ? (lib as { resolve?: unknown }).resolve : undefined
  if (typeof resolve !== 'function') return (v) => v
  return <T>(v: T): T => (v instanceof Promise ? (resolve.call(lib, v) as T) : v)
}

/**
 * A query the client cannot take (closed, released): the error goes where its
 * outcome would have gone: a Query's or submittable's handlers, the callback,
 * or the promise returned.
 */
export function refuseQuery(args: unknown[], err: Error): unknown {
  const [config] = args
  const cb = args.find((a) => typeof a === 'function') as Callback | undefined
  if (config instanceof Query) {
    if (cb !== undefined) config.callback = cb
    process.nextTick(() => (config.callback !== undefined ? config.callback(err) : config.emit('error', err)))
    return config
  }
  if (isSubmittable(config)) {
    process.nextTick(() => {
      if (typeof config.handleError === 'function') config.handleError(err, undefined as never)
      else (cb ?? (config.callback as Callback | undefined))?.(err)
    })
    return config
  }
  const own = (config as QueryConfig | null)?.callback
  const callback = cb ?? (typeof own === 'function' ? own : undefined)
  if (callback !== undefined) {
    process.nextTick(() => callback(err))
    return undefined
  }
  return Promise.reject(err)
}

/** Rejects with pg's 'Query read timeout' if `p` has not settled within `ms`, after calling `onTimeout`. */
function giveUpAfter<T>(p: Promise<T>, ms: number, onTimeout: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error('Query read timeout'))
      onTimeout()
    }, ms)
    p.then(
      (r) => {
        clearTimeout(timer)
        resolve(r)
      },
      (err: unknown) => {
        clearTimeout(timer)
        reject(err as Error)
      },
    )
  })
}

/** pg's message for a query with neither text nor a name, kept because code matches on it. */
const NEITHER = 'A query must have either text or a name. Supplying neither is unsupported'

/**
 * Delivers a query's outcome to its callback, or to the promise returned,
 * then calls `settled`: pg emits 'drain' after the query's own callback.
 */
function deliver<T>(outcome: Promise<T>, cb: ((err: Error | null, r?: T) => void) | undefined, settled: (() => void) | undefined): Promise<T> | undefined {
  if (cb !== undefined) {
    outcome.then(
      (r) => {
        try {
          cb(null, r)
        } finally {
          settled?.()
        }
      },
      (err: Error) => {
        try {
          cb(err)
        } finally {
          settled?.()
        }
      },
    )
    return undefined
  }
  // The caller's continuation runs after 'drain', as with pg (which resolves the promise, then emits 'drain' at once).
  // Chained rather than wrapped in a new promise: pipegres's errors take the stack of the code that awaits them.
  return settled === undefined ? outcome : outcome.finally(settled)
}

/**
 * Runs pg's query(...) arguments on `runner`. With a callback (an argument or
 * the config's), returns undefined and calls it; with a Query or another
 * submittable, returns it; else returns a promise, rejected with pg's errors.
 * Nothing is thrown: a refused query fails through its callback or promise.
 */
export function pgQuery(session: Session, runner: Runner | Promise<Runner>, args: unknown[], timeout: number | undefined, host: QueryHost = {}): unknown {
  const [config, values, callback] = args
  const settled = host.settled
  if (config instanceof Query) {
    if (typeof values === 'function') config.callback = values as Callback
    else if (typeof callback === 'function') config.callback = callback as Callback
    if (Array.isArray(values)) config.values = values
    runQueryObject(session, runner, config, timeout, host)
    return config
  }
  if (isSubmittable(config)) {
    const q = config
    if (q.callback === undefined || q.callback === null) {
      if (typeof values === 'function') q.callback = values
      else if (typeof callback === 'function') q.callback = callback
    }
    const refuse = (err: Error): void => {
      process.nextTick(() => {
        try {
          if (typeof q.handleError === 'function') q.handleError(err, undefined as never)
          else if (typeof q.callback === 'function') (q.callback as Callback)(err)
        } finally {
          settled?.()
        }
      })
    }
    if (host.pipeline) refuse(new Error('Custom query classes such as pg-cursor and pg-query-stream are not supported in pipeline mode: a portal kept open across round trips would take the answers of the queries pipelined behind it'))
    else {
      const go = (r: Runner): Promise<void> => runSubmittable(r as SubmitRunner, q, session.types)
      const over = runner instanceof Promise ? runner.then(go) : go(runner)
      over.then(settled, (err: Error) => {
        // The pool could not give a connection.
        if (typeof q.handleError === 'function') q.handleError(toPgError(err) as Error, undefined as never)
        settled?.()
      })
    }
    return q
  }
  let c: QueryConfig
  let promise: Promise<Result | Result[]>
  try {
    c = normalize(config, values, callback)
    if (host.pipeline && Number((c as { rows?: unknown }).rows) > 0) {
      throw new Error('The `rows` option is not supported in pipeline mode: a portal kept open across round trips would take the answers of the queries pipelined behind it')
    }
    const cfg = c
    const qt = typeof c.query_timeout === 'number' && c.query_timeout > 0 ? c.query_timeout : timeout
    // In pipeline mode pg does not cancel a query that timed out: it gives up the connection (timedOut), and the
    // queries pipelined behind it fail with it. Cancelling instead would let those run, which pg code does not expect.
    const own = host.pipeline && host.timedOut !== undefined ? qt : undefined
    promise = runner instanceof Promise ? runner.then((r) => run(session, r, cfg, own === undefined ? qt : undefined)) : run(session, runner, c, own === undefined ? qt : undefined)
    if (own !== undefined) promise = giveUpAfter(promise, own, host.timedOut!)
  } catch (err) {
    const cb = typeof values === 'function' ? values : typeof callback === 'function' ? callback : (config as QueryConfig | null)?.callback
    return deliver(Promise.reject(err as Error), typeof cb === 'function' ? (cb as Callback) : undefined, settled)
  }
  const converted = promise.catch((err: unknown) => {
    if (err instanceof TimeoutError) host.timedOut?.()
    return Promise.reject(toPgError(err) as Error)
  })
  return deliver(converted, c.callback, settled)
}

function runQueryObject(session: Session, runner: Runner | Promise<Runner>, q: Query, timeout: number | undefined, host: QueryHost): void {
  const config: QueryConfig = { text: q.text, values: q.values, name: q.name, rowMode: q.rowMode, types: q.types }
  // Issued now, not a tick later: queries issued after this one must not overtake it.
  let started: Promise<Result | Result[]>
  try {
    if (host.pipeline && Number(q.rows) > 0) throw new Error('The `rows` option is not supported in pipeline mode')
    const c = normalize(config, undefined, undefined)
    started = runner instanceof Promise ? runner.then((r) => run(session, r, c, timeout)) : run(session, runner, c, timeout)
  } catch (err) {
    started = Promise.reject(err as Error)
  }
  started.then(
    (res) => {
      try {
        for (const r of Array.isArray(res) ? res : [res]) for (const row of r.rows) q.emit('row', row, r)
        q.callback?.(null, res)
        q.emit('end', res)
      } finally {
        host.settled?.()
      }
    },
    (err: unknown) => {
      const e = toPgError(err) as Error
      try {
        // As pg: the callback if there is one, else the 'error' event.
        if (q.callback !== undefined) q.callback(e)
        else q.emit('error', e)
      } finally {
        host.settled?.()
      }
    },
  )
}
