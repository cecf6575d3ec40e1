import type { Request, RequestContext } from '../connection/request.js'
import { ArgumentError, PgError, ProtocolError, type PgErrorFields } from '../errors.js'
import { decodeCommandComplete, decodeCopyResponse, type FieldDescription } from '../protocol/backend.js'
import { writeCopyData, writeCopyDataHeader, writeCopyDone, writeCopyFail, writeQuery } from '../protocol/frontend.js'
import { Backend, Frontend, backendMessageName } from '../protocol/message-codes.js'
import type { Writer } from '../protocol/writer.js'
import { parseCommandTag } from './result.js'
import type { Session } from './session.js'
import { SettlingRequest } from './settling-request.js'

// COPY runs as a simple Query: after an error in copy-in mode the server drops
// whatever CopyData, CopyDone or CopyFail still arrive, and goes back to
// reading queries. Both requests hold the writer from their Query until their
// ReadyForQuery, so nothing of another request can reach the server while it
// is in copy mode (it would be taken for bad COPY data, and lost), even when
// the statement text turns out to hold more than one COPY.

/** What a COPY resolves with. */
export interface CopyOutcome {
  command: string
  /** Rows copied, as the server counted them. */
  rowCount: number
  /** copyToRows(): the columns of the rows. */
  fields: FieldDescription[]
}

export const enum Step {
  /** The Query is written; the server's answer to it comes next. */
  Sent,
  /** In copy mode (CopyInResponse or CopyOutResponse seen). */
  Copying,
  /** Copy-out: CopyDone seen, CommandComplete next. */
  CopyDone,
  /** The COPY is over (or was never one): only more statements' replies or ReadyForQuery. */
  After,
  Done,
}

type Done = (err?: Error | null) => void

/**
 * The replies to a COPY's Query other than its own copy data, kept for a
 * request of either direction (CopyIn, CopyOut), which holds one: the
 * statement's outcome and failure, where the COPY is, and the replies of
 * statements in the same text that are not this COPY, consumed while the
 * request fails.
 */
export class CopyReplies {
  step = Step.Sent
  failure: Error | null = null
  rowCount = 0
  command = ''
  /** Inside the replies of a statement that returns rows (not a COPY). */
  private rows = false
  /** Inside a COPY TO STDOUT that this request did not ask for. */
  private strayOut = false

  constructor(
    /** What the statement was expected to be, for errors: 'COPY ... FROM STDIN'. */
    readonly expected: string,
    readonly method: string,
  ) {}

  violation(type: number): never {
    throw new ProtocolError(`server sent ${backendMessageName(type)} where a reply to ${this.expected} could not contain it`)
  }

  /** Replies of statements that are not this request's COPY: consumed, and the request fails. */
  other(ctx: RequestContext, type: number, buf: Uint8Array, start: number, end: number): void {
    switch (type) {
      case Backend.RowDescription:
        if (this.rows || this.strayOut) this.violation(type)
        this.rows = true
        this.notCopy('rows')
        return
      case Backend.DataRow:
        if (!this.rows) this.violation(type)
        return
      case Backend.CommandComplete:
        if (this.strayOut) this.violation(type)
        this.rows = false
        this.notCopy(decodeCommandComplete(buf, start, end))
        this.step = Step.After
        return
      case Backend.EmptyQueryResponse:
        if (this.rows || this.strayOut) this.violation(type)
        this.notCopy('an empty query')
        this.step = Step.After
        return
      case Backend.CopyOutResponse:
        if (this.rows || this.strayOut) this.violation(type)
        this.strayOut = true
        this.notCopy('COPY TO STDOUT')
        return
      case Backend.CopyData:
        if (!this.strayOut) this.violation(type)
        return
      case Backend.CopyDone:
        if (!this.strayOut) this.violation(type)
        this.strayOut = false
        return
      case Backend.CopyInResponse:
        if (this.rows || this.strayOut) this.violation(type)
        // A COPY FROM STDIN we have no data for: end it at once (nothing
        // else can have been written since, the writer being held).
        ctx.writeNow((w) => writeCopyFail(w, `${this.method} runs one ${this.expected} statement`))
        this.notCopy('another COPY FROM STDIN')
        return
      default:
        this.violation(type)
    }
  }

  private notCopy(what: string): void {
    this.failure ??= new ArgumentError(`${this.method} needs exactly one ${this.expected} statement; the server answered with ${what}`)
  }

  /** ReadyForQuery, where it may come: the request settles now. */
  ready(): void {
    if (this.step === Step.Copying || this.step === Step.CopyDone || this.rows || this.strayOut) this.violation(Backend.ReadyForQuery)
    this.step = Step.Done
  }

  /** The outcome of a COPY that did not fail. */
  outcome(fields: FieldDescription[]): CopyOutcome {
    return { command: this.command, rowCount: this.rowCount, fields }
  }

  /** The server's error: it has left copy mode and skips the rest of the query string. */
  error(fields: PgErrorFields): void {
    if (this.step === Step.Done) throw new ProtocolError('server sent ErrorResponse after a COPY had completed')
    this.failure ??= new PgError(fields)
    this.step = Step.After
    this.rows = false
    this.strayOut = false
  }

  completed(session: Session, buf: Uint8Array, start: number, end: number): void {
    const tag = decodeCommandComplete(buf, start, end)
    session.commandCompleted(tag)
    const { command, rowCount } = parseCommandTag(tag)
    this.command = command
    this.rowCount = rowCount ?? 0
    this.step = Step.After
  }
}

/** Writes a COPY's Query; the writer is held until its ReadyForQuery (see the top of this file). */
export function writeCopyQuery(w: Writer, ctx: RequestContext, text: string, holder: object): void {
  writeQuery(w, text)
  ctx.holdWriter(holder)
}

/**
 * COPY data chunks of at least this many bytes are written behind their
 * message header instead of being copied into the write buffer: the copy (and,
 * past the buffer's slab, a fresh zeroed buffer for it) would cost more than
 * the extra buffer handed to the socket.
 */
const BEHIND_HEADER = 8 * 1024

/**
 * Writes each chunk as a CopyData message: small ones gathered into the write
 * buffer, large ones behind their header, each write carrying the small ones
 * before it.
 */
function writeChunks(ctx: RequestContext, chunks: readonly Uint8Array[]): void {
  let from = 0
  const copied = (w: Writer, to: number): void => {
    for (let i = from; i < to; i++) writeCopyData(w, chunks[i]!)
  }
  for (let i = 0; i < chunks.length; i++) {
    const c = chunks[i]!
    if (c.length < BEHIND_HEADER) continue
    ctx.writeNow((w) => {
      copied(w, i)
      writeCopyDataHeader(w, c.length)
    }, c)
    from = i + 1
  }
  if (from < chunks.length) ctx.writeNow((w) => copied(w, chunks.length))
}

/**
 * COPY ... FROM STDIN: the Query, then the caller's data as CopyData messages,
 * then CopyDone (or CopyFail to abort). Data may go out before the server's
 * CopyInResponse: if the statement fails first, the server drops it.
 */
export class CopyIn extends SettlingRequest<CopyOutcome, RequestContext> implements Request {
  private readonly r = new CopyReplies('COPY ... FROM STDIN', 'copyFrom()')
  /** CopyDone or CopyFail is written (or owed, before the Query is): no more data. */
  private ended = false
  /** Data given before the request was written, with the callers to tell once it is. */
  private early: { chunks: readonly Uint8Array[] | null; fill: ((w: Writer) => void) | null; done: Done }[] = []

  /**
   * Sends `chunk` as one CopyData message. `done` is called once the socket
   * can take more (backpressure), or with the error if the COPY is over.
   */
  write(chunk: Uint8Array, done: Done): void {
    this.send([chunk], null, done)
  }

  /** Sends each of `chunks` as CopyData, as write() does, with one `done` for all of them. */
  writeAll(chunks: readonly Uint8Array[], done: Done): void {
    this.send(chunks, null, done)
  }

  /**
   * Sends one CopyData message whose payload `fill` writes straight into the
   * connection's buffer. If `fill` throws, nothing of it is sent and the
   * error goes to `done`.
   */
  writeWith(fill: (w: Writer) => void, done: Done): void {
    this.send(null, fill, done)
  }

  constructor(readonly text: string) {
    super(null)
  }

  /** Never written again after a lost connection: its data went out behind its Query, and cannot be sent again. */
  override rewind(): boolean {
    return false
  }

  get finished(): boolean {
    return this.settled
  }

  private send(chunks: readonly Uint8Array[] | null, fill: ((w: Writer) => void) | null, done: Done): void {
    if (this.ended || this.settled || this.r.step >= Step.After) {
      done(this.over())
      return
    }
    const ctx = this.x
    if (ctx === null) {
      this.early.push({ chunks, fill, done })
      return
    }
    try {
      if (chunks !== null) writeChunks(ctx, chunks)
      else ctx.writeNow((w) => framed(w, fill!))
    } catch (err) {
      done(err as Error)
      return
    }
    if (ctx.writable) {
      done()
      return
    }
    // A connection lost while the socket is backed up never drains: the
    // writer is then told by stopped(), so it cannot wait forever.
    this.draining.push(done)
    ctx.whenWritable(() => {
      const i = this.draining.indexOf(done)
      if (i < 0) return
      this.draining.splice(i, 1)
      done()
    })
  }

  /** Writers waiting for the socket to drain. */
  private draining: Done[] = []

  /** Ends the data with CopyDone; `done` is called once the server has confirmed (or refused) the COPY. */
  end(done: Done): void {
    if (!this.ended && !this.settled && this.r.step < Step.After) {
      this.ended = true
      if (this.x !== null) this.x.writeNow(writeCopyDone)
    }
    this.promise.then(
      () => done(),
      (e: Error) => done(e),
    )
  }

  /**
   * Aborted once written: the COPY ends with CopyFail, which the server rolls
   * back, reporting the abort's message (or, with the data already ended, it
   * is cancelled). The request rejects with the abort's error.
   */
  protected override stop(ctx: RequestContext): void {
    if (!this.ended && this.r.step < Step.After) {
      this.ended = true
      const err = this.abortError!
      ctx.writeNow((w) => writeCopyFail(w, err.message.replaceAll('\0', ' ')))
    } else if (this.r.step < Step.After) ctx.requestCancel(this)
  }

  encode(w: Writer, ctx: RequestContext): void {
    this.x = ctx
    writeCopyQuery(w, ctx, this.text, this)
    const early = this.early
    this.early = []
    for (const e of early) {
      const mark = w.length
      try {
        if (e.chunks !== null) for (const c of e.chunks) writeCopyData(w, c)
        else framed(w, e.fill!)
      } catch (err) {
        // Only this message is lost; the COPY is failed with its error.
        w.truncate(mark)
        queueMicrotask(() => e.done(err as Error))
        continue
      }
      // Told once the Query and the data are on their way, not from inside the connection's write.
      queueMicrotask(() => ctx.whenWritable(() => e.done()))
    }
    // end() came first.
    if (this.ended) writeCopyDone(w)
  }

  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    const r = this.r
    switch (type) {
      case Backend.CopyInResponse:
        if (r.step !== Step.Sent) break
        decodeCopyResponse(buf, start, end, 'CopyInResponse')
        r.step = Step.Copying
        return false
      case Backend.CommandComplete:
        if (r.step !== Step.Copying) break
        if (!this.ended) throw new ProtocolError('server completed a COPY FROM STDIN before the data was ended')
        r.completed(this.x!.attachment as Session, buf, start, end)
        return false
      case Backend.ReadyForQuery:
        r.ready()
        this.x?.releaseWriter(this)
        if (r.failure !== null) this.rejectWith(r.failure)
        else this.resolveWith(r.outcome([]))
        return true
      default:
        if (r.step === Step.Copying) r.violation(type)
    }
    r.other(this.x!, type, buf, start, end)
    return false
  }

  error(fields: PgErrorFields): void {
    this.r.error(fields)
    this.stopped()
  }

  fail(err: Error, _sent: boolean): void {
    this.x?.releaseWriter(this)
    this.rejectWith(err)
  }

  protected override rejectWith(err: Error): void {
    if (this.settled) return
    this.r.failure ??= err
    super.rejectWith(err)
    this.stopped()
  }

  /** The server has left copy mode (an error) or the request settled: no more data goes out, and waiting writers are told. */
  private stopped(): void {
    this.ended = true
    const early = this.early
    const draining = this.draining
    this.early = []
    this.draining = []
    if (early.length > 0 || draining.length > 0) {
      const err = this.over()
      for (const e of early) e.done(err)
      for (const done of draining) done(err)
    }
  }

  private over(): Error {
    return this.r.failure ?? this.abortError ?? new ArgumentError('the COPY has already ended: no more data can be written')
  }
}

function framed(w: Writer, fill: (w: Writer) => void): void {
  const m = w.begin(Frontend.CopyData)
  fill(w)
  w.end(m)
}
