import { ProtocolError } from '../errors.js'
import { copyBytes, readInt16, readInt32 } from '../protocol/reader.js'
import { PG_EPOCH_MICROS, readInt64, readUint64 } from '../protocol/replication.js'
import { utf8Read } from '../protocol/utf8.js'
import type { Decoder } from '../types/codec.js'
import type { TypeView } from '../types/view.js'
import { lsnOf, type Lsn } from '../types/lsn.js'
import { unchangedToast, type ChangeMessage, type ChangeRow, type Relation } from './messages.js'
import { ReplicationError } from './errors.js'

// Decodes pgoutput's logical replication messages ("Logical Replication
// Message Formats" in the PostgreSQL documentation), protocol versions 1 to 4,
// into plain objects, with column values decoded by the type system exactly
// as a query's would be. Pure: bytes in, objects out; the caller owns the
// connection and decides what to acknowledge.

/** What the decoder must know of the stream it reads. */
export interface PgoutputOptions {
  /** proto_version asked for (1-4): from 2 on, changes inside a streamed transaction carry their xid. */
  protoVersion: number
  /** streaming = parallel (version 4): Stream Abort carries the abort's LSN and time. */
  parallel: boolean
}

interface RelationPlan {
  relation: Relation
  names: string[]
  keyMask: boolean[]
  text: Decoder[]
  binary: (Decoder | null)[]
}

/** A malformed message: the stream cannot be trusted past it. */
function malformed(what: string): never {
  throw new ProtocolError(`malformed pgoutput ${what} message from server`)
}

function timeOf(micros: bigint): Date {
  return new Date(Number((micros + PG_EPOCH_MICROS) / 1000n))
}

export class PgoutputDecoder {
  private readonly relations = new Map<number, RelationPlan>()
  /** Inside Stream Start .. Stream Stop: changes carry the xid of their transaction. */
  private inStream = false
  /** The xid of the transaction being delivered, for its Commit. */
  private xid = 0
  private buf: Uint8Array = new Uint8Array(0)
  private pos = 0
  private end = 0

  constructor(
    private readonly view: TypeView,
    private readonly options: PgoutputOptions,
  ) {}

  /** Decodes one message, the bytes [start, end) after an XLogData header sent at `lsn`. */
  decode(buf: Uint8Array, start: number, end: number, lsn: Lsn): ChangeMessage | null {
    if (start >= end) malformed('empty')
    this.buf = buf
    this.pos = start + 1
    this.end = end
    const tag = buf[start]!
    let m: ChangeMessage | null
    switch (tag) {
      case 0x42: // B Begin
        m = this.begin(lsn)
        break
      case 0x43: // C Commit
        m = this.commit(lsn)
        break
      case 0x4f: // O Origin
        m = { type: 'origin', lsn, originLsn: lsnOf(this.u64()), name: this.cstr() }
        break
      case 0x52: // R Relation
        m = this.relation(lsn)
        break
      case 0x59: {
        // Y Type
        const xid = this.streamXid()
        m = { type: 'type', lsn, oid: this.u32(), schema: this.cstr(), name: this.cstr(), ...(xid === undefined ? {} : { xid }) }
        break
      }
      case 0x49: // I Insert
        m = this.insert(lsn)
        break
      case 0x55: // U Update
        m = this.update(lsn)
        break
      case 0x44: // D Delete
        m = this.delete(lsn)
        break
      case 0x54: // T Truncate
        m = this.truncate(lsn)
        break
      case 0x4d: // M Message
        m = this.message(lsn)
        break
      case 0x53: // S Stream Start
        if (this.inStream) malformed('Stream Start inside a stream')
        this.inStream = true
        m = { type: 'streamStart', lsn, xid: this.u32(), first: this.u8() === 1 }
        break
      case 0x45: // E Stream Stop
        if (!this.inStream) malformed('Stream Stop outside a stream')
        this.inStream = false
        m = { type: 'streamStop', lsn }
        break
      case 0x63: // c Stream Commit
        m = { type: 'streamCommit', lsn, xid: this.u32(), ...this.skipFlags(), commitLsn: lsnOf(this.u64()), endLsn: lsnOf(this.u64()), commitTime: timeOf(this.i64()) }
        break
      case 0x41: {
        // A Stream Abort
        const xid = this.u32()
        const subxid = this.u32()
        if (this.options.parallel && this.options.protoVersion >= 4) {
          m = { type: 'streamAbort', lsn, xid, subxid, abortLsn: lsnOf(this.u64()), abortTime: timeOf(this.i64()) }
        } else m = { type: 'streamAbort', lsn, xid, subxid }
        break
      }
      case 0x62: // b Begin Prepare
        m = { type: 'beginPrepare', lsn, prepareLsn: lsnOf(this.u64()), endLsn: lsnOf(this.u64()), prepareTime: timeOf(this.i64()), xid: this.u32(), gid: this.cstr() }
        break
      case 0x50: // P Prepare
      case 0x70: // p Stream Prepare
        this.u8()
        m = {
          type: tag === 0x50 ? 'prepare' : 'streamPrepare',
          lsn,
          prepareLsn: lsnOf(this.u64()),
          endLsn: lsnOf(this.u64()),
          prepareTime: timeOf(this.i64()),
          xid: this.u32(),
          gid: this.cstr(),
        }
        break
      case 0x4b: // K Commit Prepared
        this.u8()
        m = { type: 'commitPrepared', lsn, commitLsn: lsnOf(this.u64()), endLsn: lsnOf(this.u64()), commitTime: timeOf(this.i64()), xid: this.u32(), gid: this.cstr() }
        break
      case 0x72: // r Rollback Prepared
        this.u8()
        m = {
          type: 'rollbackPrepared',
          lsn,
          prepareEndLsn: lsnOf(this.u64()),
          endLsn: lsnOf(this.u64()),
          prepareTime: timeOf(this.i64()),
          rollbackTime: timeOf(this.i64()),
          xid: this.u32(),
          gid: this.cstr(),
        }
        break
      default:
        throw new ProtocolError(`unknown pgoutput message type 0x${tag.toString(16).padStart(2, '0')} from server`)
    }
    if (this.pos !== this.end) malformed(`${m.type} (${this.end - this.pos} bytes left over)`)
    return m
  }

  // --- fields ---------------------------------------------------------------

  private need(n: number): void {
    if (this.pos + n > this.end) malformed('truncated')
  }
  private u8(): number {
    this.need(1)
    return this.buf[this.pos++]!
  }
  private i16(): number {
    this.need(2)
    const v = readInt16(this.buf, this.pos)
    this.pos += 2
    return v
  }
  private i32(): number {
    this.need(4)
    const v = readInt32(this.buf, this.pos)
    this.pos += 4
    return v
  }
  private u32(): number {
    return this.i32() >>> 0
  }
  private u64(): bigint {
    this.need(8)
    const v = readUint64(this.buf, this.pos)
    this.pos += 8
    return v
  }
  private i64(): bigint {
    this.need(8)
    const v = readInt64(this.buf, this.pos)
    this.pos += 8
    return v
  }
  private cstr(): string {
    const i = this.buf.indexOf(0, this.pos)
    if (i < 0 || i >= this.end) malformed('unterminated string in')
    const s = utf8Read(this.buf, this.pos, i)
    this.pos = i + 1
    return s
  }
  private skipFlags(): Record<string, never> {
    this.u8()
    return {}
  }
  /** The xid a change carries inside a streamed transaction (protocol 2 and later). */
  private streamXid(): number | undefined {
    return this.inStream && this.options.protoVersion >= 2 ? this.u32() : undefined
  }

  // --- messages -------------------------------------------------------------

  private begin(lsn: Lsn): ChangeMessage {
    const commitLsn = lsnOf(this.u64())
    const commitTime = timeOf(this.i64())
    this.xid = this.u32()
    return { type: 'begin', lsn, xid: this.xid, commitLsn, commitTime }
  }

  private commit(lsn: Lsn): ChangeMessage {
    this.u8()
    return { type: 'commit', lsn, xid: this.xid, commitLsn: lsnOf(this.u64()), endLsn: lsnOf(this.u64()), commitTime: timeOf(this.i64()) }
  }

  private relation(lsn: Lsn): ChangeMessage {
    const xid = this.streamXid()
    const id = this.u32()
    const schema = this.cstr()
    const table = this.cstr()
    const identity = String.fromCharCode(this.u8())
    if (identity !== 'd' && identity !== 'n' && identity !== 'f' && identity !== 'i') malformed(`Relation (replica identity '${identity}')`)
    const n = this.i16()
    if (n < 0) malformed('Relation')
    const columns: Relation['columns'] = []
    for (let i = 0; i < n; i++) {
      const flags = this.u8()
      columns.push({ key: (flags & 1) !== 0, name: this.cstr(), typeOid: this.u32(), typeModifier: this.i32() })
    }
    const relation: Relation = { id, schema, table, replicaIdentity: identity, columns }
    // A Relation message re-sent after a schema change replaces the old plan for the rows that follow.
    this.relations.set(id, {
      relation,
      names: columns.map((c) => c.name),
      keyMask: columns.map((c) => c.key),
      text: columns.map((c) => this.view.codec(c.typeOid).decodeText),
      binary: columns.map((c) => this.view.codec(c.typeOid).decodeBinary ?? null),
    })
    return xid === undefined ? { type: 'relation', lsn, relation } : { type: 'relation', lsn, relation, xid }
  }

  private plan(): RelationPlan {
    const id = this.u32()
    const plan = this.relations.get(id)
    if (plan === undefined) throw new ProtocolError(`server sent a change for relation ${id} before describing it in a Relation message`)
    return plan
  }

  private insert(lsn: Lsn): ChangeMessage {
    const xid = this.streamXid()
    const plan = this.plan()
    if (this.u8() !== 0x4e) malformed('Insert (no new tuple)')
    const r = plan.relation
    const row = this.tuple(plan, false)
    return xid === undefined
      ? { type: 'insert', lsn, relation: r, schema: r.schema, table: r.table, row }
      : { type: 'insert', lsn, relation: r, schema: r.schema, table: r.table, row, xid }
  }

  private update(lsn: Lsn): ChangeMessage {
    const xid = this.streamXid()
    const plan = this.plan()
    const r = plan.relation
    const m: ChangeMessage = { type: 'update', lsn, relation: r, schema: r.schema, table: r.table, row: {} }
    if (xid !== undefined) m.xid = xid
    let kind = this.u8()
    if (kind === 0x4b) {
      m.key = this.tuple(plan, true)
      kind = this.u8()
    } else if (kind === 0x4f) {
      m.old = this.tuple(plan, false)
      kind = this.u8()
    }
    if (kind !== 0x4e) malformed('Update (no new tuple)')
    m.row = this.tuple(plan, false)
    return m
  }

  private delete(lsn: Lsn): ChangeMessage {
    const xid = this.streamXid()
    const plan = this.plan()
    const r = plan.relation
    const m: ChangeMessage = { type: 'delete', lsn, relation: r, schema: r.schema, table: r.table }
    if (xid !== undefined) m.xid = xid
    const kind = this.u8()
    if (kind === 0x4b) m.key = this.tuple(plan, true)
    else if (kind === 0x4f) m.old = this.tuple(plan, false)
    else malformed('Delete (no old key or tuple)')
    return m
  }

  private truncate(lsn: Lsn): ChangeMessage {
    const xid = this.streamXid()
    const n = this.i32()
    const options = this.u8()
    if (n < 0 || n > (this.end - this.pos) / 4) malformed('Truncate')
    const relations: Relation[] = []
    for (let i = 0; i < n; i++) {
      const id = this.u32()
      const plan = this.relations.get(id)
      if (plan === undefined) throw new ProtocolError(`server truncated relation ${id} before describing it in a Relation message`)
      relations.push(plan.relation)
    }
    const m: ChangeMessage = {
      type: 'truncate',
      lsn,
      tables: relations.map((r) => ({ schema: r.schema, table: r.table })),
      relations,
      cascade: (options & 1) !== 0,
      restartIdentity: (options & 2) !== 0,
    }
    if (xid !== undefined) m.xid = xid
    return m
  }

  private message(lsn: Lsn): ChangeMessage {
    const xid = this.streamXid()
    const flags = this.u8()
    const messageLsn = lsnOf(this.u64())
    const prefix = this.cstr()
    const len = this.i32()
    if (len < 0) malformed('Message')
    this.need(len)
    const content = copyBytes(this.buf, this.pos, this.pos + len)
    this.pos += len
    const m: ChangeMessage = { type: 'message', lsn, transactional: (flags & 1) !== 0, messageLsn, prefix, content }
    if (xid !== undefined) m.xid = xid
    return m
  }

  /**
   * TupleData as an object. For an old key (`keyOnly`) only the key columns
   * are kept: the server sends the others as nulls that mean "not sent".
   */
  private tuple(plan: RelationPlan, keyOnly: boolean): ChangeRow {
    const n = this.i16()
    const names = plan.names
    if (n < 0 || n > names.length) {
      throw new ProtocolError(`server sent a row of ${n} columns for ${plan.relation.schema}.${plan.relation.table}, described with ${names.length}`)
    }
    const buf = this.buf
    const row: ChangeRow = {}
    for (let i = 0; i < n; i++) {
      this.need(1)
      const kind = buf[this.pos++]!
      let value: unknown
      if (kind === 0x6e) value = null
      else if (kind === 0x75) value = unchangedToast
      else if (kind === 0x74 || kind === 0x62) {
        const len = this.i32()
        if (len < 0) malformed('TupleData (negative length)')
        this.need(len)
        const start = this.pos
        this.pos += len
        const decode = kind === 0x74 ? plan.text[i]! : (plan.binary[i] ?? null)
        try {
          value = decode === null ? copyBytes(buf, start, start + len) : decode(buf, start, start + len)
        } catch (err) {
          const col = plan.relation.columns[i]!
          throw new ReplicationError(
            'decode',
            `could not decode column "${col.name}" (${this.view.typeName(col.typeOid)}) of ${plan.relation.schema}.${plan.relation.table}: ${(err as Error).message}`,
            { cause: err },
          )
        }
      } else malformed(`TupleData (column kind 0x${kind.toString(16)})`)
      if (keyOnly && !plan.keyMask[i]) continue
      const name = names[i]!
      // A column named __proto__ must stay an ordinary property.
      if (name === '__proto__') Object.defineProperty(row, name, { value, enumerable: true, writable: true, configurable: true })
      else row[name] = value
    }
    return row
  }
}
