import type { RequestContext } from '../connection/request.js'
import { decodeCopyResponse, type CopyResponse, type FieldDescription } from '../protocol/backend.js'
import { Backend } from '../protocol/message-codes.js'
import { CopyRequest, Step } from './copy.js'

// COPY ... TO STDOUT, on the shared COPY request of copy.ts: the data goes to
// a sink (a byte stream, or a row decoder) as it arrives.

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
export class CopyOut extends CopyRequest {
  protected readonly expected = 'COPY ... TO STDOUT'
  protected readonly method: string

  constructor(
    text: string,
    private readonly sink: CopyOutSink,
    method = 'copyTo()',
  ) {
    super(text)
    this.method = method
    const done = (): void => sink.settled()
    this.promise.then(done, done)
  }

  /** Aborted once written: the COPY is cancelled on the server. */
  protected override stop(ctx: RequestContext): void {
    if (this.step < Step.After) ctx.requestCancel(this)
    // The rest of the data is not wanted; reading must go on for the cancel's answer.
    this.sink.settled()
  }

  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    switch (type) {
      case Backend.CopyOutResponse:
        if (this.step !== Step.Sent) break
        this.step = Step.Copying
        this.sink.begin(decodeCopyResponse(buf, start, end, 'CopyOutResponse'), this.ctx!)
        return false
      case Backend.CopyData:
        if (this.step !== Step.Copying) break
        if (this.failure === null && this.abortError === null) {
          try {
            this.sink.data(buf, start, end)
          } catch (err) {
            this.decodeFailed(err as Error)
          }
        }
        return false
      case Backend.CopyDone:
        if (this.step !== Step.Copying) break
        this.step = Step.CopyDone
        if (this.failure === null && this.abortError === null) {
          try {
            this.sink.chunkEnd()
            this.sink.end()
          } catch (err) {
            this.failure ??= err as Error
          }
        }
        return false
      case Backend.CommandComplete:
        if (this.step !== Step.CopyDone) break
        this.completed(buf, start, end)
        return false
      default:
        if (this.ready(type)) return true
        if (this.step === Step.Copying || this.step === Step.CopyDone) this.violation(type)
    }
    this.other(type, buf, start, end)
    return false
  }

  chunkEnd(): void {
    if (this.step !== Step.Copying || this.failure !== null || this.abortError !== null) return
    try {
      this.sink.chunkEnd()
    } catch (err) {
      this.decodeFailed(err as Error)
    }
  }

  /** Data that cannot be decoded: the rest is not wanted. */
  private decodeFailed(err: Error): void {
    this.failure ??= err
    this.sink.settled()
    this.ctx!.requestCancel(this)
  }

  protected override fields(): FieldDescription[] {
    return this.sink.fields()
  }
}
