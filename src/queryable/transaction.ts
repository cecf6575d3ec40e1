import type { Request } from '../connection/request.js'
import { ArgumentError, ConnectionError, PgError, PipegresError, withCaller } from '../errors.js'
import { ExtendedRequest } from '../query/extended-request.js'
import { Batch } from '../query/batch.js'
import type { Result } from '../query/result.js'
import { makeQuery, Queryable, type QueryDefaults } from './queryable.js'
import { retryPolicy, withRetry, type TransactionRetry } from './transaction-retry.js'
import { sendTraced } from '../trace/tracing.js'

export interface TransactionOptions {
  isolation?: 'serializable' | 'repeatable read' | 'read committed' | 'read uncommitted'
  readOnly?: boolean
  deferrable?: boolean
  /**
   * Run the whole transaction again (up to `attempts` times in all, with
   * exponential backoff and jitter) when it fails with serialization_failure
   * or deadlock_detected, in a statement or at COMMIT. `tx.attempt` tells the
   * function which run it is in.
   */
  retry?: TransactionRetry
}

export type { TransactionRetry }

/** What a transaction runs on: a client's lane (or a pool's reserved connection) that can be held. */
export interface TransactionHost {
  hold(holder: object): Promise<void>
  release(holder: object): void
  send(req: Request, owner: object | null): void
  /**
   * False once the connection `holder`'s first request went on is lost: the
   * transaction then refuses everything at once (rather than have the host
   * open a new connection just to refuse it there).
   */
  holds?(holder: object): boolean
}

/**
 * The transaction ended without committing because a statement in it failed
 * (the server answered COMMIT with ROLLBACK), or COMMIT's fate is unknown.
 */
export class TransactionError extends PipegresError {
  override get name(): string {
    return 'TransactionError'
  }
}

const isolations = new Set(['serializable', 'repeatable read', 'read committed', 'read uncommitted'])

/** The BEGIN statement `o` asks for; an ArgumentError names what is wrong with `o`. */
export function beginSql(o: TransactionOptions): string {
  if (typeof o !== 'object' || o === null) throw new ArgumentError('transaction options must be an object')
  for (const k of Object.keys(o)) {
    if (k !== 'isolation' && k !== 'readOnly' && k !== 'deferrable' && k !== 'retry') throw new ArgumentError(`unknown transaction option "${k}"`)
  }
  const modes: string[] = []
  if (o.isolation !== undefined) {
    if (!isolations.has(o.isolation)) throw new ArgumentError(`isolation must be one of ${[...isolations].map((i) => `'${i}'`).join(', ')}`)
    modes.push(`ISOLATION LEVEL ${o.isolation.toUpperCase()}`)
  }
  if (o.readOnly !== undefined) modes.push(o.readOnly ? 'READ ONLY' : 'READ WRITE')
  if (o.deferrable !== undefined) modes.push(o.deferrable ? 'DEFERRABLE' : 'NOT DEFERRABLE')
  return modes.length === 0 ? 'BEGIN' : `BEGIN ${modes.join(', ')}`
}

/** What a transaction and its savepoints share. */
interface Shared {
  /** Why BEGIN failed: from then on nothing of the transaction may be sent anywhere. */
  failed: Error | null
  /** Defaults for BEGIN, COMMIT, SAVEPOINT...: no timeout (see control()). */
  readonly controlDefaults: QueryDefaults
  /** Which run of the transaction this is, from 1 (see TransactionOptions.retry). */
  readonly attempt: number
}

/**
 * The queries of one transaction (or savepoint): pipelined on the connection
 * the transaction holds. Once the transaction is over, it refuses queries
 * rather than run them outside it.
 */
export class Transaction extends Queryable {
  #over = false
  #savepoints = 0
  readonly #shared: Shared
  readonly #host: TransactionHost
  readonly #token: object
  readonly #queryDefaults: QueryDefaults
  readonly #depth: number

  /** @internal Made by begin() and savepoint(). */
  /** @internal */
  static create(host: TransactionHost, token: object, queryDefaults: QueryDefaults, attempt: number): Transaction {
    return new Transaction(host, token, queryDefaults, 0, undefined, attempt)
  }

  /** Made by begin(), savepoint() and startTransaction() (whose StartedTransaction extends it): a transaction is useful only on the connection it holds. */
  protected constructor(host: TransactionHost, token: object, queryDefaults: QueryDefaults, depth = 0, shared?: Shared, attempt = 1) {
    super()
    this.#host = host
    this.#token = token
    this.#queryDefaults = queryDefaults
    this.#depth = depth
    this.#shared = shared ?? { failed: null, controlDefaults: { ...queryDefaults, queryTimeout: undefined }, attempt }
  }

  /** Which run of the transaction this is: 1, or more when `retry` ran it again after a conflict. */
  get attempt(): number {
    return this.#shared.attempt
  }

  /** @internal */
  protected defaults(): QueryDefaults {
    return this.#queryDefaults
  }

  /** @internal */
  protected dispatch(req: Request): void {
    if (this.#over) {
      req.fail(new ArgumentError('this transaction is over: run the query on the client, or inside the transaction function'), false)
      return
    }
    this.#send(req)
  }

  #send(req: Request): void {
    if (this.#host.holds !== undefined && !this.#host.holds(this.#token)) {
      req.fail(new ConnectionError('PG_CONNECTION_CLOSED', 'the connection this transaction was running on was lost'), false)
      return
    }
    const failed = this.#shared.failed
    if (failed !== null) {
      // BEGIN never reached the server, or its connection was lost: a query
      // sent now would run on another connection, outside any transaction.
      req.fail(
        failed instanceof ConnectionError
          ? new ConnectionError(failed.code, `the transaction did not begin or its connection was lost: ${failed.message}`, { cause: failed })
          : failed,
        false,
      )
      return
    }
    if ((req instanceof ExtendedRequest && req.collects) || req instanceof Batch) req.inTransaction(this.#token)
    this.#host.send(req, this.#token)
  }

  /**
   * Sends a statement of the transaction's own (BEGIN, COMMIT, SAVEPOINT ...)
   * and returns its request. These take no timeout, not even the client's
   * queryTimeout: a COMMIT abandoned on a timeout may still commit (the
   * transaction would be reported failed when it was not), and a BEGIN that
   * times out while it waits behind other queries would still run, leaving the
   * session inside a transaction nobody ends.
   * @internal
   */
  control(sql: string): ExtendedRequest {
    const req = makeQuery(this.#shared.controlDefaults, sql, undefined, { prepare: false })
    sendTraced(this.#queryDefaults.trace, 'query', sql, undefined, req, () => this.#send(req))
    return req
  }

  /** @internal Sends BEGIN (runTransaction): if it fails, the transaction sends nothing more. */
  sendBegin(sql: string): Promise<unknown> {
    const started = this.control(sql).promise
    // Handled at once: BEGIN can fail while fn still runs, long before
    // runTransaction awaits it, and that must not be an unhandled rejection.
    started.catch((err: unknown) => {
      this.#shared.failed ??= err instanceof Error ? err : new Error(String(err))
    })
    return started
  }

  /** @internal The transaction (or savepoint) is over: later queries are refused. */
  close(): void {
    this.#over = true
  }

  /**
   * Runs `fn` inside a savepoint: RELEASE when it succeeds, ROLLBACK TO the
   * savepoint (then the error is rethrown) when it throws. Savepoints nest.
   */
  async savepoint<T>(fn: (sp: Transaction) => Promise<T>): Promise<T> {
    if (typeof fn !== 'function') throw new ArgumentError('savepoint() needs a function')
    if (this.#over) throw new ArgumentError('this transaction is over')
    const name = `pipegres_sp_${this.#depth + 1}_${++this.#savepoints}`
    const sp = new Transaction(this.#host, this.#token, this.#queryDefaults, this.#depth + 1, this.#shared)
    const start = this.control(`SAVEPOINT ${name}`).promise
    // Awaited only after fn: must not be an unhandled rejection meanwhile.
    start.catch(() => undefined)
    let result: T
    try {
      result = await fn(sp)
    } catch (err) {
      sp.close()
      await this.control(`ROLLBACK TO SAVEPOINT ${name}`).promise.catch(() => undefined)
      await start.catch(() => undefined)
      throw err
    }
    sp.close()
    await start
    try {
      await this.control(`RELEASE SAVEPOINT ${name}`).promise
    } catch (err) {
      if (err instanceof ConnectionError) throw err
      // A statement in the savepoint failed and fn caught it: the transaction
      // is aborted and the savepoint cannot be released. Roll back to it, so
      // that a caller who catches this goes on in a usable transaction, as
      // after any savepoint that failed.
      await this.control(`ROLLBACK TO SAVEPOINT ${name}`).promise.catch(() => undefined)
      if (err instanceof PgError && err.code === '25P02') {
        throw new TransactionError(
          'PG_TRANSACTION_ROLLED_BACK',
          'the savepoint was rolled back instead of released, because a statement in it failed',
          { cause: err },
        )
      }
      throw err
    }
    return result
  }
}

/** BEGIN, fn, COMMIT — or ROLLBACK and rethrow; again after a conflict if `retry` allows. The host is held throughout each run. */
export async function runTransaction<T>(host: TransactionHost, defaults: QueryDefaults, options: TransactionOptions, fn: (tx: Transaction) => Promise<T>): Promise<T> {
  const begin = beginSql(options)
  const policy = retryPolicy(options.retry)
  if (policy === null) return runOnce(host, defaults, begin, fn, 1)
  return withRetry(policy, (attempt) => runOnce(host, defaults, begin, fn, attempt), (message, cause) => new TransactionError(cause instanceof TransactionError ? cause.code : 'PG_TRANSACTION_ROLLED_BACK', message, { cause }))
}

async function runOnce<T>(host: TransactionHost, defaults: QueryDefaults, begin: string, fn: (tx: Transaction) => Promise<T>, attempt: number): Promise<T> {
  const token = {}
  await host.hold(token)
  const tx = Transaction.create(host, token, defaults, attempt)
  try {
    const started = tx.sendBegin(begin)
    let result: T
    try {
      result = await fn(tx)
    } catch (err) {
      tx.close()
      await tx.control('ROLLBACK').promise.catch(() => undefined)
      await started.catch(() => undefined)
      throw err
    }
    tx.close()
    try {
      await started
    } catch (err) {
      // Also awaited by sendBegin()'s handler, which hides the caller from BEGIN's own error.
      throw withCaller(err)
    }
    await sendCommit(tx)
    return result
  } finally {
    tx.close()
    host.release(token)
  }
}

/**
 * Sends COMMIT and resolves once the transaction committed. Rejects with a
 * TransactionError when the server answered ROLLBACK (a statement in it had
 * failed) or the connection was lost with COMMIT in flight (the outcome is
 * unknown), and with the server's error when COMMIT itself failed (a deferred
 * constraint, a serialization failure), which ends the transaction too.
 * @internal
 */
export async function sendCommit(tx: Transaction): Promise<void> {
  const commit = tx.control('COMMIT')
  let done: Result<unknown>
  try {
    done = await commit.promise
  } catch (err) {
    if (err instanceof ConnectionError && commit.wasSent) {
      throw new TransactionError(
        'PG_CONNECTION_CLOSED',
        'the connection was lost while COMMIT was in flight: the transaction may or may not have been committed',
        { cause: err },
      )
    }
    throw err
  }
  if (done.command === 'ROLLBACK') {
    throw new TransactionError('PG_TRANSACTION_ROLLED_BACK', 'the transaction was rolled back instead of committed, because a statement in it failed')
  }
}
