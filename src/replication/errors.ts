import { PgError, PipegresError } from '../errors.js'

/** Why a replication stream could not start or go on. */
export type ReplicationFailure =
  /** Another connection is streaming from the slot. */
  | 'slot-in-use'
  /** The slot does not exist (dropped, or never created). */
  | 'slot-missing'
  /** A publication named in the subscription does not exist. */
  | 'publication-missing'
  /** The server's wal_level is too low for logical decoding. */
  | 'wal-level'
  /** The user lacks the REPLICATION attribute, or pg_hba.conf allows no replication connection. */
  | 'privilege'
  /** max_replication_slots or max_wal_senders is used up. */
  | 'limit'
  /** A column value could not be decoded. */
  | 'decode'
  /** The server refused the request for another reason (see the cause). */
  | 'server'
  /** The first connection could not be opened (refused, authentication, TLS, ...): see the cause. */
  | 'connection'

/**
 * A replication stream failed for a reason that retrying will not fix.
 * `reason` says which; `cause` holds the server's error when there is one.
 */
export class ReplicationError extends PipegresError {
  readonly reason: ReplicationFailure
  constructor(reason: ReplicationFailure, message: string, options?: { cause?: unknown }) {
    super('PG_REPLICATION', message, options)
    this.reason = reason
  }
  override get name(): string {
    return 'ReplicationError'
  }
}

/**
 * A server error met while opening or starting a replication stream, told
 * apart by its SQLSTATE and message: the messages are PostgreSQL's own, in
 * English (lc_messages=C), which is how walsender errors differ from one
 * another when they share a code.
 */
export function classifyReplicationError(err: unknown, slot: string | undefined): Error {
  if (!(err instanceof PgError)) return err as Error
  const msg = err.message
  const code = err.code
  const named = slot === undefined ? 'the replication slot' : `replication slot "${slot}"`
  if (code === '55006' || /is active for PID/.test(msg)) {
    return new ReplicationError('slot-in-use', `${named} is in use by another connection: ${msg}`, { cause: err })
  }
  if (code === '42704' && /replication slot/.test(msg)) {
    return new ReplicationError('slot-missing', `${named} does not exist (dropped, or never created): ${msg}`, { cause: err })
  }
  if (code === '42704' && /publication/.test(msg)) {
    return new ReplicationError('publication-missing', `a publication of the subscription does not exist: ${msg}`, { cause: err })
  }
  if (/wal_level/.test(msg)) {
    return new ReplicationError('wal-level', `the server cannot decode changes: ${msg} (set wal_level = logical and restart it)`, { cause: err })
  }
  if (code === '42501' || code === '28000' || /permission denied|must be superuser or replication role|no pg_hba.conf entry for replication/.test(msg)) {
    return new ReplicationError('privilege', `not allowed to replicate: ${msg} (the role needs the REPLICATION attribute, and pg_hba.conf a replication entry for physical streaming)`, { cause: err })
  }
  if (code === '53400' || /all replication slots are in use|number of requested standby connections exceeds/.test(msg)) {
    return new ReplicationError('limit', `the server's replication limits are used up: ${msg}`, { cause: err })
  }
  return err
}
