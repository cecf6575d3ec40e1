import type { ConnectionConfig } from '../config/types.js'
import type { Request } from '../connection/request.js'
import type { PgNotice } from '../errors.js'
import { Lane, safely } from '../lane/lane.js'
import type { Backoff } from '../lane/backoff.js'
import { LaneQueryable } from '../queryable/lane-queryable.js'
import { laneStatements } from '../queryable/query-requests.js'
import type { Listeners } from '../lane/notify.js'
import type { QueryDefaults } from '../queryable/queryable.js'
import type { Cluster } from './cluster.js'
import type { HostState } from './hosts.js'
import type { PoolLane } from './routing.js'

// How a pool's connections are made: the settings every lane of a pool shares,
// and the reports its own lanes send back to it.

/** What every lane of one pool shares, and where its lanes report. */
export interface PoolLaneSettings {
  readonly config: ConnectionConfig
  readonly defaults: QueryDefaults
  readonly backoff: Backoff
  readonly reconnectMaxDelay: number
  readonly maxPending: number
  readonly cluster: Cluster | null
  readonly onConnect: ((queries: LaneQueryable) => Promise<void>) | undefined
  notice(n: PgNotice, own: boolean): void
  orphaned(entry: PoolLane, reqs: Request[], err: Error, afterLoss: boolean): void
  idle(entry: PoolLane): void
  /** One of the pool's own connections was lost (not ended by the pool). */
  lost(entry: PoolLane, err: Error, processId: number): void
}

const none = (): void => {}

/**
 * A lane with the pool's settings. The pool's own lanes (`own`) hand their
 * unsent requests back (orphans), report going idle and forward notices to
 * the pool's listeners; the listening lane does none of that, as a lone client.
 */
export function makePoolLane(s: PoolLaneSettings, listeners: Listeners | null, own?: { host: HostState | null; entry: () => PoolLane }): Lane {
  const cluster = own?.host == null ? null : s.cluster
  const entry = own?.entry
  // A session of its own per connection, as a Client has.
  const defaults = { ...s.defaults, view: s.defaults.catalog.view() }
  const onConnect = s.onConnect
  const lane: Lane = new Lane({
    config: own?.host?.config ?? s.config,
    catalog: defaults.catalog,
    view: defaults.view,
    statement: laneStatements(defaults),
    backoff: s.backoff,
    reconnectMaxDelay: s.reconnectMaxDelay,
    maxPending: s.maxPending,
    listeners,
    events: {
      notice: (n) => safely(() => s.notice(n, own !== undefined)),
      notification: none,
      parameter: cluster === null ? none : (name) => cluster.parameter(entry!(), name),
      queryError: cluster === null ? none : (code) => code === '25006' && cluster.readOnlyRefusal(entry!()),
      disconnect: entry === undefined ? none : (err, processId) => safely(() => s.lost(entry(), err, processId)),
      close: none,
      ...(entry !== undefined ? { idle: () => s.idle(entry()) } : {}),
    },
    ...(entry !== undefined ? { orphans: (reqs: Request[], err: Error, afterLoss: boolean) => s.orphaned(entry(), reqs, err, afterLoss) } : {}),
    ...(entry !== undefined && onConnect !== undefined ? { onConnect: (holder: object) => onConnect(new LaneQueryable(lane, defaults, holder)) } : {}),
  })
  return lane
}
