import * as kysely from 'kysely'
import {
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely'
import {
  ArgumentError,
  TransactionError,
  quoteIdentifier,
  type Client,
  type Pool,
  type QueryOptions,
  type ReservedClient,
  type Result,
  type StartedTransaction,
  type StartTransactionOptions,
  type StreamOptions,
} from '../../index.js'

/** What a dialect runs on: a pool, a client, or a connection reserved from a pool. */
export type PipegresTarget = Pool | Client | ReservedClient

export interface PipegresDialectConfig {
  /**
   * A pipegres Pool (createPool) or Client (connect), or a function giving one.
   * Queries are pipelined through it; transactions reserve a connection.
   */
  pool: PipegresTarget | (() => PipegresTarget | Promise<PipegresTarget>)
  /** Options for every query Kysely runs: `types`, `timeout`, `prepare`, `rowMode` is always 'object'. */
  queryOptions?: Omit<QueryOptions, 'rowMode' | 'signal'>
  /** Whether `db.destroy()` ends the pool or client (default true, as Kysely's own dialects do). */
  endOnDestroy?: boolean
}

/**
 * Kysely on pipegres: `new Kysely({ dialect: new PipegresDialect({ pool }) })`.
 * PostgreSQL's SQL dialect, adapter and introspector are Kysely's own.
 */
export class PipegresDialect implements Dialect {
  readonly #config: PipegresDialectConfig

  constructor(config: PipegresDialectConfig) {
    if (typeof config !== 'object' || config === null || config.pool === undefined || config.pool === null) {
      throw new ArgumentError('PipegresDialect needs { pool }: a pipegres Pool or Client')
    }
    this.#config = config
  }

  createDriver(): Driver {
    return new PipegresDriver(this.#config)
  }

  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler()
  }

  createAdapter(): DialectAdapter {
    return new PostgresAdapter()
  }

  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new PostgresIntrospector(db)
  }
}

function isTarget(v: unknown): v is PipegresTarget {
  return typeof v === 'object' && v !== null && typeof (v as PipegresTarget).query === 'function' && typeof (v as PipegresTarget).startTransaction === 'function'
}

class PipegresDriver implements Driver {
  #target: PipegresTarget | null = null
  readonly #options: StreamOptions

  constructor(private readonly config: PipegresDialectConfig) {
    this.#options = { ...config.queryOptions, rowMode: 'object' }
  }

  async init(): Promise<void> {
    const p = this.config.pool
    const target = typeof p === 'function' ? await p() : p
    if (!isTarget(target)) throw new ArgumentError('PipegresDialect: pool must be a pipegres Pool or Client')
    this.#target = target
  }

  private target(): PipegresTarget {
    if (this.#target === null) throw new ArgumentError('PipegresDialect: the driver has been destroyed')
    return this.#target
  }

  /**
   * Not a reservation: Kysely asks for a connection per query, and a
   * connection of its own would serialise what pipegres pipelines. Only a
   * transaction takes a connection (see beginTransaction).
   */
  async acquireConnection(): Promise<DatabaseConnection> {
    return new PipegresConnection(this.target(), this.#options)
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await (connection as PipegresConnection).begin(transactionOptions(settings))
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PipegresConnection).commit()
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PipegresConnection).rollback()
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await (connection as PipegresConnection).control(`SAVEPOINT ${quoteIdentifier(name)}`)
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await (connection as PipegresConnection).control(`ROLLBACK TO SAVEPOINT ${quoteIdentifier(name)}`)
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await (connection as PipegresConnection).control(`RELEASE SAVEPOINT ${quoteIdentifier(name)}`)
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    // A transaction Kysely never ended must not keep its connection.
    await (connection as PipegresConnection).rollback()
  }

  async destroy(): Promise<void> {
    const target = this.#target
    this.#target = null
    if (target !== null && this.config.endOnDestroy !== false && 'end' in target) await target.end()
  }
}

function transactionOptions(settings: TransactionSettings): StartTransactionOptions {
  const options: StartTransactionOptions = {}
  if (settings.isolationLevel !== undefined) {
    if (settings.isolationLevel === 'snapshot') throw new ArgumentError("PostgreSQL has no 'snapshot' isolation level (its 'repeatable read' is snapshot isolation)")
    options.isolation = settings.isolationLevel
  }
  if (settings.accessMode !== undefined) options.readOnly = settings.accessMode === 'read only'
  return options
}

/**
 * What Kysely 0.29 hands a connection with each query and stream (its
 * AbortableOperationOptions, declared here so that 0.28, which passes nothing,
 * still type-checks).
 */
interface KyselyCallOptions {
  readonly signal?: AbortSignal | undefined
}

/** The dialect's query options, with the signal Kysely passed for this query if any. */
function withSignal<T extends StreamOptions>(options: T, call: KyselyCallOptions | undefined): T {
  return call?.signal === undefined ? options : { ...options, signal: call.signal }
}

/**
 * Kysely's error for a COMMIT answered with ROLLBACK. It came during the 0.28
 * releases: read from the namespace, so that an earlier 0.28 still loads (a
 * named import of an export that is missing fails the whole module), and
 * there pipegres's TransactionError reaches the caller as it is.
 */
const AbortedTransaction = 'AbortedTransactionError' in kysely ? kysely.AbortedTransactionError : undefined

const counted = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE'])

function toQueryResult<R>(r: Result<R>): QueryResult<R> {
  if (counted.has(r.command) && r.rowCount !== null) return { numAffectedRows: BigInt(r.rowCount), rows: r.rows }
  return { rows: r.rows }
}

/** What Kysely sees as a connection: the shared pool or client, or a transaction while one is open. */
class PipegresConnection implements DatabaseConnection {
  #open: StartedTransaction | null = null

  constructor(
    private readonly target: PipegresTarget,
    private readonly options: StreamOptions,
  ) {}

  private runner(): Pick<PipegresTarget, 'query' | 'stream'> {
    return this.#open ?? this.target
  }

  /**
   * Kysely 0.29's `signal` becomes pipegres's own: aborting drops the query if it
   * was not sent yet, else cancels it on the server (a CancelRequest), whatever
   * the inflightQueryAbortStrategy; Kysely itself stops waiting at once.
   */
  async executeQuery<R>(compiled: CompiledQuery, call?: KyselyCallOptions): Promise<QueryResult<R>> {
    return toQueryResult(await this.runner().query<R>(compiled.sql, compiled.parameters, withSignal(this.options, call)))
  }

  /**
   * Kysely 0.29's `inflightQueryAbortStrategy: 'cancel query'`: the query's
   * signal (see executeQuery) has sent the cancel already, on the query's own
   * connection, so no control connection is needed. 'kill session' is left
   * out on purpose: a connection here carries other callers' pipelined queries,
   * which ending its session would fail too, so Kysely refuses that strategy.
   */
  async cancelQuery(): Promise<void> {}

  async *streamQuery<R>(compiled: CompiledQuery, chunkSize = 100, call?: KyselyCallOptions): AsyncIterableIterator<QueryResult<R>> {
    if (!Number.isInteger(chunkSize) || chunkSize <= 0) throw new ArgumentError(`stream(chunkSize): chunkSize must be a positive integer, not ${String(chunkSize)}`)
    const rows = this.runner().stream<R>(compiled.sql, compiled.parameters, withSignal({ ...this.options, highWaterMark: Math.max(chunkSize, 16) }, call))
    let batch: R[] = []
    // Leaving the loop early (break, an error) closes the stream, which cancels the query.
    for await (const row of rows) {
      batch.push(row)
      if (batch.length >= chunkSize) {
        yield { rows: batch }
        batch = []
      }
    }
    if (batch.length > 0) yield { rows: batch }
  }

  async control(sql: string): Promise<void> {
    if (this.#open === null) throw new ArgumentError(`${sql.split(' ')[0]} outside a transaction`)
    await this.#open.query(sql, [], { prepare: false })
  }

  async begin(options: StartTransactionOptions): Promise<void> {
    if (this.#open !== null && this.#open.state === 'active') throw new ArgumentError('a transaction is already open on this connection')
    this.#open = await this.target.startTransaction(options)
  }

  async commit(): Promise<void> {
    const open = this.#open
    if (open === null) return
    try {
      await open.commit()
    } catch (err) {
      if (err instanceof TransactionError && err.code === 'PG_TRANSACTION_ROLLED_BACK' && AbortedTransaction !== undefined) {
        // Kysely's way of saying so; pipegres's error stays reachable as its cause.
        throw Object.defineProperty(new AbortedTransaction(), 'cause', { value: err, configurable: true, writable: true })
      }
      throw err
    } finally {
      this.#open = null
    }
  }

  async rollback(): Promise<void> {
    const open = this.#open
    this.#open = null
    if (open !== null) await open.rollback()
  }
}
