import { EventEmitter } from 'node:events'
import { Lane, safely } from '../lane/lane.js'
import { exposeInternals } from '../lane/internals.js'
import type { Backoff } from '../lane/backoff.js'
import { checkClientOptions, nonNegative, registerCustomType, type CheckedClientOptions } from '../queryable/client-options.js'
import { resolveConfig } from '../config/index.js'
import type { ConnectionConfig } from '../config/types.js'
import type { Request } from '../connection/request.js'
import { ArgumentError, ConnectionError, withCaller, type PgNotice } from '../errors.js'
import { LaneQueryable } from '../queryable/lane-queryable.js'
import { Listeners, type Listener, type NotificationHandler } from '../lane/notify.js'
import { clusterOf, type Cluster } from './cluster.js'
import { hookSteps, type HookSteps } from './hooks.js'
import { Lsn } from '../types/lsn.js'
import { checkHost, singleHost, type HostInfo, type HostState } from './hosts.js'
import { checkMin, PoolQueue, poolKeys, spareLane, type PoolEvents, type PoolOptions, type PoolSettings } from './options.js'
import { Upkeep } from './upkeep.js'
import { makePoolLane, type PoolLaneSettings } from './pool-lane.js'
import { exclusive, leastOutstanding, plain, type PoolLane, type PoolRouting, type RouteNeed } from './routing.js'
import { checkOptionKeys, checkRoute, Coalescer, Queryable, reserveOptionKeys, type QueryDefaults, type RouteOptions } from '../queryable/queryable.js'
import { beginReserved, ReservedClient, startReserved, type Reservation } from './reserved-client.js'
import type { Transaction, TransactionOptions } from '../queryable/transaction.js'
import type { StartedTransaction, StartTransactionOptions } from '../queryable/started-transaction.js'
import { acquireChannel, active, traceAcquire } from '../trace/tracing.js'
import type { TypeCatalog } from '../types/catalog.js'
import type { CustomType } from '../types/custom.js'

export { ReservedClient }
export type { PoolEvents, PoolOptions, PoolSettings }

/**
 * pool/'s main file. A pool of pipelined connections. Queries are spread over the connections by
 * least outstanding work, several in flight on each; connections open as
 * needed up to `max`, close when idle or too old, and one that breaks is
 * replaced, with the queries that had not reached it sent on another.
 * reserve() and begin() give one connection to one caller until released.
 */
export class Pool extends Queryable {
  readonly config: ConnectionConfig
  readonly max: number
  /** The pool's own settings, resolved (idleTimeoutMillis too, for tools that look after node-postgres pools). */
  readonly options: PoolSettings
  readonly #upkeep: Upkeep
  readonly #laneSettings: PoolLaneSettings
  readonly #checked: CheckedClientOptions
  readonly #onNotice: ((n: PgNotice) => void) | undefined
  readonly #catalog: TypeCatalog
  readonly #defaults: QueryDefaults
  readonly #routing: PoolRouting
  /** A pool on several hosts routes by role (see pool-cluster.ts); null on one. */
  readonly #cluster: Cluster | null
  readonly #hooks: HookSteps
  readonly #lanes: PoolLane[] = []
  /** Requests and reservations waiting for a connection: every one is reserved and the pool is full, or no host they may use is up yet. */
  readonly #waiting = new PoolQueue()
  /** The connection that listens: outside the pool's lanes, reconnecting and listening again by itself. */
  #notifier: { lane: Lane; listeners: Listeners } | null = null
  #ended: Promise<void> | null = null
  #destroyed: Error | null = null
  readonly #emitter = new EventEmitter()
  /**
   * Shared by every connection the pool opens: a new connection replaces one
   * that failed, so with a backoff of its own each would start at zero, and a
   * server that drops every connection would get one attempt per query.
   */
  readonly #backoff: Backoff = { failures: 0, nextAttemptAt: 0 }

  constructor(config?: string | PoolOptions) {
    super(new Coalescer())
    this.config = resolveConfig(config, { ignoreKeys: poolKeys })
    const opts: PoolOptions = typeof config === 'object' && config !== null ? config : {}
    const max = opts.max ?? 10
    if (!Number.isInteger(max) || max < 1) throw new ArgumentError('max must be a positive integer')
    this.max = max
    const idleTimeout = nonNegative(opts.idleTimeout, 30_000, 'idleTimeout')
    const settings = { max, min: checkMin(opts.min, max), idleTimeout, maxLifetime: nonNegative(opts.maxLifetime, 1_800_000, 'maxLifetime') }
    this.options = Object.freeze({ ...settings, idleTimeoutMillis: idleTimeout })
    this.#upkeep = new Upkeep(settings, {
      lanes: this.#lanes,
      backoff: this.#backoff,
      stopped: () => this.#ended !== null || this.#destroyed !== null,
      open: () => void this.#open(null).lane.connect().catch(noop),
      close: (l) => this.#close(l),
    })
    this.#cluster = clusterOf(this.config, opts, this.#clusterOwner())
    this.#hooks = hookSteps(opts)
    this.#routing = this.#cluster ?? leastOutstanding
    this.#checked = checkClientOptions(opts, this.config)
    this.#onNotice = opts.onNotice
    this.#catalog = this.#checked.catalog
    this.#defaults = this.#checked.defaults
    this.#laneSettings = {
      config: this.config,
      defaults: this.#defaults,
      backoff: this.#backoff,
      reconnectMaxDelay: this.#checked.reconnectMaxDelay,
      maxPending: this.#checked.maxPending,
      cluster: this.#cluster,
      onConnect: this.#hooks.connect,
      notice: (n, own) => {
        this.#onNotice?.(n)
        if (own) this.#emitter.emit('notice', n)
      },
      orphaned: (entry, reqs, err, afterLoss) => this.#orphaned(entry, reqs, err, afterLoss),
      idle: (entry) => this.#idle(entry),
      lost: (entry, err, processId) => {
        if (this.#emitter.listenerCount('lost') > 0) this.#emitter.emit('lost', err, processId, entry.reserved !== null)
      },
    }
    exposeInternals(this, { kind: 'Pool', config: this.config, catalog: this.#catalog, emitter: this.#emitter, lanes: () => [...this.#lanes.map((l) => l.lane), ...(this.#notifier === null ? [] : [this.#notifier.lane])] })
  }

  /** @internal */
  protected defaults(): QueryDefaults {
    return this.#defaults
  }

  on<K extends keyof PoolEvents>(event: K, listener: (...args: PoolEvents[K]) => void): this {
    this.#emitter.on(event, listener as (...a: unknown[]) => void)
    return this
  }

  off<K extends keyof PoolEvents>(event: K, listener: (...args: PoolEvents[K]) => void): this {
    this.#emitter.off(event, listener as (...a: unknown[]) => void)
    return this
  }

  /** Registers a codec for a type, for every connection of the pool (see Client.registerType). */
  registerType(custom: CustomType): void {
    registerCustomType(this.#catalog, custom)
  }

  // --- connections --------------------------------------------------------------

  /** A new connection: to the pool's hosts as its settings say, or to `host` for routing by role (opened at once, used once ready). */
  #open(host: HostState | null): PoolLane {
    const now = performance.now()
    const lane = makePoolLane(this.#laneSettings, null, { host, entry: () => entry })
    const entry: PoolLane = {
      host,
      lane,
      reserved: null,
      lastUsed: now,
      // Jitter, so that connections opened together are not all replaced together.
      expiresAt: this.options.maxLifetime > 0 ? now + this.options.maxLifetime * (0.9 + Math.random() * 0.1) : Infinity,
      retiring: false,
      closing: false,
    }
    this.#lanes.push(entry)
    this.#upkeep.schedule()
    // A failed connect is reported through #orphaned, which forgets the lane.
    if (host !== null) lane.connect().then(() => this.#cluster!.connected(entry), noop)
    return entry
  }

  /**
   * A connection broke or could not open: forget it, and send its unsent
   * requests elsewhere. Those of a lost connection always go on, to a new
   * connection if need be (the shared backoff paces it): a server that was
   * restarted or failed over takes them there. Those of a failed connect go
   * only to a connection that works; retrying at once would fail the same way.
   */
  #orphaned(entry: PoolLane, reqs: Request[], err: Error, afterLoss: boolean): void {
    this.#remove(entry)
    entry.closing = true
    entry.lane.destroy(err)
    if (entry.host !== null) afterLoss ? this.#cluster!.lost(entry.host) : this.#cluster!.failed(entry.host, err)
    const goOn = afterLoss || this.#lanes.some((l) => l.lane.connected && !l.retiring && !l.closing)
    for (const req of reqs) {
      // Where writes go: a read marked readOnly is served there as well, and what it was is not kept per request.
      if (goOn) this.#send(req, plain, performance.now())
      else req.fail(err, false)
    }
    // A reserved lane leaves room the reservation no longer uses.
    if (entry.reserved !== null) this.#retry()
    this.#upkeep.warm()
  }

  /** A connection of the pool answered all its queries: idle from now (a reservation's lane is idle once given back). */
  #idle(entry: PoolLane): void {
    if (entry.reserved !== null || entry.closing) return
    this.#upkeep.idle(entry)
    if (this.#emitter.listenerCount('release') > 0) safely(() => this.#emitter.emit('release', false))
  }

  #remove(entry: PoolLane): void {
    const i = this.#lanes.indexOf(entry)
    if (i >= 0) this.#lanes.splice(i, 1)
  }

  /**
   * The routing's choice, with a new lane opened when it asks for one. A lane
   * opened to a given host is used once it is ready (the request waits meanwhile).
   */
  #route(need: RouteNeed): PoolLane | undefined {
    const choice = this.#routing.choose(this.#lanes, need, this.#lanes.length < this.max)
    if (choice === 'wait') {
      // Nothing it may use is open or opening: learn the hosts' roles again.
      this.#cluster?.discover()
      return undefined
    }
    if (choice === 'open') return this.#open(null)
    if ('open' in choice) {
      this.#open(choice.open)
      return undefined
    }
    return choice
  }

  #needOf(route: RouteOptions | undefined, isExclusive: boolean): RouteNeed {
    return this.#cluster?.needOf(route, isExclusive) ?? (isExclusive ? exclusive : plain)
  }

  /** @internal */
  protected dispatch(req: Request, route?: RouteOptions): void {
    if (this.#ended !== null || this.#destroyed !== null) {
      req.fail(this.#closedError(), false)
      return
    }
    this.#send(req, this.#needOf(route, false), performance.now())
  }

  #send(req: Request, need: RouteNeed, since: number): void {
    const entry = this.#route(need)
    if (entry === undefined) {
      this.#waiting.requests.push({ req, need, since })
      return
    }
    entry.lastUsed = performance.now()
    entry.lane.send(req, null)
    this.#upkeep.used()
  }

  /** Hosts changed (a role learned, a connection ready, a backoff over): what waits tries again. */
  #retry(): void {
    this.#waiting.retry(
      (w) => this.#send(w.req, w.need, w.since),
      (need) => this.#route(need),
      (need, waited) => this.#cluster?.expired(need, waited) ?? null,
    )
  }

  /** A cursor gets a connection of its own, given back when it is done. */
  /** @internal */
  protected override dispatchExclusive(req: Request & { readonly promise: Promise<unknown> }, route?: RouteOptions): void {
    let need: RouteNeed
    try {
      need = this.#needOf(route, true)
    } catch (err) {
      req.fail(err as Error, false)
      return
    }
    this.#reserve(need).then(
      ({ reservation, client }) => {
        const done = (): void => void client.release()
        req.promise.then(done, done)
        reservation.lane.send(req, reservation.token)
      },
      (err: unknown) => req.fail(err instanceof Error ? err : new Error(String(err)), false),
    )
  }

  // --- reservations -----------------------------------------------------------

  /**
   * Hands out one connection exclusively until `release()`; waits if all are reserved and
   * the pool is full. `{ readOnly: true }`: on several hosts, a standby's (see readOnly).
   */
  async reserve(options?: Pick<RouteOptions, 'readOnly'>): Promise<ReservedClient> {
    if (options !== undefined) {
      checkOptionKeys(options, reserveOptionKeys, 'reserve()')
      checkRoute(options)
    }
    return (await this.#reserve(this.#needOf(options, true))).client
  }

  #reserve(need: RouteNeed): Promise<{ reservation: Reservation; client: ReservedClient }> {
    const reserve = async (): Promise<{ reservation: Reservation; client: ReservedClient }> => {
      const { entry, token } = await this.#reserveOne(need)
      const discard = (): void => this.#close(entry, token)
      const reservation: Reservation = { lane: entry.lane, token, giveBack: () => this.#giveBack(entry, token), cleanup: this.#hooks.release, discard }
      const client = ReservedClient.create(reservation, this.#defaults)
      await this.#hooks.reserve(client, discard)
      return { reservation, client }
    }
    if (active(acquireChannel)) return traceAcquire(this.#defaults.trace!, this.max, this.#lanes.length, this.waitingCount, reserve)
    return reserve()
  }

  async #reserveOne(need: RouteNeed): Promise<{ entry: PoolLane; token: object }> {
    const token = {}
    let entry: PoolLane
    try {
      entry = await this.#reserveLane(token, need)
    } catch (err) {
      throw withCaller(err)
    }
    try {
      await entry.lane.hold(token)
    } catch (err) {
      entry.reserved = null
      throw err
    }
    return { entry, token }
  }

  /**
   * Picks the lane for a reservation and marks it reserved at once, so that
   * reservations asked for in the same tick never get the same lane.
   */
  #reserveLane(token: object, need: RouteNeed): Promise<PoolLane> {
    if (this.#ended !== null || this.#destroyed !== null) return Promise.reject(this.#closedError())
    const chosen = this.#route(need)
    this.#upkeep.used()
    if (chosen !== undefined) {
      chosen.reserved = token
      return Promise.resolve(chosen)
    }
    return this.#waiting.reserveLater(need, token)
  }

  /** A reservation ended: the connection serves the pool again (or the next reservation). */
  #giveBack(entry: PoolLane, token: object): void {
    if (entry.reserved !== token) return
    entry.lane.release(token)
    entry.reserved = null
    this.#upkeep.idle(entry)
    if (this.#emitter.listenerCount('release') > 0) safely(() => this.#emitter.emit('release', true))
    // A lane closed or lost meanwhile is no longer the pool's: what waits gets another.
    if (this.#cluster !== null || entry.closing) return this.#retry()
    const next = this.#waiting.reservations.shift()
    if (next !== undefined) return next.give(entry)
    for (const w of this.#waiting.takeRequests()) this.#send(w.req, w.need, w.since)
  }

  /**
   * Runs `fn` in a transaction on a connection of its own (see Client.begin);
   * the pool's other queries go to other connections meanwhile.
   */
  begin<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>
  begin<T>(options: TransactionOptions, fn: (tx: Transaction) => Promise<T>): Promise<T>
  begin<T>(a: TransactionOptions | ((tx: Transaction) => Promise<T>), b?: (tx: Transaction) => Promise<T>): Promise<T> {
    return beginReserved((o) => this.reserve(o), a, b)
  }

  /**
   * Begins a transaction now on a connection of its own, held until its
   * commit() or rollback() (see Client.startTransaction), then given back.
   */
  startTransaction(options?: StartTransactionOptions): Promise<StartedTransaction> {
    return startReserved((o) => this.reserve(o), options)
  }

  // --- LISTEN / NOTIFY ---------------------------------------------------------

  /** Listens on a dedicated connection of the pool's (see Client.listen). */
  listen(channel: string, handler: NotificationHandler): Promise<Listener> {
    if (this.#ended !== null || this.#destroyed !== null) return Promise.reject(this.#closedError())
    if (this.#notifier === null) {
      // Without orphans: like a lone client, it reconnects by itself and listens again after a lost connection.
      let queries: LaneQueryable | null = null
      const listeners = new Listeners((sql) => queries!.query(sql).then(() => undefined))
      const lane = makePoolLane(this.#laneSettings, listeners)
      queries = new LaneQueryable(lane, this.#defaults)
      this.#notifier = { lane, listeners }
    }
    return this.#notifier.listeners.listen(channel, handler)
  }

  async notify(channel: string, payload?: string): Promise<void> {
    if (typeof channel !== 'string') throw new ArgumentError('notify() needs a channel name')
    await this.query('SELECT pg_notify($1, $2)', [channel, payload ?? null])
  }

  // --- upkeep and shutdown ----------------------------------------------------

  /** Closes a connection; with `token`, a reserved one a hook failed on, and what waits for a connection tries again. */
  #close(l: PoolLane, token?: object): void {
    l.closing = true
    this.#remove(l)
    void l.lane.end()
    if (token === undefined) return
    l.lane.release(token)
    this.#retry()
  }

  #closedError(): Error {
    return this.#destroyed ?? new ConnectionError('PG_CONNECTION_ENDED', 'the pool was ended')
  }

  /** Lets in-flight queries finish (and reservations be released), then closes every connection. */
  end(): Promise<void> {
    if (this.#ended !== null) return this.#ended
    this.#ended = (async () => {
      this.#upkeep.stop()
      this.#cluster?.stop()
      this.#waiting.failAll(this.#closedError())
      const lanes = this.#lanes.map((l) => l.lane)
      if (this.#notifier !== null) lanes.push(this.#notifier.lane)
      await Promise.all(lanes.map((l) => l.end()))
      this.#lanes.length = 0
    })()
    return this.#ended
  }

  /** `await using pool = createPool(...)`: end() when the scope exits. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.end()
  }

  /** Closes everything at once; every pending query is rejected. */
  destroy(reason?: Error): void {
    const err = reason ?? new ConnectionError('PG_CONNECTION_ENDED', 'the pool was destroyed')
    this.#destroyed = err
    this.#upkeep.stop()
    this.#cluster?.stop()
    this.#waiting.failAll(err)
    for (const l of this.#lanes.splice(0)) l.lane.destroy(err)
    this.#notifier?.lane.destroy(err)
  }

  /** The cluster's side of the pool: how it opens connections, checks hosts and reports. */
  #clusterOwner(): ConstructorParameters<typeof Cluster>[2] {
    return {
      lanes: () => this.#lanes,
      canOpen: () => this.#lanes.length < this.max && this.#ended === null && this.#destroyed === null,
      open: (host) => this.#open(host),
      makeRoom: () => {
        const idle = spareLane(this.#lanes)
        if (idle !== undefined) this.#close(idle)
        return idle !== undefined
      },
      check: (l) => checkHost(this.#defaults, l.lane),
      retry: () => this.#retry(),
      changed: (info, change) => safely(() => this.#emitter.emit('host', info, change)),
    }
  }

  /** Each host: its role, connections, WAL position and lag, as last seen (on one host, the role its connections show). */
  get hosts(): HostInfo[] {
    return this.#cluster?.info() ?? [singleHost(this.config, this.#lanes)]
  }

  /**
   * Connects to each host not connected yet; resolves once each answered (its
   * role known) or failed (down), so that the first reads find the standbys.
   */
  async discover(): Promise<HostInfo[]> {
    if (this.#ended !== null || this.#destroyed !== null) throw this.#closedError()
    if (this.#cluster !== null) await this.#cluster.discovered()
    else if (this.#lanes.length === 0) await this.#open(null).lane.connect()
    return this.hosts
  }

  /**
   * The primary's current WAL position: every write completed before this call is at or before it. As a read's
   * `after`, it reads your own writes from a standby: `pool.query(sql, [], { readOnly: true, after: await pool.writeLsn() })`.
   */
  async writeLsn(): Promise<Lsn> {
    const r = await this.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn', undefined, { readOnly: false })
    return Lsn.from(r.rows[0]!.lsn)
  }

  /** Open (or opening) connections. */
  get totalCount(): number {
    return this.#lanes.length
  }

  /** Connections with nothing in flight and not reserved. */
  get idleCount(): number {
    return this.#lanes.filter((l) => l.reserved === null && l.lane.pendingQueries === 0).length
  }

  /** Reserved connections. */
  get reservedCount(): number {
    return this.#lanes.filter((l) => l.reserved !== null).length
  }

  /** Queries and reservations waiting for a connection. */
  get waitingCount(): number {
    return this.#waiting.count
  }
}

const noop = (): void => {}

/** Creates a pool (connections open when queries need them). */
export function createPool(config?: string | PoolOptions): Pool {
  return new Pool(config)
}
