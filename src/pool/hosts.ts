import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { describeHost } from '../connection/transport.js'
import { ArgumentError } from '../errors.js'
import { Lsn } from '../types/lsn.js'
import type { Lane } from '../lane/lane.js'
import { makeQuery, type QueryDefaults } from '../queryable/queryable.js'

// What a pool on several hosts knows of each: its role (learned from the
// server's own reports when a connection opens, and again whenever they
// change), how far it lags behind the primary (from a check sent now and then
// on a connection already open, never per query), and whether it is down.

/** A host's role, as last seen: unknown until a connection to it opens. */
export type HostRole = 'primary' | 'standby' | 'unknown'

/** What a pool reports of one of its hosts (see Pool.hosts). */
export interface HostInfo {
  /** host:port, as in the connection settings. */
  readonly address: string
  readonly role: HostRole
  /** The pool's connections to this host, open or opening. */
  readonly connections: number
  /** Requests in flight or queued on those connections. */
  readonly pending: number
  /** A standby's last replayed WAL position (e.g. '0/3000148'), a primary's current one; null until measured. */
  readonly lsn: string | null
  /** How many bytes of WAL a standby is behind the primary; null until measured (and for a primary). */
  readonly lagBytes: number | null
  /** Milliseconds since the last transaction a standby replayed, while it has more to replay (0 when it is caught up); null until measured. */
  readonly lagMs: number | null
  /** A standby lagging more than maxReplicationLag: it gets no reads until it catches up. */
  readonly lagging: boolean
  /** The last connection attempt failed; it is tried again after a backoff. */
  readonly down: boolean
  /** Why the last attempt failed, without secrets. */
  readonly lastError: string | null
}

/** How stale a standby may be to take reads: milliseconds, or limits in time and WAL bytes. */
export type ReplicationLag = number | { readonly ms?: number; readonly bytes?: number }

export interface LagLimit {
  readonly ms: number
  readonly bytes: number
}

export function checkLagLimit(v: ReplicationLag | undefined): LagLimit {
  if (v === undefined) return { ms: Infinity, bytes: Infinity }
  const check = (n: unknown, what: string): number => {
    if (n === undefined) return Infinity
    if (typeof n !== 'number' || !(n >= 0)) throw new ArgumentError(`maxReplicationLag${what} must be a non-negative number`)
    return n
  }
  if (typeof v === 'number') return { ms: check(v, ''), bytes: Infinity }
  if (typeof v !== 'object' || v === null) throw new ArgumentError('maxReplicationLag must be milliseconds or { ms, bytes }')
  for (const k of Object.keys(v)) if (k !== 'ms' && k !== 'bytes') throw new ArgumentError(`unknown maxReplicationLag key "${k}" (it takes ms and bytes)`)
  return { ms: check(v.ms, '.ms'), bytes: check(v.bytes, '.bytes') }
}

/** Backoff of a host that failed: 100 ms doubling, up to this. */
const MAX_HOST_BACKOFF_MS = 2000

export class HostState {
  readonly address: string
  /** The pool's settings with this host alone, taken whatever its role (the pool routes by role itself). */
  readonly config: ConnectionConfig
  role: HostRole = 'unknown'
  lsn: bigint | null = null
  lagBytes: number | null = null
  lagMs: number | null = null
  lagging = false
  failures = 0
  downUntil = 0
  lastError: string | null = null
  /** A discovery connection to it is being opened. */
  probing = false
  /** Its connection was lost: connect again at the next check, to see whether it is back and as what. */
  recheck = false

  constructor(
    base: ConnectionConfig,
    readonly host: HostAddress,
  ) {
    this.address = describeHost(host)
    // Inherits the rest, secrets included, which stay non-enumerable and out of inspect().
    const config = Object.create(base) as ConnectionConfig
    Object.defineProperty(config, 'hosts', { value: [host], enumerable: true })
    Object.defineProperty(config, 'targetSessionAttrs', { value: 'any', enumerable: true })
    Object.defineProperty(config, 'loadBalanceHosts', { value: 'disable', enumerable: true })
    this.config = config
  }

  get down(): boolean {
    return this.downUntil > performance.now()
  }

  failed(err: Error): void {
    this.failures++
    this.downUntil = performance.now() + Math.min(MAX_HOST_BACKOFF_MS, 100 * 2 ** (this.failures - 1))
    this.lastError = err.message
  }

  reached(): void {
    this.failures = 0
    this.downUntil = 0
    this.lastError = null
  }

  /** True when the role changed. */
  setRole(role: HostRole): boolean {
    if (role === this.role) return false
    this.role = role
    if (role !== 'standby') {
      this.lagBytes = null
      this.lagMs = null
      this.lagging = false
    }
    return true
  }
}

/**
 * The role a connection's reported in_hot_standby shows (14 and later); on
 * older servers unknown until the host check's pg_is_in_recovery() tells.
 */
export function roleOf(params: Readonly<Record<string, string>>): HostRole {
  const standby = params.in_hot_standby
  return standby === 'on' ? 'standby' : standby === 'off' ? 'primary' : 'unknown'
}

/**
 * The host check, sent on an open connection now and then (pipelined with
 * the pool's queries, so no query waits for it): the role, the WAL position,
 * and whether a standby has received WAL it has not replayed yet.
 */
export const HOST_CHECK_SQL =
  'SELECT pg_is_in_recovery() AS standby, ' +
  '(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text AS lsn, ' +
  '(pg_is_in_recovery() AND pg_last_wal_receive_lsn() IS DISTINCT FROM pg_last_wal_replay_lsn()) AS behind, ' +
  '(extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000)::float8 AS since'

/** Sends the host check on `lane`, behind what it already carries. */
export function checkHost(defaults: QueryDefaults, lane: Lane): Promise<HostCheck> {
  const req = makeQuery(defaults, HOST_CHECK_SQL, undefined, undefined)
  lane.send(req, null)
  return req.promise.then((r) => r.rows[0] as unknown as HostCheck)
}

export interface HostCheck {
  standby: boolean
  lsn: string | null
  behind: boolean
  since: number | null
}

export function hostInfo(h: HostState, connections: number, pending: number): HostInfo {
  return {
    address: h.address,
    role: h.role,
    connections,
    pending,
    lsn: h.lsn === null ? null : String(Lsn.from(h.lsn)),
    lagBytes: h.lagBytes,
    lagMs: h.lagMs,
    lagging: h.lagging,
    down: h.down,
    lastError: h.lastError,
  }
}

/** A pool on one host: that host, with the role its open connections report. */
export function singleHost(config: ConnectionConfig, lanes: readonly { readonly lane: { readonly connected: boolean; readonly pendingQueries: number; readonly serverParameters: Readonly<Record<string, string>> } }[]): HostInfo {
  const h = new HostState(config, config.hosts[0]!)
  const open = lanes.find((l) => l.lane.connected)
  if (open !== undefined) h.setRole(roleOf(open.lane.serverParameters))
  return hostInfo(h, lanes.length, lanes.reduce((n, l) => n + l.lane.pendingQueries, 0))
}
