// Whole past 500 lines: one query object (PendingQuery) and its one execution, whose paths share private state.
import { AbortError, CollectInto, collectInto, sentTo, type ConnectionState, type CopyInStream, type CopyOutStream, type Field, type Pool, type QueryOptions, type QuerySink, type SentTrace } from '../../index.js'
import { backendOf, Sent, whereOf, type Backend, type Where } from './backend.js'
import { build, isFragment, plainText, plainValues, unsafeValues } from './build.js'
import { CANCELED, generic, PostgresError, toPostgresError, type Endpoint, type ErrorContext } from './errors.js'
import type { ResolvedOptions } from './options.js'
import { columnsOf, emptyResult, resultOf, type Result, type Statement } from './result.js'
import { needsSimple } from './statements.js'
import type { Transform } from './transform.js'

const settleOwn: typeof CollectInto.settleOwn = CollectInto.settleOwn

// A query as postgres.js gives it: a promise made by the tagged template
// (or unsafe(), or file()) that runs when it is first awaited (or
// execute()d), so that a template used as a fragment of another never runs.
// It becomes one pipegres call: query() (the default), simpleQuery()
// (.simple(), unsafe() without parameters), describe(), cursor(), copyTo()
// or copyFrom().
//
// Why a promise and not a thenable: awaiting a thenable (or passing it to
// Promise.all) costs a promise wrapping it, a job that calls its then(), and
// the promise then() returns, per query; a pipelined query feels that (about
// 0.7 µs and 400 bytes in V8). A promise whose `constructor` reads as Promise
// is taken as it is by await and Promise.all, which read that property
// first: reading it is what starts the query (as calling then() does). And
// pipegres settles the query itself (see OwnPromise) instead of a promise of
// its own that the query would follow.

/** What a query runs on: a pool, a reserved connection, or a transaction's connection. */
export type Runner = Pick<Pool, 'query' | 'simpleQuery' | 'cursor' | 'copyFrom' | 'copyTo' | 'describe'>

/** Runs an execution: every runner is a queryable, whose [collectInto] stays out of Runner's published type (it is internal). */
function collect(runner: Runner, e: Execution, options: QueryOptions | undefined): Promise<unknown> {
  return (runner as Runner & Pick<Pool, typeof collectInto>)[collectInto](e.text, e.values, options, e, e)
}

/** The sql instance a query belongs to. */
export interface Handler {
  readonly runner: Runner
  readonly options: ResolvedOptions
  readonly transform: Transform
  readonly endpoint: Endpoint
  /** Why this query may not run now (the instance ended, a BEGIN outside sql.begin(), ...), or undefined. */
  refuse(text: string): Error | undefined
  /** Whether a query failing on a stale prepared statement is run again unnamed (not inside a transaction). */
  readonly retries: boolean
  /** Counts COPY FROM streams open (a pool whose every connection holds one would make any other query wait for ever). */
  copies: { active: number; streams: Set<CopyInStream> }
}

/** Returned by a cursor's callback: stop reading and close the cursor. */
export const CLOSE = {}

// Cancellation. pipegres cancels a query through its AbortSignal, but an
// AbortSignal watched by each query costs more than a pipelined query itself.
// So a query's `sentTo` object is handed its request instead, which cancel()
// aborts: dropped if it was not written yet, cancelled on the server (only it)
// if it is running. A query cancelled before it is sent fails at once.

// A query's options: none at pipegres's defaults (the usual case: nothing to
// check or allocate per query), else one of three shared objects.
const arrayRows: QueryOptions = { rowMode: 'array' }
const unprepared: QueryOptions = { prepare: false }
const arrayRowsUnprepared: QueryOptions = { rowMode: 'array', prepare: false }
function optionsFor(rowMode: 'array' | 'object', prepare: boolean): QueryOptions | undefined {
  if (rowMode === 'object') return prepare ? undefined : unprepared
  return prepare ? arrayRows : arrayRowsUnprepared
}

function cancelledError(): PostgresError {
  return new PostgresError(CANCELED)
}

// The frames of the code that made a query, for its error: captured once per template call site (as postgres.js does).
// The frame of the call site alone: a query's error then ends with the line that made it.
const origins = new WeakMap<readonly string[], string>()
function frames(): string {
  const stack = new Error().stack ?? ''
  return stack.slice(stack.indexOf('\n') + 1)
}
/** Records the call site of a template (once per site): `above` is the function the application called. */
export function captureOrigin(strings: readonly string[], above: Function): void {
  if (origins.has(strings)) return
  const holder: { stack?: string } = {}
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 1
  Error.captureStackTrace(holder, above)
  Error.stackTraceLimit = limit
  const stack = holder.stack ?? ''
  origins.set(strings, stack.slice(stack.indexOf('\n') + 1))
}

// A result's statement, as postgres.js shares it between the executions of one text: named when prepared.
let statementCount = 0
const statements = { named: new Map<string, Statement>(), unnamed: new Map<string, Statement>() }
function statementOf(text: string, named: boolean): Statement {
  const byText = named ? statements.named : statements.unnamed
  let s = byText.get(text)
  if (s === undefined) {
    if (byText.size > 10_000) byText.clear()
    s = { name: named ? 'p' + (++statementCount).toString(36) : '', string: text, types: [], columns: [] }
    byText.set(text, s)
  }
  return s
}

/** Texts whose prepared statement went stale under a table change: run unnamed since. */
const stale = new Set<string>()
function isStale(err: unknown): boolean {
  const e = err as { code?: unknown; routine?: unknown }
  return (e.code === '42804' && e.routine === 'transformAssignedExpr') || (e.code === '0A000' && e.routine === 'RevalidateCachedQuery')
}

type Mode = 'object' | 'values' | 'raw'

type Kind = 'tagged' | 'unsafe' | 'file'

export interface UnsafeOptions {
  prepare?: boolean
  simple?: boolean
  cache?: boolean
}

/** No options, shared: a query reads its options and never changes them. */
export const noOptions: UnsafeOptions = {}

// The query's own ends of an execution, called by its Execution (symbols: not on the API of a query).
/** @internal */
const finished = Symbol('finished')
/** @internal */
const failed = Symbol('failed')

/**
 * @internal One execution of a query by the extended protocol, and the one object it
 * costs: pipegres collects its rows into postgres.js's result (finish()),
 * the promise of pipegres follows postgres.js's error or the query run again
 * (failed()), and, as the query's `sentTo` object, it learns the request
 * (cancel()) and the connection (result.state, debug). Its QuerySink fields
 * are Sent's, not inherited: it is a CollectInto.
 */
class Execution extends CollectInto<unknown> implements QuerySink {
  serverAddress = ''
  serverPort = 0
  inflight = 0
  connection: ConnectionState | undefined = undefined
  request: QuerySink['request'] = undefined
  via: SentTrace | null | undefined = undefined

  constructor(
    readonly query: PendingQuery<unknown>,
    readonly text: string,
    readonly values: unknown[],
    readonly statement: Statement,
    readonly usePrepared: boolean,
    /** Set when this execution runs the query again (a stale prepared statement): the first one's connection and failure. */
    readonly first: { readonly where: ConnectionState | undefined; readonly error: unknown } | undefined,
    /** Whether this execution settles the query itself: the first, sent as the query starts (not after file() read its file). */
    readonly adopt: boolean,
  ) {
    super()
  }

  get where(): ConnectionState | undefined {
    return whereOf(this)
  }

  /** The query itself when this execution settles it; else (one run again, say) the request makes a promise the query follows. */
  override get own(): PendingQuery<unknown> | null {
    return this.adopt ? this.query : null
  }

  finish(rows: unknown[], command: string, count: number | null, fields: Field[]): unknown {
    return this.query[finished](this, rows, command, count, fields)
  }

  failed(err: Error): PromiseLike<unknown> {
    return this.query[failed](this, err)
  }
}

/** A promise already resolved: a query run again starts from it, out of the reply that failed the first execution. */
const resolved = Promise.resolve()

/** What few queries have: file()'s reader, debug's frames, describe(), cursor() or forEach(). */
interface More {
  file?: ((path: unknown) => Promise<string>) | undefined
  /** The frames of the code that made the query (with debug). */
  origin?: string | undefined
  describe?: boolean
  cursor?: { n: number; fn: (rows: unknown[], result: unknown) => unknown }
  forEach?: (row: unknown, result: unknown) => unknown
}

/** The resolve function of the PendingQuery being made: handed from its executor to its constructor, no closure per query. */
let made: ((r: unknown) => void) | undefined
function executor(resolve: (r: never) => void): void {
  made = resolve as (r: unknown) => void
}

export class PendingQuery<T = Result<Record<string, unknown>>> extends Promise<T> {
  declare readonly [isFragment]: boolean
  /** @internal Resolves the query (rejects it too, resolved with a rejecting promise): pipegres settles it (see OwnPromise). */
  readonly [settleOwn]: (r: unknown) => void
  /** The template's strings; unsafe() and file(): the text or path as given (see strings). */
  #source: unknown
  readonly args: readonly unknown[]
  #handler: Handler
  #kind: Kind
  #options: UnsafeOptions
  #mode: Mode = 'object'
  /** true: the simple protocol; false: the extended one; undefined: the simple one only for a text of several statements. */
  #simple: boolean | undefined
  /** What few queries have (see More): undefined for the rest, a field each would cost every query. */
  #more: More | undefined
  #started = false
  /** The query's request and connection, once sent. */
  #sent: QuerySink | undefined
  #cancelled = false

  /** `source`: a template's strings, or unsafe()'s text, or file()'s path. */
  constructor(handler: Handler, source: readonly string[] | unknown, args: readonly unknown[], kind: Kind, options: UnsafeOptions = noOptions, file?: (path: unknown) => Promise<string>) {
    super(executor)
    this[settleOwn] = made!
    made = undefined
    this.#handler = handler
    this.#source = source
    this.args = args
    this.#kind = kind
    this.#options = options
    this.#simple = kind === 'tagged' ? false : 'simple' in options ? options.simple === true : args.length === 0 ? undefined : false
    // With debug, the frames of every query; else a template's call site, looked up when an error needs it.
    if (file !== undefined || handler.options.debug) this.#more = { file, origin: handler.options.debug ? frames() : undefined }
  }

  #extra(): More {
    return (this.#more ??= {})
  }

  /**
   * The template's strings (unsafe(): its text alone; file(): its path): an
   * array made only when asked for (a query written into another), not one
   * per unsafe() query.
   */
  get strings(): readonly string[] {
    return this.#kind === 'tagged' ? (this.#source as readonly string[]) : [this.#source as string]
  }

  override get [Symbol.toStringTag](): string {
    return 'PendingQuery'
  }

  static {
    // What await, Promise.all and then() (catch() and finally() too, which call
    // it) read before they take the query as a promise: reading it starts the
    // query, and as Promise it makes them take the query itself, and then()
    // return a plain promise. So then() is Promise's own: no frame of this
    // class's per call.
    Object.defineProperty(PendingQuery.prototype, 'constructor', {
      get(this: PendingQuery<unknown>): PromiseConstructor {
        if (#started in this) this.#start()
        return Promise
      },
      configurable: true,
    })
  }

  /** Sends the query now rather than when first awaited. */
  execute(): this {
    this.#start()
    return this
  }
  /** Rows as arrays of values. */
  values(): PendingQuery<Result<unknown[]>> {
    this.#mode = 'values'
    return this as unknown as PendingQuery<Result<unknown[]>>
  }
  /** Rows as arrays of each value's text as bytes. */
  raw(): PendingQuery<Result<Buffer[]>> {
    this.#mode = 'raw'
    return this as unknown as PendingQuery<Result<Buffer[]>>
  }
  /** Runs with the simple protocol: no parameters, several statements allowed (one result each). */
  simple(): this {
    this.#simple = true
    return this
  }
  /** The statement's parameter types and columns, without running it. */
  describe(): PendingQuery<Statement> {
    this.#extra().describe = true
    return this as unknown as PendingQuery<Statement>
  }
  /** Cancels the query: on the server when it is running, at once when it has not been sent. */
  cancel(): void {
    // A request that settled ignores abort().
    const request = this.#sent?.request
    if (request === undefined) this.#cancelled = true
    else request.abort(new AbortError('the query was aborted'))
  }
  /** Calls fn for each row, as rows arrive; resolves with an empty result carrying the columns. */
  forEach(fn: (row: unknown, result: unknown) => unknown): PendingQuery<Result<never>> {
    this.#extra().forEach = fn
    return this as unknown as PendingQuery<Result<never>>
  }

  /**
   * Reads the rows n at a time (1 by default): with a function, calls it for
   * each batch (returning sql.CLOSE stops) and resolves once done; without
   * one, returns an async iterator of the batches.
   */
  cursor(n?: number | ((rows: unknown[]) => unknown), fn?: (rows: unknown[]) => unknown): any {
    const size = typeof n === 'number' ? n : 1
    if (!Number.isInteger(size) || size < 1) throw new TypeError(`cursor() needs a batch size of at least 1, not ${String(n)}`)
    const callback = typeof n === 'function' ? n : fn
    if (callback === undefined) return this.#iterate(size)
    this.#extra().cursor = { n: size, fn: callback as (rows: unknown[], result: unknown) => unknown }
    return this
  }

  /** COPY ... TO STDOUT: a readable of the data. */
  async readable(): Promise<CopyOutStream> {
    const { text } = await this.#statement()
    return this.#handler.runner.copyTo(text)
  }

  /** COPY ... FROM STDIN: a writable for the data, finished once the server confirmed it. */
  async writable(): Promise<CopyInStream> {
    const { text } = await this.#statement()
    const w = this.#handler.runner.copyFrom(text)
    const copies = this.#handler.copies
    copies.active++
    copies.streams.add(w)
    let done = false
    const over = (): void => {
      if (!done) {
        done = true
        copies.active--
        copies.streams.delete(w)
      }
    }
    w.result.then(over, over)
    w.once('close', over)
    return w
  }

  #start(): void {
    if (this.#started) return
    this.#started = true
    let out: Promise<unknown>
    try {
      out = this.#run()
    } catch (err) {
      out = Promise.reject(err)
    }
    // By the extended protocol the query is the request's own promise (see Execution.own): settled already or to be.
    if (out !== this) this[settleOwn](out)
  }

  async #statement(): Promise<{ text: string; values: unknown[] }> {
    const h = this.#handler
    if (this.#kind === 'tagged') return build(this, h.transform)
    const text = this.#kind === 'file' ? await this.#more!.file!(this.#source) : this.#source
    if (typeof text !== 'string') return { text: String(text), values: unsafeValues(this.args, h.transform) }
    return { text, values: unsafeValues(this.args, h.transform) }
  }

  #context(text: string, values: unknown[]): ErrorContext {
    return { query: text, parameters: values, args: this.args as unknown[], origin: this.#more?.origin ?? (this.#kind === 'tagged' ? origins.get(this.#source as readonly string[]) : undefined), debug: this.#handler.options.debug !== false }
  }

  #run(): Promise<unknown> {
    const h = this.#handler
    if (this.#cancelled) return Promise.reject(cancelledError())
    let text: string
    let values: unknown[]
    // Tagged templates and unsafe() texts are sent in this turn, as written; only file() waits (for the file).
    if (this.#kind !== 'file') {
      try {
        if (this.#kind === 'tagged') {
          const plain = plainValues(this, h.transform)
          if (plain !== undefined) {
            text = plainText(this.#source as readonly string[])
            values = plain
          } else ({ text, values } = build(this, h.transform))
        } else {
          const given = this.#source
          text = typeof given === 'string' ? given : String(given)
          values = unsafeValues(this.args, h.transform)
        }
      } catch (err) {
        return Promise.reject(err)
      }
      return this.#send(text, values, true)
    }
    // The file is read first.
    // The query follows this promise already: its execution settles a promise of its own.
    return this.#statement().then((s) => this.#send(s.text, s.values, false))
  }

  /** `adopt`: the query is not settled yet, and its execution may settle it as its own promise (see Execution.own). */
  #send(text: string, values: unknown[], adopt: boolean): Promise<unknown> {
    const h = this.#handler
    const refused = h.refuse(text)
    if (refused !== undefined) return Promise.reject(refused)
    if (values.length > 65534) return Promise.reject(generic('MAX_PARAMETERS_EXCEEDED', 'Max number of parameters (65534) exceeded'))
    if (this.#cancelled) return Promise.reject(cancelledError())
    const more = this.#more
    if (more?.describe === true) {
      const sent = (this.#sent = new Sent())
      const described = h.runner.describe(text, { [sentTo]: sent }).then(
        (d) => ({ name: '', string: text, types: d.parameters, columns: columnsOf(d.fields, h.transform) }),
        (err: unknown) => this.#fail(err, text, values),
      )
      this.#debug(sent, text, values, described)
      return described
    }
    const prepare = this.#kind === 'tagged' ? h.options.prepare : this.#options.prepare === true
    const simple = this.#simple ?? needsSimple(text)
    const statement = statementOf(text, prepare && !simple)
    const rowMode = this.#mode !== 'object' || h.transform.results ? 'array' : 'object'
    if (more?.cursor !== undefined) return this.#runCursor(text, values, statement, rowMode).catch((err: unknown) => this.#fail(err, text, values))
    let out: Promise<unknown>
    let sent: Where
    if (simple) {
      const s = (this.#sent = sent = new Sent())
      out = h.runner.simpleQuery(text, { rowMode, [sentTo]: s }).then(
        (rs) => {
          const state = backendOf(s.where)
          const all = rs.map((r) => this.#result(r.rows, r.command, r.rowCount, r.fields, { ...statement, columns: [] }, state))
          return all.length === 1 ? all[0] : all
        },
        (err: unknown) => {
          return this.#fail(err, text, values)
        },
      )
    } else {
      const usePrepared = prepare && !stale.has(text)
      const e = (this.#sent = sent = new Execution(this as PendingQuery<unknown>, text, values, statement, usePrepared, undefined, adopt))
      out = collect(h.runner, e, optionsFor(rowMode, usePrepared))
    }
    if (typeof h.options.debug === 'function') this.#debug(sent, text, values, out)
    return out
  }

  /**
   * Calls the debug function with the number of the connection the query went
   * to: at once when a connection took it as it was sent (the usual case),
   * else once it is answered.
   */
  #debug(sent: Where, text: string, values: unknown[], out: Promise<unknown>): void {
    const debug = this.#handler.options.debug
    if (typeof debug !== 'function') return
    const call = (): void => debug(backendOf(sent.where).id, text, values, [])
    if (sent.where !== undefined) call()
    else out.then(call, call)
  }

  /** @internal postgres.js's result of an execution's rows, made as pipegres collected them (see Execution). */
  [finished](e: Execution, rows: unknown[], command: string, count: number | null, fields: Field[]): unknown {
    // A query run again reports the connection of its first execution when its own is not known.
    const where = e.first === undefined ? e.where : (e.where ?? e.first.where)
    return this.#result(rows, command, count, fields, e.statement, backendOf(where))
  }

  /**
   * @internal What an execution's promise follows when it fails: postgres.js's error,
   * or, when a table change broke the prepared statement (its parameter or
   * result types changed), the query run again unnamed. Called by pipegres as
   * the failure arrives: it throws nothing, and runs nothing there.
   */
  [failed](e: Execution, err: Error): Promise<unknown> {
    const h = this.#handler
    const first = e.first
    // Unnamed, outside a transaction block, from then on; the error inside one stands, as the block is aborted anyway.
    if (first === undefined && e.usePrepared && h.retries && isStale(err)) {
      if (stale.size > 10_000) stale.clear()
      stale.add(e.text)
      return resolved.then(() => {
        const rowMode = this.#mode !== 'object' || h.transform.results ? 'array' : 'object'
        const again = (this.#sent = new Execution(this as PendingQuery<unknown>, e.text, e.values, e.statement, false, { where: e.where, error: err }, false))
        return collect(h.runner, again, optionsFor(rowMode, false))
      })
    }
    // In a transaction block the session opened itself, the first failure aborted it: that error is the one to report.
    const reported = first !== undefined && (err as { code?: unknown }).code === '25P02' ? first.error : err
    try {
      return this.#fail(reported, e.text, e.values)
    } catch (failure) {
      return Promise.reject(failure)
    }
  }

  /** Rejects with pipegres's error as postgres.js's, with this query's text, parameters and call site. */
  #fail(err: unknown, text: string, values: unknown[]): never {
    throw toPostgresError(err, this.#handler.endpoint, this.#context(text, values))
  }



  #result(rows: unknown[], command: string, count: number | null, fields: readonly Field[], statement: Statement, state: Backend): unknown {
    const h = this.#handler
    const r = resultOf(rows, fields, command, count, h.transform, this.#mode !== 'object', statement, state)
    if (this.#mode === 'raw') for (let i = 0; i < r.length; i++) r[i] = (r[i] as unknown[]).map(rawValue)
    const forEach = this.#more?.forEach
    if (forEach !== undefined) {
      for (const row of r) forEach(row, r)
      const out = emptyResult(statement, r.command, r.count, state)
      out.columns = r.columns
      return out
    }
    return r
  }

  async #runCursor(text: string, values: unknown[], statement: Statement, rowMode: 'array' | 'object'): Promise<unknown> {
    const h = this.#handler
    const { n, fn } = this.#more!.cursor!
    const sent = (this.#sent = new Sent())
    const cur = h.runner.cursor(text, values, { batchSize: n, rowMode, [sentTo]: sent })
    let command = ''
    try {
      const first = cur.read()
      this.#debug(sent, text, values, first)
      for (let read = first; ; read = cur.read()) {
        const rows = await read
        if (rows.length === 0) break
        const r = resultOf(rows, cur.fields, 'SELECT', rows.length, h.transform, this.#mode !== 'object', statement, backendOf(sent.where))
        command = 'SELECT'
        if ((await fn(r, r)) === CLOSE) break
      }
    } finally {
      await cur.close().catch(() => undefined)
    }
    return emptyResult(statement, command, null, backendOf(sent.where))
  }

  async *#iterate(n: number): AsyncGenerator<unknown[], void, undefined> {
    const h = this.#handler
    const { text, values } = await this.#statement()
    const refused = h.refuse(text)
    if (refused !== undefined) throw refused
    const statement: Statement = { name: '', string: text, types: [], columns: [] }
    const rowMode = this.#mode !== 'object' || h.transform.results ? 'array' : 'object'
    const sent = new Sent()
    const cur = h.runner.cursor(text, values, { batchSize: n, rowMode, [sentTo]: sent })
    try {
      for (let first = true; ; first = false) {
        let rows: unknown[]
        try {
          const read = cur.read()
          if (first) this.#debug(sent, text, values, read)
          rows = await read
        } catch (err) {
          throw toPostgresError(err, h.endpoint, this.#context(text, values))
        }
        if (rows.length === 0) return
        yield resultOf(rows, cur.fields, 'SELECT', rows.length, h.transform, this.#mode !== 'object', statement, backendOf(sent.where))
      }
    } finally {
      await cur.close().catch(() => undefined)
    }
  }
}
Object.defineProperty(PendingQuery.prototype, isFragment, { value: true })

/** A value as postgres.js's raw() gives it: its text form's bytes. */
function rawValue(v: unknown): Buffer | null {
  if (v === null || v === undefined) return null
  if (Buffer.isBuffer(v)) return Buffer.from('\\x' + v.toString('hex'))
  if (v === true) return Buffer.from('t')
  if (v === false) return Buffer.from('f')
  if (v instanceof Date) return Buffer.from(v.toISOString())
  if (typeof v === 'object') return Buffer.from(JSON.stringify(v))
  return Buffer.from(String(v))
}

export { generic }
