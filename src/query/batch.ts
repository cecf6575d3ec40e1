import type { Request, RequestContext } from '../connection/request.js'
import { ArgumentError, ParameterError, PgError, PipegresError, ProtocolError, type PgErrorFields } from '../errors.js'
import { writeSync } from '../protocol/frontend.js'
import { Backend, backendMessageName } from '../protocol/message-codes.js'
import type { Writer } from '../protocol/writer.js'
import type { BatchStatement } from './batch-statement.js'
import { Exchange, Step } from './exchange.js'
import type { Result } from './result.js'
import { namedStatementsSurvive, sessionOf } from './session.js'
import { SettlingRequest } from './settling-request.js'
import type { Statement } from './statement-cache.js'

/** Sent again at most this often after the server lost its statements (as a query is). */
const MAX_RESENDS = 3
/** ReadyForQuery's status byte outside a transaction block. */
const IDLE = 0x49

const enum Phase {
  /** Replies to the preludes (see BatchStatement), each ending with its ReadyForQuery. */
  Prelude,
  /** Replies to the statements, in order, then the batch's ReadyForQuery. */
  Main,
  /** Statements the cache evicted being closed: CloseComplete, ReadyForQuery, for each. */
  Closing,
  /** Waiting for the ReadyForQuery of a Close that failed or completed. */
  CloseReady,
  Done,
}

/**
 * batch(): many statements written together under one Sync, as one implicit
 * transaction (or as part of the transaction block they run in). The server
 * runs them in order; the first that fails makes it skip the rest, up to the
 * Sync, and roll back what ran before. One request on the connection, so
 * queries pipelined around it keep their own results.
 *
 * When some statement's Bind needs its description first (a value whose type
 * must be known, rowMode 'columns'), the preludes go out alone and the batch
 * holds the writer until their replies (and any type lookup) are in.
 */
export class Batch extends SettlingRequest<Result<unknown>[]> implements Request {
  private phase = Phase.Prelude
  private preludes: BatchStatement[] = []
  private pi = 0
  /** The statement the next reply of the main part belongs to. */
  private cur = 0
  /** The main part waits for the preludes' replies (the writer is held meanwhile). */
  private held = false
  /** A failure of the batch as a whole (a prelude, a value that does not fit), before any statement's own. */
  private failure: Error | null = null
  /** The server lost a statement: the batch may be sent again (see over()). */
  private lost = false
  /** Statements that completed before the first error of the main part; -1 while none failed. */
  private ranBeforeError = -1
  /** The statements' uses are counted in the cache (from encode until the batch's ReadyForQuery). */
  private committed = false
  private resendPending = false
  /** The statements' Binds and Executes were written (with the Sync). */
  private mainSent = false
  /** Statements whose results are not settled yet. */
  private pending = 0

  /** See Request.keepsReads: a statement's lazy rows keep views of the reads they came in. */
  readonly keepsReads: boolean

  constructor(readonly statements: BatchStatement[]) {
    super(null)
    for (const s of statements) s.owner = this
    this.keepsReads = statements.some((s) => s.keepsReads)
  }

  /** For a trace: the statements' texts. */
  get text(): string {
    return this.statements.map((s) => s.text).join(';\n')
  }

  /** For a trace with parameters: each statement's values. */
  get values(): readonly (readonly unknown[])[] {
    return this.statements.map((s) => s.valuesGiven)
  }

  encode(w: Writer, ctx: RequestContext): void {
    const session = sessionOf(ctx)
    const cache = session.statements
    const tx = this.extra?.tx ?? null
    const direct = namedStatementsSurvive(session.pooling)
    const created = new Map<string, Statement>()
    let held = false
    for (const s of this.statements) if (s.plan(ctx, cache, tx, direct, created)) held = true
    const preludes: BatchStatement[] = []
    for (const s of this.statements) if (s.writePrelude(w)) preludes.push(s)
    if (!held) this.writeStatements(w)

    // Past this point nothing can throw: commit the cache changes.
    const x = new Exchange(ctx)
    this.x = x
    for (const s of this.statements) {
      const stmt = s.exchange!.stmt
      if (stmt !== null) stmt.users++
    }
    for (const stmt of created.values()) cache!.insert(stmt)
    this.committed = true
    this.preludes = preludes
    this.phase = preludes.length > 0 ? Phase.Prelude : Phase.Main
    this.held = held
    if (held) ctx.holdWriter(this)
    else if (cache !== null) x.closes = cache.writeEvictedCloses(w)
  }

  /** Every statement's messages, then the one Sync. */
  private writeStatements(w: Writer): void {
    const statements = this.statements
    for (let i = 0; i < statements.length; i++) {
      try {
        statements[i]!.writeMain(w)
      } catch (err) {
        throw atStatement(err, i)
      }
    }
    writeSync(w)
    this.mainSent = true
  }

  /** The preludes are answered: the held main part goes out, after looking up the types they showed. */
  private describedAll(status: number): boolean {
    const ctx = this.x!.ctx
    if (this.failure !== null || this.abortError !== null || this.lost) {
      ctx.releaseWriter(this)
      return this.over(status)
    }
    const session = sessionOf(ctx)
    const unknown: number[] = []
    for (const s of this.preludes) s.unknownTypes(session.catalog, unknown)
    if (unknown.length === 0) this.writeHeld()
    else void session.lookupTypesAhead(unknown, ctx).then(() => this.writeHeld())
    return false
  }

  private writeHeld(): void {
    if (this.phase !== Phase.Main) return
    const x = this.x!
    const ctx = x.ctx
    try {
      if (this.abortError !== null) {
        // Aborted during the type lookup: nothing runs, a Sync alone ends the exchange.
        this.cur = this.statements.length
        ctx.writeNow(writeSync)
        return
      }
      try {
        ctx.writeNow((w) => {
          this.writeStatements(w)
          const cache = sessionOf(ctx).statements
          if (cache !== null) x.closes = cache.writeEvictedCloses(w)
        })
      } catch (err) {
        if (!(err instanceof ParameterError || err instanceof ArgumentError)) throw err
        this.failure ??= err
        this.cur = this.statements.length
        ctx.writeNow(writeSync)
      }
    } finally {
      ctx.releaseWriter(this)
    }
  }

  private violation(type: number): never {
    throw new ProtocolError(`server sent ${backendMessageName(type)} where a reply to a batch could not contain it (statement ${this.cur} of ${this.statements.length})`)
  }

  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    switch (this.phase) {
      case Phase.Main: {
        if (type === Backend.ReadyForQuery) return this.over(buf[start]!)
        const s = this.statements[this.cur]
        if (s === undefined) this.violation(type)
        if (type === Backend.CopyInResponse) {
          // The statements behind it would be taken for COPY data: the stream cannot be trusted any more.
          this.x!.ctx.destroy(new ProtocolError('COPY FROM STDIN was started inside a batch; use copyFrom() for COPY FROM STDIN'))
          return false
        }
        s.handle(type, buf, start, end)
        if (s.exchange!.step === Step.Complete) this.cur++
        return false
      }
      case Phase.Prelude: {
        const p = this.preludes[this.pi]
        if (p === undefined) this.violation(type)
        if (type !== Backend.ReadyForQuery) {
          p.preludeReply(type, buf, start, end)
          return false
        }
        if (!p.preludeDone) this.violation(type)
        if (++this.pi < this.preludes.length) return false
        this.phase = Phase.Main
        return this.held ? this.describedAll(buf[start]!) : false
      }
      case Phase.Closing:
        if (type !== Backend.CloseComplete) this.violation(type)
        this.phase = Phase.CloseReady
        return false
      case Phase.CloseReady:
        if (type !== Backend.ReadyForQuery) this.violation(type)
        if (--this.x!.closes > 0) {
          this.phase = Phase.Closing
          return false
        }
        return this.done()
      default:
        this.violation(type)
    }
  }

  error(fields: PgErrorFields): void {
    switch (this.phase) {
      case Phase.Prelude: {
        const p = this.preludes[this.pi]
        if (p === undefined || p.preludeDone) break
        const { err, lost } = p.preludeError(fields)
        if (lost) this.statementLost()
        this.failure ??= atStatement(err, p.index)
        return
      }
      case Phase.Main: {
        const s = this.statements[this.cur]
        if (s === undefined) break
        s.error(fields)
        if (this.ranBeforeError < 0) this.ranBeforeError = this.cur
        if (s.lost) this.lost = true
        // The server skips the rest of the batch: its ReadyForQuery comes next.
        this.cur = this.statements.length
        return
      }
      case Phase.Closing:
        // A failed Close of an evicted statement concerns nobody.
        this.phase = Phase.CloseReady
        return
    }
    throw new ProtocolError(`server sent an ErrorResponse where a reply to a batch could not contain it: ${fields.message}`)
  }

  /** See ExtendedRequest.lostStatement. */
  private statementLost(): void {
    const session = sessionOf(this.x!.ctx)
    if (session.pooling !== 'direct') session.namedStatementsLost()
    this.lost = true
  }

  /** See Request.notice: it goes with the statement running. */
  notice(fields: PgErrorFields): void {
    if (this.phase === Phase.Main) this.statements[this.cur]?.notice(fields)
  }

  /**
   * The batch's ReadyForQuery. When the server lost a statement before
   * anything of the batch ran (a pooler moved the connection), the batch is
   * sent again, as a query would be; a batch of which a statement ran is
   * never sent again.
   */
  private over(status: number): boolean {
    this.release()
    const nothingRan = !this.mainSent || this.ranBeforeError === 0
    if (this.lost && nothingRan && status === IDLE && this.abortError === null && this.extras().resent < MAX_RESENDS) this.resendPending = true
    else this.finishAll()
    if (this.x!.closes > 0) {
      this.phase = Phase.Closing
      return false
    }
    return this.done()
  }

  private done(): boolean {
    this.phase = Phase.Done
    if (this.resendPending) this.sendAgain()
    return true
  }

  private sendAgain(): void {
    const session = sessionOf(this.x!.ctx)
    this.extras().resent++
    this.reset()
    session.resend(this)
  }

  private finishAll(): void {
    if (this.failure !== null || this.statements.some((s) => s.failure !== null)) return this.settleAll()
    this.pending = this.statements.length
    for (const s of this.statements) s.end()
  }

  /** See BatchOwner. */
  statementSettled(): void {
    if (--this.pending === 0) this.settleAll()
  }

  /** See BatchOwner: a statement passed a result limit. */
  halt(ctx: RequestContext): void {
    ctx.requestCancel(this)
  }

  private settleAll(): void {
    let failure = this.failure
    if (failure === null) {
      for (const s of this.statements) {
        if (s.failure !== null) {
          failure = atStatement(s.failure, s.index)
          break
        }
      }
    }
    if (failure !== null) this.rejectWith(failure)
    else this.resolveWith(this.statements.map((s) => s.result()))
  }

  /** The statements are no longer in use by this batch (see StatementCache.release). */
  private release(): void {
    if (!this.committed) return
    this.committed = false
    const cache = sessionOf(this.x!.ctx).statements
    for (const s of this.statements) {
      const stmt = s.exchange?.stmt ?? null
      if (stmt === null) continue
      if (cache !== null) cache.release(stmt)
      else stmt.users--
    }
  }

  /** Abandoned while written: the server is asked to stop it. */
  protected stop(x: Exchange): void {
    x.ctx.requestCancel(this)
  }

  fail(err: Error, _sent: boolean): void {
    if (this.x === null) return this.rejectWith(err)
    if (this.phase === Phase.Done) return
    if (this.phase === Phase.Closing || this.phase === Phase.CloseReady) {
      // Settled already, unless it was about to be sent again.
      if (this.resendPending) this.rejectWith(err)
    } else {
      this.release()
      this.rejectWith(err)
    }
    this.phase = Phase.Done
  }

  /**
   * See Request.rewind: asked only of a batch that has seen no reply. Its
   * statements belonged to the lost connection's cache, which goes with it.
   */
  override rewind(): boolean {
    if (!super.rewind()) return false
    this.reset()
    return true
  }

  private reset(): void {
    this.x = null
    this.flags = 0
    this.phase = Phase.Prelude
    this.preludes = []
    this.pi = 0
    this.cur = 0
    this.held = false
    this.failure = null
    this.lost = false
    this.ranBeforeError = -1
    this.committed = false
    this.resendPending = false
    this.mainSent = false
    this.pending = 0
    for (const s of this.statements) s.reset()
  }
}

/**
 * The error of statement `index` as the batch reports it: a server error
 * carries the index in batchIndex; a client error (a value that does not
 * fit, a result limit) names the statement in its message.
 */
function atStatement(err: unknown, index: number): Error {
  if (err instanceof PgError) {
    err.batchIndex = index
    return err
  }
  if (err instanceof ParameterError) return new ParameterError(err.index, `batch statement ${index}: ${err.message}`, { cause: err.cause })
  if (err instanceof ArgumentError) return new ArgumentError(`batch statement ${index}: ${err.message}`, { cause: err.cause })
  if (err instanceof PipegresError && !err.message.startsWith('batch statement')) err.message = `batch statement ${index}: ${err.message}`
  return err as Error
}
