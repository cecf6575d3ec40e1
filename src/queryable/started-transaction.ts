import type { Request } from '../connection/request.js'
import { ArgumentError, ConnectionError, PgError, withCaller } from '../errors.js'
import type { QueryDefaults } from './query-options.js'
import { beginSql, sendCommit, Transaction, TransactionError, type TransactionHost, type TransactionOptions } from './transaction.js'

// A transaction begun now and ended later by whoever holds it (an ORM's
// begin, queries, commit as separate calls), beside begin(fn), which ends the
// transaction when its function returns. Both share Transaction's queries and
// savepoints; this one adds commit(), rollback() and its state.

/** Options of startTransaction(): begin()'s, without `retry` (running a transaction again needs it as a function). */
export type StartTransactionOptions = Omit<TransactionOptions, 'retry'>

/**
 * `active` until it ends: `committed`; `rolledBack` by rollback(), or by the
 * server when COMMIT failed or was answered with ROLLBACK; `failed` when BEGIN
 * failed or the connection was lost (the server discards such a transaction,
 * unless COMMIT was in flight: then commit() said the outcome is unknown).
 */
export type TransactionState = 'active' | 'committed' | 'rolledBack' | 'failed'

/** What ends with the transaction besides its hold: a pool's reservation, a client's list of open transactions. */
type Ended = (tx: StartedTransaction) => Promise<void> | void

/**
 * A transaction begun by startTransaction(): its queries are pipelined, in
 * the order issued, on the connection it holds until commit() or rollback().
 * A query issued once it is ending or over is refused (an ArgumentError
 * naming why) rather than run outside it.
 */
export class StartedTransaction extends Transaction {
  #state: TransactionState = 'active'
  /** Set by commit() or rollback(): from then on queries are refused. */
  #ending: { readonly kind: 'commit' | 'rollback'; readonly done: Promise<void> } | null = null
  /** Why the transaction failed (state `failed`), or how its COMMIT was refused. */
  #failure: Error | null = null
  #finished = false
  #savepoints = 0
  readonly #host: TransactionHost
  readonly #token: object
  readonly #begun: Promise<unknown>
  readonly #ended: Ended | null

  /** @internal */
  static open(host: TransactionHost, token: object, defaults: QueryDefaults, begin: string, ended: Ended | null): StartedTransaction {
    return new StartedTransaction(host, token, defaults, begin, ended)
  }

  /** Made by startTransaction(): the transaction is useful only on the connection it holds. */
  private constructor(host: TransactionHost, token: object, defaults: QueryDefaults, begin: string, ended: Ended | null) {
    super(host, token, defaults)
    this.#host = host
    this.#token = token
    this.#ended = ended
    this.#begun = this.sendBegin(begin)
    // A failed BEGIN ends the transaction at once: its connection (a pool's,
    // or a client's queries held behind it) must not wait for rollback().
    this.#begun.catch((err: unknown) => {
      if (this.#ending === null) this.#fail(err instanceof Error ? err : new Error(String(err)))
    })
  }

  /** `active` until it is committed, rolled back or failed (see TransactionState). */
  get state(): TransactionState {
    if (this.#state === 'active' && this.#ending === null && this.#lost() !== null) return 'failed'
    return this.#state
  }

  /**
   * Sends COMMIT and resolves once the transaction committed; the connection
   * is then given back. Rejects with a TransactionError when the server
   * answered ROLLBACK (a statement in it had failed: state `rolledBack`) or
   * when the connection was lost with COMMIT in flight (outcome unknown: state
   * `failed`), and with the server's error when COMMIT itself failed.
   */
  commit(): Promise<void> {
    const refused = this.#refuseEnd('commit')
    if (refused !== null) return Promise.reject(refused)
    return this.#end('commit', () => this.#commit())
  }

  /**
   * Sends ROLLBACK and resolves once the transaction is rolled back, or once
   * it is over without committing in any other way (its connection lost, its
   * BEGIN failed, its COMMIT answered with ROLLBACK): rolling back never
   * leaves anything to undo. Rejects only after a commit.
   */
  rollback(): Promise<void> {
    if (this.#ending?.kind === 'rollback') return this.#ending.done
    if (this.#state !== 'active' && this.#state !== 'committed') return Promise.resolve()
    const refused = this.#refuseEnd('rollback')
    if (refused !== null) return Promise.reject(refused)
    return this.#end('rollback', () => this.#rollback())
  }

  /**
   * `await using tx = await db.startTransaction()`: rolls back unless
   * committed. (Symbol.asyncDispose is there on every runtime pipegres runs
   * on: Node defines it from 20.4 on, Bun and Deno natively.)
   */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#ending !== null) await this.#ending.done.catch(() => undefined)
    else if (this.#state === 'active') await this.rollback()
  }

  /** Runs `fn` in a savepoint, as Transaction.savepoint; the transaction cannot end while one runs. */
  override async savepoint<T>(fn: (sp: Transaction) => Promise<T>): Promise<T> {
    const refused = this.#refusal()
    if (refused !== null) throw refused
    this.#savepoints++
    try {
      return await super.savepoint(fn)
    } finally {
      this.#savepoints--
    }
  }

  /** @internal */
  protected override dispatch(req: Request): void {
    const refused = this.#refusal()
    if (refused !== null) req.fail(refused, false)
    else super.dispatch(req)
  }

  /** The loss of the connection, when the host says the transaction no longer holds it. */
  #lost(): ConnectionError | null {
    if (this.#host.holds === undefined || this.#host.holds(this.#token)) return null
    return new ConnectionError('PG_CONNECTION_CLOSED', 'the connection this transaction was running on was lost (or its reservation released)', { mayHaveRun: false })
  }

  /**
   * @internal The owner learnt that a connection was lost: if it was this
   * transaction's, the transaction fails and lets go of it at once.
   */
  noticeLoss(): void {
    if (this.#state !== 'active' || this.#ending !== null) return
    const lost = this.#lost()
    if (lost !== null) this.#fail(lost)
  }

  /** Why a query (or savepoint) cannot run now, or null when it can. */
  #refusal(): Error | null {
    if (this.#state === 'active' && this.#ending === null) {
      const lost = this.#lost()
      if (lost === null) return null
      this.#fail(lost)
      return lost
    }
    const how = 'run it on the client or pool, or in a new transaction'
    if (this.#ending !== null && this.#state === 'active') {
      const doing = this.#ending.kind === 'commit' ? 'being committed' : 'being rolled back'
      return new ArgumentError(`this transaction is ${doing}: a query issued now would run outside it; ${how}`)
    }
    switch (this.#state) {
      case 'committed':
        return new ArgumentError(`this transaction was committed: ${how}`)
      case 'rolledBack':
        return new ArgumentError(`this transaction was rolled back${this.#failure !== null ? ` (${this.#failure.message})` : ''}: ${how}`, { cause: this.#failure ?? undefined })
      default:
        return this.#failedError()
    }
  }

  /** A query refused by a failed transaction: a ConnectionError when the connection was the cause, so it reads as one. */
  #failedError(): Error {
    const f = this.#failure
    const message = `this transaction failed (${f?.message ?? 'unknown reason'}): the query was not sent`
    if (f instanceof ConnectionError) return new ConnectionError(f.code, message, { cause: f, mayHaveRun: false })
    return new ArgumentError(message, { cause: f ?? undefined })
  }

  /** Why commit() or rollback() cannot be called now, or null. */
  #refuseEnd(kind: 'commit' | 'rollback'): Error | null {
    if (this.#savepoints > 0) return new ArgumentError(`${kind}() inside savepoint(): end the transaction after its savepoints return`)
    if (this.#ending !== null && this.#state === 'active') {
      return new ArgumentError(`${kind}(): this transaction is already being ${this.#ending.kind === 'commit' ? 'committed' : 'rolled back'}`)
    }
    if (this.#state === 'active') return null
    if (this.#state === 'committed') return new ArgumentError(`${kind}(): this transaction was already committed`)
    if (this.#state === 'rolledBack') return new ArgumentError(`commit(): this transaction was rolled back${this.#failure !== null ? ` (${this.#failure.message})` : ''}`, { cause: this.#failure ?? undefined })
    return this.#failedError()
  }

  #end(kind: 'commit' | 'rollback', run: () => Promise<void>): Promise<void> {
    const done = (async () => {
      try {
        await run()
      } finally {
        await this.#finish()
      }
    })()
    this.#ending = { kind, done }
    return done
  }

  async #commit(): Promise<void> {
    try {
      const lost = this.#lost()
      if (lost !== null) {
        throw new ConnectionError(lost.code, `${lost.message}: the transaction was not committed`, { cause: lost, mayHaveRun: false })
      }
      try {
        await this.#begun
      } catch (err) {
        // Also awaited by sendBegin()'s handler, which hides the caller from BEGIN's own error.
        throw withCaller(err)
      }
    } catch (err) {
      this.#failWith('failed', err)
    }
    try {
      await sendCommit(this)
      this.#state = 'committed'
    } catch (err) {
      // The server ended the transaction without committing (a statement had
      // failed, or COMMIT's own error), or the connection went with COMMIT in flight.
      const rolledBack = (err instanceof TransactionError && err.code === 'PG_TRANSACTION_ROLLED_BACK') || err instanceof PgError
      this.#failWith(rolledBack ? 'rolledBack' : 'failed', err)
    }
  }

  #failWith(state: 'rolledBack' | 'failed', err: unknown): never {
    this.#state = state
    this.#failure = err instanceof Error ? err : new Error(String(err))
    throw err
  }

  async #rollback(): Promise<void> {
    if (this.#lost() === null) {
      try {
        await this.control('ROLLBACK').promise
        this.#state = 'rolledBack'
        return
      } catch (err) {
        if (!(err instanceof ConnectionError)) {
          this.#state = 'failed'
          this.#failure = err instanceof Error ? err : new Error(String(err))
          throw err
        }
      }
    }
    // The connection is gone, and with it the transaction: the server discards it.
    this.#state = 'failed'
    this.#failure ??= this.#lost() ?? new ConnectionError('PG_CONNECTION_CLOSED', 'the connection was lost before ROLLBACK')
  }

  /** Fails the transaction (BEGIN failed, the connection was lost) and lets go of its connection. */
  #fail(err: Error): void {
    if (this.#state !== 'active') return
    this.#state = 'failed'
    this.#failure = err
    void this.#finish()
  }

  /** Once: refuse queries, give the connection back, then what else ends with it. Never rejects. */
  async #finish(): Promise<void> {
    if (this.#finished) return
    this.#finished = true
    this.close()
    this.#host.release(this.#token)
    try {
      await this.#ended?.(this)
    } catch {
      // The transaction's outcome stands: a failing onRelease or reset only discards the connection.
    }
  }
}

/**
 * Holds `host` for a new transaction and sends its BEGIN, which is pipelined
 * with the first queries (a BEGIN that fails fails them, and the transaction).
 * `ended` runs once it is over, after the host is released.
 */
export async function startTransaction(host: TransactionHost, defaults: QueryDefaults, options: StartTransactionOptions | undefined, ended: Ended | null): Promise<StartedTransaction> {
  const begin = startSql(options)
  const token = {}
  await host.hold(token)
  return StartedTransaction.open(host, token, defaults, begin, ended)
}

/** BEGIN for startTransaction()'s options, checked before any connection is taken. */
export function startSql(options: StartTransactionOptions | undefined): string {
  if (typeof options === 'function') throw new ArgumentError('startTransaction() takes options, not a function: begin(fn) runs a function in a transaction')
  if (options === undefined) return 'BEGIN'
  if (typeof options === 'object' && options !== null && 'retry' in options) {
    throw new ArgumentError('startTransaction() cannot retry: running a transaction again needs it as a function, begin({ retry }, fn)')
  }
  return beginSql(options)
}
