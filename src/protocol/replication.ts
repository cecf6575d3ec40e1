import { ProtocolError } from '../errors.js'
import { readInt32 } from './reader.js'
import type { Writer } from './writer.js'

// The streaming replication sub-protocol carried in CopyData messages once
// START_REPLICATION has switched the connection to CopyBoth mode ("Streaming
// Replication Protocol" in the PostgreSQL documentation). LSNs and timestamps
// are 64-bit on the wire; LSNs stay bigint here, timestamps become
// microseconds since 2000-01-01 as a bigint (the caller decides on a Date).

/** First byte of a CopyData payload from the server. */
export const ReplicationMessage = {
  XLogData: 0x77, // w
  PrimaryKeepalive: 0x6b, // k
} as const

/** First byte of a CopyData payload from the client. */
export const StandbyMessage = {
  StatusUpdate: 0x72, // r
  HotStandbyFeedback: 0x68, // h
} as const

/** Microseconds between the Unix epoch and PostgreSQL's epoch (2000-01-01 UTC). */
export const PG_EPOCH_MICROS = 946_684_800_000_000n

export function readUint64(buf: Uint8Array, at: number): bigint {
  const hi = readInt32(buf, at) >>> 0
  const lo = readInt32(buf, at + 4) >>> 0
  return (BigInt(hi) << 32n) | BigInt(lo)
}

export function readInt64(buf: Uint8Array, at: number): bigint {
  return BigInt.asIntN(64, readUint64(buf, at))
}

/** XLogData header: the WAL (or logical message) payload follows at `dataStart`. */
export interface XLogDataHeader {
  walStart: bigint
  walEnd: bigint
  /** Microseconds since 2000-01-01 UTC. */
  serverTime: bigint
  dataStart: number
}

const XLOG_HEADER = 1 + 8 + 8 + 8

/** Decodes the header of an XLogData payload [start, end) whose first byte is 'w'. */
export function decodeXLogData(buf: Uint8Array, start: number, end: number): XLogDataHeader {
  if (end - start < XLOG_HEADER) throw new ProtocolError(`malformed XLogData message from server: ${end - start} bytes`)
  return {
    walStart: readUint64(buf, start + 1),
    walEnd: readUint64(buf, start + 9),
    serverTime: readInt64(buf, start + 17),
    dataStart: start + XLOG_HEADER,
  }
}

export interface PrimaryKeepalive {
  walEnd: bigint
  serverTime: bigint
  /** The server asks for a status update at once (it is about to time the connection out). */
  replyRequested: boolean
}

export function decodePrimaryKeepalive(buf: Uint8Array, start: number, end: number): PrimaryKeepalive {
  if (end - start !== 1 + 8 + 8 + 1) throw new ProtocolError(`malformed primary keepalive message from server: ${end - start} bytes`)
  return { walEnd: readUint64(buf, start + 1), serverTime: readInt64(buf, start + 9), replyRequested: buf[start + 17] === 1 }
}

function writeUint64(w: Writer, v: bigint): void {
  w.i32(Number((v >> 32n) & 0xffffffffn) | 0)
  w.i32(Number(v & 0xffffffffn) | 0)
}

/**
 * A Standby Status Update inside a CopyData message: the positions written,
 * flushed and applied, the client's clock, and whether the server should
 * answer with a keepalive at once.
 */
export function writeStandbyStatusUpdate(w: Writer, write: bigint, flush: bigint, apply: bigint, nowMicros: bigint, replyRequested: boolean): void {
  const m = w.begin(0x64) // CopyData
  w.u8(StandbyMessage.StatusUpdate)
  writeUint64(w, write)
  writeUint64(w, flush)
  writeUint64(w, apply)
  writeUint64(w, BigInt.asUintN(64, nowMicros - PG_EPOCH_MICROS))
  w.u8(replyRequested ? 1 : 0)
  w.end(m)
}
