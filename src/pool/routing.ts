import type { Lane } from '../lane/lane.js'
import type { HostState } from './hosts.js'

// Which connection of a pool a request goes to. The pool keeps its lanes and
// their bookkeeping; the choice among them is a policy behind one interface:
// least outstanding work on one server (here), or by role and staleness on
// several (pool-cluster.ts).

/** One connection of a pool, as the pool and its routing see it. */
export interface PoolLane {
  readonly lane: Lane
  /** The reservation (or pool transaction) that has this connection to itself. */
  reserved: object | null
  lastUsed: number
  expiresAt: number
  /** Lifetime over: takes no new work, closes once idle. */
  retiring: boolean
  closing: boolean
  /** The host it is bound to, in a pool on several hosts (null: the pool's settings choose). */
  readonly host: HostState | null
}

/** What a request asks of its connection. */
export interface RouteNeed {
  /** The caller takes the connection to itself (reserve(), begin(), a cursor). */
  readonly exclusive: boolean
  /** Only reads: a standby may serve it. */
  readonly readOnly: boolean
  /** A standby must have replayed this WAL position (read your own writes); null: any. */
  readonly after: bigint | null
}

/** The needs of most requests, shared: a plain request or reservation, and their read-only kinds. */
export const plain: RouteNeed = { exclusive: false, readOnly: false, after: null }
export const plainRead: RouteNeed = { exclusive: false, readOnly: true, after: null }
export const exclusive: RouteNeed = { exclusive: true, readOnly: false, after: null }
export const exclusiveRead: RouteNeed = { exclusive: true, readOnly: true, after: null }

/** A lane to use, 'open' for a new one (to a given host), or 'wait' until one frees up or opens. */
export type RouteChoice = PoolLane | 'open' | { readonly open: HostState } | 'wait'

export interface PoolRouting {
  /**
   * Chooses where a request goes. `lanes` are all the pool's connections,
   * reserved and retiring ones included; `canOpen` says whether the pool may
   * open one more.
   */
  choose(lanes: readonly PoolLane[], need: RouteNeed, canOpen: boolean): RouteChoice
}

/** Takes new work: not reserved, not retiring, not closing. */
export function usable(l: PoolLane): boolean {
  return l.reserved === null && !l.retiring && !l.closing
}

/**
 * Least outstanding work. An idle lane is always reused, so a trickle of
 * queries needs one connection; when every lane is busy, another opens while
 * the pool may grow, and once it is full the least loaded busy lane takes the
 * request. On a tie the lane opened first wins: the others stay idle and are
 * the ones the idle timeout closes.
 */
export const leastOutstanding: PoolRouting = {
  choose(lanes, _need, canOpen) {
    let best: PoolLane | undefined
    let bestLoad = Infinity
    for (const l of lanes) {
      if (!usable(l)) continue
      const load = l.lane.pendingQueries
      if (load < bestLoad) {
        best = l
        bestLoad = load
      }
    }
    if (best !== undefined && (bestLoad === 0 || !canOpen)) return best
    return canOpen ? 'open' : 'wait'
  },
}
