import { EventEmitter } from 'node:events'
import { Client, clientKeys, type Backoff, type ClientOptions } from './client.js'
import { resolveConfig } from './config/index.js'
import type { ConnectionConfig } from './config/types.js'
import type { Request } from './connection/request.js'
import { ArgumentError, ConnectionError, withCaller, type PgNotice } from './errors.js'
import type { Listener, NotificationHandler } from './notify.js'
import type { RowMode } from './query/extended-query.js'
import { checkRowMode, checkTypeOptions, Queryable, type QueryDefaults } from './queryable.js'
import { runTransaction, type Transaction, type TransactionHost, type TransactionOptions } from './transaction.js'
import { replicate, subscribe, type ReplicateOptions, type SubscribeOptions, type Subscription, type WalStream } from './subscription.js'
import { acquireChannel, active, traceAcquire, traceBase } from './tracing.js'
import { TypeCatalog } from './types/catalog.js'
import { defaultTypeOptions } from './types/codec.js'
import type { CustomType } from './types/custom.js'

export interface PoolOptions extends ClientOptions {
  /** Most connections open at once (default 10). */
  max?: number
  /** Milliseconds a connection may stay unused before it is closed (default 30000; 0: never). */
  idleTimeout?: number
  /** Milliseconds after which a connection is replaced, give or take 10% (default 1800000; 0: never). */
  maxLifetime?: number
}

const poolKeys = [...clientKeys, 'max', 'idleTimeout', 'maxLifetime'] as const

interface Slot {
  client: Client
  /** The reservation (or pool transaction) that has this connection to itself. */
  reserved: object | null
  lastUsed: number
  expiresAt: number
  /** Lifetime over: takes no new work, closes once idle. */
  retiring: boolean
  closing: boolean
}

export interface PoolEvents {
  notice: [notice: PgNotice]
}

/**
 * A pool of pipelined connections. Queries are spread over the connections by
 * least outstanding work, several in flight on each; connections open as
 * needed up to `max`, close when idle or too old, and one that breaks is
 * replaced, with the queries that had not reached it sent on another.
 * reserve() and begin() give one connection to one caller until released.
 */
export class Pool extends Queryable {
  readonly config: ConnectionConfig
  readonly max: number
  private readonly idleTimeout: number
  private readonly maxLifetime: number
  // A true private field: it holds the password, which inspect() and JSON.stringify must not show.
  readonly #options: ClientOptions
  private readonly catalog: TypeCatalog
  private readonly queryDefaults: QueryDefaults
  private readonly slots: Slot[] = []
  /** Requests waiting because every connection is reserved and the pool is full. */
  private waiting: Request[] = []
  private reserveWaiters: ((slot: Slot | Error) => void)[] = []
  private notifier: Client | null = null
  private sweeper: NodeJS.Timeout | null = null
  private ended: Promise<void> | null = null
  private destroyed: Error | null = null
  private readonly emitter = new EventEmitter()
  /**
   * Shared by every connection the pool opens: a new connection replaces one
   * that failed, so with a backoff of its own each would start at zero, and a
   * server that drops every connection would get one attempt per query.
   */
  private readonly backoff: Backoff = { failures: 0, nextAttemptAt: 0 }

  constructor(config?: string | PoolOptions) {
    super()
    this.config = resolveConfig(config, { ignoreKeys: poolKeys })
    const opts: PoolOptions = typeof config === 'object' && config !== null ? config : {}
    this.#options = typeof config === 'string' ? { connectionString: config } : { ...opts }
    const max = opts.max ?? 10
    if (!Number.isInteger(max) || max < 1) throw new ArgumentError('max must be a positive integer')
    this.max = max
    this.idleTimeout = nonNegative(opts.idleTimeout, 30_000, 'idleTimeout')
    this.maxLifetime = nonNegative(opts.maxLifetime, 1_800_000, 'maxLifetime')
    this.catalog = new TypeCatalog({ ...defaultTypeOptions, ...checkTypeOptions(opts.types, 'types') }, opts.textResults === true)
    for (const t of opts.customTypes ?? []) this.registerType(t)
    const rowMode: RowMode = opts.rowMode !== undefined ? checkRowMode(opts.rowMode) : 'object'
    this.queryDefaults = { rowMode, prepare: this.config.prepare, queryTimeout: opts.queryTimeout, catalog: this.catalog, view: this.catalog.view(), trace: traceBase(this.config, opts.traceParameters === true) }
  }

  protected defaults(): QueryDefaults {
    return this.queryDefaults
  }

  on<K extends keyof PoolEvents>(event: K, listener: (...args: PoolEvents[K]) => void): this {
    this.emitter.on(event, listener as (...a: unknown[]) => void)
    return this
  }

  off<K extends keyof PoolEvents>(event: K, listener: (...args: PoolEvents[K]) => void): this {
    this.emitter.off(event, listener as (...a: unknown[]) => void)
    return this
  }

  /** Registers a codec for a type, for every connection of the pool (see Client.registerType). */
  registerType(custom: CustomType): void {
    this.catalog.register(custom)
  }

  // --- connections --------------------------------------------------------------

  private newSlot(): Slot {
    const now = performance.now()
    const slot: Slot = {
      client: undefined as unknown as Client,
      reserved: null,
      lastUsed: now,
      // Jitter, so that connections opened together are not all replaced together.
      expiresAt: this.maxLifetime > 0 ? now + this.maxLifetime * (0.9 + Math.random() * 0.1) : Infinity,
      retiring: false,
      closing: false,
    }
    slot.client = new Client(this.#options, {
      catalog: this.catalog,
      config: this.config,
      orphans: (reqs, err) => this.orphaned(slot, reqs, err),
      backoff: this.backoff,
    })
    slot.client.on('notice', (n) => this.emitter.emit('notice', n))
    this.slots.push(slot)
    this.startSweeper()
    return slot
  }

  /** A connection broke or could not open: forget it, and send its unsent requests elsewhere. */
  private orphaned(slot: Slot, reqs: Request[], err: Error): void {
    this.removeSlot(slot)
    slot.client.destroy(err)
    const healthy = this.slots.some((s) => s.client.connected && !s.retiring && !s.closing)
    for (const req of reqs) {
      // Without a working connection left, retrying at once would only fail the same way.
      if (healthy) this.dispatch(req)
      else req.fail(err, false)
    }
  }

  private removeSlot(slot: Slot): void {
    const i = this.slots.indexOf(slot)
    if (i >= 0) this.slots.splice(i, 1)
  }

  private usable(s: Slot): boolean {
    return s.reserved === null && !s.retiring && !s.closing
  }

  /** The usable connection with the least outstanding work. */
  private best(): Slot | undefined {
    let best: Slot | undefined
    let bestLoad = Infinity
    for (const s of this.slots) {
      if (!this.usable(s)) continue
      const load = s.client.pendingQueries
      if (load < bestLoad) {
        best = s
        bestLoad = load
      }
    }
    return best
  }

  protected dispatch(req: Request): void {
    if (this.ended !== null || this.destroyed !== null) {
      req.fail(this.closedError(), false)
      return
    }
    let slot = this.best()
    // Every connection busy (or none yet): open another while the pool may grow.
    // An idle connection is always reused, so a trickle of queries needs one.
    if ((slot === undefined || slot.client.pendingQueries > 0) && this.slots.length < this.max) slot = this.newSlot()
    if (slot === undefined) {
      this.waiting.push(req)
      return
    }
    slot.lastUsed = performance.now()
    slot.client.send(req, null)
  }

  /** A cursor gets a connection of its own, given back when it is done. */
  protected override dispatchExclusive(req: Request & { readonly promise: Promise<unknown> }): void {
    this.reserve().then(
      (reserved) => {
        const done = (): void => void reserved.release()
        req.promise.then(done, done)
        reserved.send(req, null)
      },
      (err: unknown) => req.fail(err instanceof Error ? err : new Error(String(err)), false),
    )
  }

  // --- reservations -----------------------------------------------------------

  /** Hands out one connection exclusively until `release()`; waits if all are reserved and the pool is full. */
  reserve(): Promise<ReservedClient> {
    if (active(acquireChannel)) return traceAcquire(this.queryDefaults.trace!, this.max, this.slots.length, this.waitingCount, () => this.reserveOne())
    return this.reserveOne()
  }

  private async reserveOne(): Promise<ReservedClient> {
    const token = {}
    let slot: Slot
    try {
      slot = await this.reserveSlot(token)
    } catch (err) {
      throw withCaller(err)
    }
    try {
      await slot.client.hold(token)
    } catch (err) {
      slot.reserved = null
      throw err
    }
    return new ReservedClient(this, slot, token, this.queryDefaults)
  }

  /**
   * Picks the slot for a reservation and marks it reserved at once, so that
   * reservations asked for in the same tick never get the same slot.
   */
  private reserveSlot(token: object): Promise<Slot> {
    if (this.ended !== null || this.destroyed !== null) return Promise.reject(this.closedError())
    let best: Slot | undefined
    for (const s of this.slots) {
      if (this.usable(s) && (best === undefined || s.client.pendingQueries < best.client.pendingQueries)) best = s
    }
    let chosen: Slot | undefined
    if (best !== undefined && (best.client.pendingQueries === 0 || this.slots.length >= this.max)) chosen = best
    else if (this.slots.length < this.max) chosen = this.newSlot()
    if (chosen !== undefined) {
      chosen.reserved = token
      return Promise.resolve(chosen)
    }
    return new Promise((resolve, reject) => {
      this.reserveWaiters.push((s) => {
        if (s instanceof Error) return reject(s)
        s.reserved = token
        resolve(s)
      })
    })
  }

  /** A reservation ended: the connection serves the pool again (or the next reservation). */
  releaseSlot(slot: Slot, token: object): void {
    if (slot.reserved !== token) return
    slot.client.release(token)
    slot.reserved = null
    slot.lastUsed = performance.now()
    const next = this.reserveWaiters.shift()
    if (next !== undefined && !slot.closing) {
      next(slot)
      return
    }
    const waiting = this.waiting
    this.waiting = []
    for (const req of waiting) this.dispatch(req)
  }

  /**
   * Runs `fn` in a transaction on a connection of its own (see Client.begin);
   * the pool's other queries go to other connections meanwhile.
   */
  begin<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>
  begin<T>(options: TransactionOptions, fn: (tx: Transaction) => Promise<T>): Promise<T>
  async begin<T>(a: TransactionOptions | ((tx: Transaction) => Promise<T>), b?: (tx: Transaction) => Promise<T>): Promise<T> {
    const [options, fn] = typeof a === 'function' ? [{}, a] : [a, b]
    if (typeof fn !== 'function') throw new ArgumentError('begin() needs a function to run in the transaction')
    const reserved = await this.reserve()
    try {
      return await reserved.begin(options, fn)
    } finally {
      await reserved.release()
    }
  }

  // --- LISTEN / NOTIFY --------------------------------------------------------

  /** Listens on a dedicated connection of the pool's (see Client.listen). */
  /** A logical change stream (pgoutput) on a replication connection of its own, outside the pool's connections. */
  subscribe(options: SubscribeOptions): Subscription {
    return subscribe(this.config, this.catalog, options)
  }

  /** Raw WAL (physical) or a logical slot's plugin output, on a replication connection of its own. */
  replicate(options: ReplicateOptions): WalStream {
    return replicate(this.config, this.catalog, options)
  }

  listen(channel: string, handler: NotificationHandler): Promise<Listener> {
    if (this.ended !== null || this.destroyed !== null) return Promise.reject(this.closedError())
    // Without orphans: like a lone client, it reconnects by itself and listens again after a lost connection.
    this.notifier ??= new Client(this.#options, { catalog: this.catalog, config: this.config })
    return this.notifier.listen(channel, handler)
  }

  async notify(channel: string, payload?: string): Promise<void> {
    if (typeof channel !== 'string') throw new ArgumentError('notify() needs a channel name')
    await this.query('SELECT pg_notify($1, $2)', [channel, payload ?? null])
  }

  // --- upkeep and shutdown ----------------------------------------------------

  private startSweeper(): void {
    if (this.sweeper !== null) return
    const limits = [this.idleTimeout, this.maxLifetime].filter((t) => t > 0)
    if (limits.length === 0) return
    const every = Math.max(50, Math.min(1000, Math.min(...limits) / 4))
    this.sweeper = setInterval(() => this.sweep(), every)
    // Upkeep alone must not keep the process alive.
    this.sweeper.unref()
  }

  /** Closes connections idle too long, and retires those past their lifetime. */
  private sweep(): void {
    const now = performance.now()
    for (const s of [...this.slots]) {
      if (s.reserved !== null || s.closing) continue
      if (now >= s.expiresAt) s.retiring = true
      const idle = s.client.pendingQueries === 0
      if (idle && (s.retiring || (this.idleTimeout > 0 && now - s.lastUsed >= this.idleTimeout))) this.closeSlot(s)
    }
  }

  private closeSlot(s: Slot): void {
    s.closing = true
    this.removeSlot(s)
    void s.client.end()
  }

  private closedError(): Error {
    return this.destroyed ?? new ConnectionError('PG_CONNECTION_ENDED', 'the pool was ended')
  }

  /** Lets in-flight queries finish (and reservations be released), then closes every connection. */
  end(): Promise<void> {
    if (this.ended !== null) return this.ended
    this.ended = (async () => {
      if (this.sweeper !== null) clearInterval(this.sweeper)
      for (const w of this.reserveWaiters.splice(0)) w(this.closedError())
      for (const req of this.waiting.splice(0)) req.fail(this.closedError(), false)
      const clients = this.slots.map((s) => s.client)
      if (this.notifier !== null) clients.push(this.notifier)
      await Promise.all(clients.map((c) => c.end()))
      this.slots.length = 0
    })()
    return this.ended
  }

  /** Closes everything at once; every pending query is rejected. */
  destroy(reason?: Error): void {
    const err = reason ?? new ConnectionError('PG_CONNECTION_ENDED', 'the pool was destroyed')
    this.destroyed = err
    if (this.sweeper !== null) clearInterval(this.sweeper)
    for (const w of this.reserveWaiters.splice(0)) w(err)
    for (const req of this.waiting.splice(0)) req.fail(err, false)
    for (const s of this.slots.splice(0)) s.client.destroy(err)
    this.notifier?.destroy(err)
  }

  /** Open (or opening) connections. */
  get totalCount(): number {
    return this.slots.length
  }

  /** Connections with nothing in flight and not reserved. */
  get idleCount(): number {
    return this.slots.filter((s) => s.reserved === null && s.client.pendingQueries === 0).length
  }

  /** Reserved connections. */
  get reservedCount(): number {
    return this.slots.filter((s) => s.reserved !== null).length
  }

  /** Queries and reservations waiting for a connection. */
  get waitingCount(): number {
    return this.waiting.length + this.reserveWaiters.length
  }
}

/**
 * One connection of a pool, held exclusively until release(): its queries
 * (and transactions) are pipelined on that connection and nothing else runs
 * there meanwhile.
 */
export class ReservedClient extends Queryable implements TransactionHost {
  private released = false
  private txLock: Promise<void> = Promise.resolve()

  constructor(
    private readonly pool: Pool,
    private readonly slot: Slot,
    private readonly token: object,
    private readonly queryDefaults: QueryDefaults,
  ) {
    super()
  }

  protected defaults(): QueryDefaults {
    return this.queryDefaults
  }

  defaultsForTransaction(): QueryDefaults {
    return this.queryDefaults
  }

  protected dispatch(req: Request): void {
    this.send(req, this.token)
  }

  /** TransactionHost: every request goes on the reserved connection. */
  send(req: Request, _owner: object | null): void {
    if (this.released) {
      req.fail(new ArgumentError('this reserved connection was released'), false)
      return
    }
    this.slot.client.send(req, this.token)
  }

  /** Transactions on a reservation run one after the other. */
  async hold(_holder: object): Promise<void> {
    let unlock!: () => void
    const previous = this.txLock
    this.txLock = new Promise((r) => (unlock = r))
    await previous
    this.unlock = unlock
  }

  private unlock: (() => void) | null = null

  release(holder: object): void
  release(): Promise<void>
  release(holder?: object): void | Promise<void> {
    if (holder !== undefined) {
      const u = this.unlock
      this.unlock = null
      u?.()
      return
    }
    return this.releaseReservation()
  }

  /** TransactionHost: whether the reservation still has the connection it started on. */
  holds(_holder: object): boolean {
    return !this.released && this.slot.client.holds(this.token)
  }

  /** Runs `fn` in a transaction on this connection (see Client.begin). */
  begin<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>
  begin<T>(options: TransactionOptions, fn: (tx: Transaction) => Promise<T>): Promise<T>
  begin<T>(a: TransactionOptions | ((tx: Transaction) => Promise<T>), b?: (tx: Transaction) => Promise<T>): Promise<T> {
    const [options, fn] = typeof a === 'function' ? [{}, a] : [a, b]
    if (typeof fn !== 'function') return Promise.reject(new ArgumentError('begin() needs a function to run in the transaction'))
    return runTransaction(this, options, fn)
  }

  /** The backend process id of the reserved connection. */
  get processId(): number {
    return this.slot.client.processId
  }

  /**
   * Gives the connection back to the pool. A transaction left open on it is
   * rolled back first, so the next user never inherits it.
   */
  private async releaseReservation(): Promise<void> {
    if (this.released) return
    const client = this.slot.client
    if (client.holds(this.token) && client.connected && (client.pendingQueries > 0 || client.transactionStatus !== 'I')) {
      // Queries still in flight may change the transaction status: an empty
      // query behind them reports it as of their end.
      await this.simpleQuery('').catch(() => undefined)
      if (client.holds(this.token) && client.connected && client.transactionStatus !== 'I') await this.simpleQuery('ROLLBACK').catch(() => undefined)
    }
    this.released = true
    this.pool.releaseSlot(this.slot, this.token)
  }
}

function nonNegative(v: number | undefined, dflt: number, name: string): number {
  if (v === undefined) return dflt
  if (typeof v !== 'number' || !(v >= 0)) throw new ArgumentError(`${name} must be a non-negative number of milliseconds`)
  return v
}

/** Creates a pool (connections open when queries need them). */
export function createPool(config?: string | PoolOptions): Pool {
  return new Pool(config)
}
