import type { RequestContext } from '../connection/request.js'
import { AbortError, errorFields, type PgErrorFields } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import { Writer } from '../protocol/writer.js'
import type { Abortable } from './abort.js'
import type { MessageConsumer } from './raw-sink.js'

/** What queryRaw() writes into: any Node writable (an HTTP response, a file, a socket). */
export interface RawDestination {
  write(chunk: Uint8Array): boolean
  once(event: 'drain' | 'close' | 'error', listener: (...args: unknown[]) => void): unknown
  off(event: 'drain' | 'close' | 'error', listener: (...args: unknown[]) => void): unknown
  readonly destroyed?: boolean
  readonly writableEnded?: boolean
}

/** An ErrorResponse written back out from its decoded fields. */
export function encodeErrorResponse(fields: PgErrorFields): Uint8Array {
  const w = new Writer(256)
  const m = w.begin(0x45)
  for (const { name, code } of errorFields) {
    const v = fields[name]
    if (v === undefined || v === null) continue
    w.u8(code)
    // The server's strings hold no NUL: a C string cannot.
    w.cstr(String(v))
  }
  w.u8(0)
  w.end(m)
  return w.take().slice()
}

/**
 * Passes a query's result on as the server sent it: RowDescription, DataRows,
 * CommandComplete (or EmptyQueryResponse, or the ErrorResponse). The messages
 * of one socket chunk that belong to the query are contiguous there, so they
 * go out as one view of that chunk, without a copy. When the destination
 * pushes back, the connection stops reading until it drains.
 */
export class RawPassThrough implements MessageConsumer {
  /** Bytes written to the destination. */
  bytes = 0
  private ctx: RequestContext | null = null
  private run: Uint8Array | null = null
  private runStart = 0
  private runEnd = 0
  private paused = false
  private req: Abortable | null = null
  private readonly onDrain = (): void => this.resume()
  private readonly onGone = (err?: unknown): void => this.gone(err)

  constructor(
    private readonly dest: RawDestination,
    private readonly binary: (oid: number) => boolean,
  ) {}

  /** @internal Watches the destination while `req` runs. */
  attach(req: Abortable & { readonly promise: Promise<unknown> }): void {
    this.req = req
    this.dest.once('close', this.onGone)
    this.dest.once('error', this.onGone)
    const detach = (): void => {
      this.dest.off('close', this.onGone)
      this.dest.off('error', this.onGone)
      this.dest.off('drain', this.onDrain)
      this.resume()
    }
    req.promise.then(detach, detach)
  }

  formats(fields: readonly FieldDescription[]): number[] {
    let any = false
    const formats = fields.map((f) => {
      const b = this.binary(f.typeOid)
      any ||= b
      return b ? 1 : 0
    })
    return any ? formats : []
  }

  begin(ctx: RequestContext): void {
    this.ctx = ctx
  }

  message(buf: Uint8Array, start: number, end: number): void {
    const from = start - 5
    if (buf === this.run && from === this.runEnd) {
      this.runEnd = end
      return
    }
    this.chunkEnd()
    this.run = buf
    this.runStart = from
    this.runEnd = end
  }

  error(fields: PgErrorFields): void {
    this.chunkEnd()
    this.write(encodeErrorResponse(fields))
  }

  chunkEnd(): void {
    const run = this.run
    if (run === null) return
    this.run = null
    this.write(run.subarray(this.runStart, this.runEnd))
  }

  private write(chunk: Uint8Array): void {
    const dest = this.dest
    if (dest.destroyed === true || dest.writableEnded === true) {
      this.gone()
      return
    }
    this.bytes += chunk.length
    if (!dest.write(chunk) && !this.paused && this.ctx !== null) {
      this.paused = true
      this.ctx.pauseReading(this)
      dest.once('drain', this.onDrain)
    }
  }

  private resume(): void {
    if (!this.paused) return
    this.paused = false
    this.dest.off('drain', this.onDrain)
    this.ctx?.resumeReading(this)
  }

  /** The destination closed or failed before the result was written: the query is cancelled. */
  private gone(err?: unknown): void {
    this.run = null
    this.resume()
    const message = err instanceof Error ? `the destination failed before the result was written: ${err.message}` : 'the destination was closed before the result was written'
    this.req?.abort(new AbortError(message, err))
  }

}
