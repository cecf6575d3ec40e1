// Splits a plaintext protocol stream into its messages as the bytes arrive:
// each a type byte and an int32 length that counts itself, except the first
// `untyped` ones (a client's StartupMessage has no type byte). For the proxies
// that read what crosses them; the client's own Framer reads server messages
// only, and checks each type's lengths, which a recording must not.

/** One protocol message in a stream: its type ('' for an untyped one) and where it lies. */
export interface WireMessage {
  type: string
  /** Offset of its first byte (the type byte, or the length of an untyped message). */
  start: number
  /** Offset just past its last byte. */
  end: number
}

export class MessageSplitter {
  private buf: Buffer = Buffer.alloc(0)
  /** Offset in the stream of buf's first byte. */
  private at = 0
  private count = 0

  constructor(private readonly untyped: number) {}

  /** Calls `each` for every message that `chunk` completes, with its body and its place in the stream. */
  push(chunk: Buffer, each: (message: WireMessage, body: Buffer) => void): void {
    this.buf = this.buf.length > 0 ? Buffer.concat([this.buf, chunk]) : chunk
    for (;;) {
      const head = this.count < this.untyped ? 0 : 1
      if (this.buf.length < head + 4) return
      const len = head + this.buf.readInt32BE(head)
      if (this.buf.length < len) return
      each({ type: head === 0 ? '' : String.fromCharCode(this.buf[0]!), start: this.at, end: this.at + len }, this.buf.subarray(head + 4, len))
      this.buf = this.buf.subarray(len)
      this.at += len
      this.count++
    }
  }

  /** Offset of the first byte not yet part of a whole message. */
  get offset(): number {
    return this.at
  }

  /** Bytes held of a message not complete yet. */
  get pending(): number {
    return this.buf.length
  }
}

/** The messages of a whole recorded stream; throws when it ends inside one. */
export function splitStream(stream: Buffer, untyped: number): WireMessage[] {
  const splitter = new MessageSplitter(untyped)
  const out: WireMessage[] = []
  splitter.push(stream, (m) => out.push(m))
  if (splitter.pending > 0) throw new Error(`recorded stream ends inside a message at ${splitter.offset} (${stream.length} bytes)`)
  return out
}
