import type { ConnectionConfig } from '../config/types.js'
import { ArgumentError } from '../errors.js'
import { PG_EPOCH_MICROS, type XLogDataHeader } from '../protocol/replication.js'
import { copyBytes } from '../protocol/reader.js'
import { ReplicationError } from '../replication/errors.js'
import { Lsn, lsnOf } from '../types/lsn.js'
import { acknowledgeableEnd, type ChangeMessage } from '../replication/messages.js'
import { PgoutputDecoder } from '../replication/pgoutput.js'
import { checkSlotName, quoteLiteral, type ReplicationConnection } from './replication-connection.js'
import { learnPublishedTypes } from './replication-types.js'
import { ReplicationStream, type StreamDriver, type StreamOptions } from './replication-stream.js'
import { newestProtocol, protocolSince, REPLICATION_SINCE, requireSince } from './server-support.js'
import type { TypeCatalog } from '../types/catalog.js'

// subscribe(): a logical change stream decoded from pgoutput. replicate():
// raw XLogData, physical or from any output plugin. Both run on
// ReplicationStream, which owns the connection and the acknowledgements.

export interface SubscribeOptions extends StreamOptions {
  /** A persistent slot: created if missing (at the first start only), resumed from its confirmed position otherwise. */
  slot: string
  /** Publications to stream (CREATE PUBLICATION ... FOR TABLE ...). */
  publications: string[]
  /** Also deliver pg_logical_emit_message() messages as `{ type: 'message' }`. */
  messages?: boolean
  /** Values in binary where the server can (PostgreSQL 14+): faster for most types; needs a binary codec for every column type. */
  binary?: boolean
  /** Stream transactions still in progress (PostgreSQL 14+, protocol 2+): streamStart / streamStop / streamCommit / streamAbort messages. */
  streaming?: boolean
  /** Decode prepared transactions at PREPARE (PostgreSQL 15+, protocol 3+; the slot must be created with it). */
  twoPhase?: boolean
  /** 'none': only changes made on this server, not those a subscription of its own applied; 'any' (the server's default): all (PostgreSQL 16+). */
  origin?: 'any' | 'none'
  /** A temporary slot, dropped with the connection: such a subscription cannot survive a lost connection. */
  temporary?: boolean
  /** Also deliver 'relation', 'type' and 'origin' messages. */
  metadata?: boolean
  /** pgoutput protocol version; default the newest the server offers (PostgreSQL 13: 1, 14: 2, 15: 3, 16+: 4). */
  protocolVersion?: 1 | 2 | 3 | 4
}

export type Subscription = ReplicationStream<ChangeMessage>

/** One XLogData message of a raw stream. */
export interface WalMessage {
  /** Where this message's data starts in the WAL (for a logical plugin: the change's position). */
  walStart: Lsn
  /** The server's current end of WAL. */
  walEnd: Lsn
  serverTime: Date
  data: Uint8Array
  /** Same as walStart (every stream message has `lsn`). */
  lsn: Lsn
}

export interface ReplicateOptions extends StreamOptions {
  /** Physical streaming (a `replication=true` connection). */
  physical?: boolean
  /** The slot: required for logical streaming; optional for physical. */
  slot?: string
  /** Where to start; physical default: the slot's restart position, else the server's current WAL position. Logical default: the slot's confirmed position. */
  startLsn?: Lsn | string | bigint
  /** Physical: the timeline to stream; default the server's current one. */
  timeline?: number
  /** Logical: create the slot with this output plugin if it does not exist. */
  plugin?: string
  /** Logical: the plugin's options, e.g. { 'include-xids': '0' } for test_decoding. */
  pluginOptions?: Record<string, string | number | boolean>
}

export type WalStream = ReplicationStream<WalMessage>

function timeOf(micros: bigint): Date {
  return new Date(Number((micros + PG_EPOCH_MICROS) / 1000n))
}

function checkBool(o: Record<string, unknown>, key: string): boolean {
  const v = o[key]
  if (v !== undefined && typeof v !== 'boolean') throw new ArgumentError(`${key} must be a boolean`)
  return v === true
}

interface SlotRow {
  slot_type: string
  plugin: string | null
  database: string | null
  current: string
}

async function findSlot(conn: ReplicationConnection, slot: string): Promise<SlotRow | undefined> {
  const [row] = await conn.command<SlotRow>(
    `SELECT slot_type, plugin, database::text AS database, current_database()::text AS current FROM pg_catalog.pg_replication_slots WHERE slot_name = ${quoteLiteral(slot)}`,
  )
  return row
}

function checkLogicalSlot(row: SlotRow, slot: string, plugin: string | undefined): void {
  if (row.slot_type !== 'logical') throw new ReplicationError('server', `replication slot "${slot}" is a ${row.slot_type} slot, not a logical one`)
  if (row.database !== row.current) throw new ReplicationError('server', `replication slot "${slot}" belongs to database "${row.database}", not "${row.current}"`)
  if (plugin !== undefined && row.plugin !== plugin) {
    throw new ReplicationError('server', `replication slot "${slot}" uses output plugin ${row.plugin}, not ${plugin}`)
  }
}

class PgoutputDriver implements StreamDriver<ChangeMessage> {
  readonly mode = 'database'
  private decoder: PgoutputDecoder | null = null
  private inTransaction = false
  private readonly openStreams = new Set<number>()
  /** After a restart, transactions that committed before this were received already. */
  private skipBefore = Lsn.ZERO
  private skipping = false
  private readonly publications: string[]
  /** The pgoutput protocol version of the current connection (see check()). */
  private version: 1 | 2 | 3 | 4 = 1

  constructor(
    private readonly catalog: TypeCatalog,
    private readonly o: SubscribeOptions,
  ) {
    checkSlotName(o.slot)
    if (!Array.isArray(o.publications) || o.publications.length === 0 || o.publications.some((p) => typeof p !== 'string' || p === '')) {
      throw new ArgumentError('publications must be a non-empty array of publication names')
    }
    this.publications = o.publications
    for (const key of ['messages', 'binary', 'streaming', 'twoPhase', 'temporary', 'metadata']) checkBool(o as unknown as Record<string, unknown>, key)
    if (o.protocolVersion !== undefined && ![1, 2, 3, 4].includes(o.protocolVersion)) throw new ArgumentError('protocolVersion must be 1, 2, 3 or 4')
    if (o.origin !== undefined && o.origin !== 'any' && o.origin !== 'none') throw new ArgumentError(`origin must be 'any' or 'none', got ${JSON.stringify(o.origin)}`)
    const version = o.protocolVersion
    if (version !== undefined) {
      // Whatever the server: these need a newer protocol than the one asked for.
      if (o.streaming === true && version < 2) throw new ArgumentError(`streaming: true needs protocolVersion 2 or later, not ${version}`)
      if (o.twoPhase === true && version < 3) throw new ArgumentError(`twoPhase: true needs protocolVersion 3 or later, not ${version}`)
    }
  }

  check(conn: ReplicationConnection): void {
    const o = this.o
    const need = (what: string, since: number) => requireSince(what, since, conn.serverMajor, conn.serverVersion)
    if (o.protocolVersion !== undefined) need(`protocolVersion: ${o.protocolVersion}`, protocolSince(o.protocolVersion))
    if (o.binary === true) need('binary: true', REPLICATION_SINCE.binary)
    if (o.messages === true) need('messages: true', REPLICATION_SINCE.messages)
    if (o.streaming === true) need('streaming: true', REPLICATION_SINCE.streaming)
    if (o.twoPhase === true) need('twoPhase: true', REPLICATION_SINCE.twoPhase)
    if (o.origin !== undefined) need(`origin: '${o.origin}'`, REPLICATION_SINCE.origin)
    this.version = o.protocolVersion ?? newestProtocol(conn.serverMajor)
  }

  async start(conn: ReplicationConnection, from: Lsn | null, first: boolean): Promise<string> {
    const o = this.o
    const version = this.version

    const missing = await this.missingPublications(conn)
    if (missing.length > 0) {
      throw new ReplicationError('publication-missing', `publication${missing.length > 1 ? 's' : ''} ${missing.map((p) => `"${p}"`).join(', ')} ${missing.length > 1 ? 'do' : 'does'} not exist in this database`)
    }
    if (o.temporary === true) {
      if (!first) throw new ReplicationError('slot-missing', `temporary replication slot "${o.slot}" was dropped with the lost connection; its changes since cannot be recovered`)
      await conn.createSlot(o.slot, { plugin: 'pgoutput', temporary: true, twoPhase: o.twoPhase === true })
    } else {
      const row = await findSlot(conn, o.slot)
      if (row === undefined) {
        if (!first) throw new ReplicationError('slot-missing', `replication slot "${o.slot}" was dropped while the subscription was running`)
        await conn.createSlot(o.slot, { plugin: 'pgoutput', twoPhase: o.twoPhase === true })
      } else checkLogicalSlot(row, o.slot, 'pgoutput')
    }
    await learnPublishedTypes(conn, this.catalog, this.publications)
    this.decoder = new PgoutputDecoder(this.catalog.view(), { protoVersion: version, parallel: false })
    this.skipBefore = from ?? Lsn.ZERO
    const names = this.publications.map((p) => `"${p.replaceAll('"', '""')}"`).join(',')
    const opts = [`proto_version '${version}'`, `publication_names ${quoteLiteral(names)}`]
    if (o.messages === true) opts.push(`messages 'true'`)
    if (o.binary === true) opts.push(`binary 'true'`)
    if (o.streaming === true) opts.push(`streaming 'on'`)
    if (o.twoPhase === true) opts.push(`two_phase 'on'`)
    if (o.origin !== undefined) opts.push(`origin ${quoteLiteral(o.origin)}`)
    return `START_REPLICATION SLOT ${o.slot} LOGICAL ${from ?? '0/0'} (${opts.join(', ')})`
  }

  private async missingPublications(conn: ReplicationConnection): Promise<string[]> {
    const list = this.publications.map(quoteLiteral).join(', ')
    const rows = await conn.command<{ pubname: string }>(`SELECT pubname::text AS pubname FROM pg_catalog.pg_publication WHERE pubname IN (${list})`)
    const found = new Set(rows.map((r) => r.pubname))
    return this.publications.filter((p) => !found.has(p))
  }

  decode(h: XLogDataHeader, buf: Uint8Array, start: number, end: number): ChangeMessage | null {
    const m = this.decoder!.decode(buf, start, end, lsnOf(h.walStart))
    if (m === null) return null
    switch (m.type) {
      case 'begin':
        this.inTransaction = true
        // Received whole before a restart (the server skips these too; this is the second line of defence).
        this.skipping = m.commitLsn < this.skipBefore
        break
      case 'commit': {
        this.inTransaction = false
        const skip = this.skipping
        this.skipping = false
        if (skip) return null
        break
      }
      case 'beginPrepare':
        this.inTransaction = true
        break
      case 'prepare':
        this.inTransaction = false
        break
      case 'streamStart':
        this.openStreams.add(m.xid)
        break
      case 'streamCommit':
      case 'streamPrepare':
      case 'streamAbort':
        this.openStreams.delete(m.xid)
        break
      case 'relation':
      case 'type':
      case 'origin':
        return this.o.metadata === true ? m : null
    }
    return this.skipping ? null : m
  }

  ackOf(m: ChangeMessage): Lsn | null {
    return acknowledgeableEnd(m)
  }

  open(): boolean {
    return this.inTransaction || this.openStreams.size > 0
  }

  reset(): void {
    this.decoder = null
    this.inTransaction = false
    this.skipping = false
    this.openStreams.clear()
  }
}

class RawDriver implements StreamDriver<WalMessage> {
  readonly mode: 'database' | 'physical'
  private readonly slot: string | undefined
  private timeline: number | undefined

  constructor(private readonly o: ReplicateOptions) {
    this.mode = o.physical === true ? 'physical' : 'database'
    if (o.slot !== undefined || this.mode === 'database') this.slot = checkSlotName(o.slot)
    if (o.startLsn !== undefined) Lsn.from(o.startLsn)
    if (o.timeline !== undefined && (!Number.isInteger(o.timeline) || o.timeline < 1)) throw new ArgumentError('timeline must be a positive integer')
    if (this.mode === 'physical' && (o.plugin !== undefined || o.pluginOptions !== undefined)) throw new ArgumentError('plugin and pluginOptions are for logical streaming')
    this.timeline = o.timeline
  }

  async start(conn: ReplicationConnection, from: Lsn | null, first: boolean): Promise<string> {
    const o = this.o
    const at = from ?? (o.startLsn === undefined ? null : Lsn.from(o.startLsn))
    if (this.mode === 'physical') {
      const id = await conn.identifySystem()
      let start = at
      if (start === null && this.slot !== undefined && conn.serverMajor >= 15) start = (await conn.readSlot(this.slot)).restartLsn
      start ??= id.xlogPos
      const tli = this.timeline ?? id.timeline
      return `START_REPLICATION${this.slot === undefined ? '' : ` SLOT ${this.slot}`} PHYSICAL ${start} TIMELINE ${tli}`
    }
    const slot = this.slot!
    const row = await findSlot(conn, slot)
    if (row === undefined) {
      if (!first || o.plugin === undefined) throw new ReplicationError('slot-missing', `replication slot "${slot}" does not exist${first ? ' (give plugin to create it)' : ' any more'}`)
      await conn.createSlot(slot, { plugin: o.plugin })
    } else checkLogicalSlot(row, slot, o.plugin)
    const opts = Object.entries(o.pluginOptions ?? {}).map(([k, v]) => `"${k.replaceAll('"', '""')}" ${quoteLiteral(String(v))}`)
    return `START_REPLICATION SLOT ${slot} LOGICAL ${at ?? '0/0'}${opts.length > 0 ? ` (${opts.join(', ')})` : ''}`
  }

  decode(h: XLogDataHeader, buf: Uint8Array, start: number, end: number): WalMessage {
    const walStart = lsnOf(h.walStart)
    return { walStart, walEnd: lsnOf(h.walEnd), serverTime: timeOf(h.serverTime), data: copyBytes(buf, start, end), lsn: walStart }
  }

  ackOf(m: WalMessage): Lsn {
    // Physical: the WAL up to the end of the data was handled. Logical: the change's own position
    // (a transaction acknowledged midway is sent again whole).
    return this.mode === 'physical' ? m.walStart.plus(m.data.length) : m.walStart
  }

  open(): boolean {
    return false
  }

  reset(): void {}

  /** End of a timeline: the result set names the next one, which streaming follows (as a standby does). */
  ended(rows: (string | null)[][]): boolean {
    const next = Number(rows[0]?.[0])
    if (this.mode !== 'physical' || !Number.isInteger(next) || next < 1) return false
    this.timeline = next
    return true
  }
}

/** A logical change stream over pgoutput on its own replication connection. */
export function subscribe(config: ConnectionConfig, catalog: TypeCatalog, options: SubscribeOptions): Subscription {
  if (typeof options !== 'object' || options === null) throw new ArgumentError('subscribe() needs options: { slot, publications }')
  return new ReplicationStream(config, catalog, new PgoutputDriver(catalog, options), options)
}

/** Raw XLogData: physical WAL, or a logical slot's plugin output, on its own replication connection. */
export function replicate(config: ConnectionConfig, catalog: TypeCatalog, options: ReplicateOptions): WalStream {
  if (typeof options !== 'object' || options === null) throw new ArgumentError('replicate() needs options')
  return new ReplicationStream(config, catalog, new RawDriver(options), options)
}
