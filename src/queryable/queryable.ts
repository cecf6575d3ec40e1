// One class, whole: the public query methods of every runner, which share its checks, dispatch and tracing.
import type { Request } from '../connection/request.js'
import { makeBatch, type BatchBuilder, type BatchOptions } from './batch.js'
import type { Batch } from '../query/batch.js'
import { CopyInStream, CopyOutStream, type CopyResult } from './copy-streams.js'
import { checkColumns, checkKeys, checkText, copyOptions, MESSAGE_BYTES, positiveInt, rowSource } from './call-args.js'
import type { CopyEncoder } from '../copy/incremental.js'
import { resolveCopyOptions } from '../copy/options.js'
import type { CopyRow } from '../copy/rows.js'
import { checkTableName, copyFromStatement, copyQueryBody, copyToStatement, quoteColumnName } from '../copy/statement.js'
import { ArgumentError, rejectionAtCaller, withCaller } from '../errors.js'
import type { Writer } from '../protocol/writer.js'
import { CopyIn } from '../query/copy.js'
import { CopyOut } from '../query/copy-out.js'
import { CopyRowsSink } from '../query/copy-rows.js'
import { abortErrorOf } from '../query/abort.js'
import { Cursor } from './cursor.js'
import { CursorSink, StreamSink } from '../query/consumer-sinks.js'
import { describeSink, type Description } from '../query/describe-sink.js'
import { ExtendedRequest } from '../query/extended-request.js'
import type { QuerySettings } from '../query/exchange.js'
import { RawSink } from '../query/raw-sink.js'
import { describedFirst, describeOnly, portalPolicy, rawPolicy, runToEnd } from '../query/row-sink.js'
import type { CollectInto } from '../query/collect-sink.js'
import { RawPassThrough, type RawDestination } from '../query/raw.js'
import type { Result, Row } from '../query/result.js'
import { RowStream } from './stream.js'
import { binaryDecodable } from '../wire/formats.js'
import type { SimpleQuery } from '../query/simple-query.js'
import { buildQuery } from '../query/sql-template.js'
import { active, queryChannel, sendTraced, traceQuery, type QueryTrace } from '../trace/tracing.js'
import type { Coalescer } from './coalesce.js'
export { Coalescer } from './coalesce.js'

export * from './query-options.js'
import { sentTo, collectInto, linkSentTo, type QuerySink, checkOptionKeys, copyRowMode, settingsOf, queryOptionKeys, copyFromRowsOptionKeys, copyToRowsOptionKeys, checkTypeOptions, cursorOptionKeys, describeOptionKeys, rawOptionKeys, streamOptionKeys, type CopyFromRowsOptions, type CopyOptions, type CopyRowSource, type CopyToRowsOptions, type CursorOptions, type DescribeOptions, type QueryDefaults, type QueryOptions, type RawOptions, type RouteOptions, type RawResult, type SimpleQueryOptions, type StreamOptions } from './query-options.js'
import { arm, checkQuery, declaredOf, makeSimpleQuery } from './query-requests.js'
export { makeQuery, makeSimpleQuery } from './query-requests.js'

// What every object that runs queries shares (a client, a transaction, a
// reserved pool connection, a pool): turning user calls into requests, with the
// same argument checks and options everywhere, and handing them to a sender.

const noop = (): void => {}

/**
 * COPY's row encoders and decoders (binary, text, CSV: copy/format.ts), loaded
 * by copyFromRows() and copyToRows() the first time one runs: most programs
 * never copy rows, and those that do wait on the server first anyway. The
 * statement builders and option checks stay static, for errors at the call.
 */
function copyFormats(): Promise<typeof import('../copy/format.js')> {
  return import('../copy/format.js')
}

/** A stream or cursor: what it reads from, sent by `send` on its first read, or the error to report there. */
interface Bindable<Q> {
  bind(req: Q | null, send: (req: Q) => void, error: Error | null): void
}

/**
 * The query methods, on top of a way to send requests. Subclasses say where
 * requests go (a connection, a transaction's connection, the pool).
 */
export abstract class Queryable {
  /** @internal Reads in flight that identical reads may join (the coalesce option): a client's or pool's; null where such queries run alone. */
  protected readonly coalescing: Coalescer | null
  /** @internal */
  constructor(coalescing: Coalescer | null = null) {
    this.coalescing = coalescing
  }

  /** @internal */
  protected abstract defaults(): QueryDefaults
  /** Hands a request over; it settles itself. */
  /** @internal */
  protected abstract dispatch(req: Request, route?: RouteOptions): void
  /**
   * Hands over a request that keeps its connection to itself until it is done
   * (a cursor): a pool gives it a connection of its own.
   */
  /** @internal */
  protected dispatchExclusive(req: Request & { readonly promise: Promise<unknown> }, route?: RouteOptions): void {
    this.dispatch(req, route)
  }

  /** Sends a request whose promise the caller awaits, traced when anybody listens: returns that promise. */
  private traced<T>(kind: QueryTrace['kind'], text: string, values: readonly unknown[] | undefined, req: Request, promise: Promise<T>, route?: RouteOptions, sink: QuerySink | undefined = (route as QueryOptions | undefined)?.[sentTo]): Promise<T> {
    const base = this.defaults().trace
    const send = (): void => {
      if (sink !== undefined) linkSentTo(sink, req)
      if (!req.dropped) this.send(req, route)
    }
    if (base !== undefined && active(queryChannel)) return traceQuery(base, kind, text, values, promise, send, req)
    send()
    return promise
  }

  /** Sends a request that keeps its connection (a stream, cursor or COPY), traced aside when anybody listens. */
  private aside(kind: QueryTrace['kind'], text: string, values: readonly unknown[] | undefined, req: Request & { readonly promise: Promise<unknown> }, route?: RouteOptions): void {
    const sink = (route as QueryOptions | undefined)?.[sentTo]
    sendTraced(this.defaults().trace, kind, text, values, req, () => {
      if (sink !== undefined) linkSentTo(sink, req)
      this.coalescing?.sent(req)
      this.dispatchExclusive(req, route)
    })
  }

  /** Hands a request over; one that is not a read seals the reads in flight (see Coalescer.sent). */
  private send(req: Request, route: RouteOptions | undefined): void {
    this.coalescing?.sent(req)
    this.dispatch(req, route)
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
    let req: ExtendedRequest
    try {
      const d = this.defaults()
      const vals = checkQuery(d, text, values)
      const settings = settingsOf(d, options, queryOptionKeys, 'query', true)
      const declared = declaredOf(vals)
      if (settings.coalesce === true && this.sharesReads()) {
        const shared = this.coalescing?.query(d, text, values, vals, settings, declared, options, (req) => this.dispatch(req, options))
        if (shared != null) return shared as Promise<Result<R>>
      }
      req = ExtendedRequest.query(text, vals, settings, declared)
      arm(req, d, options)
    } catch (err) {
      return Promise.reject(err as Error)
    }
    if (active(queryChannel)) return this.traced('query', text, values, req, req.promise as Promise<Result<R>>, options)
    const sink = options?.[sentTo]
    if (sink !== undefined) linkSentTo(sink, req)
    if (!req.dropped) this.send(req, options)
    return req.promise as Promise<Result<R>>
  }

  /**
   * @internal query() whose rows `into` makes its outcome of (see
   * CollectInto), and whose request and connection `sent` learns: for
   * pipegres/postgres, whose result is made once, where the rows are
   * collected, and whose options are mostly none. Never coalesced (a shared
   * read makes pipegres's results).
   */
  [collectInto]<T>(text: string, values: readonly unknown[], options: QueryOptions | undefined, into: CollectInto<T>, sent: QuerySink | undefined): Promise<T> {
    let req: ExtendedRequest<T>
    // A traced query's promise is the trace's, which follows the request's own: only an untraced one settles the caller's.
    const traced = active(queryChannel)
    try {
      const d = this.defaults()
      const vals = checkQuery(d, text, values)
      req = new ExtendedRequest(text, vals, settingsOf(d, options, queryOptionKeys, 'query'), declaredOf(vals), into, runToEnd, traced ? null : into.own)
      arm(req, d, options)
    } catch (err) {
      return Promise.reject(err as Error)
    }
    if (traced) return this.traced('query', text, values, req, req.promise, options, sent)
    if (sent !== undefined) linkSentTo(sent, req)
    if (!req.dropped) this.send(req, options)
    return req.promise
  }

  /** @internal False while reads may not be shared (a client inside a transaction). */
  protected sharesReads(): boolean {
    return true
  }

  /**
   * Runs the statements `fn` adds, `db.batch((b) => { b.query(sql, values); ... })`,
   * under one Sync: as one implicit transaction (all or nothing), or inside
   * the transaction block they run in. Resolves with their results in order;
   * rejects with the first failure (a PgError's batchIndex says which).
   */
  batch<R = Row>(fn: (b: BatchBuilder) => void, options?: BatchOptions): Promise<Result<R>[]> {
    let req: Batch | null
    try {
      req = makeBatch(this.defaults(), fn, options)
    } catch (err) {
      return Promise.reject(err as Error)
    }
    if (req === null) return Promise.resolve([])
    const promise = req.promise as Promise<Result<R>[]>
    if (active(queryChannel)) return this.traced('batch', req.text, req.values, req, promise, options)
    if (!req.dropped) this.send(req, options)
    return promise
  }

  /**
   * Describes a statement without running it: the types of its parameters
   * and its result columns, as the server infers them. Types met for the
   * first time are looked up before it resolves.
   */
  describe(text: string, options?: DescribeOptions): Promise<Description> {
    let req: ExtendedRequest<Description>
    try {
      const d = this.defaults()
      req = new ExtendedRequest(text, checkQuery(d, text, undefined), settingsOf(d, options, describeOptionKeys, 'describe'), null, describeSink, describeOnly)
      arm(req, d, options)
    } catch (err) {
      return Promise.reject(err as Error)
    }
    return this.traced('describe', text, undefined, req, req.promise, options)
  }

  /**
   * Streams the rows of a query: `for await (const row of db.stream(sql, values))`.
   * The query is sent when iteration begins; rows arrive as the server sends
   * them, and reading from the server pauses while more than `highWaterMark`
   * rows wait unread. Leaving the loop early cancels the query.
   */
  stream<R = Row>(text: string, values?: readonly unknown[], options?: StreamOptions): RowStream<R> {
    return this.consumer<RowStream<R>>(
      'stream',
      text,
      values,
      options,
      () => positiveInt(options?.highWaterMark, 'highWaterMark', 1000),
      (size) => RowStream.create<R>(size),
      (s, settings, vals) => new ExtendedRequest(text, vals, settings, declaredOf(vals), new StreamSink(s as RowStream<unknown>), describedFirst),
      streamOptionKeys,
    )
  }

  /**
   * Reads a query's rows in batches through a portal:
   * `for await (const rows of db.cursor(sql, values, { batchSize: 1000 }))`.
   * The connection is the cursor's alone until it is exhausted or closed
   * (leaving the loop early closes it).
   */
  cursor<R = Row>(text: string, values?: readonly unknown[], options?: CursorOptions): Cursor<R> {
    return this.consumer<Cursor<R>>(
      'cursor',
      text,
      values,
      options,
      () => positiveInt(options?.batchSize, 'batchSize', 1000),
      (size) => Cursor.create<R>(size),
      (c, settings, vals) => new ExtendedRequest(text, vals, settings, declaredOf(vals), new CursorSink(c as Cursor<unknown>), portalPolicy(c.batchSize)),
      cursorOptionKeys,
    )
  }

  /**
   * A stream or cursor with its request, sent when it is first read; or,
   * when the arguments are wrong, with the error its first read reports.
   */
  private consumer<C extends Bindable<ExtendedRequest>>(
    kind: 'stream' | 'cursor',
    text: string,
    values: readonly unknown[] | undefined,
    options: QueryOptions | undefined,
    size: () => number,
    create: (size: number) => C,
    request: (consumer: C, settings: QuerySettings, values: readonly unknown[]) => ExtendedRequest,
    known: ReadonlySet<string>,
  ): C {
    let c: C
    try {
      c = create(size())
    } catch (err) {
      c = create(1)
      c.bind(null, noop, err as Error)
      return c
    }
    try {
      const d = this.defaults()
      const vals = checkQuery(d, text, values)
      const req = request(c, settingsOf(d, options, known, kind), vals)
      arm(req, d, options)
      c.bind(req, (req) => this.aside(kind, text, values, req, options), null)
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
    let req: ExtendedRequest
    let sink: RawPassThrough
    try {
      const d = destination as Partial<RawDestination> | null
      if (typeof d !== 'object' || d === null || typeof d.write !== 'function' || typeof d.once !== 'function' || typeof d.off !== 'function') {
        throw new ArgumentError('queryRaw() needs a writable stream to write into')
      }
      if (options !== undefined) checkOptionKeys(options, rawOptionKeys, 'queryRaw')
      const format = options?.format ?? 'binary'
      if (format !== 'binary' && format !== 'text') throw new ArgumentError(`format must be 'binary' or 'text', not ${JSON.stringify(format)}`)
      sink = new RawPassThrough(destination, format === 'text' ? () => false : binaryDecodable)
      const { signal, timeout, prepare } = options ?? {}
      const defaults = this.defaults()
      const vals = checkQuery(defaults, text, values)
      const narrowed = { signal, timeout, prepare }
      const settings = settingsOf(defaults, narrowed, rawOptionKeys, 'queryRaw')
      // Bytes passed on as they come take no result limits: the defaults' are not for them.
      req = new ExtendedRequest(text, vals, settings.limits === undefined ? settings : { ...settings, limits: undefined }, declaredOf(vals), new RawSink(sink), rawPolicy)
      arm(req, defaults, narrowed)
    } catch (err) {
      return Promise.reject(err as Error)
    }
    sink.attach(req)
    // The sink also waits on req.promise, which would hide the caller: see rejectionAtCaller.
    return this.traced('raw', text, values, req, req.promise, options).then((r) => ({ command: r.command, rowCount: r.rowCount, bytes: sink.bytes }), rejectionAtCaller)
  }

  /**
   * COPY ... FROM STDIN: returns a writable stream that takes the COPY data
   * (text, CSV or binary, as the statement says) with backpressure.
   * `await pipeline(source, db.copyFrom('COPY t FROM STDIN (FORMAT csv)'))`
   * resolves once the server has confirmed the COPY; `stream.result` gives
   * its row count. Destroying the stream (or aborting) sends CopyFail.
   * The connection runs nothing else until the COPY ends (on a pool, the
   * COPY gets a connection of its own).
   */
  copyFrom(text: string, options?: CopyOptions): CopyInStream {
    let req: CopyIn
    try {
      const { signal, timeout } = copyOptions(options)
      req = new CopyIn(checkText(text, 'COPY statement'))
      if (signal?.aborted) req.abort(abortErrorOf(signal))
      else req.watch(signal, timeout)
    } catch (err) {
      req = new CopyIn('')
      req.abort(err as Error)
    }
    const stream = CopyInStream.create(req)
    if (!req.dropped) this.aside('copy', req.text, undefined, req)
    return stream
  }

  /**
   * Copies rows of JS values into `table` (a name in SQL syntax, quoted where
   * needed): arrays with a value per column, or objects keyed by column name,
   * from an array, an iterable or an async iterable. Values are encoded by
   * the columns' types, in binary COPY format unless `format` says otherwise.
   * A row that cannot be encoded rejects with a CopyRowError naming its row
   * and column, and the COPY is rolled back.
   */
  async copyFromRows(table: string, rows: CopyRowSource, options?: CopyFromRowsOptions): Promise<CopyResult> {
    checkTableName(table)
    const { signal, timeout } = copyOptions(options, copyFromRowsOptionKeys, 'copyFromRows')
    resolveCopyOptions(options, 'binary')
    if (signal?.aborted) throw abortErrorOf(signal)
    const source = rowSource(rows)
    let first: IteratorResult<CopyRow>
    let columns: readonly string[]
    let encoder: CopyEncoder
    try {
      first = await source.next()
      columns = await this.copyColumns(table, options?.columns, first)
      const described = await this.describe(`SELECT ${columns.map((c) => quoteColumnName(c)).join(', ')} FROM ${table}`)
      // COPY's row formats load on first use (copyFormats()).
      const { createCopyEncoder } = await copyFormats()
      encoder = createCopyEncoder(
        described.fields.map((f, i) => ({ name: columns[i]!, typeOid: f.typeOid })),
        this.defaults().catalog,
        options,
      )
    } catch (err) {
      await source.return()
      throw err
    }
    const req = new CopyIn(copyFromStatement(table, columns, options))
    req.watch(signal, timeout)
    this.aside('copy', req.text, undefined, req)
    const send = (fill: (w: Writer) => void): Promise<void> =>
      new Promise((resolve, reject) => req.writeWith(fill, (err) => (err ? reject(err) : resolve())))
    // Columns taken from the first row's keys: a later row with another key would lose that value.
    const inferred = options?.columns === undefined && !first.done && !Array.isArray(first.value) ? new Set(columns) : null
    let next = first
    try {
      let header = true
      // Rows per message, adapted so that a message holds about MESSAGE_BYTES.
      let perMessage = 64
      while (!next.done || header) {
        const batch: CopyRow[] = []
        while (!next.done && batch.length < perMessage) {
          batch.push(next.value)
          const n = source.next()
          next = n instanceof Promise ? await n : n
        }
        let bytes = 0
        await send((w) => {
          const mark = w.length
          if (header) encoder.writeHeader(w)
          for (const row of batch) {
            if (inferred !== null) checkKeys(row, inferred, encoder.rowCount + 1)
            encoder.encodeRow(w, row)
          }
          bytes = w.length - mark
        })
        header = false
        if (batch.length > 0) perMessage = Math.max(1, Math.min(16384, Math.round((batch.length * MESSAGE_BYTES) / Math.max(bytes, 1))))
        if (req.finished) break
      }
      if (!req.finished && encoder.format === 'binary') await send((w) => encoder.writeTrailer(w))
    } catch (err) {
      // A row that cannot be encoded, or a source that failed: roll the COPY back with that error.
      if (!req.finished) req.abort(err as Error)
      await source.return()
      return req.promise.then(() => {
        throw withCaller(err)
      })
    }
    if (req.finished) await source.return()
    await new Promise<void>((resolve) => req.end(() => resolve()))
    // CopyIn also waits on its own promise, which would hide the caller: see rejectionAtCaller.
    const r = await req.promise.then(undefined, rejectionAtCaller)
    return { command: r.command, rowCount: r.rowCount }
  }

  private async copyColumns(table: string, given: readonly string[] | undefined, first: IteratorResult<CopyRow>): Promise<readonly string[]> {
    if (given !== undefined) {
      checkColumns(given)
      return given
    }
    if (!first.done && first.value !== null && typeof first.value === 'object' && !Array.isArray(first.value)) {
      const keys = Object.keys(first.value)
      if (keys.length === 0) throw new ArgumentError('copyFromRows(): the first row is an object without keys; pass options.columns')
      return keys
    }
    // The columns a COPY without a column list fills: every column but the generated ones.
    const r = await this.query<{ attname: string }>(
      `SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`,
      [table],
    )
    return r.rows.map((row) => row.attname)
  }

  /**
   * COPY ... TO STDOUT: returns a readable stream of the COPY data as the
   * server sends it (Buffers, one per chunk read from the socket). A consumer
   * that lags stops the connection reading, so the server waits; destroying
   * the stream early cancels the COPY.
   */
  copyTo(text: string, options?: CopyOptions): CopyOutStream {
    const stream = CopyOutStream.create()
    let req: CopyOut
    try {
      const { signal, timeout } = copyOptions(options)
      req = new CopyOut(checkText(text, 'COPY statement'), stream)
      if (signal?.aborted) req.abort(abortErrorOf(signal))
      else req.watch(signal, timeout)
    } catch (err) {
      req = new CopyOut('', stream)
      req.abort(err as Error)
    }
    stream.attach(req)
    if (!req.dropped) this.aside('copy', req.text, undefined, req)
    return stream
  }

  /**
   * The rows of a query (SELECT, VALUES or TABLE), read through
   * `COPY (query) TO STDOUT` and decoded here: binary COPY by default, or
   * text or CSV. `for await (const row of db.copyToRows('SELECT * FROM t'))`.
   * The query is described first (one round trip) for its column types.
   * Iteration, backpressure and early exit work as in stream().
   */
  copyToRows<R = Row>(query: string, options?: CopyToRowsOptions): RowStream<R> {
    let s: RowStream<R>
    try {
      s = RowStream.create<R>(positiveInt(options?.highWaterMark, 'highWaterMark', 1000))
    } catch (err) {
      s = RowStream.create<R>(1)
      s.bind(null, noop, err as Error)
      return s
    }
    try {
      const { signal, timeout } = copyOptions(options, copyToRowsOptionKeys, 'copyToRows')
      const d = this.defaults()
      const rowMode = copyRowMode(options?.rowMode, d.rowMode)
      const types = checkTypeOptions(options?.types, 'types')
      const view = options?.types !== undefined ? d.catalog.view(types) : d.view
      const statement = copyToStatement(query, options)
      const body = copyQueryBody(query)
      const sink = new CopyRowsSink(s as RowStream<unknown>)
      const req = new CopyOut(statement, sink, 'copyToRows()')
      if (signal?.aborted) req.abort(abortErrorOf(signal))
      else req.watch(signal, timeout)
      const send = (): void => {
        void (async () => {
          const [described, { createCopyDecoder }] = await Promise.all([this.describe(`SELECT * FROM (${body}\n) AS pipegres_copy`), copyFormats()])
          const columns = described.fields.map((f) => ({ name: f.name, typeOid: f.typeOid }))
          sink.prepare(described.fields, createCopyDecoder(columns, view, { ...options, rowMode }))
        })().then(
          () => {
            if (!req.finished) this.aside('copy', req.text, undefined, req)
          },
          (err: Error) => req.fail(err, false),
        )
      }
      s.bind(req, send, null)
    } catch (err) {
      s.bind(null, noop, err as Error)
    }
    return s
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
    return this.traced('simple', text, undefined, req, req.promise as Promise<Result<R>[]>, options)
  }
}
