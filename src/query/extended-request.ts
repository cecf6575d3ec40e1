// One state machine, kept whole (why it runs past 500 lines): every reply of the extended
// protocol is checked here against the step it may come at, for every sink and policy.

import { AbortError, ArgumentError, ParameterError, PgError, ProtocolError, ResultLimitError, type PgErrorFields } from '../errors.js'
import { copyBytes } from '../protocol/reader.js'
import type { Request, RequestContext } from '../connection/request.js'
import { decodeCommandComplete, decodeParameterDescription, decodeRowDescription, type FieldDescription } from '../protocol/backend.js'
import { writeBind, writeClose, writeDescribe, writeExecute, writeExecuteSync, writeFlush, writeParse, writeSync } from '../protocol/frontend.js'
import { Backend, backendMessageName } from '../protocol/message-codes.js'
import type { Writer } from '../protocol/writer.js'
import { SettlingRequest, type OwnPromise } from './settling-request.js'
import { awaitsTypes, checkCount, checkText, needsTypes, presize, writeParam } from './binder.js'
import { collectSink, columnsSink, keepRow } from './collect-sink.js'
import { allBinary, binaryPlan } from './describe-cache.js'
import { BIND_DEFERRED, CLOSING, DESCRIBING, DISCARD, EXECUTING, Exchange, noFields, noFormats, noOids, PARSING, passedLimit, refuseCopy, REPARSE, SETTLED, Step, UNSYNCED, type QuerySettings, type ResultLimits } from './exchange.js'
import type { Result } from './result.js'
import { describedFirst, runToEnd, type ExecutionPolicy, type RowSink, type RowSource } from './row-sink.js'
import { namedStatementsSurvive, sessionOf, type Session } from './session.js'
import { cacheableText, makeShape, StatementFault, statementFailed, statementKey, StatementState } from './statement-cache.js'

/** Sent again at most this often: a server that keeps losing statements gets its error reported. */
const MAX_RESENDS = 3
/** ReadyForQuery's status byte outside a transaction block. */
const IDLE = 0x49

/**
 * One statement in the extended protocol, as a request the connection can
 * pipeline: [Parse + Describe S the first time] Bind, [Describe P without a
 * named statement], Execute, Sync; then, behind its own Sync, Close + Sync
 * for any statements the cache evicted. Every way of reading a result is this
 * one exchange with a different sink (where the rows go: collected, streamed,
 * read by a cursor, passed on undecoded, shared, described, part of a batch)
 * and execution policy (see row-sink.ts); this class keeps the exchange with
 * the server and its rules.
 *
 * Parameters are encoded by the types the server gave in ParameterDescription
 * (binary where the codec can), except on the first execution, which is bound
 * before that description arrives: its parameters go as untyped text and its
 * results come back in text. When a value cannot be written without knowing its
 * type (a plain object could be json, a point or a composite), the first
 * execution is described before it is bound: it holds back the requests behind
 * it for that one round trip.
 */
export class ExtendedRequest<T = Result<unknown>> extends SettlingRequest<T> implements Request, RowSource {
  readonly values: readonly unknown[]

  constructor(
    readonly text: string,
    values: readonly unknown[],
    readonly settings: QuerySettings,
    /** Parameter types given with typed(), or null. */
    declared: number[] | null,
    readonly sink: RowSink<T>,
    readonly policy: ExecutionPolicy,
    own: OwnPromise<T> | null = null,
  ) {
    super(declared, own)
    this.values = values
  }

  /** query(): the rows collected into the result (as rows, or as columns for rowMode 'columns'). */
  static query(text: string, values: readonly unknown[], settings: QuerySettings, declared: number[] | null): ExtendedRequest {
    // Columns are typed arrays only for binary results: the statement is described before its first execution is bound.
    if (settings.rowMode === 'columns') return new ExtendedRequest(text, values, settings, declared, columnsSink, describedFirst)
    return new ExtendedRequest(text, values, settings, declared, collectSink, runToEnd)
  }

  /** Lazy rows keep views of their reads: see Request.keepsReads. */
  get keepsReads(): boolean {
    return this.settings.rowMode === 'lazy' && this.sink.copiesRows !== true
  }

  /** See Request.chunkEnd: only for a sink that passes bytes on. */
  get chunkEnd(): (() => void) | undefined {
    return this.sink.chunkEnd
  }

  /** Its rows are collected into its result (query(), not a stream, cursor or raw pass-through). */
  get collects(): boolean {
    return this.sink.collects === true
  }

  get declared(): number[] | null {
    return this.extra?.declared ?? null
  }

  /** The exchange, once written (or attached by its batch); null before. */
  get exchange(): Exchange | null {
    return this.x
  }

  /** A batch's statement: the exchange starts afresh on `ctx`, the batch writing the messages (see BatchStatement). */
  attach(ctx: RequestContext): Exchange {
    const x = new Exchange(ctx)
    this.x = x
    this.flags = 0
    return x
  }

  /** Made ready to be written again, on whatever connection (a batch being sent again). */
  detach(): void {
    this.x = null
    this.flags = 0
  }

  // --- What the sink and the policy decide --------------------------------

  /** Result formats to ask for in Bind. */
  private resultFormats(fields: readonly FieldDescription[], preferred: number[]): number[] {
    const sink = this.sink
    return sink.formats !== undefined ? sink.formats(fields) : preferred
  }

  /** What follows Bind: Execute and Sync, unless the policy says otherwise. */
  private writeTail(w: Writer, ctx: RequestContext): void {
    const policy = this.policy
    if (policy.rowLimit > 0) {
      // A row-limited portal: a batch at a time, without a Sync (it would end the portal), the writer held until it ends.
      writeExecute(w, '', policy.rowLimit)
      writeFlush(w)
      this.flags |= EXECUTING | UNSYNCED
      ctx.holdWriter(this)
      return
    }
    if (policy.describePortal) writeDescribe(w, 'P', '')
    writeExecuteSync(w)
  }

  /** Rows may follow, in these columns. */
  private rowsBegin(x: Exchange, fields: FieldDescription[]): void {
    x.fields = fields
    x.step = Step.Rows
    this.sink.begin(this, x)
  }

  /**
   * One DataRow on its way to the sink: dropped once the rows are not
   * wanted, counted against the result limits. The default sink's rows are
   * kept by a direct call, not through the sink: the hot path of query()
   * stays monomorphic however many kinds of sink a process uses.
   */
  private deliver(x: Exchange, buf: Uint8Array, start: number, end: number): void {
    if ((this.flags & DISCARD) !== 0) return
    const limits = this.settings.limits
    if (limits !== undefined && !this.withinLimits(x, limits, end - start)) return
    const sink = this.sink
    if ((sink as RowSink<unknown>) === collectSink) keepRow(x, this.settings.rowMode, buf, start, end)
    else sink.row(this, x, buf, start, end)
  }

  /**
   * Counts a row against the query's limits; false once the result has
   * passed one. The query then fails with a ResultLimitError, the rest of its
   * rows are dropped, and it is cancelled on the server: a limit never
   * truncates a result silently.
   */
  private withinLimits(x: Exchange, limits: ResultLimits, size: number): boolean {
    const passed = passedLimit(x, limits, size)
    if (passed === null) return true
    x.failure = passed
    x.rows = null
    this.flags |= DISCARD
    this.halt(x)
    return false
  }

  /** See RowSource.giveUp: a decoding failure of rows read as they arrive. */
  giveUp(x: Exchange, err: Error): void {
    x.failure ??= err
    this.flags |= DISCARD
    this.halt(x)
  }

  /** See RowSource.dropRows. */
  dropRows(): void {
    this.flags |= DISCARD
  }

  /**
   * Stops the query on the server: its rows are not wanted any more. A
   * cursor between batches has nothing running there to cancel (a
   * CancelRequest would be ignored): its portal is simply closed.
   */
  private halt(x: Exchange): void {
    const sink = this.sink
    if (sink.halt !== undefined) sink.halt(x)
    else if (this.policy.rowLimit > 0 && x.step === Step.Rows && (this.flags & EXECUTING) === 0) this.closeCursor()
    else x.ctx.requestCancel(this)
  }

  /** CommandComplete or EmptyQueryResponse arrived (x.tag is set for the former). */
  private completed(x: Exchange, buf: Uint8Array, start: number, end: number): void {
    if (this.policy.rowLimit > 0) {
      // The portal is exhausted: Sync ends it, and the writer is free again.
      this.flags &= ~(EXECUTING | UNSYNCED)
      if ((this.flags & CLOSING) !== 0) {
        // Close + Sync are on their way already.
        x.step = Step.CursorClosing
        return
      }
      x.ctx.writeNow(writeSync)
      x.ctx.releaseWriter(this)
    }
    if ((this.flags & DISCARD) === 0) this.sink.complete(this, x, buf, start, end)
  }

  /** PortalSuspended: a batch of a row-limited portal is complete (handle() lets it in only then). */
  private suspended(x: Exchange): void {
    this.flags &= ~EXECUTING
    if ((this.flags & CLOSING) !== 0) x.step = Step.CursorClosing
    else if ((this.flags & DISCARD) !== 0) this.closeCursor()
    else this.sink.suspended?.()
  }

  /** The server's error for this query becomes its failure, unless the query had given up already (see withinLimits). */
  private failed(x: Exchange, fields: PgErrorFields, err: PgError): void {
    if ((this.flags & DISCARD) === 0) this.sink.errorResponse?.(fields)
    const gaveUp = x.failure
    if ((this.flags & DISCARD) === 0 || gaveUp === null) x.failure = err
    // The server's query_canceled shows that the query was stopped there.
    else if (gaveUp instanceof ResultLimitError && gaveUp.cause === undefined) Object.defineProperty(gaveUp, 'cause', { value: err, configurable: true, writable: true })
    // A portal's Execute ended with the error.
    this.flags &= ~EXECUTING
  }

  /** Abandoned while written: the server is asked to stop it; a consumer's rows are dropped meanwhile. */
  protected override stop(x: Exchange): void {
    if (this.sink.streams) this.flags |= DISCARD
    this.halt(x)
  }

  /** At ReadyForQuery: settles with what was gathered, once a type lookup it started is over. */
  finish(x: Exchange): void {
    // What a pass-through sink gathered is written out before the caller hears the end.
    this.sink.chunkEnd?.()
    if (x.typesLookup === null) this.settle(x)
    else void x.typesLookup.then(() => this.settleAfterLookup(x))
  }

  /** Decodes the rows held for a type lookup, now that the catalog knows what it could learn. */
  private settleAfterLookup(x: Exchange): void {
    const held = x.held
    if (held !== null) {
      x.held = null
      const view = this.settings.view
      try {
        x.plan = x.formats === allBinary ? binaryPlan(x.fields, view) : view.plan(x.fields, x.formats)
      } catch (err) {
        x.failure ??= err as Error
      }
      if (x.failure === null) {
        for (const raw of held) {
          try {
            this.deliver(x, raw, 0, raw.length)
          } catch (err) {
            x.failure ??= err as Error
          }
        }
      }
    }
    this.settle(x)
  }

  /** A sink that was handed the server's error has shown it: the query cannot be sent again unseen. */
  private get resendable(): boolean {
    return this.sink.errorResponse === undefined
  }

  /** The session of the connection this request was written on. */
  get session(): Session {
    return sessionOf(this.x!.ctx)
  }

  // --- A row-limited portal (cursor()) --------------------------------------

  /** Asks for the next batch. */
  more(): void {
    const x = this.x
    if (x === null || x.step !== Step.Rows || (this.flags & (EXECUTING | CLOSING | SETTLED)) !== 0) return
    this.flags |= EXECUTING
    const size = this.policy.rowLimit
    x.ctx.writeNow((w) => {
      writeExecute(w, '', size)
      writeFlush(w)
    })
  }

  /** Closes the portal before its end. Close goes right behind an Execute still running; its rows are dropped. */
  closeCursor(): void {
    if ((this.flags & (CLOSING | SETTLED)) !== 0) return
    const x = this.x
    if (x === null) {
      // Not written yet: it never will be.
      this.abort(new AbortError('the cursor was closed before it was read'))
      return
    }
    if (x.step >= Step.CursorClosing) return
    this.flags |= CLOSING | DISCARD
    // Still being described: the deferred Bind ends it with a Sync instead.
    if ((this.flags & BIND_DEFERRED) !== 0) return
    this.flags &= ~UNSYNCED
    const ctx = x.ctx
    ctx.writeNow((w) => {
      writeClose(w, 'P', '')
      writeSync(w)
    })
    if ((this.flags & EXECUTING) === 0) x.step = Step.CursorClosing
    ctx.releaseWriter(this)
  }

  // --- The exchange ----------------------------------------------------------

  encode(w: Writer, ctx: RequestContext): void {
    if (this.policy.describeOnly) return this.encodeDescribe(w, ctx)
    const x = new Exchange(ctx)
    this.x = x
    const session = sessionOf(ctx)
    // A huge generated text is not worth keeping as a prepared statement, here or on the server.
    const cache = this.settings.prepare && cacheableText(this.text) ? session.statements : null
    if (cache === null) return this.encodeUnnamed(w, ctx, x)

    const declared = this.extra?.declared ?? null
    const key = statementKey(this.text, declared)
    let stmt = cache.find(key, this.extra?.tx ?? null, namedStatementsSurvive(session.pooling))
    const created = stmt === undefined
    if (stmt === undefined) {
      checkText(this.text)
      stmt = cache.create(key, this.text, declared ?? noOids)
      stmt.preparedIn = this.extra?.tx ?? null
      writeParse(w, stmt.name, this.text, stmt.declaredTypes)
      writeDescribe(w, 'S', stmt.name)
    }
    const view = this.settings.view
    const catalog = session.catalog
    const shape = stmt.state === StatementState.Ready ? stmt.shape(view, catalog) : null
    // A type still unknown is learned first when the query reads rows one by one, or a value needs its codec.
    if (shape !== null && (shape.unknown.length === 0 || (!this.policy.describeFirst && !awaitsTypes(this.values, stmt.paramTypes!, catalog)))) {
      const types = stmt.paramTypes!
      checkCount(this.values, types)
      const formats = this.resultFormats(stmt.fields!, shape.resultFormats)
      x.useShape(formats, shape)
      presize(w, this.values)
      writeBind(w, '', stmt.name, this.values.length, (w, i) => writeParam(w, view, this.values, i, types[i]!), formats)
    } else if (shape !== null || this.policy.describeFirst || needsTypes(this.values, stmt.declaredTypes) || awaitsTypes(this.values, stmt.declaredTypes, catalog)) {
      if (!created) writeDescribe(w, 'S', stmt.name)
      writeFlush(w)
      this.flags |= DESCRIBING | BIND_DEFERRED | UNSYNCED
      ctx.holdWriter(this)
    } else {
      const declaredTypes = stmt.declaredTypes
      presize(w, this.values)
      writeBind(w, '', stmt.name, this.values.length, (w, i) => writeParam(w, view, this.values, i, declaredTypes[i] ?? 0), noFormats)
    }
    if ((this.flags & BIND_DEFERRED) === 0) this.writeTail(w, ctx)

    // Past this point nothing can throw: commit the cache changes.
    stmt.users++
    x.stmt = stmt
    if (created) {
      this.flags |= PARSING | DESCRIBING
      x.step = Step.Parse
      cache.insert(stmt)
    } else {
      x.step = (this.flags & DESCRIBING) !== 0 ? Step.ParamDesc : Step.Bind
    }
    // Not behind a cursor: a Sync would end its portal; the next query closes them.
    if (this.policy.rowLimit === 0) x.closes = cache.writeEvictedCloses(w)
  }

  /** describe(): Parse and Describe of the unnamed statement, then Sync; nothing is bound or executed. */
  private encodeDescribe(w: Writer, ctx: RequestContext): void {
    checkText(this.text)
    const x = new Exchange(ctx)
    this.x = x
    writeParse(w, '', this.text, this.extra?.declared ?? noOids)
    writeDescribe(w, 'S', '')
    writeSync(w)
    x.step = Step.Parse
    this.flags |= DESCRIBING
  }

  private encodeUnnamed(w: Writer, ctx: RequestContext, x: Exchange): void {
    checkText(this.text)
    const declared = this.extra?.declared ?? noOids
    writeParse(w, '', this.text, declared)
    x.step = Step.Parse
    if (this.policy.describeFirst || needsTypes(this.values, declared) || (declared.length > 0 && awaitsTypes(this.values, declared, sessionOf(ctx).catalog))) {
      writeDescribe(w, 'S', '')
      writeFlush(w)
      this.flags |= DESCRIBING | BIND_DEFERRED | UNSYNCED
      ctx.holdWriter(this)
      return
    }
    presize(w, this.values)
    const view = this.settings.view
    // Binary results once the text's columns are known to allow it (see DescribeCache); a raw consumer keeps its own choice.
    const session = sessionOf(ctx)
    const known = session.described.formats(this.text, this.extra?.declared ?? null, session.catalog.version, view)
    x.formats = known === null ? noFormats : this.resultFormats(noFields, known)
    writeBind(w, '', '', this.values.length, (w, i) => writeParam(w, view, this.values, i, declared[i] ?? 0), x.formats)
    writeDescribe(w, 'P', '')
    writeExecuteSync(w)
  }

  /**
   * The deferred Bind of a statement described first: parameters by their
   * types, results in the formats the view prefers. If a value does not fit
   * its type, Sync alone closes the exchange and the query fails with that.
   */
  private bindDescribed(fields: FieldDescription[], paramTypes: number[]): void {
    const x = this.x!
    const ctx = x.ctx
    this.flags &= ~(BIND_DEFERRED | UNSYNCED)
    const name = x.stmt?.name ?? ''
    const view = this.settings.view
    try {
      if (this.abortError !== null || (this.flags & CLOSING) !== 0) {
        // Aborted or closed while being described: nothing was executed, nothing will be.
        ctx.writeNow(writeSync)
        x.step = Step.Complete
        return
      }
      checkCount(this.values, paramTypes)
      const catalog = this.session.catalog
      const shape = x.stmt !== null ? x.stmt.shape(view, catalog) : makeShape(fields, paramTypes, view, catalog)
      const formats = this.resultFormats(fields, shape.resultFormats)
      const reparse = (this.flags & REPARSE) !== 0
      ctx.writeNow((w) => {
        if (reparse) writeParse(w, '', this.text, this.extra?.declared ?? noOids)
        presize(w, this.values)
        writeBind(w, '', name, this.values.length, (w, i) => writeParam(w, view, this.values, i, paramTypes[i]!), formats)
        this.writeTail(w, ctx)
      })
      x.useShape(formats, shape)
      x.step = reparse ? Step.Parse : Step.Bind
    } catch (err) {
      if (!(err instanceof ParameterError || err instanceof ArgumentError)) throw err
      this.flags &= ~(EXECUTING | UNSYNCED)
      ctx.writeNow(writeSync)
      x.failure = err
      x.step = Step.Complete
    } finally {
      // A cursor keeps the writer until it closes.
      if ((this.flags & UNSYNCED) === 0) ctx.releaseWriter(this)
    }
  }

  violation(type: number): never {
    throw new ProtocolError(`server sent ${backendMessageName(type)} where a reply to Parse/Bind/Execute could not contain it (query step ${this.x?.step})`)
  }

  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    const x = this.x!
    if (x.firstByte === 0) x.firstByte = x.ctx.readAt
    switch (type) {
      case Backend.DataRow:
        if (x.step !== Step.Rows) {
          if (x.step === Step.CursorClosing) return false
          this.violation(type)
        }
        if (x.held !== null) x.held.push(copyBytes(buf, start, end))
        else this.deliver(x, buf, start, end)
        return false
      case Backend.ParseComplete:
        if (x.step !== Step.Parse) this.violation(type)
        if ((this.flags & REPARSE) !== 0) {
          this.flags &= ~REPARSE
          x.step = Step.Bind
        } else x.step = (this.flags & DESCRIBING) !== 0 ? Step.ParamDesc : Step.Bind
        return false
      case Backend.ParameterDescription:
        if (x.step !== Step.ParamDesc) this.violation(type)
        x.paramTypes = decodeParameterDescription(buf, start, end)
        if (x.stmt !== null) x.stmt.paramTypes = x.paramTypes
        x.step = Step.StmtDesc
        return false
      case Backend.RowDescription:
        if (x.step === Step.StmtDesc) this.described(decodeRowDescription(buf, start, end))
        else if (x.step === Step.PortalDesc) {
          this.rowsBegin(x, decodeRowDescription(buf, start, end))
          this.sink.description?.(buf, start, end)
        } else this.violation(type)
        return false
      case Backend.NoData:
        if (x.step === Step.StmtDesc) this.described(noFields)
        else if (x.step === Step.PortalDesc) this.rowsBegin(x, noFields)
        else this.violation(type)
        return false
      case Backend.BindComplete:
        if (x.step !== Step.Bind) this.violation(type)
        this.bound(x)
        return false
      case Backend.CommandComplete:
        if (x.step !== Step.Rows && x.step !== Step.CopyOutDone) this.violation(type)
        x.tag = decodeCommandComplete(buf, start, end)
        this.session.commandCompleted(x.tag)
        x.step = Step.Complete
        this.completed(x, buf, start, end)
        return false
      case Backend.EmptyQueryResponse:
        if (x.step !== Step.Rows) this.violation(type)
        x.step = Step.Complete
        this.completed(x, buf, start, end)
        return false
      case Backend.PortalSuspended:
        if (x.step !== Step.Rows || (this.flags & EXECUTING) === 0) this.violation(type)
        this.suspended(x)
        return false
      case Backend.CopyOutResponse:
      case Backend.CopyData:
      case Backend.CopyDone:
      case Backend.CopyInResponse:
        if (!refuseCopy(x, type)) this.violation(type)
        return false
      case Backend.CloseComplete:
        if (x.step === Step.CursorClosing) x.step = Step.Complete
        else if (x.step !== Step.CloseComplete) this.violation(type)
        else x.step = Step.CloseReady
        return false
      case Backend.ReadyForQuery:
        return this.ready(x, buf[start]!)
      default:
        this.violation(type)
    }
  }

  /** See Request.notice: kept for the result. */
  notice(fields: PgErrorFields): void {
    if (this.x !== null) (this.x.notices ??= []).push(fields)
  }

  /** BindComplete: the columns are known by now, unless the portal is described next. */
  private bound(x: Exchange): void {
    // The portal's RowDescription, with the formats, is what the sink wants.
    if (this.policy.describePortal) {
      x.step = Step.PortalDesc
      return
    }
    if (x.stmt === null) {
      if ((this.flags & DESCRIBING) !== 0) this.rowsBegin(x, x.fields)
      else x.step = Step.PortalDesc
      return
    }
    // A statement parsed by an earlier request is described by now: its Describe replies came before this Bind's.
    const fields = x.stmt.fields
    if (fields === null) throw new ProtocolError('server completed a Bind for a statement it never described')
    this.rowsBegin(x, fields)
  }

  /** The description of the statement, from this request's own Describe. */
  private described(fields: FieldDescription[]): void {
    const x = this.x!
    const stmt = x.stmt
    const catalog = this.session.catalog
    if (this.policy.describeOnly) {
      // describe(): types the catalog meets for the first time are looked up before it resolves.
      x.fields = fields
      x.step = Step.Complete
      const unknown = x.paramTypes.filter((oid) => !catalog.knows(oid))
      for (const f of fields) if (!catalog.knows(f.typeOid)) unknown.push(f.typeOid)
      if (unknown.length > 0) x.typesLookup = this.session.lookupTypes(unknown)
      return
    }
    x.describedAs(fields)
    x.step = Step.Bind
    if ((this.flags & BIND_DEFERRED) !== 0) {
      // The parameters are bound by their types, so unknown ones must be
      // learned first: looked up right now, ahead of everything queued (this
      // request holds the writer), then bound.
      const unknown = x.paramTypes.filter((oid) => !catalog.knows(oid))
      if (this.policy.describeFirst) for (const f of fields) if (!catalog.knows(f.typeOid)) unknown.push(f.typeOid)
      if (unknown.length > 0 && this.abortError === null && (this.flags & CLOSING) === 0) {
        if (stmt === null) this.flags |= REPARSE
        void this.session.lookupTypesAhead(unknown, x.ctx).then(() => {
          if (x.step === Step.Bind) this.bindDescribed(fields, x.paramTypes)
        })
      } else this.bindDescribed(fields, x.paramTypes)
    } else if (stmt !== null) {
      // Start learning unknown parameter and column types now, for the executions to come.
      const shape = stmt.shape(this.settings.view, catalog)
      if (shape.unknown.length > 0) void this.session.lookupTypes(shape.unknown)
    }
  }

  error(fields: PgErrorFields): void {
    const x = this.x!
    const step = x.step
    if (step === Step.CopyInRefused) {
      // The answer to our CopyFail; the failure explaining why is already set.
      x.step = Step.Complete
      return
    }
    if (step === Step.CloseComplete) {
      // A failed Close of an evicted statement concerns nobody; its ReadyForQuery follows.
      x.step = Step.CloseReady
      return
    }
    if (step === Step.CloseReady || step === Step.Done || (step === Step.Complete && x.failure instanceof PgError)) {
      throw new ProtocolError(`server sent an ErrorResponse where it was not allowed: ${fields.message}`)
    }
    const stmt = x.stmt
    let err = new PgError(fields, this.text)
    if (stmt !== null) {
      const fault = statementFailed(this.session.statements, stmt, err, (this.flags & PARSING) !== 0, step)
      if (fault === StatementFault.ParseFailed) err = new PgError(stmt.parseError!, this.text)
      else if (fault === StatementFault.Lost) this.lostStatement(x)
    }
    this.failed(x, fields, err)
    x.step = Step.Complete
    if ((this.flags & UNSYNCED) !== 0) {
      // Written without a Sync yet (a statement described before it is bound, a cursor between batches): the server now skips to one.
      this.flags &= ~(BIND_DEFERRED | UNSYNCED)
      x.ctx.writeNow(writeSync)
      x.ctx.releaseWriter(this)
    }
  }

  private ready(x: Exchange, status: number): boolean {
    if (x.step === Step.CloseReady) {
      x.closes--
      x.step = x.closes > 0 ? Step.CloseComplete : Step.Done
      if (x.step !== Step.Done) return false
      if (x.resend) this.sendAgain(x)
      return true
    }
    if (x.step !== Step.Complete && x.step !== Step.CopyInRefused) this.violation(Backend.ReadyForQuery)
    this.release(x)
    // Inside a transaction block the failure aborted the transaction: sent again, it would only fail with 25P02.
    if (x.resend && (status !== IDLE || this.abortError !== null || this.extras().resent >= MAX_RESENDS)) x.resend = false
    if (!x.resend) this.finish(x)
    if (x.closes > 0) {
      x.step = Step.CloseComplete
      return false
    }
    x.step = Step.Done
    if (x.resend) this.sendAgain(x)
    return true
  }

  /**
   * The server lost or refused the statement before anything of this query
   * ran. Past this connection's first such failure, it stops relying on
   * named statements (unless it is known to reach the server directly), and
   * the query is sent again once its ReadyForQuery shows it was not inside a
   * transaction block.
   */
  private lostStatement(x: Exchange): void {
    const session = this.session
    if (session.pooling !== 'direct') session.namedStatementsLost()
    if (this.resendable) x.resend = true
  }

  /** Starts the exchange afresh on whatever the connection now uses (the unnamed statement, after a pooler lost ours). */
  private sendAgain(x: Exchange): void {
    const session = sessionOf(x.ctx)
    this.extras().resent++
    this.x = null
    this.flags = 0
    session.resend(this)
  }

  /** Settles with the failure, or with the sink's outcome. */
  private settle(x: Exchange): void {
    if (x.failure !== null) this.rejectWith(x.failure)
    else this.resolveWith(this.sink.outcome(this, x))
  }

  /** A sink that takes the end itself (see RowSink.ended) is told instead of the promise. */
  protected override resolveWith(r: T): void {
    const ended = this.sink.ended
    if (ended === undefined) return super.resolveWith(r)
    if (this.settled) return
    if (this.abortError !== null) return this.rejectWith(this.abortError)
    this.flags |= SETTLED
    ended.call(this.sink, r, null)
  }

  /** See RowSink.failed: a sink may say what the promise follows instead of the error. */
  protected override follow(err: Error): PromiseLike<T> {
    const failed = this.sink.failed
    return (failed === undefined ? undefined : failed.call(this.sink, err)) ?? super.follow(err)
  }

  protected override rejectWith(err: Error): void {
    const ended = this.sink.ended
    if (ended === undefined) return super.rejectWith(err)
    if (this.settled) return
    this.flags |= SETTLED
    const abort = this.abortError
    if (abort !== null && abort !== err && abort.cause === undefined) Object.defineProperty(abort, 'cause', { value: err, configurable: true, writable: true })
    ended.call(this.sink, null, abort ?? err)
  }

  fail(err: Error, _sent: boolean): void {
    const x = this.x
    if (x === null) return this.rejectWith(err)
    if (x.step === Step.Done) return
    if (x.step < Step.CloseComplete) this.release(x)
    // A query waiting behind its Closes to be sent again (x.resend) has not settled either.
    if (x.step < Step.CloseComplete || x.resend) this.rejectWith(err)
    x.step = Step.Done
  }

  private release(x: Exchange): void {
    const stmt = x.stmt
    if (stmt === null) return
    const cache = this.session.statements
    if (cache !== null) cache.release(stmt)
    else stmt.users--
  }
}
