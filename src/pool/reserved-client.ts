import type { Lane } from '../lane/lane.js'
import type { Request } from '../connection/request.js'
import { ArgumentError } from '../errors.js'
import { Queryable, type QueryDefaults, type RouteOptions } from '../queryable/queryable.js'
import { runTransaction, type Transaction, type TransactionHost, type TransactionOptions } from '../queryable/transaction.js'
import { startSql, startTransaction, type StartedTransaction, type StartTransactionOptions } from '../queryable/started-transaction.js'

/** A pool's lane held by one reservation, and how to give it back. */
export interface Reservation {
  readonly lane: Lane
  /** The holder the lane knows the reservation by. */
  readonly token: object
  /** Hands the lane back to the pool (once the connection is clean). */
  giveBack(): void
  /** The pool's onRelease and reset, run before giveBack(); they throw the hook's error. */
  readonly cleanup?: ((client: ReservedClient) => Promise<void>) | undefined
  /** Closes the connection instead of giving it back: a hook failed on it. */
  discard(): void
}

/**
 * One connection of a pool, held exclusively until release(): its queries
 * (and transactions) are pipelined on that connection and nothing else runs
 * there meanwhile.
 */
export class ReservedClient extends Queryable {
  #released = false
  readonly #reservation: Reservation
  readonly #defaults: QueryDefaults
  /** Transactions on a reservation run one after the other. */
  #txLock: Promise<void> = Promise.resolve()
  #unlock: (() => void) | null = null
  readonly #host: TransactionHost

  /** @internal Made by Pool.reserve(). */
  /** @internal */
  static create(reservation: Reservation, defaults: QueryDefaults): ReservedClient {
    return new ReservedClient(reservation, defaults)
  }

  /** Made by pool.reserve(): the connection it holds comes from the pool. */
  private constructor(reservation: Reservation, defaults: QueryDefaults) {
    super()
    this.#reservation = reservation
    this.#defaults = defaults
    this.#host = {
      hold: async () => {
        let unlock!: () => void
        const previous = this.#txLock
        this.#txLock = new Promise((r) => (unlock = r))
        await previous
        this.#unlock = unlock
      },
      release: () => {
        const u = this.#unlock
        this.#unlock = null
        u?.()
      },
      send: (req) => this.#send(req),
      // Whether the reservation still has the connection it started on.
      holds: () => !this.#released && reservation.lane.holds(reservation.token),
    }
  }

  /** @internal */
  protected defaults(): QueryDefaults {
    return this.#defaults
  }

  /** @internal */
  protected dispatch(req: Request): void {
    this.#send(req)
  }

  /** Every request goes on the reserved connection. */
  #send(req: Request): void {
    if (this.#released) {
      req.fail(new ArgumentError('this reserved connection was released'), false)
      return
    }
    this.#reservation.lane.send(req, this.#reservation.token)
  }

  /** Runs `fn` in a transaction on this connection (see Client.begin). */
  begin<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>
  begin<T>(options: TransactionOptions, fn: (tx: Transaction) => Promise<T>): Promise<T>
  begin<T>(a: TransactionOptions | ((tx: Transaction) => Promise<T>), b?: (tx: Transaction) => Promise<T>): Promise<T> {
    const [options, fn] = typeof a === 'function' ? [{}, a] : [a, b]
    if (typeof fn !== 'function') return Promise.reject(new ArgumentError('begin() needs a function to run in the transaction'))
    return runTransaction(this.#host, this.#defaults, options, fn)
  }

  /**
   * Begins a transaction on this connection now, for its owner to end with
   * commit() or rollback() (see Client.startTransaction). Transactions on a
   * reservation run one after another: a second waits for the first to end.
   */
  startTransaction(options?: StartTransactionOptions): Promise<StartedTransaction> {
    if (this.#released) return Promise.reject(new ArgumentError('this reserved connection was released'))
    return startTransaction(this.#host, this.#defaults, options, null)
  }

  /** @internal Pool.startTransaction(): the reservation ends with the transaction. */
  startReleasing(options: StartTransactionOptions | undefined): Promise<StartedTransaction> {
    return startTransaction(this.#host, this.#defaults, options, () => this.release())
  }

  /** The backend process id of the reserved connection. */
  get processId(): number {
    return this.#reservation.lane.processId
  }

  /**
   * Gives the connection back to the pool. A transaction left open on it is
   * rolled back first, so the next user never inherits it; then the pool's
   * onRelease and reset run. If one of them fails, the connection is closed
   * instead, and release() rejects with why.
   */
  async release(): Promise<void> {
    if (this.#released) return
    const { lane, token } = this.#reservation
    if (lane.holds(token) && lane.connected && (lane.pendingQueries > 0 || lane.transactionStatus !== 'I')) {
      // Queries still in flight may change the transaction status: an empty
      // query behind them reports it as of their end.
      await this.simpleQuery('').catch(() => undefined)
      if (lane.holds(token) && lane.connected && lane.transactionStatus !== 'I') await this.simpleQuery('ROLLBACK').catch(() => undefined)
    }
    const cleanup = this.#reservation.cleanup
    if (cleanup !== undefined && lane.holds(token) && lane.connected) {
      try {
        await cleanup(this)
      } catch (err) {
        this.#released = true
        this.#reservation.discard()
        throw err
      }
    }
    this.#released = true
    this.#reservation.giveBack()
  }

  /** `await using conn = await pool.reserve()`: release() when the scope exits (rejecting as release() does when a hook fails). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release()
  }
}

/** How Pool.begin() and Pool.startTransaction() take a connection: the pool's reserve(). */
type Reserve = (options?: Pick<RouteOptions, 'readOnly'>) => Promise<ReservedClient>

const noop = (): void => {}

/** Pool.begin(): `fn` in a transaction on a reservation of its own, given back once it is over. */
export async function beginReserved<T>(reserve: Reserve, a: TransactionOptions | ((tx: Transaction) => Promise<T>), b?: (tx: Transaction) => Promise<T>): Promise<T> {
  const [options, fn] = typeof a === 'function' ? [{}, a] : [a, b]
  if (typeof fn !== 'function') throw new ArgumentError('begin() needs a function to run in the transaction')
  const reserved = await reserve(options.readOnly === true ? { readOnly: true } : undefined)
  try {
    return await reserved.begin(options, fn)
  } finally {
    // The transaction's outcome stands: a failing onRelease or reset only discards the connection.
    await reserved.release().catch(noop)
  }
}

/** Pool.startTransaction(): a transaction on a reservation of its own, given back when the transaction ends. */
export async function startReserved(reserve: Reserve, options: StartTransactionOptions | undefined): Promise<StartedTransaction> {
  startSql(options) // wrong options take no connection
  const reserved = await reserve(options?.readOnly === true ? { readOnly: true } : undefined)
  try {
    return await reserved.startReleasing(options)
  } catch (err) {
    await reserved.release().catch(noop)
    throw err
  }
}
