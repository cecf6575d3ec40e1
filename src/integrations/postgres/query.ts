import { AbortError, sentTo, type CopyInStream, type CopyOutStream, type Pool, type QueryOptions, type Result as CoreResult } from '../../index.js'
import { backendOf, Sent, type Backend } from './backend.js'
import { build, isFragment, plainText, plainValues, unsafeValues } from './build.js'
import { CANCELED, generic, PostgresError, toPostgresError, type Endpoint, type ErrorContext } from './errors.js'
import type { ResolvedOptions } from './options.js'
import { columnsOf, emptyResult, toResult, type Result, type Statement } from './result.js'
import { needsSimple } from './statements.js'
import type { Transform } from './transform.js'

// A query as postgres.js gives it: a thenable made by the tagged template
// (or unsafe(), or file()) that runs when it is first awaited (or
// execute()d), so that a template used as a fragment of another never runs.
// It becomes one pipegres call: query() (the default), simpleQuery()
// (.simple(), unsafe() without parameters), describe(), cursor(), copyTo()
// or copyFrom().

/** What a query runs on: a pool, a reserved connection, or a transaction's connection. */
export type Runner = Pick<Pool, 'query' | 'simpleQuery' | 'cursor' | 'copyFrom' | 'copyTo' | 'describe'>

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

/** A query's options: its `sentTo` object, with rowMode and prepare only where they are not pipegres's defaults. */
function optionsFor(rowMode: 'array' | 'object', prepare: boolean, sent: Sent): QueryOptions {
  if (prepare && rowMode === 'object') return { [sentTo]: sent }
  return { rowMode, prepare, [sentTo]: sent }
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

/** No value yet (a result may be anything, undefined included). */
const NONE = {}
type Kind = 'tagged' | 'unsafe' | 'file'

export interface UnsafeOptions {
  prepare?: boolean
  simple?: boolean
  cache?: boolean
}

export class PendingQuery<T = Result<Record<string, unknown>>> implements PromiseLike<T> {
  declare readonly [isFragment]: boolean
  /** The template's strings (unsafe(): the text alone; file(): none yet). */
  readonly strings: readonly string[]
  readonly args: readonly unknown[]
  #handler: Handler
  #kind: Kind
  #options: UnsafeOptions
  #mode: Mode = 'object'
  /** true: the simple protocol; false: the extended one; undefined: the simple one only for a text of several statements. */
  #simple: boolean | undefined
  #describe = false
  #cursor: { n: number; fn: (rows: unknown[], result: unknown) => unknown } | undefined
  #forEach: ((row: unknown, result: unknown) => unknown) | undefined
  #promise: Promise<unknown> | undefined
  /** Set when #promise is pipegres's own (see then()): what turns its result or error into postgres.js's. */
  #direct: { text: string; values: unknown[]; statement: Statement; usePrepared: boolean; sent: Sent } | undefined
  /** Whether #promise is pipegres's own, which then() converts (see #direct). */
  #raw = false
  /** postgres.js's result, once made. */
  #value: unknown = NONE
  /** The outcome after a failure of #promise: its error as postgres.js's, or the query run again. */
  #recovery: Promise<unknown> | undefined
  /** The query's request and connection, once sent. */
  #sent: Sent | undefined
  #cancelled = false
  #settled = false
  #origin: string | undefined
  #file: ((path: unknown) => Promise<string>) | undefined

  constructor(handler: Handler, strings: readonly string[], args: readonly unknown[], kind: Kind, options: UnsafeOptions = {}, file?: (path: unknown) => Promise<string>) {
    this.#handler = handler
    this.strings = strings
    this.args = args
    this.#kind = kind
    this.#options = options
    this.#simple = kind === 'tagged' ? false : 'simple' in options ? options.simple === true : args.length === 0 ? undefined : false
    this.#file = file
    const debug = handler.options.debug
    this.#origin = debug ? frames() : kind === 'tagged' ? origins.get(strings) : undefined
  }

  // A query by the extended protocol (the usual case) keeps pipegres's promise
  // as its own, and each then() makes postgres.js's result (once, the same for
  // every then()) in the handler it adds: no promise in between, which a
  // pipelined query would feel.
  then<A = T, B = never>(onfulfilled?: ((value: T) => A | PromiseLike<A>) | null, onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    const p = this.#start()
    if (!this.#raw) return (p as Promise<T>).then(onfulfilled, onrejected)
    return (p as Promise<CoreResult<unknown>>).then(
      (core) => {
        let v: unknown
        try {
          v = this.#done(core)
        } catch (err) {
          if (typeof onrejected === 'function') return onrejected(err)
          throw err
        }
        return typeof onfulfilled === 'function' ? onfulfilled(v as T) : (v as A)
      },
      (err: unknown) => ((this.#recovery ??= this.#recover(err)) as Promise<T>).then(onfulfilled, onrejected),
    )
  }
  catch<B = never>(onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<T | B> {
    return this.then(undefined, onrejected)
  }
  finally(onfinally?: (() => void) | null): Promise<T> {
    return this.then().finally(onfinally)
  }
  get [Symbol.toStringTag](): string {
    return 'PendingQuery'
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
    this.#describe = true
    return this as unknown as PendingQuery<Statement>
  }
  /** Cancels the query: on the server when it is running, at once when it has not been sent. */
  cancel(): void {
    if (this.#settled) return
    const request = this.#sent?.request
    if (request === undefined) this.#cancelled = true
    else request.abort(new AbortError('the query was aborted'))
  }
  /** Calls fn for each row, as rows arrive; resolves with an empty result carrying the columns. */
  forEach(fn: (row: unknown, result: unknown) => unknown): PendingQuery<Result<never>> {
    this.#forEach = fn
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
    this.#cursor = { n: size, fn: callback as (rows: unknown[], result: unknown) => unknown }
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

  #start(): Promise<unknown> {
    if (this.#promise === undefined) {
      this.#promise = this.#run()
      this.#raw = this.#direct !== undefined
    }
    return this.#promise
  }

  async #statement(): Promise<{ text: string; values: unknown[] }> {
    const h = this.#handler
    if (this.#kind === 'tagged') return build(this, h.transform)
    const text = this.#kind === 'file' ? await this.#file!(this.strings[0]) : this.strings[0]!
    if (typeof text !== 'string') return { text: String(text), values: unsafeValues(this.args, h.transform) }
    return { text, values: unsafeValues(this.args, h.transform) }
  }

  #context(text: string, values: unknown[]): ErrorContext {
    return { query: text, parameters: values, args: this.args as unknown[], origin: this.#origin, debug: this.#handler.options.debug !== false }
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
            text = plainText(this.strings)
            values = plain
          } else ({ text, values } = build(this, h.transform))
        } else {
          const given: unknown = this.strings[0]
          text = typeof given === 'string' ? given : String(given)
          values = unsafeValues(this.args, h.transform)
        }
      } catch (err) {
        return Promise.reject(err)
      }
      return this.#send(text, values)
    }
    // The file is read first: what #send gives is then converted here, not by then().
    return this.#statement().then((s) => {
      const sent = this.#send(s.text, s.values)
      if (this.#direct === undefined) return sent
      return sent.then(
        (core) => this.#done(core as CoreResult<unknown>),
        (err: unknown) => (this.#recovery ??= this.#recover(err)),
      )
    })
  }

  #send(text: string, values: unknown[]): Promise<unknown> {
    const h = this.#handler
    const refused = h.refuse(text)
    if (refused !== undefined) return Promise.reject(refused)
    if (values.length > 65534) return Promise.reject(generic('MAX_PARAMETERS_EXCEEDED', 'Max number of parameters (65534) exceeded'))
    if (this.#cancelled) return Promise.reject(cancelledError())
    const sent = (this.#sent = new Sent())
    if (this.#describe) {
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
    if (this.#cursor !== undefined) return this.#runCursor(text, values, statement, rowMode).catch((err: unknown) => this.#fail(err, text, values))
    let out: Promise<unknown>
    if (simple) {
      out = h.runner.simpleQuery(text, { rowMode, [sentTo]: sent }).then(
        (rs) => {
          this.#settled = true
          const state = backendOf(sent.where)
          const all = rs.map((r) => this.#result(r as CoreResult<unknown>, { ...statement, columns: [] }, state))
          return all.length === 1 ? all[0] : all
        },
        (err: unknown) => {
          this.#settled = true
          return this.#fail(err, text, values)
        },
      )
    } else {
      const usePrepared = prepare && !stale.has(text)
      out = h.runner.query(text, values, optionsFor(rowMode, usePrepared, sent))
      this.#direct = { text, values, statement, usePrepared, sent }
    }
    if (typeof h.options.debug === 'function') this.#debug(sent, text, values, out)
    return out
  }

  /**
   * Calls the debug function with the number of the connection the query went
   * to: at once when a connection took it as it was sent (the usual case),
   * else once it is answered.
   */
  #debug(sent: Sent, text: string, values: unknown[], out: Promise<unknown>): void {
    const debug = this.#handler.options.debug
    if (typeof debug !== 'function') return
    const call = (): void => debug(backendOf(sent.where).id, text, values, [])
    if (sent.where !== undefined) call()
    else out.then(call, call)
  }

  /** postgres.js's result of pipegres's, made once. */
  #done(core: CoreResult<unknown>): unknown {
    if (this.#value !== NONE) return this.#value
    this.#settled = true
    const d = this.#direct!
    return (this.#value = this.#result(core, d.statement, backendOf(d.sent.where)))
  }

  #recover(err: unknown): Promise<unknown> {
    const d = this.#direct!
    try {
      return this.#failed(err, d.text, d.values, d.statement, d.usePrepared, d.sent)
    } catch (failure) {
      return Promise.reject(failure)
    }
  }

  /** A query's failure: a prepared statement a table change broke (its parameter or result types changed) runs again unnamed. */
  #failed(err: unknown, text: string, values: unknown[], statement: Statement, usePrepared: boolean, sent: Sent): Promise<unknown> {
    const h = this.#handler
    // Unnamed, outside a transaction block, from then on; the error inside one stands, as the block is aborted anyway.
    if (!(usePrepared && h.retries && isStale(err))) {
      this.#settled = true
      return this.#fail(err, text, values)
    }
    if (stale.size > 10_000) stale.clear()
    stale.add(text)
    const rowMode = this.#mode !== 'object' || h.transform.results ? 'array' : 'object'
    const again = (this.#sent = new Sent())
    return h.runner.query(text, values, optionsFor(rowMode, false, again)).then(
      (core) => {
        this.#settled = true
        return this.#result(core, statement, backendOf(again.where ?? sent.where))
      },
      (second: unknown) => {
        this.#settled = true
        // In a transaction block the session opened itself, the first failure aborted it: that error is the one to report.
        return this.#fail((second as { code?: unknown }).code === '25P02' ? err : second, text, values)
      },
    )
  }

  /** Rejects with pipegres's error as postgres.js's, with this query's text, parameters and call site. */
  #fail(err: unknown, text: string, values: unknown[]): never {
    throw toPostgresError(err, this.#handler.endpoint, this.#context(text, values))
  }



  #result(core: CoreResult<unknown>, statement: Statement, state: Backend): unknown {
    const h = this.#handler
    const r = toResult(core, h.transform, this.#mode !== 'object', statement, state)
    if (this.#mode === 'raw') for (let i = 0; i < r.length; i++) r[i] = (r[i] as unknown[]).map(rawValue)
    if (this.#forEach !== undefined) {
      for (const row of r) this.#forEach(row, r)
      const out = emptyResult(statement, r.command, r.count, state)
      out.columns = r.columns
      return out
    }
    return r
  }

  async #runCursor(text: string, values: unknown[], statement: Statement, rowMode: 'array' | 'object'): Promise<unknown> {
    const h = this.#handler
    const { n, fn } = this.#cursor!
    const sent = (this.#sent = new Sent())
    const cur = h.runner.cursor(text, values, { batchSize: n, rowMode, [sentTo]: sent })
    let command = ''
    try {
      const first = cur.read()
      this.#debug(sent, text, values, first)
      for (let read = first; ; read = cur.read()) {
        const rows = await read
        if (rows.length === 0) break
        const r = toResult({ rows, fields: cur.fields, command: 'SELECT', rowCount: rows.length } as unknown as CoreResult<unknown>, h.transform, this.#mode !== 'object', statement, backendOf(sent.where))
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
        yield toResult({ rows, fields: cur.fields, command: 'SELECT', rowCount: rows.length } as unknown as CoreResult<unknown>, h.transform, this.#mode !== 'object', statement, backendOf(sent.where))
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
