import { ArgumentError, PgError, ProtocolError, type PgErrorFields } from '../errors.js'
import type { Request, RequestContext } from '../connection/request.js'
import { decodeCommandComplete, decodeParameterDescription, decodeRowDescription, type FieldDescription } from '../protocol/backend.js'
import { beginBind, endBind, writeClose, writeCopyFail, writeDescribe, writeExecuteSync, writeParse, writeSync } from '../protocol/frontend.js'
import { Backend, backendMessageName } from '../protocol/message-codes.js'
import type { Writer } from '../protocol/writer.js'
import type { RowPlan } from '../types/row-plan.js'
import { writeTextParam } from '../types/text-params.js'
import { parseCommandTag, type Result } from './result.js'
import type { Session } from './session.js'
import { StatementState, type Statement } from './statement-cache.js'

export type RowMode = 'object' | 'array'

/** Query text goes out as a C string: a NUL would silently cut it short. */
function checkText(text: string): void {
  if (text.includes('\0')) throw new ArgumentError('query text cannot contain a NUL character')
}

// Where an extended-protocol query is in its exchange. Each step accepts only
// the replies the protocol allows next; anything else is a protocol violation.
const enum Step {
  /** Waiting for ParseComplete. */
  Parse,
  /** Waiting for ParameterDescription (named statement being described). */
  ParamDesc,
  /** Waiting for RowDescription or NoData of the statement. */
  StmtDesc,
  /** Waiting for BindComplete. */
  Bind,
  /** Waiting for RowDescription or NoData of the portal (unnamed statements). */
  PortalDesc,
  /** DataRows, then CommandComplete or EmptyQueryResponse (or a COPY). */
  Rows,
  /** Inside a COPY TO STDOUT started by this query. */
  CopyOut,
  /** After CopyDone: CommandComplete comes next. */
  CopyOutDone,
  /** COPY FROM STDIN was refused with CopyFail; the server answers with an error. */
  CopyInRefused,
  /** Command complete (or failed): ReadyForQuery comes next. */
  Complete,
  /** Closing statements evicted from the cache: CloseComplete, then ReadyForQuery. */
  CloseComplete,
  CloseReady,
  Done,
}

/**
 * One query in the extended protocol, as a request the connection can pipeline:
 * [Parse + Describe S the first time] Bind, [Describe P without a named
 * statement], Execute, Sync — then, behind its own Sync, Close + Sync for any
 * statements its Parse evicted from the cache.
 */
export class ExtendedQuery implements Request {
  readonly promise: Promise<Result<unknown>>
  private resolve!: (r: Result<unknown>) => void
  private reject!: (e: Error) => void

  private step = Step.Bind
  private stmt: Statement | null = null
  /** True when this request wrote the Parse of `stmt`. */
  private parsing = false
  /** True when results were requested in text because the description was not known yet. */
  private textResults = true
  private plan: RowPlan | null = null
  private fields: FieldDescription[] = []
  private readonly rows: unknown[] = []
  private tag = ''
  private failure: Error | null = null
  private closes = 0
  private ctx: RequestContext | null = null

  constructor(
    private readonly session: Session,
    readonly text: string,
    private readonly values: readonly unknown[],
    private readonly rowMode: RowMode,
    private readonly prepare: boolean,
  ) {
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }

  encode(w: Writer, ctx: RequestContext): void {
    this.ctx = ctx
    const cache = this.prepare ? this.session.statements : null
    if (cache === null) return this.encodeUnnamed(w)

    let stmt = cache.get(this.text)
    const created = stmt === undefined
    if (stmt === undefined) {
      checkText(this.text)
      stmt = cache.create(this.text)
      writeParse(w, stmt.name, this.text, [])
      writeDescribe(w, 'S', stmt.name)
    }
    const values = this.values
    const n = values.length
    if (stmt.state === StatementState.Ready) {
      const types = stmt.paramTypes!
      if (n !== types.length) {
        throw new ArgumentError(`the query has ${types.length} parameter${types.length === 1 ? '' : 's'} but ${n} value${n === 1 ? ' was' : 's were'} given`)
      }
      const m = beginBind(w, '', stmt.name, stmt.paramFormats, n)
      const reg = this.session.registry
      for (let i = 0; i < n; i++) reg.writeParam(w, values[i], types[i]!, i + 1)
      endBind(w, m, stmt.resultFormats)
      this.textResults = stmt.resultFormats.length === 0
      this.plan = stmt.plan
    } else {
      const m = beginBind(w, '', stmt.name, [], n)
      for (let i = 0; i < n; i++) writeTextParam(w, values[i], i + 1)
      endBind(w, m, [])
    }
    writeExecuteSync(w)

    // Past this point nothing can throw: commit the cache changes.
    stmt.users++
    this.stmt = stmt
    if (created) {
      this.parsing = true
      this.step = Step.Parse
      cache.insert(stmt)
    } else {
      this.step = Step.Bind
    }
    // Statements evicted from the cache are closed behind this query, each with
    // its own Sync so that a failure there concerns nobody.
    for (const old of cache.takeEvicted()) {
      writeClose(w, 'S', old.name)
      writeSync(w)
      this.closes++
    }
  }

  private encodeUnnamed(w: Writer): void {
    checkText(this.text)
    writeParse(w, '', this.text, [])
    const n = this.values.length
    const m = beginBind(w, '', '', [], n)
    for (let i = 0; i < n; i++) writeTextParam(w, this.values[i], i + 1)
    endBind(w, m, [])
    writeDescribe(w, 'P', '')
    writeExecuteSync(w)
    this.step = Step.Parse
  }

  private violation(type: number): never {
    throw new ProtocolError(`server sent ${backendMessageName(type)} where a reply to Parse/Bind/Execute could not contain it (query step ${this.step})`)
  }

  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    switch (type) {
      case Backend.DataRow:
        if (this.step !== Step.Rows || this.plan === null) this.violation(type)
        this.row(buf, start, end)
        return false
      case Backend.ParseComplete:
        if (this.step !== Step.Parse) this.violation(type)
        this.step = this.stmt !== null ? Step.ParamDesc : Step.Bind
        return false
      case Backend.ParameterDescription:
        if (this.step !== Step.ParamDesc) this.violation(type)
        this.stmt!.paramTypes = decodeParameterDescription(buf, start, end)
        this.step = Step.StmtDesc
        return false
      case Backend.RowDescription:
        if (this.step === Step.StmtDesc) this.described(decodeRowDescription(buf, start, end))
        else if (this.step === Step.PortalDesc) {
          this.fields = decodeRowDescription(buf, start, end)
          this.plan = this.session.registry.plan(this.fields, [])
          this.step = Step.Rows
        } else this.violation(type)
        return false
      case Backend.NoData:
        if (this.step === Step.StmtDesc) this.described([])
        else if (this.step === Step.PortalDesc) {
          this.plan = this.session.registry.plan([], [])
          this.step = Step.Rows
        } else this.violation(type)
        return false
      case Backend.BindComplete:
        if (this.step !== Step.Bind) this.violation(type)
        if (this.stmt === null) this.step = Step.PortalDesc
        else {
          const stmt = this.stmt
          // A statement parsed by an earlier request is described by now: its
          // Describe replies came before this Bind's.
          if (stmt.fields === null) throw new ProtocolError('server completed a Bind for a statement it never described')
          this.fields = stmt.fields
          if (this.textResults) {
            stmt.textPlan ??= this.session.registry.plan(stmt.fields, [])
            this.plan = stmt.textPlan
          }
          this.step = Step.Rows
        }
        return false
      case Backend.CommandComplete:
        if (this.step !== Step.Rows && this.step !== Step.CopyOutDone) this.violation(type)
        this.tag = decodeCommandComplete(buf, start, end)
        this.session.commandCompleted(this.tag)
        this.step = Step.Complete
        return false
      case Backend.EmptyQueryResponse:
        if (this.step !== Step.Rows) this.violation(type)
        this.step = Step.Complete
        return false
      case Backend.CopyOutResponse:
        if (this.step !== Step.Rows) this.violation(type)
        this.step = Step.CopyOut
        this.failure ??= new ProtocolError('COPY TO STDOUT cannot run through query(); its data was discarded')
        return false
      case Backend.CopyData:
        if (this.step !== Step.CopyOut) this.violation(type)
        return false
      case Backend.CopyDone:
        if (this.step !== Step.CopyOut) this.violation(type)
        this.step = Step.CopyOutDone
        return false
      case Backend.CopyInResponse:
        if (this.step !== Step.Rows) this.violation(type)
        return this.refuseCopyIn()
      case Backend.CloseComplete:
        if (this.step !== Step.CloseComplete) this.violation(type)
        this.step = Step.CloseReady
        return false
      case Backend.ReadyForQuery:
        return this.ready()
      default:
        this.violation(type)
    }
  }

  /** The description of a statement this request parsed. */
  private described(fields: FieldDescription[]): void {
    const stmt = this.stmt!
    const reg = this.session.registry
    stmt.fields = fields
    const resultFormats = fields.map((f) => reg.resultFormat(f.typeOid))
    stmt.resultFormats = resultFormats.some((f) => f !== 0) ? resultFormats : []
    const paramFormats = stmt.paramTypes!.map((oid) => reg.paramFormat(oid))
    stmt.paramFormats = paramFormats.some((f) => f !== 0) ? paramFormats : []
    stmt.plan = reg.plan(fields, stmt.resultFormats)
    if (stmt.state === StatementState.Parsing) stmt.state = StatementState.Ready
    this.step = Step.Bind
  }

  private row(buf: Uint8Array, start: number, end: number): void {
    const plan = this.plan!
    try {
      this.rows.push(this.rowMode === 'array' ? plan.array(buf, start, end) : plan.object(buf, start, end))
    } catch (err) {
      if (err instanceof ProtocolError) throw err
      // A value that fails to decode fails this query only; the stream stays in step.
      this.failure ??= err as Error
    }
  }

  /**
   * COPY FROM STDIN belongs to copyFrom(), not query(). If nothing was written
   * behind this query, CopyFail + Sync ends the copy cleanly (the server ignores
   * the Sync we sent with Execute while in copy mode). If other requests were
   * written already, the server has taken their messages as the copy's end and
   * skipped them: the stream can no longer be matched to requests, so the
   * connection is closed rather than risk a misattributed result.
   */
  private refuseCopyIn(): boolean {
    const ctx = this.ctx!
    if (ctx.inflightBehind > 0) {
      ctx.destroy(new ProtocolError('COPY FROM STDIN was started through query() while other queries were in flight; use copyFrom() for COPY FROM STDIN'))
      return false
    }
    this.failure ??= new ProtocolError('COPY FROM STDIN cannot run through query(); use copyFrom()')
    ctx.writeNow((w) => {
      writeCopyFail(w, 'COPY FROM STDIN is not supported through query()')
      writeSync(w)
    })
    this.step = Step.CopyInRefused
    return false
  }

  error(fields: PgErrorFields): void {
    const step = this.step
    if (step === Step.CopyInRefused) {
      // The answer to our CopyFail; the failure explaining why is already set.
      this.step = Step.Complete
      return
    }
    if (step === Step.CloseComplete) {
      // A failed Close of an evicted statement concerns nobody; its ReadyForQuery follows.
      this.step = Step.CloseReady
      return
    }
    if (step === Step.CloseReady || step === Step.Done || (step === Step.Complete && this.failure instanceof PgError)) {
      throw new ProtocolError(`server sent an ErrorResponse where it was not allowed: ${fields.message}`)
    }
    const stmt = this.stmt
    let err = new PgError(fields, this.text)
    if (stmt !== null) {
      if (this.parsing && (step === Step.Parse || step === Step.ParamDesc || step === Step.StmtDesc)) {
        // The statement does not exist on the server: forget it, and let later
        // executions bound to it report this error instead of "does not exist".
        stmt.parseError = err
        this.session.statements?.delete(stmt)
      } else if (fields.code === '26000' && stmt.parseError !== null) {
        err = new PgError(stmt.parseError, this.text)
      } else if (fields.code === '26000' || (fields.code === '0A000' && /cached plan/.test(fields.message))) {
        // The server lost the statement (DEALLOCATE) or its result type changed
        // under it: prepare it afresh next time.
        this.session.statements?.delete(stmt)
      }
    }
    this.failure = err
    this.step = Step.Complete
  }

  private ready(): boolean {
    if (this.step === Step.CloseReady) {
      this.closes--
      this.step = this.closes > 0 ? Step.CloseComplete : Step.Done
      return this.step === Step.Done
    }
    if (this.step !== Step.Complete && this.step !== Step.CopyInRefused) this.violation(Backend.ReadyForQuery)
    this.release()
    if (this.failure !== null) this.reject(this.failure)
    else {
      const { command, rowCount } = parseCommandTag(this.tag)
      this.resolve({ rows: this.rows, rowCount, command, fields: this.fields })
    }
    if (this.closes > 0) {
      this.step = Step.CloseComplete
      return false
    }
    this.step = Step.Done
    return true
  }

  fail(err: Error, _sent: boolean): void {
    if (this.step === Step.Done) return
    if (this.step < Step.CloseComplete) this.release()
    this.step = Step.Done
    this.reject(err)
  }

  private release(): void {
    const stmt = this.stmt
    if (stmt === null) return
    const cache = this.session.statements
    if (cache !== null) cache.release(stmt)
    else stmt.users--
  }
}
