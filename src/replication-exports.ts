// The public API of pipegres/replication, as both of its entries export it:
// src/replication.ts (Node, Bun, Deno) and src/workerd/replication.ts
// (Cloudflare Workers) differ only in the socket transport they install. It is
// an entry of its own so that an application that never streams changes does
// not load, compile or bundle the walsender, the pgoutput decoder and their
// message types: the main entry imports nothing of src/walsender or
// src/replication.

import type { Client } from './client.js'
import type { ConnectOptions } from './config/index.js'
import type { ConnectionConfig } from './config/types.js'
import { resolveConfig } from './config/index.js'
import { ArgumentError } from './errors.js'
import { internalsOf } from './lane/internals.js'
import type { Pool } from './pool/pool.js'
import { TypeCatalog } from './types/catalog.js'
import { replicate as replicateFrom, subscribe as subscribeFrom, type ReplicateOptions, type SubscribeOptions, type Subscription, type WalStream } from './walsender/subscription.js'

/** Where a stream gets its connection settings and types: a client, a pool, or settings of its own. */
export type ReplicationSource = Client | Pool | string | ConnectOptions

/** The settings and the type catalog of `db`: a Client's or a Pool's own (types registered on it decode in the stream), or new ones. */
function sourceOf(db: unknown, call: string): { config: ConnectionConfig; catalog: TypeCatalog } {
  if (typeof db === 'object' && db !== null) {
    const internals = internalsOf(db)
    if (internals !== undefined) return { config: internals.config, catalog: internals.catalog }
    const proto = Object.getPrototypeOf(db) as object | null
    if (proto !== Object.prototype && proto !== null) {
      const name = (db as { constructor?: { name?: unknown } }).constructor?.name
      throw new ArgumentError(`${call}(db, options) takes a Client, a Pool, a connection string or a settings object as db, got ${typeof name === 'string' && name !== '' ? `a ${name}` : 'an object of a class'}: pass the client or pool it came from`)
    }
  } else if (db !== undefined && typeof db !== 'string') {
    throw new ArgumentError(`${call}(db, options) takes a Client, a Pool, a connection string or a settings object as db, got ${db === null ? 'null' : typeof db}`)
  }
  return { config: resolveConfig(db as string | ConnectOptions | undefined), catalog: new TypeCatalog() }
}

/**
 * A logical change stream (pgoutput) on a replication connection of its own,
 * made from the settings of `db` (a Client, a Pool, or connection settings);
 * the stream takes none of a pool's connections. Types registered on a client
 * or pool decode in the stream too.
 */
export function subscribe(db: ReplicationSource, options: SubscribeOptions): Subscription {
  const { config, catalog } = sourceOf(db, 'subscribe')
  return subscribeFrom(config, catalog, options)
}

/** Raw WAL (physical) or a logical slot's plugin output, on a replication connection of its own made from the settings of `db` (see subscribe()). */
export function replicate(db: ReplicationSource, options: ReplicateOptions): WalStream {
  const { config, catalog } = sourceOf(db, 'replicate')
  return replicateFrom(config, catalog, options)
}

export type { SubscribeOptions, ReplicateOptions, Subscription, WalStream, WalMessage } from './walsender/subscription.js'
export type { StreamOptions as ReplicationStreamOptions, StreamEvents as ReplicationStreamEvents } from './walsender/replication-stream.js'
export { ReplicationStream } from './walsender/replication-stream.js'
export { ReplicationConnection, connectReplication } from './walsender/replication-connection.js'
export type { SystemIdentity, CreateSlotOptions, CreatedSlot, ReadSlot } from './walsender/replication-connection.js'
// The main entry's Lsn (pool.writeLsn() gives one) is this one: every message's `lsn`.
export { Lsn } from './types/lsn.js'
export { ReplicationError, type ReplicationFailure } from './replication/errors.js'
export { unchangedToast, type UnchangedToast } from './replication/messages.js'
export type {
  ChangeRow,
  RelationColumn,
  Relation,
  WalMessageBase,
  ChangeMessageBase,
  BeginMessage,
  CommitMessage,
  OriginMessage,
  RelationMessage,
  TypeMessage,
  InsertMessage,
  UpdateMessage,
  DeleteMessage,
  TruncateMessage,
  LogicalMessage,
  StreamStartMessage,
  StreamStopMessage,
  StreamCommitMessage,
  StreamAbortMessage,
  BeginPrepareMessage,
  PrepareMessage,
  CommitPreparedMessage,
  RollbackPreparedMessage,
  ChangeMessage,
} from './replication/messages.js'
