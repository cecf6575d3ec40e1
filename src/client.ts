import { EventEmitter } from 'node:events'
import { resolveConfig, type ConnectOptions } from './config/index.js'
import type { ConnectionConfig } from './config/types.js'
import { openConnection } from './connection/connect.js'
import type { Connection } from './connection/connection.js'
import type { Request } from './connection/request.js'
import { ArgumentError, ConnectionError, withCaller, type PgNotice } from './errors.js'
import { Listeners, type Listener, type NotificationHandler } from './notify.js'
import type { Notification, TransactionStatus } from './protocol/backend.js'
import type { RowMode } from './query/extended-query.js'
import { Session } from './query/session.js'
import { replicationRefusal } from './replication-guard.js'
import { replicate, subscribe, type ReplicateOptions, type SubscribeOptions, type Subscription, type WalStream } from './subscription.js'
import { checkRowMode, checkTypeOptions, makeQuery, Queryable, type QueryDefaults } from './queryable.js'
import { runTransaction, type Transaction, type TransactionOptions } from './transaction.js'
import { active, connectChannel, noteSent, sending, traceBase, traceConnect, type TracingOptions } from './tracing.js'
import { TypeCatalog } from './types/catalog.js'
import { defaultTypeOptions, type TypeOptions } from './types/codec.js'
import type { CustomType } from './types/custom.js'
import type { TypeView } from './types/view.js'

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
}

export const clientKeys = ['onNotice', 'rowMode', 'types', 'customTypes', 'queryTimeout', 'reconnectMaxDelay', 'maxPending', 'textResults', 'traceParameters'] as const

export type { QueryOptions, SimpleQueryOptions } from './queryable.js'
export type { Result, Row, Field } from './query/result.js'
export type { RowMode } from './query/extended-query.js'

export interface ClientEvents {
  notice: [notice: PgNotice]
  notification: [notification: Notification]
  parameter: [name: string, value: string]
  /** The connection was lost; the client reconnects when queries need it. */
  disconnect: [error: Error]
  /** The client was ended (`error` null) or destroyed (`error` the reason); it takes no more queries. */
  close: [error: Error | null]
}

const enum State {
  /** No connection; one is opened when a query needs it. */
  Idle,
  Connecting,
  Connected,
  /** end() or destroy(): no more queries. */
  Closed,
}

const BACKOFF_BASE_MS = 100
/** Linux's highest possible pid (pid_max is at most 2^22); other systems stay lower. */
const MAX_PLAUSIBLE_PID = 4_194_304
// A connection that lasted this long was of use, whatever it answered (see onConnectionClosed).
const STABLE_MS = 1000

/** The backoff between connection attempts: a client's own, or shared by the connections of a pool. */
export interface Backoff {
  /** Failed attempts, and connections lost soon after opening, since the last connection that lasted. */
  failures: number
  /** performance.now() before which no attempt is made (connect() excepted). */
  nextAttemptAt: number
}

/**
 * A PostgreSQL connection that pipelines every query: each query is written the
 * moment it is issued and replies are matched to queries in order, so any number
 * can be in flight at once. The connection opens on connect() or on the first
 * query; if it is lost, the queries in flight on it fail and later queries open
 * a new one, with backoff between failed attempts.
 */
export class Client extends Queryable {
  readonly config: ConnectionConfig
  private state = State.Idle
  private conn: Connection | null = null
  private connecting: Promise<void> | null = null
  /** Requests waiting for a connection. */
  private waiting: Request[] = []
  /** Requests from outside the current holder (transaction, reservation), waiting for it to finish. */
  private held: Request[] = []
  /** Who has the connection to itself, and which connection that is once known. */
  private holder: object | null = null
  private holderConn: Connection | null = null
  /** Which holder issued each request; requests of nobody's are absent. */
  private readonly owners = new WeakMap<Request, object>()
  private closeError: Error | null = null
  private ending: Promise<void> | null = null
  private readonly backoff: Backoff
  private connectedAt = 0
  /** Requests the client sent on its own when the current connection opened (re-LISTENs). */
  private ownRequests = 0
  /** cancelMisfires of connections already closed. */
  private pastMisfires = 0
  private readonly emitter = new EventEmitter()
  private readonly listeners: Listeners
  private readonly catalog: TypeCatalog
  private readonly view: TypeView
  private readonly queryDefaults: QueryDefaults
  private readonly reconnectMaxDelay: number
  private readonly maxPending: number
  private readonly onNotice: ((n: PgNotice) => void) | undefined
  /**
   * Set by a pool: when the connection is lost or cannot be opened, the
   * requests that never reached the server go back to the pool (to send on
   * another connection) instead of waiting for this client to reconnect.
   */
  private readonly orphans: ((reqs: Request[], err: Error) => void) | null

  constructor(
    config?: string | ClientOptions,
    shared?: { catalog: TypeCatalog; config: ConnectionConfig; orphans?: (reqs: Request[], err: Error) => void; backoff?: Backoff },
  ) {
    super()
    this.config = shared?.config ?? resolveConfig(config, { ignoreKeys: clientKeys })
    this.orphans = shared?.orphans ?? null
    this.backoff = shared?.backoff ?? { failures: 0, nextAttemptAt: 0 }
    const opts: ClientOptions = typeof config === 'object' && config !== null ? config : {}
    const rowMode = opts.rowMode !== undefined ? checkRowMode(opts.rowMode) : 'object'
    if (opts.onNotice !== undefined && typeof opts.onNotice !== 'function') throw new ArgumentError('onNotice must be a function')
    this.onNotice = opts.onNotice
    if (opts.queryTimeout !== undefined && (typeof opts.queryTimeout !== 'number' || !(opts.queryTimeout > 0))) {
      throw new ArgumentError('queryTimeout must be a positive number of milliseconds')
    }
    if (opts.reconnectMaxDelay !== undefined && (typeof opts.reconnectMaxDelay !== 'number' || !(opts.reconnectMaxDelay >= 0))) {
      throw new ArgumentError('reconnectMaxDelay must be a number of milliseconds')
    }
    this.reconnectMaxDelay = opts.reconnectMaxDelay ?? 5000
    if (opts.maxPending !== undefined && (typeof opts.maxPending !== 'number' || !Number.isInteger(opts.maxPending) || opts.maxPending < 1)) {
      throw new ArgumentError('maxPending must be a positive integer')
    }
    this.maxPending = opts.maxPending ?? Infinity
    this.catalog = shared?.catalog ?? new TypeCatalog({ ...defaultTypeOptions, ...checkTypeOptions(opts.types, 'types') }, opts.textResults === true)
    if (opts.customTypes !== undefined) {
      if (!Array.isArray(opts.customTypes)) throw new ArgumentError('customTypes must be an array')
      for (const t of opts.customTypes) this.registerType(t)
    }
    this.view = this.catalog.view()
    this.queryDefaults = { rowMode, prepare: this.config.prepare, queryTimeout: opts.queryTimeout, catalog: this.catalog, view: this.view, trace: traceBase(this.config, opts.traceParameters === true) }
    this.listeners = new Listeners((sql) => this.query(sql).then(() => undefined))
  }

  protected defaults(): QueryDefaults {
    return this.queryDefaults
  }

  /** The query defaults a transaction on this client uses. */
  defaultsForTransaction(): QueryDefaults {
    return this.queryDefaults
  }

  /**
   * Registers a codec for a type by name (resolved through the catalog the
   * first time a query meets the type) or by OID: `db.registerType({ name:
   * 'hstore', parse, serialize })`. Applies to statements prepared from now on.
   */
  registerType(custom: CustomType): void {
    if (typeof custom !== 'object' || custom === null) throw new ArgumentError('registerType needs a type description')
    if (custom.name === undefined && custom.oid === undefined) throw new ArgumentError('registerType needs a name or an oid')
    for (const fn of ['parse', 'serialize', 'decodeBinary', 'encodeBinary'] as const) {
      if (custom[fn] !== undefined && typeof custom[fn] !== 'function') throw new ArgumentError(`registerType: ${fn} must be a function`)
    }
    this.catalog.register(custom)
  }

  // --- events -----------------------------------------------------------------

  on<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this {
    this.emitter.on(event, listener as (...a: unknown[]) => void)
    return this
  }

  once<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this {
    this.emitter.once(event, listener as (...a: unknown[]) => void)
    return this
  }

  off<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this {
    this.emitter.off(event, listener as (...a: unknown[]) => void)
    return this
  }

  /** Runs user callbacks so that a throwing listener cannot break the connection's reading loop. */
  private deliver<K extends keyof ClientEvents>(event: K, ...args: ClientEvents[K]): void {
    try {
      if (event === 'notice') this.onNotice?.(args[0] as PgNotice)
      this.emitter.emit(event, ...args)
    } catch (err) {
      queueMicrotask(() => {
        throw err
      })
    }
  }

  // --- the connection ---------------------------------------------------------

  /** Opens the connection (if it is not open). Resolves with the client once the server is ready. */
  async connect(): Promise<this> {
    if (this.state === State.Closed) throw this.closedError()
    if (this.state !== State.Connected) {
      this.startConnecting(true)
      await this.connecting
      // The attempt's own error (a PgError for a wrong password, say), not a wrapper.
      if (!this.isConnected()) throw withCaller(this.closeError ?? this.closedError())
    }
    return this
  }

  private startConnecting(now: boolean): void {
    if (this.connecting !== null || this.state === State.Closed || this.state === State.Connected) return
    this.state = State.Connecting
    const wait = now ? 0 : Math.max(0, this.backoff.nextAttemptAt - performance.now())
    this.connecting = (async () => {
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      if (this.state === State.Closed) {
        // destroy() came during the backoff wait.
        this.connecting = null
        return
      }
      let conn: Connection
      try {
        const open = (): Promise<Connection> =>
          openConnection(this.config, {
            notice: (n) => this.deliver('notice', n),
            notification: (n) => this.onNotification(n),
            parameterStatus: (k, v) => this.deliver('parameter', k, v),
            close: (err, unsent) => this.onConnectionClosed(conn, err, unsent),
          })
        conn = await (active(connectChannel) ? traceConnect(this.config, open) : open())
        if (conn.closed) throw conn.failure ?? new ConnectionError('PG_CONNECTION_CLOSED', 'the connection closed as soon as it opened')
      } catch (err) {
        this.connecting = null
        this.connectFailed(err as Error)
        return
      }
      this.connecting = null
      this.onConnected(conn)
    })()
  }

  private isConnected(): boolean {
    return this.state === State.Connected
  }

  private onConnected(conn: Connection): void {
    if (this.state === State.Closed) {
      // destroy() came while connecting.
      conn.destroy(this.closeError ?? new ConnectionError('PG_CONNECTION_ENDED', 'the client was destroyed'))
      return
    }
    this.connectedAt = performance.now()
    this.closeError = null
    const session = new Session(
      this.catalog,
      this.view,
      this.config.prepare,
      this.config.statementCacheSize,
      (req) => this.sendInternal(req),
      () => Number.parseInt(conn.serverParameters.server_version ?? '0', 10),
      (req) => this.resend(req),
    )
    // A backend's pid is a real process id: on Linux at most 2^22, and
    // positive. Poolers (PgBouncer, Supavisor) make up a random 32-bit key
    // instead, nearly always outside that range: such a connection uses
    // unnamed statements from the start. Finding out from a lost statement
    // instead costs an error in a pipeline, and PgBouncer before 1.21 can
    // drop replies that follow an error in transaction mode.
    if (!(conn.processId > 0 && conn.processId <= MAX_PLAUSIBLE_PID)) session.namedStatementsLost()
    conn.attachment = session
    this.conn = conn
    this.state = State.Connected
    // Channels listened to on the lost connection are listened to again first.
    const relisten = this.listeners.relistenStatements()
    this.ownRequests = relisten.length
    for (const sql of relisten) {
      const req = makeQuery(this.queryDefaults, sql, undefined, undefined)
      req.promise.catch(() => {
        // A failed re-LISTEN shows as missing notifications; nothing waits on it.
      })
      conn.send(req)
    }
    const waiting = this.waiting
    this.waiting = []
    for (const req of waiting) this.toConnection(req)
    if (this.ending !== null && this.waiting.length === 0) void conn.end()
  }

  private backOff(): void {
    const b = this.backoff
    b.failures++
    const delay = Math.min(this.reconnectMaxDelay, BACKOFF_BASE_MS * 2 ** (b.failures - 1))
    // Jitter spreads the attempts of many clients that lost the same server.
    b.nextAttemptAt = performance.now() + delay * (0.5 + Math.random() / 2)
  }

  private connectFailed(err: Error): void {
    this.backOff()
    this.closeError = err
    if (this.state !== State.Closed) this.state = State.Idle
    const waiting = this.waiting
    this.waiting = []
    if (this.orphans !== null) {
      const mine = waiting.filter((req) => this.owners.get(req) === undefined)
      for (const req of waiting) if (this.owners.get(req) !== undefined) req.fail(err, false)
      this.orphans(mine, err)
      return
    }
    for (const req of waiting) req.fail(err, false)
    // Listened channels come back only with a connection: keep trying, backing off.
    if (this.listeners.size > 0 && this.state !== State.Closed && this.ending === null) this.startConnecting(false)
  }

  private onConnectionClosed(conn: Connection, err: Error | null, unsent: Request[]): void {
    if (this.conn !== conn) {
      for (const req of unsent) req.fail(err ?? this.closedError(), false)
      return
    }
    this.conn = null
    this.pastMisfires += conn.cancelMisfires
    if (this.state === State.Closed) {
      for (const req of unsent) req.fail(err ?? this.closedError(), false)
      this.deliver('close', this.closeError)
      return
    }
    this.state = State.Idle
    this.closeError = err
    if (err !== null) {
      // A connection lost before it was of any use (it answered none of the
      // queries sent to it, and did not last) counts as a failed attempt:
      // were the backoff to start over whenever a connection opened, a
      // server (or a path) that accepts connections and drops them at once
      // would be reconnected to in a tight loop, hundreds of times a second,
      // by a listening client reconnecting on its own or by a pool.
      if (conn.completedRequests > this.ownRequests || performance.now() - this.connectedAt >= STABLE_MS) {
        this.backoff.failures = 0
        this.backoff.nextAttemptAt = 0
      } else this.backOff()
      this.deliver('disconnect', err)
    }
    // Requests that never reached the server go to the next connection, except
    // a holder's: its transaction died with the connection.
    const lost = err ?? new ConnectionError('PG_CONNECTION_CLOSED', 'the connection was closed')
    const again: Request[] = []
    for (const req of unsent) {
      const owner = this.owners.get(req)
      if (owner !== undefined && owner === this.holder) req.fail(lost, false)
      else again.push(req)
    }
    if (this.orphans !== null) {
      this.orphans(again, lost)
      return
    }
    // A client that only listens reconnects on its own: nothing else would
    // bring its channels back.
    if (again.length > 0 || this.listeners.size > 0) {
      this.waiting.unshift(...again)
      this.startConnecting(false)
    }
  }

  private closedError(): Error {
    const e = this.closeError
    if (e === null) return new ConnectionError('PG_CONNECTION_ENDED', 'the client was ended')
    if (e instanceof ConnectionError) return new ConnectionError(e.code, e.message, { cause: e })
    return new ConnectionError('PG_CONNECTION_CLOSED', `the connection is closed: ${e.message}`, { cause: e })
  }

  // --- sending ----------------------------------------------------------------

  protected dispatch(req: Request): void {
    this.send(req, null)
  }

  /** Sends a request on behalf of `owner` (a transaction or reservation holding the connection), or of nobody. */
  send(req: Request, owner: object | null): void {
    const refused = replicationRefusal(this.config, req)
    if (refused !== null) return req.fail(refused, false)
    if (this.state === State.Closed || (this.ending !== null && owner === null)) {
      req.fail(this.closedError(), false)
      return
    }
    // The statements of whoever holds the connection (a transaction's COMMIT or
    // ROLLBACK, say) are never refused: that would leave its outcome in doubt.
    if (owner === null && this.maxPending !== Infinity) {
      const pending = this.pendingQueries
      if (pending >= this.maxPending) {
        req.fail(new ArgumentError(`query refused: ${pending} queries are already pending on this client (maxPending is ${this.maxPending})`), false)
        return
      }
    }
    if (owner !== null) this.owners.set(req, owner)
    if (sending !== null) noteSent(this.conn?.host, this.pendingQueries)
    this.route(req)
  }

  /** Sends an accepted request: held back while someone else holds the connection, queued while connecting. */
  private route(req: Request): void {
    if (this.state === State.Closed) {
      req.fail(this.closedError(), false)
      return
    }
    if (this.holder !== null && this.owners.get(req) !== this.holder) {
      this.held.push(req)
      return
    }
    if (this.state === State.Connected) this.toConnection(req)
    else {
      this.waiting.push(req)
      this.startConnecting(false)
    }
  }

  private toConnection(req: Request): void {
    const conn = this.conn!
    const owner = this.owners.get(req)
    if (owner !== undefined && owner === this.holder) {
      // A holder's requests stay on the connection its transaction began on.
      if (this.holderConn === null) this.holderConn = conn
      else if (this.holderConn !== conn) {
        req.fail(new ConnectionError('PG_CONNECTION_CLOSED', 'the connection this transaction was running on was lost'), false)
        return
      }
    }
    conn.send(req)
  }

  /** Requests the client makes for queries already in flight (type lookups): never refused by end(). */
  private sendInternal(req: Request): void {
    if (this.conn !== null && !this.conn.closed) this.conn.send(req, true)
    else req.fail(this.closedError(), false)
  }

  /** A request sent again by its connection's session: as its owner sent it, accepted even while ending (it was issued before). */
  private resend(req: Request): void {
    const owner = this.owners.get(req)
    if (this.holder !== null && owner !== this.holder) {
      this.held.push(req)
      return
    }
    this.sendInternal(req)
  }

  /**
   * Learns whether the connection reaches the server itself or a pooler: the
   * backend's own pid equals the one from BackendKeyData only on a direct
   * connection (a pooler makes up its own cancel key). Asked once, the first
   * time the connection is held for a transaction or reservation, where it
   * matters (see ExtendedQuery.encode).
   */
  private probePooling(): void {
    const conn = this.conn
    const session = conn?.attachment as Session | undefined
    if (conn === null || conn.closed || session === undefined || session.pooling !== 'unknown' || session.probing) return
    session.probing = true
    const req = makeQuery(this.queryDefaults, 'SELECT pg_backend_pid() AS pid', undefined, { prepare: false, rowMode: 'array' })
    req.promise.then(
      (r) => {
        if (session.pooling === 'unknown') session.pooling = Number((r.rows[0] as unknown[] | undefined)?.[0]) === conn.processId ? 'direct' : 'pooled'
      },
      () => {
        session.probing = false
      },
    )
    conn.send(req, true)
  }

  /**
   * Gives the connection to `holder` alone: requests from anybody else wait
   * until release(). Resolves once any previous holder has released it.
   */
  async hold(holder: object): Promise<void> {
    while (this.holder !== null) await new Promise<void>((r) => this.holdWaiters.push(r))
    if (this.state === State.Closed) throw this.closedError()
    this.holder = holder
    this.holderConn = null
    this.probePooling()
  }

  private holdWaiters: (() => void)[] = []

  release(holder: object): void {
    if (this.holder !== holder) return
    this.holder = null
    this.holderConn = null
    const next = this.holdWaiters.shift()
    if (next !== undefined) {
      // The next holder takes over before the outside requests held meanwhile.
      next()
      return
    }
    // Held requests were accepted before any end(), so end() does not refuse them.
    const held = this.held
    this.held = []
    for (const req of held) this.route(req)
  }

  /** True when `holder` holds the connection and it is the same connection its first request went on. */
  holds(holder: object): boolean {
    return this.holder === holder && (this.holderConn === null || this.holderConn === this.conn)
  }

  // --- transactions -----------------------------------------------------------

  /**
   * Runs `fn` in a transaction: BEGIN, then fn's queries (pipelined), then
   * COMMIT; ROLLBACK if fn throws (the error is rethrown). No query from
   * outside the transaction is sent on the connection while it runs.
   */
  begin<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>
  begin<T>(options: TransactionOptions, fn: (tx: Transaction) => Promise<T>): Promise<T>
  begin<T>(a: TransactionOptions | ((tx: Transaction) => Promise<T>), b?: (tx: Transaction) => Promise<T>): Promise<T> {
    const [options, fn] = typeof a === 'function' ? [{}, a] : [a, b]
    if (typeof fn !== 'function') return Promise.reject(new ArgumentError('begin() needs a function to run in the transaction'))
    return runTransaction(this, options, fn)
  }

  // --- LISTEN / NOTIFY --------------------------------------------------------

  /**
   * Listens to a channel (any name: it is quoted). Resolves once the server
   * listens, with a handle whose unlisten() stops it. After a reconnect every
   * channel is listened to again.
   */
  listen(channel: string, handler: NotificationHandler): Promise<Listener> {
    return this.listeners.listen(channel, handler)
  }

  /** Sends a notification on a channel, with an optional payload. */
  async notify(channel: string, payload?: string): Promise<void> {
    if (typeof channel !== 'string') throw new ArgumentError('notify() needs a channel name')
    await this.query('SELECT pg_notify($1, $2)', [channel, payload ?? null])
  }

  private onNotification(n: Notification): void {
    this.listeners.deliver(n)
    this.deliver('notification', n)
  }

  // --- replication (see subscription.ts) ----------------------------------------

  /** A logical change stream (pgoutput) on a replication connection of its own, made from this client's settings. */
  subscribe(options: SubscribeOptions): Subscription {
    return subscribe(this.config, this.catalog, options)
  }

  /** Raw WAL (physical) or a logical slot's plugin output, on a replication connection of its own. */
  replicate(options: ReplicateOptions): WalStream {
    return replicate(this.config, this.catalog, options)
  }

  // --- shutdown ---------------------------------------------------------------

  /** Finishes every query already issued, then closes the connection (Terminate). Later queries are rejected. */
  end(): Promise<void> {
    if (this.ending !== null) return this.ending
    if (this.state === State.Closed) return Promise.resolve()
    this.ending = (async () => {
      while (this.connecting !== null || this.held.length > 0 || this.holder !== null) {
        if (this.connecting !== null) await this.connecting
        else await new Promise((r) => setTimeout(r, 5))
      }
      const conn = this.conn
      this.state = State.Closed
      if (conn !== null) await conn.end()
      else this.deliver('close', null)
    })()
    return this.ending
  }

  /** Closes at once: every pending query is rejected with `reason` (or a ConnectionError). */
  destroy(reason?: Error): void {
    if (this.state === State.Closed && this.conn === null) return
    const err = reason ?? new ConnectionError('PG_CONNECTION_ENDED', 'the client was destroyed')
    this.state = State.Closed
    this.closeError = err
    for (const req of [...this.waiting, ...this.held]) req.fail(err, false)
    this.waiting = []
    this.held = []
    for (const w of this.holdWaiters.splice(0)) w()
    const conn = this.conn
    if (conn !== null) conn.destroy(err)
    else this.deliver('close', err)
  }

  // --- state ------------------------------------------------------------------

  /** Server settings reported by the server (server_version, TimeZone, ...), kept current. */
  get serverParameters(): Readonly<Record<string, string>> {
    return this.conn?.serverParameters ?? {}
  }

  /** The backend process id of the current connection (0 when not connected). */
  get processId(): number {
    return this.conn?.processId ?? 0
  }

  /** 'I' idle, 'T' in a transaction, 'E' in a failed transaction: as of the last reply received. */
  get transactionStatus(): TransactionStatus {
    return this.conn?.transactionStatus ?? 'I'
  }

  /** The protocol version in use, '3.0' or '3.2'. */
  get protocolVersion(): string {
    return `3.${this.conn?.protocolMinor ?? 0}`
  }

  /** True when the connection is encrypted with TLS. */
  get tls(): boolean {
    return this.conn?.tls ?? false
  }

  /** True when a connection is open and ready. */
  get connected(): boolean {
    return this.state === State.Connected
  }

  /** True once end() or destroy() was called. */
  get closed(): boolean {
    return this.state === State.Closed || this.ending !== null
  }

  /** Queries written to the server and not yet answered, plus those waiting to be written. */
  get pendingQueries(): number {
    return (this.conn?.inflightCount ?? 0) + (this.conn?.pendingCount ?? 0) + this.waiting.length + this.held.length
  }

  /** Queries that failed with query_canceled although nobody cancelled them (see the README on cancellation); stays 0. */
  get cancelMisfires(): number {
    return this.pastMisfires + (this.conn?.cancelMisfires ?? 0)
  }
}

/** Connects and resolves with a ready Client. */
export function connect(config?: string | ClientOptions): Promise<Client> {
  let client: Client
  try {
    client = new Client(config)
  } catch (err) {
    return Promise.reject(err as Error)
  }
  return client.connect()
}
