import type { ConnectionConfig } from '../config/types.js'
import { ConnectionError } from '../errors.js'
import { Lsn } from '../types/lsn.js'
import { checkLagLimit, HostState, hostInfo, roleOf, type HostCheck, type HostInfo, type HostRole, type LagLimit, type ReplicationLag } from './hosts.js'
import { nonNegative } from '../queryable/client-options.js'
import { checkRoute, type RouteOptions } from '../queryable/query-options.js'
import { exclusive, exclusiveRead, plain, plainRead, usable, type PoolLane, type PoolRouting, type RouteChoice, type RouteNeed } from './routing.js'
import { unrefTimer } from '../connection/timers.js'

// A pool on several hosts: which host a request may go to (by the role it
// needs and how stale a standby may be), discovering roles, noticing
// promotions and lag, and backing off hosts that are down. The pool keeps its
// connections; this decides among them and says when a new one is needed.

/** What changed about a host (the pool's 'host' event). */
export type HostChange = 'role' | 'down' | 'up' | 'lagging' | 'caught-up'

/** What the cluster asks of the pool that owns it. */
export interface ClusterOwner {
  lanes(): readonly PoolLane[]
  /** Whether one more connection fits within max. */
  canOpen(): boolean
  /** Closes an idle connection to make room for another (false: none is idle). */
  makeRoom(): boolean
  /** Opens a connection to `host` (not yet ready), for the pool's routing. */
  open(host: HostState): PoolLane
  /** Sends the host check on an open connection. */
  check(lane: PoolLane): Promise<HostCheck>
  /** Hosts changed: requests waiting for one may now go. */
  retry(): void
  changed(info: HostInfo, change: HostChange): void
}

/** The pool options the cluster takes (see PoolOptions). */
export interface ClusterSettings {
  readOnly?: boolean
  maxReplicationLag?: ReplicationLag
  hostCheckInterval?: number
  failoverTimeout?: number
}

/** Routing by role for a pool on several hosts, null on one; the settings are checked either way. */
export function clusterOf(config: ConnectionConfig, settings: ClusterSettings, owner: ClusterOwner): Cluster | null {
  const cluster = new Cluster(config, settings, owner)
  return config.hosts.length > 1 ? cluster : null
}


export class Cluster implements PoolRouting {
  readonly hosts: HostState[]
  readonly #lag: LagLimit
  readonly #every: number
  readonly #readOnly: boolean
  readonly #failoverTimeout: number
  readonly #target: ConnectionConfig['targetSessionAttrs']
  readonly #random: boolean
  #timer: NodeJS.Timeout | null = null
  /** The primary's WAL insert position at its last check: what standbys' lag in bytes is measured against. */
  #primaryLsn: bigint | null = null
  #checking = new Set<HostState>()
  /** Bumped whenever a host's role, lag or reachability changes: see #tiers. */
  #version = 0
  #cache: { version: number; until: number; reads: HostState[][]; writes: HostState[][] } | null = null
  /** Callers of discovered(), woken when no host is being probed any more. */
  #settledWaiters: (() => void)[] = []

  constructor(
    config: ConnectionConfig,
    settings: ClusterSettings,
    private readonly owner: ClusterOwner,
  ) {
    this.hosts = config.hosts.map((h) => new HostState(config, h))
    this.#lag = checkLagLimit(settings.maxReplicationLag)
    this.#every = nonNegative(settings.hostCheckInterval, 1000, 'hostCheckInterval')
    this.#failoverTimeout = nonNegative(settings.failoverTimeout, 30_000, 'failoverTimeout')
    checkRoute({ readOnly: settings.readOnly })
    this.#readOnly = settings.readOnly === true
    this.#target = config.targetSessionAttrs
    this.#random = config.loadBalanceHosts === 'random'
  }

  // --- routing ----------------------------------------------------------------

  /** What a request needs, from its options over the pool's readOnly: one shared object for the common cases. */
  needOf(route: RouteOptions | undefined, isExclusive: boolean): RouteNeed {
    const readOnly = route?.readOnly ?? this.#readOnly
    const after = route?.after
    if (after !== undefined) return { exclusive: isExclusive, readOnly, after: Lsn.from(after).value }
    if (isExclusive) return readOnly ? exclusiveRead : exclusive
    return readOnly ? plainRead : plain
  }

  /** The error for a request that waited `waitedMs` for a host: once past failoverTimeout. */
  expired(need: RouteNeed, waitedMs: number): ConnectionError | null {
    return waitedMs > this.#failoverTimeout ? this.unavailable(need, waitedMs) : null
  }

  /**
   * The hosts a request may use, best first. Writes follow
   * target_session_attrs; reads (readOnly) prefer a standby that is fresh
   * enough, then go where writes go.
   */
  #tiers(need: RouteNeed): HostState[][] {
    if (need.after !== null) return this.#computeTiers(need)
    // Routing runs per query: the tiers are worked out again only when a host changed, or a backoff ended.
    const c = this.#cache
    if (c !== null && c.version === this.#version && (c.until === Infinity || performance.now() < c.until)) return need.readOnly ? c.reads : c.writes
    const until = this.hosts.reduce((m, h) => (h.down ? Math.min(m, h.downUntil) : m), Infinity)
    const fresh = { version: this.#version, until, reads: this.#computeTiers(plainRead), writes: this.#computeTiers(plain) }
    this.#cache = fresh
    return need.readOnly ? fresh.reads : fresh.writes
  }

  #computeTiers(need: RouteNeed): HostState[][] {
    const up = this.hosts.filter((h) => !h.down)
    const fresh = up.filter((h) => h.role === 'standby' && !h.lagging && (need.after === null || (h.lsn !== null && h.lsn >= need.after)))
    const primaries = up.filter((h) => h.role === 'primary')
    let writes: HostState[][]
    switch (this.#target) {
      case 'any':
        // libpq's order: the first host that answers, unless hosts are balanced at random.
        writes = this.#random ? [up.filter((h) => h.role !== 'unknown')] : this.hosts.map((h) => (h.down || h.role === 'unknown' ? [] : [h]))
        break
      case 'read-write':
      case 'primary':
        writes = [primaries]
        break
      case 'read-only':
      case 'standby':
        writes = [fresh]
        break
      case 'prefer-standby':
        writes = [fresh, primaries]
        break
    }
    return need.readOnly ? [fresh, ...writes] : writes
  }

  choose(lanes: readonly PoolLane[], need: RouteNeed, canOpen: boolean): RouteChoice {
    for (const tier of this.#tiers(need)) {
      if (tier.length === 0) continue
      let best: PoolLane | undefined
      let bestLoad = Infinity
      let ties = 0
      let opening = 0
      for (const l of lanes) {
        if (!usable(l) || l.host === null || !tier.includes(l.host)) continue
        if (!l.lane.connected) {
          opening++
          continue
        }
        const load = l.lane.pendingQueries
        if (load < bestLoad) {
          best = l
          bestLoad = load
          ties = 1
        } else if (load === bestLoad && this.#random && Math.random() * ++ties < 1) best = l
      }
      if (best !== undefined && (bestLoad === 0 || !canOpen || opening > 0)) return best
      if (canOpen && opening === 0) return { open: this.#leastUsed(tier, lanes) }
      if (best !== undefined) return best
      if (opening > 0) return 'wait'
    }
    return 'wait'
  }

  /** The host of `tier` with the fewest connections (at random among equals with load_balance_hosts=random). */
  #leastUsed(tier: HostState[], lanes: readonly PoolLane[]): HostState {
    let best = tier[0]!
    let fewest = Infinity
    let ties = 0
    for (const h of tier) {
      let n = 0
      for (const l of lanes) if (l.host === h && !l.closing) n++
      if (n < fewest) {
        best = h
        fewest = n
        ties = 1
      } else if (n === fewest && this.#random && Math.random() * ++ties < 1) best = h
    }
    return best
  }

  /**
   * Nothing suitable is open or opening: connect to every host that has no
   * connection and is not backing off, to learn (or relearn) its role.
   */
  discover(): void {
    const lanes = this.owner.lanes()
    for (const h of this.hosts) {
      if (h.down || h.probing || lanes.some((l) => l.host === h && !l.closing)) continue
      if (!this.owner.canOpen()) return
      h.probing = true
      this.owner.open(h)
    }
  }

  /** Probes every host without a connection, and resolves once none is being probed: each answered (its role known) or failed. */
  discovered(): Promise<void> {
    this.discover()
    return new Promise((resolve) => {
      this.#settledWaiters.push(resolve)
      this.#wakeSettled()
    })
  }

  #wakeSettled(): void {
    if (this.hosts.some((h) => h.probing)) return
    for (const w of this.#settledWaiters.splice(0)) w()
  }

  /** Why a request found no host: for the error it fails with after waiting too long. */
  unavailable(need: RouteNeed, waitedMs: number): ConnectionError {
    const wanted = need.readOnly ? 'a standby or a host for writes' : `a host for target_session_attrs=${this.#target}`
    const seen = this.hosts.map((h) => `${h.address} ${h.down ? `down (${h.lastError ?? 'unreachable'})` : h.role}${h.lagging ? ', lagging' : ''}`).join('; ')
    return new ConnectionError('PG_CONNECTION_REFUSED', `no usable host: waited ${Math.round(waitedMs)} ms for ${wanted}${need.after !== null ? ' that has replayed the requested LSN' : ''}; hosts: ${seen}`, { mayHaveRun: false })
  }

  // --- what connections report ------------------------------------------------

  /** A connection to `host` opened. */
  connected(l: PoolLane): void {
    const h = l.host!
    h.probing = false
    const wasDown = h.failures > 0
    h.reached()
    if (wasDown) this.#emit(h, 'up')
    this.#setRole(h, roleOf(l.lane.serverParameters))
    // Older servers report no in_hot_standby: the check tells. Lag is measured at once too.
    this.#check(l)
    this.#start()
    this.owner.retry()
    this.#wakeSettled()
  }

  /** A connection to `host` could not open. */
  failed(host: HostState, err: Error): void {
    host.probing = false
    const wasUp = host.failures === 0
    host.failed(err)
    this.#version++
    if (wasUp) this.#emit(host, 'down')
    this.#wakeSettled()
    // The backoff ends in a while: requests waiting for a host try again then.
    unrefTimer(setTimeout(() => this.owner.retry(), Math.max(0, host.downUntil - performance.now()) + 1))
  }

  /**
   * A connection to `host` was lost: the host may be gone, or back in
   * another role, so it is connected to again at the next check if nothing
   * else is open to it.
   */
  lost(host: HostState): void {
    host.recheck = true
  }

  /** A reported setting changed on a connection to `host` (in_hot_standby on promotion, say). */
  parameter(l: PoolLane, name: string): void {
    if (name !== 'in_hot_standby') return
    const role = roleOf(l.lane.serverParameters)
    if (role !== 'unknown' && this.#setRole(l.host!, role)) this.owner.retry()
  }

  /** A write was refused as read-only (25006): the host may have become a standby; check it now. */
  readOnlyRefusal(l: PoolLane): void {
    if (l.host !== null && l.host.role === 'primary') this.#check(l)
  }

  #setRole(h: HostState, role: HostRole): boolean {
    if (role === 'unknown' || !h.setRole(role)) return false
    this.#emit(h, 'role')
    return true
  }

  #emit(h: HostState, change: HostChange): void {
    this.#version++
    const lanes = this.owner.lanes().filter((l) => l.host === h)
    this.owner.changed(hostInfo(h, lanes.length, lanes.reduce((n, l) => n + l.lane.pendingQueries, 0)), change)
  }

  // --- host checks ------------------------------------------------------------

  #start(): void {
    if (this.#timer !== null || this.#every <= 0) return
    this.#timer = setInterval(() => this.checkAll(), this.#every)
    unrefTimer(this.#timer)
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
  }

  /**
   * One check per host with an open connection, on its least busy one; a
   * host that was lost or down and has none is connected to again (once its
   * backoff is over), which tells whether it came back and in which role.
   */
  checkAll(): void {
    const lanes = this.owner.lanes()
    for (const h of this.hosts) {
      let best: PoolLane | undefined
      let any = false
      for (const l of lanes) {
        if (l.host !== h || l.closing) continue
        any = true
        if (usable(l) && l.lane.connected && (best === undefined || l.lane.pendingQueries < best.lane.pendingQueries)) best = l
      }
      if (best !== undefined) this.#check(best)
      else if (!any && (h.recheck || h.failures > 0) && !h.down && !h.probing && (this.owner.canOpen() || this.owner.makeRoom())) {
        h.recheck = false
        h.probing = true
        this.owner.open(h)
      }
    }
    this.owner.retry()
  }

  #check(l: PoolLane): void {
    const h = l.host!
    if (this.#checking.has(h)) return
    this.#checking.add(h)
    this.owner.check(l).then(
      (r) => {
        this.#checking.delete(h)
        this.#learn(h, r)
      },
      () => this.#checking.delete(h),
    )
  }

  #learn(h: HostState, r: HostCheck): void {
    let changed = this.#setRole(h, r.standby ? 'standby' : 'primary')
    const lsn = r.lsn === null ? null : Lsn.from(r.lsn).value
    h.lsn = lsn
    if (h.role === 'primary') {
      if (lsn !== null && (this.#primaryLsn === null || lsn > this.#primaryLsn)) this.#primaryLsn = lsn
    } else {
      const primary = this.#primaryLsn
      h.lagBytes = lsn === null ? null : primary === null || lsn >= primary ? 0 : Number(primary - lsn)
      h.lagMs = !r.behind ? 0 : r.since
      const lagging = (h.lagBytes !== null && h.lagBytes > this.#lag.bytes) || (h.lagMs !== null && h.lagMs > this.#lag.ms)
      if (lagging !== h.lagging) {
        h.lagging = lagging
        this.#emit(h, lagging ? 'lagging' : 'caught-up')
        changed = true
      }
    }
    if (changed) this.owner.retry()
  }

  info(): HostInfo[] {
    const lanes = this.owner.lanes()
    return this.hosts.map((h) => {
      const mine = lanes.filter((l) => l.host === h)
      return hostInfo(h, mine.length, mine.reduce((n, l) => n + l.lane.pendingQueries, 0))
    })
  }
}
