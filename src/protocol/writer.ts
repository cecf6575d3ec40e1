import { ArgumentError } from '../errors.js'
import { utf8Length, utf8Write } from './utf8.js'

// Messages are appended into one slab and handed out as views: a view given to
// socket.write stays referenced by the runtime until the kernel takes it, so the
// slab is never rewritten under it; the writer simply moves on past the view and
// starts a new slab when the current one is used up.
//
// Sizing is about big messages as much as small ones. A long run of small
// appends (a pipelined burst, a Bind with thousands of parameters) must stay
// linear, so a slab that overflows grows geometrically; but doubling a message
// that holds one 256 MiB value would reserve 512 MiB, so the extra room is
// capped, and a single large append gets what it needs plus a little room for
// the tail of its message (result formats, Execute, Sync), so it is written
// once and not moved again. The price of the cap: a message of the server's
// 1 GiB limit built from small appends moves about 8 GiB in all as it grows,
// where doubling would move about 1 GiB.

const SLAB_SIZE = 64 * 1024
/** Most room added beyond what is needed when a slab grows. */
const MAX_EXTRA = 64 * 1024 * 1024
/** Least room added beyond what is needed: the tail of a message after its one big value. */
const TAIL_ROOM = 16 * 1024
/** Slabs that grew past this many standard slabs are not reused once their bytes are handed out. */
const KEEP_SLABS = 4
/** A slab with less room than this left is not worth writing into again. */
const SLAB_RESERVE = 512
/**
 * Strings up to this many UTF-16 units get 3 bytes of room per unit (enough for
 * any UTF-8 encoding) rather than an exact count; longer ones are measured, so
 * that a huge string never reserves three times its size.
 */
const SHORT_STRING = 16 * 1024
/**
 * The longest message PostgreSQL reads (its length word included; 1 GiB minus
 * 2 bytes). Past it the server drops the connection without a word, and past
 * 2 GiB the length word itself would wrap: a message that large fails here
 * instead, before anything of it is sent.
 */
export const MAX_FRONTEND_MESSAGE = 0x3fffffff - 1

export class Writer {
  /** The current slab. */
  buf: Uint8Array
  /** Where the next byte goes. */
  pos = 0
  /** Start of the bytes not yet handed out by take(). */
  private start = 0

  constructor(private readonly slabSize = SLAB_SIZE) {
    this.buf = new Uint8Array(slabSize)
  }

  /** Bytes written since the last take(). */
  get length(): number {
    return this.pos - this.start
  }

  /** Drops what was written after the first `length` untaken bytes (undoes a failed encode). */
  truncate(length: number): void {
    this.pos = this.start + length
    // An encode that failed halfway through a huge value leaves a huge slab that
    // take() may not see for a while (nothing is left to send): give it up now.
    if (this.oversized() && length <= this.slabSize - SLAB_RESERVE) {
      const kept = this.buf.subarray(this.start, this.pos)
      this.buf = new Uint8Array(this.slabSize)
      this.buf.set(kept)
      this.start = 0
      this.pos = length
    }
  }

  /** Makes room for `n` more bytes, moving the untaken bytes to a new slab if needed. */
  ensure(n: number): void {
    if (this.pos + n > this.buf.length) this.grow(n)
  }

  // Kept out of ensure() so that the check every append makes stays small enough to inline.
  private grow(n: number): void {
    if (n > MAX_FRONTEND_MESSAGE) throw tooLarge('a value', n)
    const pending = this.pos - this.start
    const need = pending + n
    const size = need <= this.slabSize ? this.slabSize : need + Math.min(Math.max(pending, TAIL_ROOM), MAX_EXTRA)
    const next = new Uint8Array(size)
    if (pending > 0) next.set(this.buf.subarray(this.start, this.pos))
    this.buf = next
    this.start = 0
    this.pos = pending
  }

  private oversized(): boolean {
    return this.buf.length > KEEP_SLABS * this.slabSize
  }

  /** Returns the bytes written since the last take() and leaves them untouched for good. */
  take(): Uint8Array {
    const out = this.buf.subarray(this.start, this.pos)
    if (this.buf.length - this.pos < SLAB_RESERVE || this.oversized()) {
      // The view keeps the old slab alive for exactly as long as the socket
      // needs it; after a one-off huge message the writer is back to a small one.
      this.buf = new Uint8Array(this.slabSize)
      this.pos = 0
    }
    this.start = this.pos
    return out
  }

  u8(v: number): void {
    this.ensure(1)
    this.buf[this.pos++] = v
  }

  i16(v: number): void {
    this.ensure(2)
    const b = this.buf
    b[this.pos++] = v >>> 8
    b[this.pos++] = v
  }

  i32(v: number): void {
    this.ensure(4)
    const b = this.buf
    b[this.pos++] = v >>> 24
    b[this.pos++] = v >>> 16
    b[this.pos++] = v >>> 8
    b[this.pos++] = v
  }

  bytes(src: Uint8Array): void {
    this.ensure(src.length)
    this.buf.set(src, this.pos)
    this.pos += src.length
  }

  /** A string without terminator; returns its byte length. */
  str(s: string): number {
    // Measuring a long string is a fast native scan, far cheaper than reserving
    // (and, for a huge one, zeroing and keeping) three bytes per character.
    this.ensure(s.length <= SHORT_STRING ? s.length * 3 : utf8Length(s))
    const n = utf8Write(this.buf, this.pos, s)
    this.pos += n
    return n
  }

  /** A NUL-terminated string. The caller has checked that `s` holds no NUL. */
  cstr(s: string): void {
    this.str(s)
    this.u8(0)
  }

  // Offsets handed out below are relative to `start`, because ensure() may move
  // the untaken bytes to a new slab while a message is still being written.

  /** Starts a message of the given type; returns the mark to pass to end(). */
  begin(type: number): number {
    this.ensure(5)
    this.buf[this.pos] = type
    this.pos += 5
    return this.pos - 4 - this.start
  }

  /** Starts a message that has no type byte (StartupMessage, SSLRequest, CancelRequest). */
  beginUntyped(): number {
    this.ensure(4)
    this.pos += 4
    return this.pos - 4 - this.start
  }

  /** Fills in the length of the message whose mark is `mark`. */
  end(mark: number): void {
    const len = this.pos - this.start - mark
    if (len > MAX_FRONTEND_MESSAGE) throw tooLarge('a message', len)
    this.patch32(mark, len)
  }

  /** Reserves room for an int32 to be filled in later; returns its mark. */
  reserve32(): number {
    this.ensure(4)
    this.pos += 4
    return this.pos - 4 - this.start
  }

  /** Reserves `n` bytes to be filled in later; returns their mark. */
  reserve(n: number): number {
    this.ensure(n)
    this.pos += n
    return this.pos - n - this.start
  }

  /** Writes an int16 at a mark (plus an offset) returned by reserve(). */
  patch16(mark: number, v: number): void {
    const at = this.start + mark
    this.buf[at] = v >>> 8
    this.buf[at + 1] = v
  }

  /** Writes an int32 at a mark returned by reserve32(). */
  patch32(mark: number, v: number): void {
    const b = this.buf
    const at = this.start + mark
    b[at] = v >>> 24
    b[at + 1] = v >>> 16
    b[at + 2] = v >>> 8
    b[at + 3] = v
  }
}

function tooLarge(what: string, n: number): ArgumentError {
  return new ArgumentError(`${what} of ${n} bytes is more than a PostgreSQL message can hold (${MAX_FRONTEND_MESSAGE} bytes, the query and all its values together)`)
}
