import type { Lsn } from '../types/lsn.js'

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

/** What every message of a WAL stream has: the position it was sent at. */
export interface WalMessageBase {
  lsn: Lsn
}

/** Fields of changes: `xid` only inside a streamed transaction. */
export interface ChangeMessageBase extends WalMessageBase {
  relation: Relation
  schema: string
  table: string
  xid?: number
}

export interface BeginMessage extends WalMessageBase {
  type: 'begin'
  xid: number
  /** The commit record's LSN (pgoutput's "final LSN"). */
  commitLsn: Lsn
  commitTime: Date
}
export interface CommitMessage extends WalMessageBase {
  type: 'commit'
  xid: number
  commitLsn: Lsn
  /** The end of the transaction's commit record: what is acknowledged, and where a resumed stream starts after. */
  endLsn: Lsn
  commitTime: Date
}
export interface OriginMessage extends WalMessageBase {
  type: 'origin'
  originLsn: Lsn
  name: string
}
export interface RelationMessage extends WalMessageBase {
  type: 'relation'
  relation: Relation
  xid?: number
}
export interface TypeMessage extends WalMessageBase {
  type: 'type'
  oid: number
  schema: string
  name: string
  xid?: number
}
export interface InsertMessage extends ChangeMessageBase {
  type: 'insert'
  row: ChangeRow
}
export interface UpdateMessage extends ChangeMessageBase {
  type: 'update'
  row: ChangeRow
  /** The whole old row (REPLICA IDENTITY FULL). */
  old?: ChangeRow
  /** The old key columns, when the key changed (or under REPLICA IDENTITY USING INDEX / DEFAULT). */
  key?: ChangeRow
}
export interface DeleteMessage extends ChangeMessageBase {
  type: 'delete'
  old?: ChangeRow
  key?: ChangeRow
}
export interface TruncateMessage extends WalMessageBase {
  type: 'truncate'
  tables: { schema: string; table: string }[]
  relations: Relation[]
  cascade: boolean
  restartIdentity: boolean
  xid?: number
}
export interface LogicalMessage extends WalMessageBase {
  type: 'message'
  transactional: boolean
  messageLsn: Lsn
  prefix: string
  content: Uint8Array
  xid?: number
}
export interface StreamStartMessage extends WalMessageBase {
  type: 'streamStart'
  xid: number
  first: boolean
}
export interface StreamStopMessage extends WalMessageBase {
  type: 'streamStop'
}
export interface StreamCommitMessage extends WalMessageBase {
  type: 'streamCommit'
  xid: number
  commitLsn: Lsn
  endLsn: Lsn
  commitTime: Date
}
export interface StreamAbortMessage extends WalMessageBase {
  type: 'streamAbort'
  xid: number
  subxid: number
  abortLsn?: Lsn
  abortTime?: Date
}
export interface BeginPrepareMessage extends WalMessageBase {
  type: 'beginPrepare'
  prepareLsn: Lsn
  endLsn: Lsn
  prepareTime: Date
  xid: number
  gid: string
}
export interface PrepareMessage extends WalMessageBase {
  type: 'prepare' | 'streamPrepare'
  prepareLsn: Lsn
  endLsn: Lsn
  prepareTime: Date
  xid: number
  gid: string
}
export interface CommitPreparedMessage extends WalMessageBase {
  type: 'commitPrepared'
  commitLsn: Lsn
  endLsn: Lsn
  commitTime: Date
  xid: number
  gid: string
}
export interface RollbackPreparedMessage extends WalMessageBase {
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
