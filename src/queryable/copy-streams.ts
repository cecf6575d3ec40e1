import { Readable, Writable } from 'node:stream'
import type { RequestContext } from '../connection/request.js'
import { AbortError, rejectionAtCaller } from '../errors.js'
import type { CopyResponse, FieldDescription } from '../protocol/backend.js'
import type { CopyIn } from '../query/copy.js'
import type { CopyOut } from '../query/copy-out.js'

/** What copyFrom(), copyFromRows() and copyTo() resolve with. */
export interface CopyResult {
  /** 'COPY'. */
  command: string
  /** Rows copied, as the server counted them. */
  rowCount: number
}

const noop = (): void => {}

/**
 * Why a COPY stream was destroyed: the caller's error, or pipegres's
 * AbortError when there is none, or when Node's stream machinery supplied its
 * own AbortError (leaving a for-await loop early does).
 */
function abortReason(error: Error | null, message: string): Error {
  if (error === null) return new AbortError(message)
  if (error.name === 'AbortError' && !(error instanceof AbortError)) return new AbortError(message, error)
  return error
}

/** Big enough that a loop of small writes still makes few messages. */
const HIGH_WATER_MARK = 64 * 1024

/**
 * The writable side of COPY ... FROM STDIN (from copyFrom()): what is written
 * goes to the server as COPY data, as fast as the socket takes it. `end()`
 * sends CopyDone, and 'finish' comes once the server has confirmed the COPY;
 * `destroy(err)` sends CopyFail, so the server rolls the COPY back.
 *
 * A failure (a bad row, a constraint, a lost connection) destroys the stream
 * with the error and rejects `result`; the stream carries a listener of its
 * own for 'error', so an unobserved failure cannot bring the process down.
 */
export class CopyInStream extends Writable {
  /** Settles once the server has confirmed or refused the COPY. */
  readonly result: Promise<CopyResult>
  /** Rows the server copied, once it has confirmed the COPY. */
  rowCount: number | null = null

  /** @internal */
  /** @internal */
  static create(req: CopyIn): CopyInStream {
    return new CopyInStream(req)
  }

  /** Made by copyFrom(): the stream writes into the COPY that request started. */
  private constructor(private readonly req: CopyIn) {
    super({ highWaterMark: HIGH_WATER_MARK, decodeStrings: true })
    this.on('error', noop)
    this.result = req.promise.then(
      (r) => {
        this.rowCount = r.rowCount
        return { command: r.command, rowCount: r.rowCount }
      },
      (err: Error) => {
        // Still being written to: stop the writer at once.
        if (!this.destroyed && !this.writableFinished) this.destroy(err)
        // Handled only once the caller's frames are captured: see rejectionAtCaller.
        return rejectionAtCaller(err, () => this.result.catch(noop))
      },
    )
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.req.write(chunk, callback)
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    // What piled up while the socket was backed up goes out in one socket write.
    this.req.writeAll(
      chunks.map((c) => c.chunk),
      callback,
    )
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.req.end(callback)
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.req.finished) this.req.abort(abortReason(error, 'the COPY stream was destroyed before it was ended'))
    callback(error)
  }

  /**
   * `await using copy = db.copyFrom(...)`: a COPY not ended by the scope is
   * destroyed (CopyFail: the server rolls it back); one ended is waited for.
   * Resolves once the server has settled the COPY, so its connection is free;
   * its outcome is `result`'s to tell.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.writableEnded && !this.destroyed) this.destroy(new AbortError('the COPY stream was disposed before it was ended'))
    await this.req.promise.then(noop, noop)
  }
}

/**
 * The readable side of COPY ... TO STDOUT (from copyTo()): Buffers of COPY
 * data as the server sends it, one per chunk read from the socket (not one
 * per row). When the consumer lags, the connection stops reading, so the
 * server waits and memory stays flat. Destroying the stream early cancels the
 * COPY. Like CopyInStream, it fails with the error and rejects `result`.
 */
export class CopyOutStream extends Readable {
  /** Settles once the COPY has completed on the server. */
  readonly result: Promise<CopyResult>
  /** Rows the server copied, once the COPY has completed. */
  rowCount: number | null = null
  /** The COPY's format as the server announced it: 'text' (also CSV) or 'binary'. */
  format: 'text' | 'binary' | null = null
  private req: CopyOut | null = null
  private ctx: RequestContext | null = null
  private paused = false
  private parts: Uint8Array[] = []
  private size = 0
  private readonly settle: { resolve: (r: CopyResult | PromiseLike<never>) => void }

  /** @internal */
  /** @internal */
  static create(): CopyOutStream {
    return new CopyOutStream()
  }

  /** Made by copyTo(): the stream reads from the COPY that request started. */
  private constructor() {
    super({ highWaterMark: HIGH_WATER_MARK })
    this.on('error', noop)
    let settle!: typeof this.settle
    this.result = new Promise<CopyResult>((resolve) => (settle = { resolve }))
    this.settle = settle
  }

  /** @internal */
  attach(req: CopyOut): void {
    this.req = req
    req.promise.then(
      (r) => {
        this.rowCount = r.rowCount
        this.settle.resolve({ command: r.command, rowCount: r.rowCount })
        this.push(null)
      },
      (err: Error) => {
        // Handled only once the caller's frames are captured: see rejectionAtCaller.
        this.settle.resolve(rejectionAtCaller(err, () => this.result.catch(noop)))
        this.destroy(err)
      },
    )
  }

  override _read(): void {
    this.resume_()
  }

  /**
   * `await using out = db.copyTo(...)`: a COPY not read to its end is
   * cancelled (as by destroy()); resolves once it has settled on the server.
   */
  override async [Symbol.asyncDispose](): Promise<void> {
    if (!this.readableEnded && !this.destroyed) this.destroy(new AbortError('the COPY stream was disposed before its end'))
    await this.req?.promise.then(noop, noop)
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const req = this.req
    if (req !== null && !req.finished) req.abort(abortReason(error, 'the COPY stream was destroyed before its end'))
    this.resume_()
    callback(error)
  }

  private resume_(): void {
    if (!this.paused) return
    this.paused = false
    this.ctx?.resumeReading(this)
  }

  // --- What the COPY request feeds in (see CopyOutSink) ----------------------

  /** @internal */
  begin(response: CopyResponse, ctx: RequestContext): void {
    this.ctx = ctx
    this.format = response.format === 1 ? 'binary' : 'text'
  }

  /** @internal */
  data(buf: Uint8Array, start: number, end: number): void {
    this.parts.push(buf.subarray(start, end))
    this.size += end - start
  }

  /** @internal */
  chunkEnd(): void {
    if (this.size === 0) return
    const parts = this.parts
    let out: Buffer
    if (parts.length === 1) out = Buffer.from(parts[0]!)
    else {
      out = Buffer.allocUnsafe(this.size)
      let p = 0
      for (const part of parts) {
        out.set(part, p)
        p += part.length
      }
    }
    this.parts = []
    this.size = 0
    if (this.destroyed) return
    if (!this.push(out) && !this.paused && this.ctx !== null) {
      this.paused = true
      this.ctx.pauseReading(this)
    }
  }

  /** @internal */
  end(): void {}

  /** @internal */
  fields(): FieldDescription[] {
    return []
  }

  /** @internal */
  settled(): void {
    this.parts = []
    this.size = 0
    this.resume_()
  }
}
