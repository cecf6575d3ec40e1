import { EventEmitter } from 'node:events'
import { resolveConfig, type ConnectOptions } from './config/index.js'
import type { ConnectionConfig } from './config/types.js'
import { openConnection } from './connection/connect.js'
import type { Connection } from './connection/connection.js'
import type { Request } from './connection/request.js'
import { ArgumentError, ConnectionError, type PgNotice } from './errors.js'
import type { Notification, TransactionStatus } from './protocol/backend.js'
import { ExtendedQuery, type RowMode } from './query/extended-query.js'
import type { Result, Row } from './query/result.js'
import { Session } from './query/session.js'
import { SimpleQuery } from './query/simple-query.js'
import { buildQuery } from './query/sql-template.js'
import { TypeCatalog } from './types/catalog.js'
import { defaultTypeOptions, type TypeOptions } from './types/codec.js'
import type { CustomType } from './types/custom.js'
import type { TypeView } from './types/view.js'
import { declaredTypes } from './query/typed.js'

/** Settings of a Client: every connection setting, plus how results are delivered. */
export interface ClientOptions extends ConnectOptions {
  /** Called with every NoticeResponse (RAISE NOTICE, warnings). Same as listening to 'notice'. */
  onNotice?: (notice: PgNotice) => void
  /** Default row shape for this client's queries. */
  rowMode?: RowMode
  /** How int8, numeric, timestamps and dates come back (see TypeOptions). */
  types?: TypeOptions
  /** Codecs for types pipegres does not know, or to change how a type is decoded. */
  customTypes?: CustomType[]
}

const clientKeys = ['onNotice', 'rowMode', 'types', 'customTypes'] as const

/** Per-query options. */
export interface QueryOptions {
  /** 'object' (default): rows keyed by column name; 'array': rows as arrays in column order. */
  rowMode?: RowMode
  /** false: use an unnamed statement for this query instead of the prepared-statement cache. */
  prepare?: boolean
  /** Type options for this query only, e.g. { int8: 'number' }. */
  types?: TypeOptions
}

export type { Result, Row, Field } from './query/result.js'
export type { RowMode } from './query/extended-query.js'

export interface ClientEvents {
  notice: [notice: PgNotice]
  notification: [notification: Notification]
  parameter: [name: string, value: string]
  /** The connection closed; `error` is null after end(). */
  close: [error: Error | null]
}

const enum State {
  Idle,
  Connecting,
  Connected,
  Closed,
}

/**
 * One PostgreSQL connection that pipelines every query: each query is written
 * the moment it is issued and replies are matched to queries in order, so any
 * number can be in flight at once. Create with `connect()` or `new Client()`
 * then `connect()`; queries issued before the connection is ready are sent as
 * soon as it is.
 */
export class Client extends EventEmitter<ClientEvents> {
  readonly config: ConnectionConfig
  private state = State.Idle
  private conn: Connection | null = null
  private session: Session
  private connecting: Promise<this> | null = null
  /** Requests issued before the connection existed. */
  private waiting: Request[] = []
  private closeError: Error | null = null
  /** end() was called: queries issued from now on are rejected. */
  private ending = false
  private readonly rowMode: RowMode
  private readonly onNotice: ((n: PgNotice) => void) | undefined
  /** What this client knows of the database's types; shared by its connections. */
  private readonly catalog: TypeCatalog

  /**
   * Runs a query written as a tagged template; every interpolated value is sent
   * as a parameter. `const { rows } = await db.sql\`SELECT * FROM users WHERE id = ${id}\``
   */
  readonly sql: <R = Row>(strings: TemplateStringsArray, ...values: unknown[]) => Promise<Result<R>>

  constructor(config?: string | ClientOptions) {
    super()
    this.config = resolveConfig(config, { ignoreKeys: clientKeys })
    const opts = typeof config === 'object' && config !== null ? config : {}
    if (opts.rowMode !== undefined && opts.rowMode !== 'object' && opts.rowMode !== 'array') {
      throw new ArgumentError(`rowMode must be 'object' or 'array', not ${JSON.stringify(opts.rowMode)}`)
    }
    if (opts.onNotice !== undefined && typeof opts.onNotice !== 'function') throw new ArgumentError('onNotice must be a function')
    this.rowMode = opts.rowMode ?? 'object'
    this.onNotice = opts.onNotice
    this.catalog = new TypeCatalog({ ...defaultTypeOptions, ...checkTypeOptions(opts.types, 'types') })
    if (opts.customTypes !== undefined) {
      if (!Array.isArray(opts.customTypes)) throw new ArgumentError('customTypes must be an array')
      for (const t of opts.customTypes) this.registerType(t)
    }
    this.session = this.newSession()
    this.sql = <R = Row>(strings: TemplateStringsArray, ...values: unknown[]): Promise<Result<R>> => {
      let built
      try {
        built = buildQuery(strings, values)
      } catch (err) {
        return Promise.reject(err as Error)
      }
      return this.query<R>(built.text, built.values)
    }
  }

  private newSession(): Session {
    return new Session(
      this.catalog,
      this.catalog.view(),
      this.config.prepare,
      this.config.statementCacheSize,
      (req) => this.sendInternal(req),
      () => Number.parseInt(this.serverParameters.server_version ?? '0', 10),
    )
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

  /** Opens the connection. Resolves with the client once the server is ready for queries. */
  connect(): Promise<this> {
    if (this.state === State.Closed || this.ending) return Promise.reject(this.closedError())
    if (this.connecting) return this.connecting
    this.state = State.Connecting
    this.connecting = openConnection(this.config, {
      notice: (n) => this.deliver('notice', n),
      notification: (n) => this.deliver('notification', n),
      parameterStatus: (k, v) => this.deliver('parameter', k, v),
      close: (err) => this.onClose(err),
    }).then(
      (conn) => {
        if (conn.closed) {
          // It failed in the same read that completed startup (e.g. a stray
          // message right behind ReadyForQuery).
          this.state = State.Closed
          this.closeError = conn.failure
          throw this.closedError()
        }
        this.conn = conn
        this.state = State.Connected
        const waiting = this.waiting
        this.waiting = []
        for (const req of waiting) conn.send(req)
        return this
      },
      (err: Error) => {
        this.state = State.Closed
        this.closeError = err
        const waiting = this.waiting
        this.waiting = []
        for (const req of waiting) req.fail(err, false)
        throw err
      },
    )
    return this.connecting
  }

  /** Runs user callbacks so that a throwing listener cannot break the connection's reading loop. */
  private deliver<K extends keyof ClientEvents>(event: K, ...args: ClientEvents[K]): void {
    try {
      if (event === 'notice') this.onNotice?.(args[0] as PgNotice)
      ;(this.emit as (e: string, ...a: unknown[]) => boolean)(event, ...args)
    } catch (err) {
      queueMicrotask(() => {
        throw err
      })
    }
  }

  private onClose(err: Error | null): void {
    this.state = State.Closed
    this.closeError = err
    this.deliver('close', err)
  }

  private closedError(): Error {
    const e = this.closeError
    if (e === null) return new ConnectionError('PG_CONNECTION_ENDED', 'the client was ended')
    if (e instanceof ConnectionError) return new ConnectionError(e.code, e.message, { cause: e })
    return new ConnectionError('PG_CONNECTION_CLOSED', `the connection is closed: ${e.message}`, { cause: e })
  }

  /** Requests the client makes for queries already in flight (type lookups): never refused by end(). */
  private sendInternal(req: Request): void {
    if (this.conn !== null && !this.conn.closed) this.conn.send(req, true)
    else req.fail(this.closedError(), false)
  }

  private send(req: Request): void {
    if (this.ending) {
      req.fail(new ConnectionError('PG_CONNECTION_ENDED', 'the client was ended'), false)
      return
    }
    switch (this.state) {
      case State.Connected:
        this.conn!.send(req)
        return
      case State.Idle:
        this.waiting.push(req)
        this.connect().catch(() => {
          // The error reaches the caller through the request itself.
        })
        return
      case State.Connecting:
        this.waiting.push(req)
        return
      case State.Closed:
        req.fail(this.closedError(), false)
    }
  }

  /**
   * Runs one statement with the extended protocol. Values are sent as
   * parameters `$1, $2, ...`; the statement is prepared once per connection and
   * reused by text (unless `prepare: false`).
   */
  query<R = Row>(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<Result<R>> {
    if (typeof text !== 'string') return Promise.reject(new ArgumentError(`query text must be a string, not ${text === null ? 'null' : typeof text}`))
    if (values !== undefined && !Array.isArray(values)) return Promise.reject(new ArgumentError('query values must be an array'))
    let rowMode = this.rowMode
    let prepare = this.config.prepare
    if (options !== undefined) {
      if (options.rowMode !== undefined) {
        if (options.rowMode !== 'object' && options.rowMode !== 'array') {
          return Promise.reject(new ArgumentError(`rowMode must be 'object' or 'array', not ${JSON.stringify(options.rowMode)}`))
        }
        rowMode = options.rowMode
      }
      if (options.prepare !== undefined) prepare = options.prepare === true && prepare
    }
    let view: TypeView = this.session.view
    if (options?.types !== undefined) {
      try {
        view = this.catalog.view(checkTypeOptions(options.types, 'types'))
      } catch (err) {
        return Promise.reject(err as Error)
      }
    }
    const vals = values ?? []
    const req = new ExtendedQuery(this.session, text, vals, rowMode, prepare, view, vals.length === 0 ? null : declaredTypes(vals))
    this.send(req)
    return req.promise as Promise<Result<R>>
  }

  /**
   * Runs a query string with the simple protocol: several statements separated
   * by semicolons, no parameters, one result per statement.
   */
  simpleQuery<R = Row>(text: string, options?: { rowMode?: RowMode }): Promise<Result<R>[]> {
    if (typeof text !== 'string') return Promise.reject(new ArgumentError('query text must be a string'))
    if (text.includes('\0')) return Promise.reject(new ArgumentError('query text cannot contain a NUL character'))
    const req = new SimpleQuery(this.session, text, options?.rowMode ?? this.rowMode, this.session.view)
    this.send(req)
    return req.promise as Promise<Result<R>[]>
  }

  /** Finishes every query already issued, then closes the connection. Queries issued afterwards are rejected. */
  async end(): Promise<void> {
    this.ending = true
    if (this.state === State.Connecting) {
      // Queries issued while connecting still run: they go out once connected, then the connection ends.
      await this.connecting!.catch(() => undefined)
    }
    const conn = this.conn
    this.state = State.Closed
    if (conn !== null) await conn.end()
  }

  /** Server settings reported by the server (server_version, TimeZone, ...), kept current. */
  get serverParameters(): Readonly<Record<string, string>> {
    return this.conn?.serverParameters ?? {}
  }

  /** The backend process id of this connection (0 before it is connected). */
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

  /** True once the connection is closed, by end() or a failure. */
  get closed(): boolean {
    return this.state === State.Closed
  }

  /** Queries written to the server and not yet answered, plus those waiting to be written. */
  get pendingQueries(): number {
    return (this.conn?.inflightCount ?? 0) + (this.conn?.pendingCount ?? 0) + this.waiting.length
  }
}

const typeOptionChoices: Record<keyof TypeOptions, readonly string[]> = {
  int8: ['bigint', 'number', 'string'],
  numeric: ['string', 'number'],
  timestamps: ['date', 'string'],
  dates: ['string', 'date'],
}

function checkTypeOptions(o: TypeOptions | undefined, where: string): TypeOptions {
  if (o === undefined) return {}
  if (typeof o !== 'object' || o === null) throw new ArgumentError(`${where} must be an object`)
  for (const [k, v] of Object.entries(o)) {
    const choices = typeOptionChoices[k as keyof TypeOptions]
    if (choices === undefined) throw new ArgumentError(`${where}.${k} is not a type option (known: ${Object.keys(typeOptionChoices).join(', ')})`)
    if (v !== undefined && !choices.includes(v as string)) throw new ArgumentError(`${where}.${k} must be one of ${choices.map((c) => `'${c}'`).join(', ')}`)
  }
  return o
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
