import { ArgumentError } from '../errors.js'

// What each PostgreSQL major offers a replication client, in one table, so
// that a feature the server lacks is refused before anything is sent, with
// the version it needs, instead of surfacing as the walsender's "syntax
// error" or pgoutput's "unrecognized option" after a slot was created.
//
// Read off each version's replication grammar and pgoutput option parser:
// - CREATE_REPLICATION_SLOT's parenthesized option list (SNAPSHOT, TWO_PHASE,
//   RESERVE_WAL as options) is 15's; 13 and 14 take bare keywords
//   (NOEXPORT_SNAPSHOT / EXPORT_SNAPSHOT / USE_SNAPSHOT, RESERVE_WAL) and have
//   no way to create a two-phase slot over the replication protocol.
// - READ_REPLICATION_SLOT is 15's.
// - pgoutput: proto_version 1 and publication_names everywhere; binary,
//   messages and streaming (proto_version 2) from 14; two_phase (3) from 15;
//   origin and parallel streaming (4) from 16.

/** The first major with each feature a replication stream or command may ask for. */
export const REPLICATION_SINCE = {
  /** pgoutput `binary`: values in binary. */
  binary: 14,
  /** pgoutput `messages`: pg_logical_emit_message() output. */
  messages: 14,
  /** pgoutput `streaming`: transactions streamed while in progress. */
  streaming: 14,
  /** pgoutput `two_phase`, and two-phase slots over the replication protocol. */
  twoPhase: 15,
  /** pgoutput `origin`. */
  origin: 16,
  /** READ_REPLICATION_SLOT. */
  readSlot: 15,
  /** CREATE_REPLICATION_SLOT ... ( option [, ...] ). */
  slotOptionList: 15,
} as const

/** The first major that offers each pgoutput protocol version. */
const PROTOCOL_SINCE: Record<1 | 2 | 3 | 4, number> = { 1: 10, 2: 14, 3: 15, 4: 16 }

/** The newest pgoutput protocol version a server offers. */
export function newestProtocol(major: number): 1 | 2 | 3 | 4 {
  return major >= 16 ? 4 : major >= 15 ? 3 : major >= 14 ? 2 : 1
}

/** The first major that offers a pgoutput protocol version. */
export function protocolSince(version: 1 | 2 | 3 | 4): number {
  return PROTOCOL_SINCE[version]
}

/** A server's version as people write it ('13.23', '18.4'), from server_version ('14.23 (Debian 14.23-1)'). */
export function shortVersion(serverVersion: string | undefined): string {
  return /^\d+(?:\.\d+)?/.exec(serverVersion ?? '')?.[0] ?? 'of unknown version'
}

/** The refusal of something a server is too old for; `what` as the user wrote it (`binary: true`). */
export function needsNewer(what: string, since: number, serverVersion: string | undefined): ArgumentError {
  return new ArgumentError(`${what} needs PostgreSQL ${since} or later; this server is ${shortVersion(serverVersion)}`)
}

/** Throws needsNewer() unless the server's major is at least `since`. */
export function requireSince(what: string, since: number, major: number, serverVersion: string | undefined): void {
  if (major < since) throw needsNewer(what, since, serverVersion)
}
