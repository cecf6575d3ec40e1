import { ProtocolError } from '../errors.js'
import { utf8Read } from './utf8.js'

/**
 * A bounds-checked cursor over one message body, for the messages that are not
 * on the per-row hot path. Running past the end is a protocol violation named
 * after the message, never an out-of-bounds read.
 */
export class Reader {
  constructor(
    readonly buf: Uint8Array,
    public pos: number,
    readonly end: number,
    readonly what: string,
  ) {}

  /** Throws the protocol error for this message: its body does not match its format. */
  fail(): never {
    throw new ProtocolError(`malformed ${this.what} message from server`)
  }

  get remaining(): number {
    return this.end - this.pos
  }

  u8(): number {
    if (this.pos + 1 > this.end) this.fail()
    return this.buf[this.pos++]!
  }

  i16(): number {
    if (this.pos + 2 > this.end) this.fail()
    const b = this.buf
    const v = (b[this.pos]! << 8) | b[this.pos + 1]!
    this.pos += 2
    return (v << 16) >> 16
  }

  u16(): number {
    return this.i16() & 0xffff
  }

  i32(): number {
    if (this.pos + 4 > this.end) this.fail()
    const v = readInt32(this.buf, this.pos)
    this.pos += 4
    return v
  }

  u32(): number {
    return this.i32() >>> 0
  }

  cstr(): string {
    const i = this.buf.indexOf(0, this.pos)
    if (i < 0 || i >= this.end) this.fail()
    const s = utf8Read(this.buf, this.pos, i)
    this.pos = i + 1
    return s
  }

  bytes(n: number): Uint8Array {
    if (n < 0 || this.pos + n > this.end) this.fail()
    const out = copyBytes(this.buf, this.pos, this.pos + n)
    this.pos += n
    return out
  }

  rest(): Uint8Array {
    return this.bytes(this.end - this.pos)
  }

  /** Fails unless the whole body was consumed. */
  done(): void {
    if (this.pos !== this.end) this.fail()
  }
}

/**
 * A copy of bytes [start, end). Buffer#slice returns a view that would keep the
 * whole socket chunk alive (and alias it), so never call slice on a chunk.
 */
export function copyBytes(buf: Uint8Array, start: number, end: number): Uint8Array {
  return Uint8Array.prototype.slice.call(buf, start, end)
}

export function readInt32(b: Uint8Array, at: number): number {
  return (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!
}

export function readInt16(b: Uint8Array, at: number): number {
  return (((b[at]! << 8) | b[at + 1]!) << 16) >> 16
}
