import type { ClientOptions } from '../queryable/client-options.js'
import { clientKeys } from '../queryable/client-options.js'
import type { Request } from '../connection/request.js'
import { ArgumentError, type PgNotice } from '../errors.js'
import type { HostChange } from './cluster.js'
import { hookKeys, type PoolHooks } from './hooks.js'
import type { HostInfo, ReplicationLag } from './hosts.js'
import type { PoolLane, RouteNeed } from './routing.js'

// A pool's settings and events, what waits in it, and when its connections close.

export interface PoolOptions extends ClientOptions, PoolHooks {
  /** Most connections open at once (default 10). */
  max?: number
  /**
   * Connections kept open once the pool is first used (default 0): opened
   * then, opened again when lost or past their lifetime, never closed for
   * being idle, never more than `max`. Each holds a server backend (memory,
   * a slot of max_connections) for as long as the pool lives.
   */
  min?: number
  /** Milliseconds a connection may stay unused before it is closed (default 30000; 0: never). */
  idleTimeout?: number
  /** Milliseconds after which a connection is replaced, give or take 10% (default 1800000; 0: never). */
  maxLifetime?: number
  /** On several hosts: every query and transaction is read-only unless it says `readOnly: false` (default false). */
  readOnly?: boolean
  /**
   * On several hosts: how stale a standby may be to take reads, in
   * milliseconds, or `{ ms, bytes }` (bytes of WAL behind the primary).
   * A standby past it gets no reads until it catches up. Default: no limit.
   */
  maxReplicationLag?: ReplicationLag
  /** On several hosts: milliseconds between checks of each host's role and lag (default 1000; 0: only when a connection opens). */
  hostCheckInterval?: number
  /**
   * On several hosts: milliseconds a request waits for a host it may use (the
   * primary, during a failover) before it fails (default 30000).
   */
  failoverTimeout?: number
}

// Pure (the annotation tells bundlers so): a spread at the top of a module would otherwise keep this
// module's statement in every bundle that imports pipegres, createPool or not.
export const poolKeys = /* @__PURE__ */ (() => [...clientKeys, ...hookKeys, 'max', 'min', 'idleTimeout', 'maxLifetime', 'readOnly', 'maxReplicationLag', 'hostCheckInterval', 'failoverTimeout'] as const)()

/** A pool's own settings, resolved (pool.options). */
export interface PoolSettings {
  readonly max: number
  readonly min: number
  readonly idleTimeout: number
  readonly maxLifetime: number
  /** idleTimeout under node-postgres's name, read by tools that look after pools (Vercel's attachDatabasePool). */
  readonly idleTimeoutMillis: number
}

/** `min` checked against `max`. */
export function checkMin(min: unknown, max: number): number {
  if (min === undefined) return 0
  if (typeof min !== 'number' || !Number.isInteger(min) || min < 0) throw new ArgumentError(`min must be a non-negative integer, got ${String(min)}`)
  if (min > max) throw new ArgumentError(`min (${min}) cannot be above max (${max}): raise max or lower min`)
  return min
}

export interface PoolEvents {
  notice: [notice: PgNotice]
  /**
   * A connection went back to the pool, idle: its queries all answered, or
   * its reservation released (`reservation` true). Its idle timeout starts then.
   */
  release: [reservation: boolean]
  /**
   * A connection was lost (the server closed it, the network broke), not
   * ended by the pool: why, the backend's process id, and whether a
   * reservation held it. The pool replaces it as needed; this is for code
   * that wants to know (pipegres/pg reports it as pg does).
   */
  lost: [error: Error, processId: number, reserved: boolean]
  /** On several hosts: a host changed role, went down or came back, fell behind or caught up. */
  host: [host: HostInfo, change: HostChange]
}

/** A request waiting for a connection, with what it needs of one. */
export interface Waiting {
  readonly req: Request
  readonly need: RouteNeed
  /** performance.now() when it began to wait, for failoverTimeout. */
  readonly since: number
}

export interface ReserveWaiter {
  readonly need: RouteNeed
  readonly since: number
  give(l: PoolLane | Error): void
}


/** What waits for a connection: requests, and reservations. */
export class PoolQueue {
  requests: Waiting[] = []
  reservations: ReserveWaiter[] = []

  get count(): number {
    return this.requests.length + this.reservations.length
  }

  takeRequests(): Waiting[] {
    const taken = this.requests
    this.requests = []
    return taken
  }

  /**
   * Everything tries again: a request is sent (or waits again), a reservation
   * takes the lane `route` gives; what `expired` finds waited too long fails with its error.
   */
  retry(send: (w: Waiting) => void, route: (need: RouteNeed) => PoolLane | undefined, expired: (need: RouteNeed, waitedMs: number) => Error | null): void {
    const now = performance.now()
    for (const w of this.takeRequests()) {
      const err = expired(w.need, now - w.since)
      if (err !== null) w.req.fail(err, false)
      else send(w)
    }
    const reservations = this.reservations
    this.reservations = []
    for (const w of reservations) {
      const err = expired(w.need, now - w.since)
      const l = err === null ? route(w.need) : undefined
      if (err !== null) w.give(err)
      else if (l === undefined) this.reservations.push(w)
      else w.give(l)
    }
  }

  /** Waits for a lane for a reservation, marked reserved by `token` as it is handed over. */
  reserveLater(need: RouteNeed, token: object): Promise<PoolLane> {
    return new Promise((resolve, reject) => {
      const give = (l: PoolLane | Error): void => {
        if (l instanceof Error) return reject(l)
        l.reserved = token
        resolve(l)
      }
      this.reservations.push({ need, since: performance.now(), give })
    })
  }

  failAll(err: Error): void {
    for (const w of this.reservations.splice(0)) w.give(err)
    for (const w of this.requests.splice(0)) w.req.fail(err, false)
  }
}

/**
 * An idle connection to a host that has others: closed so that a full pool
 * can still connect to a host it lost, to learn whether it is back.
 */
export function spareLane(lanes: readonly PoolLane[]): PoolLane | undefined {
  const count = (l: PoolLane): number => lanes.filter((o) => o.host === l.host && !o.closing).length
  return lanes.filter((l) => l.reserved === null && !l.closing && l.lane.pendingQueries === 0 && count(l) > 1).sort((a, b) => count(b) - count(a))[0]
}
