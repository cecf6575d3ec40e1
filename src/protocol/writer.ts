import { utf8Length, utf8Write } from './utf8.js'

// Messages are appended into one slab and handed out as views: a view given to
// socket.write stays referenced by the runtime until the kernel takes it, so the
// slab is never rewritten under it; the writer simply moves on past the view and
// starts a new slab when the current one is used up.

const SLAB_SIZE = 64 * 1024

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
  }

  /** Makes room for `n` more bytes, moving the untaken bytes to a new slab if needed. */
  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    const pending = this.pos - this.start
    // Doubling keeps a long run of appends linear even when nothing is taken in between.
    const size = Math.max(this.slabSize, (pending + n) * 2)
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(this.start, this.pos))
    this.buf = next
    this.start = 0
    this.pos = pending
  }

  /** Returns the bytes written since the last take() and leaves them untouched for good. */
  take(): Uint8Array {
    const out = this.buf.subarray(this.start, this.pos)
    if (this.buf.length - this.pos < 512) {
      // A huge one-off message left a huge slab behind: do not keep it.
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
    if (s.length * 3 > 65536) this.ensure(utf8Length(s))
    else this.ensure(s.length * 3)
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
    this.patch32(mark, this.pos - this.start - mark)
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
