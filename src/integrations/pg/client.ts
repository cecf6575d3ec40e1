import { EventEmitter } from 'node:events'
import { ConnectionError, Client as CoreClient, type Notification, type PgNotice } from '../../index.js'
import { ClientBase } from './client-base.js'
import { mapConfig, type PgClientConfig } from './config.js'
import { pgQuery, promiseWrapper, refuseQuery, Session, type QueryHost } from './query.js'
import { lossError, toPgError, toPgNotice } from './result.js'
import { TypeOverrides } from './types.js'
import { safeSsl } from './secrets.js'

type Done = (err?: Error | null) => void

/**
 * pg's Client over one pipegres connection. Queries are pipelined on it
 * (pg would queue them and send one at a time), in the order they were
 * issued, so a client used for a transaction behaves as with pg.
 */
export class Client extends ClientBase {
  readonly user: string | undefined
  readonly database: string | undefined
  readonly port: number
  readonly host: string
  declare readonly password: unknown
  /** pg's resolved settings (user, database, port, host, ssl); the password and TLS secrets not enumerable. */
  readonly connectionParameters: { user: string | undefined; database: string | undefined; port: number; host: string; ssl: unknown; password?: unknown }
  /** Emits 'parameterStatus' ({ parameterName, parameterValue }) for every server parameter, as pg's connection object does. */
  readonly connection = new EventEmitter()
  private readonly core: CoreClient
  private readonly session: Session
  protected readonly overrides: TypeOverrides
  private connectPromise: Promise<void> | null = null
  private ended: Promise<void> | null = null
  private dead: Error | null = null
  private active = 0
  /** pg's Promise option: the promises returned are of that library (bluebird, say). */
  private readonly wrap: <T>(v: T) => T
  _connected = false
  /** pg's pipeline mode: queries are pipelined either way here; it changes what end() does with queries in flight, and refuses portals. */
  readonly pipeline: boolean
  _ending = false
  _queryable = true

  constructor(config?: string | PgClientConfig) {
    super()
    const mapped = mapConfig(config, { textResults: true, rowMode: 'array' })
    this.user = mapped.user
    this.database = mapped.database
    this.port = mapped.port
    this.host = mapped.host
    // pg's connectionParameters, and its password: both read by name, neither shown by inspect() or JSON.
    Object.defineProperty(this, 'password', { value: mapped.password, enumerable: false, writable: true, configurable: true })
    this.connectionParameters = { user: this.user, database: this.database, port: this.port, host: this.host, ssl: safeSsl(mapped.ssl) }
    Object.defineProperty(this.connectionParameters, 'password', { value: mapped.password, enumerable: false })
    this.overrides = new TypeOverrides(mapped.types)
    this.wrap = promiseWrapper(typeof config === 'object' && config !== null ? config.Promise : undefined)
    this.pipeline = typeof config === 'object' && config !== null && (config as PgClientConfig).pipeline === true
    this.hooks.pipeline = this.pipeline
    this.session = new Session(this.overrides, mapped.prepare, true, () => this.core.transactionStatus !== 'I')
    this.core = new CoreClient({ ...mapped.options, onNotice: (n: PgNotice) => this.emit('notice', toPgNotice(n)) })
    this.core.on('notification', (n: Notification) => this.emit('notification', { ...n, name: 'notification', length: 0 }))
    this.core.on('parameter', (name, value) => this.connection.emit('parameterStatus', { parameterName: name, parameterValue: value }))
    this.core.on('disconnect', (err) => this.lost(err))
    // pg's connection reports a broken socket with 'error': code (and tests) that emit one expect the client to be lost.
    this.connection.on('error', (err: Error) => this.lost(err))
  }

  /** The connection is gone: like pg, this client is done (pipegres would reconnect; pg applications expect it not to). */
  private lost(err: Error): void {
    if (this.dead !== null || this._ending || !this._connected) return
    this.dead = err
    this._queryable = false
    const busy = this.core.pendingQueries > 0
    // Once pipegres is done with the loss (it re-queues what was never sent, for a new connection): then the client
    // is closed, failing those too.
    process.nextTick(() => this.core.destroy(err))
    // pg reports a lost connection on the query in flight, else on the client.
    if (!busy) this.emit('error', lossError(err))
    this.emit('end')
  }

  get processID(): number | null {
    return this.core.processId || null
  }

  get secretKey(): null {
    return null
  }

  connect(): Promise<this>
  connect(callback: Done): undefined
  connect(callback?: Done): Promise<this> | undefined {
    if (this.connectPromise === null) {
      this.connectPromise = this.core.connect().then(
        () => {
          this._connected = true
          // Sequelize reads server_version and standard_conforming_strings this way, during connect.
          for (const [name, value] of Object.entries(this.core.serverParameters)) {
            this.connection.emit('parameterStatus', { parameterName: name, parameterValue: value })
          }
          this.emit('connect')
        },
        (err: unknown) => {
          // end() while connecting: pg lets the attempt go quietly.
          if (this._ending) return
          this._queryable = false
          // pipegres would keep trying to connect for later queries; a pg client that failed to connect stays failed.
          this.dead = err as Error
          this.core.destroy(err as Error)
          throw toPgError(err)
        },
      )
    } else {
      const again = new Error('Client has already been connected. You cannot reuse a client.')
      if (callback !== undefined) {
        process.nextTick(() => callback(again))
        return undefined
      }
      return this.wrap(Promise.reject(again))
    }
    if (callback !== undefined) {
      this.connectPromise.then(
        () => callback(null),
        (err: Error) => callback(err),
      )
      return undefined
    }
    return this.wrap(this.connectPromise.then(() => this))
  }

  /** pg's query(text | config | Query | submittable, values?, callback?). */
  query(...args: unknown[]): any {
    if (this.dead !== null || this._ending) {
      const err = new Error(this.dead !== null ? 'Client has encountered a connection error and is not queryable' : 'Client was closed and is not queryable')
      return this.wrap(refuseQuery(args, err))
    }
    this.active++
    return this.wrap(pgQuery(this.session, this.core, args, undefined, this.hooks))
  }

  /** pg's 'drain': emitted when no query is left, after the last one's callback, promise or events. */
  private readonly hooks: QueryHost = {
    settled: () => {
      if (--this.active === 0) this.emit('drain')
    },
    // pg's pipeline mode gives up the connection under a query that timed out; the queries behind it fail.
    timedOut: () => {
      if (this.pipeline) this.lost(new ConnectionError('PG_CONNECTION_CLOSED', 'the connection was closed after a query timed out in pipeline mode'))
    },
  }

  /** 'I' idle, 'T' in a transaction, 'E' in a failed transaction; null before connecting. */
  getTransactionStatus(): string | null {
    return this._connected ? this.core.transactionStatus : null
  }

  end(): Promise<void>
  end(callback: Done): undefined
  end(callback?: Done): Promise<void> | undefined {
    if (this.ended === null) {
      this._ending = true
      this._queryable = false
      let closing: Promise<void>
      if (this.dead !== null) closing = Promise.resolve()
      else if (this.core.pendingQueries > 0 && !this.pipeline) {
        // pg's end() closes the connection under the queries in flight, which fail; pipegres's would let them finish.
        this.core.destroy(new Error('Connection terminated'))
        // 'end' follows the failed queries' callbacks, as in pg.
        closing = new Promise((resolve) => setImmediate(resolve))
      } else closing = this.core.end()
      this.ended = closing.then(() => {
        if (this.dead === null) this.emit('end')
      })
    }
    if (callback !== undefined) {
      this.ended.then(
        () => callback(null),
        (err: Error) => callback(err),
      )
      return undefined
    }
    return this.wrap(this.ended)
  }

  /** `await using client = new Client(...)`: end() when the scope exits, unless it was ended already. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.ended ?? this.end()
  }

  /** pg keeps the process alive while a client is open; pipegres's sockets are ordinary ones, so these do nothing. */
  ref(): void {}
  unref(): void {}
}
