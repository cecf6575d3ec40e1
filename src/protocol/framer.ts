import { ProtocolError } from '../errors.js'
import { Backend, backendMessageName } from './message-codes.js'

// Splits the byte stream from the server into messages and hands each to a sink
// as (type, buffer, bodyStart, bodyEnd) over the chunk it arrived in: no message
// objects and no copies, except for a message that straddles two chunks.
//
// Every length is checked against what its type can legally be before anything
// is allocated for it, so a corrupt or hostile length cannot make the client
// reserve gigabytes or wait forever for bytes that will never come. A length
// within the limits is still only a claim: the memory for a message that spans
// chunks grows with the bytes that actually arrive (see roomFor), so twenty
// bytes claiming a 1 GiB DataRow cost 64 KiB, not 1 GiB.

export interface MessageSink {
  onMessage(type: number, buf: Uint8Array, start: number, end: number): void
}

/** Largest length (including the 4 length bytes) each message type may have; 0 = not a backend message. */
const maxLength = new Int32Array(256)
/** Exact length for messages that have no variable part; 0 = variable. */
const exactLength = new Int32Array(256)

const KiB = 1024
const MiB = 1024 * KiB

function fixed(type: number, len: number): void {
  maxLength[type] = len
  exactLength[type] = len
}
// Types whose size can grow with data get the connection's configurable limit (-1).
function variable(type: number, max: number): void {
  maxLength[type] = max
}

fixed(Backend.ReadyForQuery, 5)
fixed(Backend.ParseComplete, 4)
fixed(Backend.BindComplete, 4)
fixed(Backend.CloseComplete, 4)
fixed(Backend.NoData, 4)
fixed(Backend.PortalSuspended, 4)
fixed(Backend.EmptyQueryResponse, 4)
fixed(Backend.CopyDone, 4)
// Process id, then a secret key of 4 bytes (3.0) up to 256 bytes (3.2).
variable(Backend.BackendKeyData, 4 + 4 + 256)
variable(Backend.Authentication, 64 * KiB)
variable(Backend.NegotiateProtocolVersion, 64 * KiB)
variable(Backend.ParameterStatus, 1 * MiB)
// 65535 parameters of 4 bytes each at most.
variable(Backend.ParameterDescription, 4 + 2 + 4 * 65535)
// 1664 columns at most, each a name plus 18 bytes; names are short, but builds
// with a larger NAMEDATALEN exist, so leave generous room.
variable(Backend.RowDescription, 16 * MiB)
variable(Backend.CommandComplete, 64 * KiB)
variable(Backend.CopyInResponse, 4 + 1 + 2 + 2 * 65535)
variable(Backend.CopyOutResponse, 4 + 1 + 2 + 2 * 65535)
variable(Backend.CopyBothResponse, 4 + 1 + 2 + 2 * 65535)
variable(Backend.NotificationResponse, 1 * MiB)
variable(Backend.DataRow, -1)
variable(Backend.CopyData, -1)
variable(Backend.ErrorResponse, -1)
variable(Backend.NoticeResponse, -1)
variable(Backend.FunctionCallResponse, -1)

export const DEFAULT_MAX_MESSAGE_SIZE = 1024 * MiB + 64 * KiB

/** What is wrong with the length a header claims: below 4 (it counts itself), not its type's fixed length, or past its type's limit. */
export type LengthFault = { kind: 'invalid' } | { kind: 'exact'; exact: number } | { kind: 'limit'; limit: number; setting: boolean }

/**
 * What is wrong with a message of `type` whose length field says `len`, or
 * null. `setting` tells a limit that is `maxMessageSize` (the one a user can
 * raise) from one its type has.
 */
export function lengthFault(type: number, len: number, maxMessageSize: number): LengthFault | null {
  if (len < 4) return { kind: 'invalid' }
  const exact = exactLength[type]!
  if (exact !== 0 && len !== exact) return { kind: 'exact', exact }
  const max = maxLength[type]!
  const limit = max < 0 ? maxMessageSize : max
  return len > limit ? { kind: 'limit', limit, setting: max < 0 } : null
}

/** Messages from this size up are registered as assembled (see isAssembledMessage). */
const REGISTER_FROM = 1 * MiB
const assembled = new WeakSet<ArrayBufferLike>()

/**
 * True when `buf` is a big message the framer assembled from several chunks
 * into memory of its own: nothing else writes to that memory or reuses it
 * once the message is handed on, so a decoder may return a view of part of it
 * instead of a copy. Socket chunks, and buffers that code downstream assembles
 * and reuses (a COPY row carried over between payloads), are not.
 */
export function isAssembledMessage(buf: Uint8Array): boolean {
  return assembled.has(buf.buffer)
}

/** The buffer that completes one message of `size` bytes (type byte included) that spans chunks. */
function assemble(size: number): Uint8Array {
  const msg = new Uint8Array(size)
  if (size > REGISTER_FROM) assembled.add(msg.buffer)
  return msg
}

/** Room reserved at first for a message that spans chunks: messages up to this size get theirs at once. */
const FIRST_ROOM = 64 * KiB
/** Factor by which the room of a big message grows while it arrives. */
const GROWTH = 4
/**
 * The whole buffer of a big message is allocated once this fraction (1/AHEAD)
 * of it has arrived. Memory held for a message is thus at most AHEAD times the
 * bytes received (or FIRST_ROOM), and the copy left behind by the last growth
 * is at most 1/AHEAD of the message, which keeps the peak for a legitimately
 * huge value near one copy of it.
 */
const AHEAD = 8

export class Framer {
  /** A message that began in an earlier chunk, being assembled; may be shorter than the message until it is complete. */
  private partial: Uint8Array | null = null
  private partialFill = 0
  /** Size of the message being assembled, type byte included. */
  private partialSize = 0
  /** Header bytes of a message whose header itself was split. */
  private readonly header = new Uint8Array(5)
  private headerFill = 0

  constructor(
    private readonly sink: MessageSink,
    protected readonly maxMessageSize = DEFAULT_MAX_MESSAGE_SIZE,
  ) {}

  /** True when bytes of an incomplete message are held. */
  get holdsPartial(): boolean {
    return this.partial !== null || this.headerFill > 0
  }

  /** Bytes held of a header that was split across chunks (0 when none). */
  get heldHeaderBytes(): number {
    return this.headerFill
  }

  /**
   * The message being assembled from several chunks, for an owner that must
   * say where a stream stopped: its type, and how many of its bytes (type
   * and length included) have arrived, of how many.
   */
  get heldMessage(): { type: number; received: number; size: number } | null {
    const msg = this.partial
    return msg === null ? null : { type: msg[0]!, received: this.partialFill, size: this.partialSize }
  }

  /**
   * Refuses a message type this stream cannot carry. Also called on the type
   * byte of a header that is split, before its length has arrived: a stream
   * that went wrong fails at once, not when more bytes come (they may not).
   * The wording and the set of types are the owner's to change (pipegres/wire
   * accepts only the messages of a query result).
   */
  protected checkType(type: number): void {
    if (maxLength[type] === 0) throw new ProtocolError(`server sent ${backendMessageName(type)}`)
  }

  /** Checks a message's type and its length (as sent, including itself), before anything is allocated for it. */
  protected check(type: number, len: number): void {
    if (maxLength[type] === 0) this.checkType(type)
    const fault = lengthFault(type, len, this.maxMessageSize)
    if (fault === null) return
    const what = `server sent ${backendMessageName(type)}`
    if (fault.kind === 'invalid') throw new ProtocolError(`${what} with invalid length ${len}`)
    if (fault.kind === 'exact') throw new ProtocolError(`${what} of length ${len}; it must be ${fault.exact}`)
    // Name the setting when it is the one that can be raised.
    throw new ProtocolError(`${what} of ${len} bytes, more than the limit of ${fault.limit}${fault.setting ? ' (maxMessageSize)' : ''}`)
  }

  /** Frames the first `n` bytes of `chunk`, which may be reused once this returns (what must outlive it is copied). */
  push(chunk: Uint8Array, n = chunk.length): void {
    let pos = 0
    if (this.headerFill > 0 || this.partial !== null) {
      pos = this.continuePartial(chunk, n)
      if (pos < 0) return
    }
    const sink = this.sink
    while (n - pos >= 5) {
      const type = chunk[pos]!
      // Signed read: a length with the top bit set is negative and fails check().
      const len = (chunk[pos + 1]! << 24) | (chunk[pos + 2]! << 16) | (chunk[pos + 3]! << 8) | chunk[pos + 4]!
      this.check(type, len)
      const next = pos + 1 + len
      if (next > n) break
      sink.onMessage(type, chunk, pos + 5, next)
      pos = next
    }
    if (pos < n) this.startPartial(chunk, pos, n)
  }

  private startPartial(chunk: Uint8Array, pos: number, n: number): void {
    const avail = n - pos
    if (avail < 5) {
      this.checkType(chunk[pos]!)
      this.header.set(chunk.subarray(pos, n), 0)
      this.headerFill = avail
      return
    }
    const len = (chunk[pos + 1]! << 24) | (chunk[pos + 2]! << 16) | (chunk[pos + 3]! << 8) | chunk[pos + 4]!
    // Length was checked by the caller's loop.
    this.partialSize = 1 + len
    const msg = this.room(avail)
    msg.set(chunk.subarray(pos, n), 0)
    this.partial = msg
    this.partialFill = avail
  }

  /** How many bytes to reserve for the message being assembled once `need` of them have arrived. */
  private roomFor(need: number): number {
    const size = this.partialSize
    if (size <= FIRST_ROOM || need * AHEAD >= size) return size
    // need < size / AHEAD here, so this is at least need and less than size.
    return Math.max(FIRST_ROOM, Math.min(need * GROWTH, Math.floor(size / AHEAD)))
  }

  /** A buffer for the message being assembled with room for at least `need` bytes. */
  private room(need: number): Uint8Array {
    const n = this.roomFor(need)
    return n === this.partialSize ? assemble(n) : new Uint8Array(n)
  }

  /** Feeds the start of `chunk` into the message being assembled; returns where the rest starts, or -1 if all was used. */
  private continuePartial(chunk: Uint8Array, n: number): number {
    let pos = 0
    if (this.partial === null) {
      const want = 5 - this.headerFill
      const take = Math.min(want, n)
      this.header.set(chunk.subarray(0, take), this.headerFill)
      this.headerFill += take
      pos = take
      if (this.headerFill < 5) return -1
      const h = this.header
      const type = h[0]!
      const len = (h[1]! << 24) | (h[2]! << 16) | (h[3]! << 8) | h[4]!
      this.headerFill = 0
      this.check(type, len)
      this.partialSize = 1 + len
      const msg = this.room(5)
      msg.set(h, 0)
      this.partial = msg
      this.partialFill = 5
    }
    let msg = this.partial
    const size = this.partialSize
    const take = Math.min(size - this.partialFill, n - pos)
    const filled = this.partialFill + take
    if (filled > msg.length) {
      const bigger = this.room(filled)
      bigger.set(msg.subarray(0, this.partialFill), 0)
      this.partial = msg = bigger
    }
    msg.set(chunk.subarray(pos, pos + take), this.partialFill)
    this.partialFill = filled
    pos += take
    if (filled < size) return -1
    // Complete: the last room() was the whole message, so msg.length === size.
    this.partial = null
    this.partialFill = 0
    this.sink.onMessage(msg[0]!, msg, 5, size)
    return pos === n ? -1 : pos
  }
}
