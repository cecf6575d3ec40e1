import type { Lsn } from './lsn.js'

// The messages a logical change stream (pgoutput) delivers, as plain objects.
// Every message has `type` and `lsn` (the WAL position the server sent it at).

/**
 * Stands in for a TOASTed column value that an UPDATE did not change and the
 * server therefore did not send: the value is whatever it was before, never
 * null. Compare with `===`.
 */
export const unchangedToast: unique symbol = Symbol('pipegres.unchangedToast')
export type UnchangedToast = typeof unchangedToast

/** A row of a change: column name -> decoded value, null, or unchangedToast. */
export type ChangeRow = Record<string, unknown>

export interface RelationColumn {
  name: string
  typeOid: number
  typeModifier: number
  /** Part of the replica identity (the key an update or delete names the row by). */
  key: boolean
}

export interface Relation {
  id: number
  schema: string
  table: string
  /** 'd' default (primary key), 'n' nothing, 'f' full, 'i' index. */
  replicaIdentity: 'd' | 'n' | 'f' | 'i'
  columns: RelationColumn[]
}

interface Base {
  lsn: Lsn
}

/** Fields of changes: `xid` only inside a streamed transaction. */
interface ChangeBase extends Base {
  relation: Relation
  schema: string
  table: string
  xid?: number
}

export interface BeginMessage extends Base {
  type: 'begin'
  xid: number
  /** The commit record's LSN (pgoutput's "final LSN"). */
  commitLsn: Lsn
  commitTime: Date
}
export interface CommitMessage extends Base {
  type: 'commit'
  xid: number
  commitLsn: Lsn
  /** The end of the transaction's commit record: what is acknowledged, and where a resumed stream starts after. */
  endLsn: Lsn
  commitTime: Date
}
export interface OriginMessage extends Base {
  type: 'origin'
  originLsn: Lsn
  name: string
}
export interface RelationMessage extends Base {
  type: 'relation'
  relation: Relation
  xid?: number
}
export interface TypeMessage extends Base {
  type: 'type'
  oid: number
  schema: string
  name: string
  xid?: number
}
export interface InsertMessage extends ChangeBase {
  type: 'insert'
  row: ChangeRow
}
export interface UpdateMessage extends ChangeBase {
  type: 'update'
  row: ChangeRow
  /** The whole old row (REPLICA IDENTITY FULL). */
  old?: ChangeRow
  /** The old key columns, when the key changed (or under REPLICA IDENTITY USING INDEX / DEFAULT). */
  key?: ChangeRow
}
export interface DeleteMessage extends ChangeBase {
  type: 'delete'
  old?: ChangeRow
  key?: ChangeRow
}
export interface TruncateMessage extends Base {
  type: 'truncate'
  tables: { schema: string; table: string }[]
  relations: Relation[]
  cascade: boolean
  restartIdentity: boolean
  xid?: number
}
export interface LogicalMessage extends Base {
  type: 'message'
  transactional: boolean
  messageLsn: Lsn
  prefix: string
  content: Uint8Array
  xid?: number
}
export interface StreamStartMessage extends Base {
  type: 'streamStart'
  xid: number
  first: boolean
}
export interface StreamStopMessage extends Base {
  type: 'streamStop'
}
export interface StreamCommitMessage extends Base {
  type: 'streamCommit'
  xid: number
  commitLsn: Lsn
  endLsn: Lsn
  commitTime: Date
}
export interface StreamAbortMessage extends Base {
  type: 'streamAbort'
  xid: number
  subxid: number
  abortLsn?: Lsn
  abortTime?: Date
}
export interface BeginPrepareMessage extends Base {
  type: 'beginPrepare'
  prepareLsn: Lsn
  endLsn: Lsn
  prepareTime: Date
  xid: number
  gid: string
}
export interface PrepareMessage extends Base {
  type: 'prepare' | 'streamPrepare'
  prepareLsn: Lsn
  endLsn: Lsn
  prepareTime: Date
  xid: number
  gid: string
}
export interface CommitPreparedMessage extends Base {
  type: 'commitPrepared'
  commitLsn: Lsn
  endLsn: Lsn
  commitTime: Date
  xid: number
  gid: string
}
export interface RollbackPreparedMessage extends Base {
  type: 'rollbackPrepared'
  prepareEndLsn: Lsn
  endLsn: Lsn
  prepareTime: Date
  rollbackTime: Date
  xid: number
  gid: string
}

export type ChangeMessage =
  | BeginMessage
  | CommitMessage
  | OriginMessage
  | RelationMessage
  | TypeMessage
  | InsertMessage
  | UpdateMessage
  | DeleteMessage
  | TruncateMessage
  | LogicalMessage
  | StreamStartMessage
  | StreamStopMessage
  | StreamCommitMessage
  | StreamAbortMessage
  | BeginPrepareMessage
  | PrepareMessage
  | CommitPreparedMessage
  | RollbackPreparedMessage

/**
 * Where the server may move the slot once the consumer has handled `m`: the
 * end of a transaction that committed, was prepared, or whose prepared form
 * was committed or rolled back; null for every other message.
 */
export function acknowledgeableEnd(m: ChangeMessage): Lsn | null {
  switch (m.type) {
    case 'commit':
    case 'streamCommit':
    case 'commitPrepared':
    case 'rollbackPrepared':
    case 'prepare':
    case 'streamPrepare':
      return m.endLsn
    default:
      return null
  }
}
