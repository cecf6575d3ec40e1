import { Lane } from '../lane/lane.js'
import type { ConnectionConfig } from '../config/types.js'
import { queryLost } from '../connection/closed-errors.js'
import { CopyBothExchange, type CopyBothSink } from '../connection/copy-both.js'
import { ArgumentError, ConnectionError, withCaller } from '../errors.js'
import { LaneQueryable } from '../queryable/lane-queryable.js'
import { laneStatements } from '../queryable/query-requests.js'
import { traceBase } from '../trace/tracing.js'
import { Lsn } from '../types/lsn.js'
import { TypeCatalog } from '../types/catalog.js'
import { resolveConfig, type ConnectOptions } from '../config/index.js'
import { REPLICATION_SINCE, requireSince, shortVersion } from './server-support.js'

// A replication (walsender) connection and its commands. The walsender takes
// only the simple protocol: replication commands, and with
// replication=database also SQL. Everything here goes through simpleQuery(),
// and START_REPLICATION through a CopyBoth exchange that takes the connection
// over until the stream ends.

/** Slot names are restricted by the server to these characters; checking here gives the clearer error. */
const SLOT_NAME = /^[a-z0-9_]{1,63}$/

export function checkSlotName(name: unknown, what = 'slot'): string {
  if (typeof name !== 'string' || !SLOT_NAME.test(name)) {
    throw new ArgumentError(`${what} must be a replication slot name: 1 to 63 lower-case letters, digits and underscores, got ${JSON.stringify(name)}`)
  }
  return name
}

/** A string literal for a replication command (standard_conforming_strings: quotes doubled). */
export function quoteLiteral(s: string): string {
  if (s.includes('\0')) throw new ArgumentError('a replication option may not contain NUL')
  return `'${s.replaceAll("'", "''")}'`
}

/** A copy of a config with another replication mode; secrets stay non-enumerable (see hideSecrets). */
export function replicationConfig(config: ConnectionConfig, mode: 'database' | 'physical'): ConnectionConfig {
  const copy = Object.create(Object.getPrototypeOf(config) as object, Object.getOwnPropertyDescriptors(config)) as ConnectionConfig
  Object.defineProperty(copy, 'replication', { value: mode, enumerable: true, writable: false, configurable: false })
  return copy
}

export interface SystemIdentity {
  systemId: string
  timeline: number
  /** The current WAL flush position. */
  xlogPos: Lsn
  /** The database connected to (null on a physical connection). */
  dbName: string | null
}

export interface CreateSlotOptions {
  /** Output plugin of a logical slot ('pgoutput', 'test_decoding', ...); absent: a physical slot. */
  plugin?: string
  /** Dropped when the connection ends (or on error). */
  temporary?: boolean
  /** Logical: 'nothing' (default), 'export' or 'use' (needs a transaction on this connection). */
  snapshot?: 'nothing' | 'export' | 'use'
  /** Logical: decode prepared transactions at PREPARE TRANSACTION (PostgreSQL 15+). */
  twoPhase?: boolean
  /** Physical: reserve WAL from now on, not only once streaming starts. Default true. */
  reserveWal?: boolean
}

export interface CreatedSlot {
  slotName: string
  consistentPoint: Lsn
  snapshotName: string | null
  outputPlugin: string | null
}

export interface ReadSlot {
  slotType: string | null
  restartLsn: Lsn | null
  restartTimeline: number | null
}

/**
 * One replication connection. Obtain it with `connectReplication()` (or it is
 * made for you by `subscribe()` and `replicate()`). Its commands run one at a
 * time, in order; a stream takes the connection over until it ends.
 */
export class ReplicationConnection {
  readonly #queries: LaneQueryable<Lane>
  readonly mode: 'database' | 'physical'

  private constructor(queries: LaneQueryable<Lane>, mode: 'database' | 'physical') {
    this.#queries = queries
    this.mode = mode
  }

  /** @internal Opens the connection (subscribe(), replicate(), connectReplication()). */
  static async open(config: ConnectionConfig, catalog: TypeCatalog, mode: 'database' | 'physical'): Promise<ReplicationConnection> {
    const replication = replicationConfig(config, mode)
    const defaults = { rowMode: 'object' as const, prepare: replication.prepare !== false, queryTimeout: undefined, catalog, view: catalog.view(), trace: traceBase(replication, false) }
    const none = (): void => {}
    // One server session, never reopened behind the caller's back: a walsender's
    // state (a temporary slot, an exported snapshot, a stream under way) dies
    // with its connection, so once the connection is lost the commands not yet
    // answered fail, and so do later ones, at once. Whoever runs the commands
    // (a ReplicationStream) opens a new connection and starts over.
    const lane: Lane = new Lane({
      config: replication,
      catalog,
      view: defaults.view,
      statement: laneStatements(defaults),
      backoff: { failures: 0, nextAttemptAt: 0 },
      reconnectMaxDelay: 5000,
      maxPending: Infinity,
      listeners: null,
      orphans: (reqs, err) => {
        for (const req of reqs) req.fail(queryLost(err, false), false)
      },
      events: { notice: none, notification: none, parameter: none, disconnect: (err) => lane.destroy(err), close: none },
    })
    try {
      await lane.connect()
    } catch (err) {
      // Nothing of a connection that never opened may linger (a timer, a half-open socket).
      lane.destroy(err as Error)
      throw withCaller(err)
    }
    return new ReplicationConnection(new LaneQueryable(lane, defaults), mode)
  }

  /** The server's major version (from server_version). */
  get serverMajor(): number {
    return Number.parseInt(this.#queries.lane.serverParameters.server_version ?? '0', 10)
  }

  /** The server's version as people write it ('13.23', '18.4'). */
  get serverVersion(): string {
    return shortVersion(this.#queries.lane.serverParameters.server_version)
  }

  /** Refuses what the server's major is too old for, before anything is sent. */
  #requireSince(what: string, since: number): void {
    requireSince(what, since, this.serverMajor, this.#queries.lane.serverParameters.server_version)
  }

  /** The walsender's process id (for pg_terminate_backend, pg_stat_replication). */
  get processId(): number {
    return this.#queries.lane.processId
  }

  get closed(): boolean {
    return this.#queries.lane.closed
  }

  /** Runs a replication command or (on a logical connection) SQL, simple protocol; the last statement's rows. */
  async command<R = Record<string, unknown>>(text: string): Promise<R[]> {
    const results = await this.#queries.simpleQuery<R>(text)
    return results.length === 0 ? [] : results[results.length - 1]!.rows
  }

  async identifySystem(): Promise<SystemIdentity> {
    const [r] = await this.command<{ systemid: string; timeline: number; xlogpos: string; dbname: string | null }>('IDENTIFY_SYSTEM')
    if (r === undefined) throw new ArgumentError('IDENTIFY_SYSTEM returned no row')
    return { systemId: r.systemid, timeline: Number(r.timeline), xlogPos: Lsn.from(r.xlogpos), dbName: r.dbname }
  }

  async createSlot(name: string, options: CreateSlotOptions = {}): Promise<CreatedSlot> {
    checkSlotName(name)
    const [r] = await this.command<{ slot_name: string; consistent_point: string | null; snapshot_name: string | null; output_plugin: string | null }>(this.createSlotCommand(name, options))
    if (r === undefined) throw new ArgumentError('CREATE_REPLICATION_SLOT returned no row')
    return {
      slotName: r.slot_name,
      consistentPoint: r.consistent_point === null ? Lsn.ZERO : Lsn.from(r.consistent_point),
      snapshotName: r.snapshot_name,
      outputPlugin: r.output_plugin,
    }
  }

  /** CREATE_REPLICATION_SLOT in the server's own form: an option list from PostgreSQL 15, bare keywords before. */
  private createSlotCommand(name: string, options: CreateSlotOptions): string {
    const temporary = options.temporary === true ? ' TEMPORARY' : ''
    const list = this.serverMajor >= REPLICATION_SINCE.slotOptionList
    if (options.plugin !== undefined) {
      if (typeof options.plugin !== 'string' || !/^[A-Za-z0-9_]+$/.test(options.plugin)) throw new ArgumentError(`plugin must be an output plugin name, got ${JSON.stringify(options.plugin)}`)
      const snapshot = options.snapshot ?? 'nothing'
      if (snapshot !== 'nothing' && snapshot !== 'export' && snapshot !== 'use') throw new ArgumentError(`snapshot must be 'nothing', 'export' or 'use', got ${JSON.stringify(snapshot)}`)
      if (options.twoPhase === true) this.#requireSince('twoPhase: true', REPLICATION_SINCE.twoPhase)
      const head = `CREATE_REPLICATION_SLOT ${name}${temporary} LOGICAL ${options.plugin}`
      if (!list) return `${head} ${{ nothing: 'NOEXPORT_SNAPSHOT', export: 'EXPORT_SNAPSHOT', use: 'USE_SNAPSHOT' }[snapshot]}`
      const opts = [`SNAPSHOT ${quoteLiteral(snapshot)}`]
      if (options.twoPhase === true) opts.push('TWO_PHASE true')
      return `${head} (${opts.join(', ')})`
    }
    if (options.twoPhase === true || options.snapshot !== undefined) throw new ArgumentError('twoPhase and snapshot are for logical slots (give plugin)')
    const reserve = options.reserveWal !== false
    const head = `CREATE_REPLICATION_SLOT ${name}${temporary} PHYSICAL`
    return reserve ? (list ? `${head} (RESERVE_WAL true)` : `${head} RESERVE_WAL`) : head
  }

  /** Drops a slot; with `wait`, waits until a connection using it lets go instead of failing. */
  async dropSlot(name: string, options: { wait?: boolean } = {}): Promise<void> {
    checkSlotName(name)
    await this.command(`DROP_REPLICATION_SLOT ${name}${options.wait === true ? ' WAIT' : ''}`)
  }

  /** READ_REPLICATION_SLOT (PostgreSQL 15+; physical slots): nulls when the slot does not exist. */
  async readSlot(name: string): Promise<ReadSlot> {
    checkSlotName(name)
    this.#requireSince('readSlot()', REPLICATION_SINCE.readSlot)
    const [r] = await this.command<{ slot_type: string | null; restart_lsn: string | null; restart_tli: number | bigint | null }>(`READ_REPLICATION_SLOT ${name}`)
    return {
      slotType: r?.slot_type ?? null,
      restartLsn: r?.restart_lsn == null ? null : Lsn.from(r.restart_lsn),
      restartTimeline: r?.restart_tli == null ? null : Number(r.restart_tli),
    }
  }

  /** TIMELINE_HISTORY: the history file of a timeline (there is none for timeline 1). */
  async timelineHistory(timeline: number): Promise<{ filename: string; content: string }> {
    if (!Number.isInteger(timeline) || timeline < 1) throw new ArgumentError(`timeline must be a positive integer, got ${timeline}`)
    const [r] = await this.command<{ filename: string; content: Uint8Array | string }>(`TIMELINE_HISTORY ${timeline}`)
    if (r === undefined) throw new ArgumentError('TIMELINE_HISTORY returned no row')
    const content = typeof r.content === 'string' ? r.content : new TextDecoder().decode(r.content)
    return { filename: r.filename, content }
  }

  /** @internal Sends START_REPLICATION (`command` is the whole command) and streams into `sink` until the exchange ends. */
  startStream(command: string, sink: CopyBothSink): CopyBothExchange {
    const exchange = new CopyBothExchange(command, sink)
    this.#queries.lane.send(exchange, null)
    return exchange
  }

  /** Ends the connection (a running stream is cut off). */
  close(): Promise<void> {
    this.#queries.lane.destroy(new ConnectionError('PG_CONNECTION_ENDED', 'the client was destroyed'))
    return Promise.resolve()
  }

  /** Leaves politely, after the commands issued so far. */
  end(): Promise<void> {
    return this.#queries.lane.end()
  }

  /** `await using conn = await connectReplication(...)`: end() when the scope exits (a temporary slot goes with the session). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.end()
  }
}

/**
 * Opens a replication connection for running replication commands by hand
 * (IDENTIFY_SYSTEM, CREATE_REPLICATION_SLOT, ...): `mode` 'database' for a
 * logical walsender of the settings' database, 'physical' for physical.
 */
export async function connectReplication(settings: string | ConnectOptions | undefined, mode: 'database' | 'physical' = 'database'): Promise<ReplicationConnection> {
  if (mode !== 'database' && mode !== 'physical') throw new ArgumentError(`mode must be 'database' or 'physical', got ${JSON.stringify(mode)}`)
  const config = resolveConfig(settings)
  return ReplicationConnection.open(config, new TypeCatalog(), mode)
}
