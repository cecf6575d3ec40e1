import { EventEmitter } from 'node:events'
import { Lane, safely } from './lane/lane.js'
import { exposeInternals } from './lane/internals.js'
import { laneStatements } from './queryable/query-requests.js'
import { checkClientOptions, clientKeys, registerCustomType, type ClientOptions } from './queryable/client-options.js'
import { resolveConfig } from './config/index.js'
import type { ConnectionConfig } from './config/types.js'
import type { Request } from './connection/request.js'
import { ArgumentError, ConnectionError, withCaller, type PgNotice } from './errors.js'
import { Listeners, type Listener, type NotificationHandler } from './lane/notify.js'
import type { Notification, TransactionStatus } from './protocol/backend.js'
import { Coalescer, Queryable, type QueryDefaults } from './queryable/queryable.js'
import { runTransaction, type Transaction, type TransactionOptions } from './queryable/transaction.js'
import { startTransaction, type StartedTransaction, type StartTransactionOptions } from './queryable/started-transaction.js'
import type { TypeCatalog } from './types/catalog.js'
import type { CustomType } from './types/custom.js'

export type { ClientOptions } from './queryable/client-options.js'
export type { QueryOptions, SimpleQueryOptions } from './queryable/queryable.js'
export type { Result, Row, Field } from './query/result.js'
export type { RowMode } from './query/result.js'

export interface ClientEvents {
  notice: [notice: PgNotice]
  notification: [notification: Notification]
  parameter: [name: string, value: string]
  /** The connection was lost; the client reconnects when queries need it. */
  disconnect: [error: Error]
  /** The client was ended (`error` null) or destroyed (`error` the reason); it takes no more queries. */
  close: [error: Error | null]
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
  readonly #lane: Lane
  readonly #emitter = new EventEmitter()
  readonly #listeners: Listeners
  readonly #catalog: TypeCatalog
  readonly #defaults: QueryDefaults
  readonly #onNotice: ((n: PgNotice) => void) | undefined
  /** Transactions of startTransaction() not over yet: told when the connection is lost. */
  readonly #started = new Set<StartedTransaction>()

  constructor(config?: string | ClientOptions) {
    super(new Coalescer())
    this.config = resolveConfig(config, { ignoreKeys: clientKeys })
    const opts: ClientOptions = typeof config === 'object' && config !== null ? config : {}
    const checked = checkClientOptions(opts, this.config)
    this.#onNotice = opts.onNotice
    this.#catalog = checked.catalog
    this.#defaults = checked.defaults
    this.#listeners = new Listeners((sql) => this.query(sql).then(() => undefined))
    this.#lane = new Lane({
      config: this.config,
      catalog: this.#defaults.catalog,
      view: this.#defaults.view,
      statement: laneStatements(this.#defaults),
      backoff: { failures: 0, nextAttemptAt: 0 },
      reconnectMaxDelay: checked.reconnectMaxDelay,
      maxPending: checked.maxPending,
      listeners: this.#listeners,
      events: {
        notice: (n) => this.#deliver('notice', n),
        notification: (n) => this.#deliver('notification', n),
        parameter: (k, v) => this.#deliver('parameter', k, v),
        disconnect: (err) => {
          // A transaction that lost its connection lets go of the client at
          // once, so that the queries waiting behind it go on.
          for (const tx of this.#started) tx.noticeLoss()
          this.#deliver('disconnect', err)
        },
        close: (err) => this.#deliver('close', err),
      },
    })
    exposeInternals(this, { kind: 'Client', config: this.config, catalog: this.#catalog, emitter: this.#emitter, lanes: () => [this.#lane] })
  }

  /** @internal */
  protected defaults(): QueryDefaults {
    return this.#defaults
  }

  /** @internal */
  protected dispatch(req: Request): void {
    this.#lane.send(req, null)
  }

  /** Reads are shared outside a transaction only: as of the last reply, and after any statement not yet answered that is no read (see Coalescer.sent). */
  /** @internal */
  protected override sharesReads(): boolean {
    return this.#lane.transactionStatus === 'I'
  }

  /**
   * Registers a codec for a type by name (resolved through the catalog the
   * first time a query meets the type) or by OID: `db.registerType({ name:
   * 'hstore', parse, serialize })`. Applies to statements prepared from now on.
   */
  registerType(custom: CustomType): void {
    registerCustomType(this.#catalog, custom)
  }

  // --- events -----------------------------------------------------------------

  on<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this {
    this.#emitter.on(event, listener as (...a: unknown[]) => void)
    return this
  }

  once<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this {
    this.#emitter.once(event, listener as (...a: unknown[]) => void)
    return this
  }

  off<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this {
    this.#emitter.off(event, listener as (...a: unknown[]) => void)
    return this
  }

  /** Runs user callbacks so that a throwing listener cannot break the connection's reading loop. */
  #deliver<K extends keyof ClientEvents>(event: K, ...args: ClientEvents[K]): void {
    safely(() => {
      if (event === 'notice') this.#onNotice?.(args[0] as PgNotice)
      this.#emitter.emit(event, ...args)
    })
  }

  // --- the connection ---------------------------------------------------------

  /** Opens the connection (if it is not open). Resolves with the client once the server is ready. */
  async connect(): Promise<this> {
    try {
      await this.#lane.connect()
    } catch (err) {
      throw withCaller(err)
    }
    return this
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
    // Reads issued from now on run after the transaction: they join none issued before it.
    this.coalescing!.seal()
    return runTransaction(this.#lane, this.#defaults, options, fn)
  }

  /**
   * Begins a transaction now and resolves with it, for its owner to end with
   * commit() or rollback() (`await using` rolls it back unless committed).
   * BEGIN is pipelined with its first queries. Until it ends, no query from
   * outside it is sent on the connection: they wait, as behind begin().
   */
  async startTransaction(options?: StartTransactionOptions): Promise<StartedTransaction> {
    this.coalescing!.seal()
    const tx = await startTransaction(this.#lane, this.#defaults, options, (ended) => void this.#started.delete(ended))
    if (tx.state === 'active') this.#started.add(tx)
    return tx
  }

  // --- LISTEN / NOTIFY --------------------------------------------------------

  /**
   * Listens to a channel (any name: it is quoted). Resolves once the server
   * listens, with a handle whose unlisten() stops it. After a reconnect every
   * channel is listened to again.
   */
  listen(channel: string, handler: NotificationHandler): Promise<Listener> {
    return this.#listeners.listen(channel, handler)
  }

  /** Sends a notification on a channel, with an optional payload. */
  async notify(channel: string, payload?: string): Promise<void> {
    if (typeof channel !== 'string') throw new ArgumentError('notify() needs a channel name')
    await this.query('SELECT pg_notify($1, $2)', [channel, payload ?? null])
  }

  // --- shutdown ---------------------------------------------------------------

  /** Finishes every query already issued, then closes the connection (Terminate). Later queries are rejected. */
  end(): Promise<void> {
    return this.#lane.end()
  }

  /** Closes at once: every pending query is rejected with `reason` (or a ConnectionError). */
  destroy(reason?: Error): void {
    this.#lane.destroy(reason ?? new ConnectionError('PG_CONNECTION_ENDED', 'the client was destroyed'))
  }

  /** `await using db = await connect(url)`: end() when the scope exits, the queries already issued finishing first. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.end()
  }

  // --- state ------------------------------------------------------------------

  /** Server settings reported by the server (server_version, TimeZone, ...), kept current. */
  get serverParameters(): Readonly<Record<string, string>> {
    return this.#lane.serverParameters
  }

  /** The backend process id of the current connection (0 when not connected). */
  get processId(): number {
    return this.#lane.processId
  }

  /** 'I' idle, 'T' in a transaction, 'E' in a failed transaction: as of the last reply received. */
  get transactionStatus(): TransactionStatus {
    return this.#lane.transactionStatus
  }

  /** The protocol version in use, '3.0' or '3.2'. */
  get protocolVersion(): string {
    return `3.${this.#lane.protocolMinor}`
  }

  /** True when the connection is encrypted with TLS. */
  get tls(): boolean {
    return this.#lane.tls
  }

  /** True when a connection is open and ready. */
  get connected(): boolean {
    return this.#lane.connected
  }

  /** True once end() or destroy() was called. */
  get closed(): boolean {
    return this.#lane.closed
  }

  /** Queries written to the server and not yet answered, plus those waiting to be written. */
  get pendingQueries(): number {
    return this.#lane.pendingQueries
  }

  /** Queries that failed with query_canceled although nobody cancelled them (see the README on cancellation); stays 0. */
  get cancelMisfires(): number {
    return this.#lane.cancelMisfires
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
