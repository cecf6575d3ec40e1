import type { Request, RequestContext } from '../connection/request.js'
import type { PgErrorFields } from '../errors.js'
import { decodeCopyResponse, type CopyResponse, type FieldDescription } from '../protocol/backend.js'
import { Backend } from '../protocol/message-codes.js'
import type { Writer } from '../protocol/writer.js'
import { CopyReplies, Step, writeCopyQuery, type CopyOutcome } from './copy.js'
import type { Session } from './session.js'
import { SettlingRequest } from './settling-request.js'

// COPY ... TO STDOUT, with the replies a COPY's Query shares with COPY FROM
// STDIN kept in copy.ts: the data goes to a sink (a byte stream, or a row
// decoder) as it arrives.

/** Where the data of a COPY TO STDOUT goes. */
export interface CopyOutSink {
  /** CopyOutResponse: data follows; `ctx` is the connection, for pausing reads. */
  begin(response: CopyResponse, ctx: RequestContext): void
  /** The payload of one CopyData message, [start, end) of `buf` (valid only during the call). */
  data(buf: Uint8Array, start: number, end: number): void
  /** The socket chunk was processed: pass on what was gathered. */
  chunkEnd(): void
  /** CopyDone. May throw (data that ends inside a row). */
  end(): void
  /** The columns, for the result. */
  fields(): FieldDescription[]
  /** The request settled: stop holding the socket paused. */
  settled(): void
}

/** COPY ... TO STDOUT: the data goes to a sink as it arrives. */
export class CopyOut extends SettlingRequest<CopyOutcome, RequestContext> implements Request {
  private readonly r: CopyReplies

  constructor(
    readonly text: string,
    private readonly sink: CopyOutSink,
    method = 'copyTo()',
  ) {
    super(null)
    this.r = new CopyReplies('COPY ... TO STDOUT', method)
    const done = (): void => sink.settled()
    this.promise.then(done, done)
  }

  /** Never written again after a lost connection: what it passed on cannot be taken back. */
  override rewind(): boolean {
    return false
  }

  get finished(): boolean {
    return this.settled
  }

  encode(w: Writer, ctx: RequestContext): void {
    this.x = ctx
    writeCopyQuery(w, ctx, this.text, this)
  }

  /** Aborted once written: the COPY is cancelled on the server. */
  protected override stop(ctx: RequestContext): void {
    if (this.r.step < Step.After) ctx.requestCancel(this)
    // The rest of the data is not wanted; reading must go on for the cancel's answer.
    this.sink.settled()
  }

  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    const r = this.r
    switch (type) {
      case Backend.CopyOutResponse:
        if (r.step !== Step.Sent) break
        r.step = Step.Copying
        this.sink.begin(decodeCopyResponse(buf, start, end, 'CopyOutResponse'), this.x!)
        return false
      case Backend.CopyData:
        if (r.step !== Step.Copying) break
        if (r.failure === null && this.abortError === null) {
          try {
            this.sink.data(buf, start, end)
          } catch (err) {
            this.decodeFailed(err as Error)
          }
        }
        return false
      case Backend.CopyDone:
        if (r.step !== Step.Copying) break
        r.step = Step.CopyDone
        if (r.failure === null && this.abortError === null) {
          try {
            this.sink.chunkEnd()
            this.sink.end()
          } catch (err) {
            r.failure ??= err as Error
          }
        }
        return false
      case Backend.CommandComplete:
        if (r.step !== Step.CopyDone) break
        r.completed(this.x!.attachment as Session, buf, start, end)
        return false
      case Backend.ReadyForQuery:
        r.ready()
        this.x?.releaseWriter(this)
        if (r.failure !== null) this.rejectWith(r.failure)
        else this.resolveWith(r.outcome(this.sink.fields()))
        return true
      default:
        if (r.step === Step.Copying || r.step === Step.CopyDone) r.violation(type)
    }
    r.other(this.x!, type, buf, start, end)
    return false
  }

  error(fields: PgErrorFields): void {
    this.r.error(fields)
  }

  fail(err: Error, _sent: boolean): void {
    this.x?.releaseWriter(this)
    this.rejectWith(err)
  }

  protected override rejectWith(err: Error): void {
    if (this.settled) return
    this.r.failure ??= err
    super.rejectWith(err)
  }

  chunkEnd(): void {
    if (this.r.step !== Step.Copying || this.r.failure !== null || this.abortError !== null) return
    try {
      this.sink.chunkEnd()
    } catch (err) {
      this.decodeFailed(err as Error)
    }
  }

  /** Data that cannot be decoded: the rest is not wanted. */
  private decodeFailed(err: Error): void {
    this.r.failure ??= err
    this.sink.settled()
    this.x!.requestCancel(this)
  }
}
