import { ConnectionError, PgError, ProtocolError, type PgErrorFields } from '../errors.js'
import { decodeCopyResponse } from '../protocol/backend.js'
import { writeCopyDone, writeQuery } from '../protocol/frontend.js'
import { Backend, backendMessageName } from '../protocol/message-codes.js'
import type { Writer } from '../protocol/writer.js'
import type { Request, RequestContext } from './request.js'

// START_REPLICATION: a simple-protocol command the server answers by switching
// the connection to CopyBoth mode, in which it streams CopyData for as long as
// the client reads, while the client sends CopyData of its own (status
// updates). The exchange takes the connection over: it holds the writer from
// the moment it is written, so nothing queued behind it can ever be written
// into the middle of the copy stream, and it releases it only once the server
// has left copy mode and said ReadyForQuery.

/** What the replication layer does with the exchange's events. None may throw except data(), which closes the connection. */
export interface CopyBothSink {
  /** CopyBothResponse: streaming has begun; `exchange` can now send. */
  started(exchange: CopyBothExchange): void
  /** One CopyData payload, the bytes [start, end) of `buf` (valid only during the call). */
  data(buf: Uint8Array, start: number, end: number): void
  /**
   * The exchange is over: `err` is null after the server ended the stream
   * (CopyDone, CommandComplete, ReadyForQuery), a PgError when the server
   * refused or ended it with an error, or the reason the connection was lost.
   * `rows` holds the text columns of a result set sent after the stream
   * (the next timeline of a physical stream).
   */
  finished(err: Error | null, rows: (string | null)[][]): void
}

const enum Step {
  Sent,
  Streaming,
  /** The client sent CopyDone; the server may still send data until it answers. */
  ClientDone,
  /** The server sent CopyDone: a result set, CommandComplete and ReadyForQuery follow. */
  ServerDone,
  Failed,
  Done,
}

export class CopyBothExchange implements Request {
  readonly simpleProtocol = true
  private step = Step.Sent
  private ctx: RequestContext | null = null
  private failure: Error | null = null
  private clientDone = false
  private readonly rows: (string | null)[][] = []
  private paused = false

  constructor(
    readonly command: string,
    private readonly sink: CopyBothSink,
  ) {}

  encode(w: Writer, ctx: RequestContext): void {
    this.ctx = ctx
    writeQuery(w, this.command)
    ctx.holdWriter(this)
  }

  /** True while the server streams and the client may send. */
  get streaming(): boolean {
    return this.step === Step.Streaming
  }

  /** Sends one CopyData message written by `fn` (its whole message, type byte included), if still streaming. */
  send(fn: (w: Writer) => void): void {
    if (this.step !== Step.Streaming || this.clientDone) return
    this.ctx!.writeNow(fn)
  }

  /** Asks the server to end the stream (CopyDone): it answers with its own CopyDone and the command's completion. */
  end(): void {
    if (this.clientDone || this.ctx === null) return
    this.clientDone = true
    if (this.step === Step.Streaming) {
      this.step = Step.ClientDone
      this.ctx.writeNow(writeCopyDone)
    } else if (this.step === Step.ServerDone) this.ctx.writeNow(writeCopyDone)
  }

  /** Stops reading from the socket (the consumer is behind); the server waits on TCP flow control. */
  pause(): void {
    if (this.paused || this.ctx === null || this.step === Step.Done) return
    this.paused = true
    this.ctx.pauseReading(this)
  }

  resume(): void {
    if (!this.paused || this.ctx === null) return
    this.paused = false
    this.ctx.resumeReading(this)
  }

  /** Closes the connection (the only way to stop a stream at once, e.g. on a consumer's error). */
  destroy(err: Error): void {
    this.ctx?.destroy(err)
  }

  private violation(type: number): never {
    throw new ProtocolError(`server sent ${backendMessageName(type)} where a replication stream could not contain it`)
  }

  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    switch (type) {
      case Backend.CopyData:
        if (this.step !== Step.Streaming && this.step !== Step.ClientDone) this.violation(type)
        this.sink.data(buf, start, end)
        return false
      case Backend.CopyBothResponse:
        if (this.step !== Step.Sent) this.violation(type)
        decodeCopyResponse(buf, start, end, 'CopyBothResponse')
        this.step = Step.Streaming
        this.sink.started(this)
        return false
      case Backend.CopyDone:
        if (this.step !== Step.Streaming && this.step !== Step.ClientDone) this.violation(type)
        // The server ended the stream (end of a timeline, or in answer to ours): copy mode ends when both have sent CopyDone.
        if (!this.clientDone) {
          this.clientDone = true
          this.ctx!.writeNow(writeCopyDone)
        }
        this.step = Step.ServerDone
        return false
      case Backend.RowDescription:
      case Backend.DataRow:
        if (this.step !== Step.ServerDone) this.violation(type)
        if (type === Backend.DataRow) this.rows.push(textColumns(buf, start, end))
        return false
      case Backend.CommandComplete:
        if (this.step === Step.Streaming || this.step === Step.ClientDone) {
          // A walsender shutting down ends the command without a CopyDone, then closes the connection.
          this.step = Step.ServerDone
          this.failure = new ConnectionError('PG_CONNECTION_CLOSED', 'the server ended the replication stream (it is shutting down)')
          return false
        }
        if (this.step !== Step.ServerDone && this.step !== Step.Sent) this.violation(type)
        return false
      case Backend.ReadyForQuery:
        if (this.step !== Step.ServerDone && this.step !== Step.Failed && this.step !== Step.Sent) this.violation(type)
        this.finish(this.failure)
        return true
      default:
        this.violation(type)
    }
  }

  error(fields: PgErrorFields): void {
    if (this.step === Step.Failed || this.step === Step.Done) {
      throw new ProtocolError(`server sent an ErrorResponse where it was not allowed: ${fields.message}`)
    }
    this.failure = new PgError(fields, this.command)
    this.step = Step.Failed
  }

  fail(err: Error, _sent: boolean): void {
    this.finish(err)
  }

  private finish(err: Error | null): void {
    if (this.step === Step.Done) return
    this.step = Step.Done
    if (this.paused) this.resume()
    this.ctx?.releaseWriter(this)
    this.sink.finished(err, this.rows)
  }
}

/** A DataRow's columns as text (the replication commands' results are all text). */
function textColumns(buf: Uint8Array, start: number, end: number): (string | null)[] {
  const view = new DataView(buf.buffer, buf.byteOffset + start, end - start)
  const n = view.getInt16(0)
  const out: (string | null)[] = []
  let pos = 2
  for (let i = 0; i < n; i++) {
    if (pos + 4 > view.byteLength) throw new ProtocolError('malformed DataRow message from server')
    const len = view.getInt32(pos)
    pos += 4
    if (len < 0) {
      out.push(null)
      continue
    }
    if (pos + len > view.byteLength) throw new ProtocolError('malformed DataRow message from server')
    out.push(new TextDecoder().decode(buf.subarray(start + pos, start + pos + len)))
    pos += len
  }
  return out
}
