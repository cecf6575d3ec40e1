import { PgError, ProtocolError, type PgErrorFields, type PgNotice } from '../errors.js'
import { copyBytes } from '../protocol/reader.js'
import type { Request, RequestContext, WriteStamp } from '../connection/request.js'
import { decodeCommandComplete, decodeRowDescription, type FieldDescription } from '../protocol/backend.js'
import { writeCopyFail, writeQuery } from '../protocol/frontend.js'
import { Backend, backendMessageName } from '../protocol/message-codes.js'
import type { Writer } from '../protocol/writer.js'
import type { RowPlan } from '../types/row-plan.js'
import type { TypeView } from '../types/view.js'
import { noNotices, parseCommandTag, type Result, type RowMode } from './result.js'
import type { Session } from './session.js'
import { timingNow } from './timing.js'
import { SettlingRequest } from './settling-request.js'

const enum Step {
  /** Between statements: RowDescription, CommandComplete, EmptyQueryResponse, a COPY, an error, or ReadyForQuery. */
  Idle,
  /** After RowDescription: DataRows, then CommandComplete. */
  Rows,
  CopyOut,
  CopyOutDone,
  CopyInRefused,
  /** An error ended the query string: ReadyForQuery comes next. */
  Failed,
  Done,
}

/**
 * A query string in the simple protocol: any number of statements separated by
 * semicolons, one result per statement, all values in text format. Rejects
 * with the first error (the server runs nothing after it).
 */
export class SimpleQuery extends SettlingRequest<Result<unknown>[], RequestContext> implements Request {
  readonly simpleProtocol = true
  /** See Request.keepsReads: lazy rows keep views of the reads they came in. */
  readonly keepsReads: boolean
  private session!: Session
  private step = Step.Idle
  private readonly results: Result<unknown>[] = []
  private fields: FieldDescription[] = []
  private plan: RowPlan | null = null
  private rows: unknown[] = []
  /** Rows of the current result kept as bytes while its column types are looked up. */
  private held: Uint8Array[] | null = null
  /** Results whose rows wait for a type lookup, with the lookup. */
  private waiting: { result: Result<unknown>; held: Uint8Array[]; lookup: Promise<void> }[] = []
  private failure: Error | null = null
  /** Notices raised by the statement running now: they go with its result. */
  private notices: PgNotice[] | null = null
  /** See QueryTiming: when the statement running now saw its first reply (0: not yet). */
  private firstByte = 0
  private written: WriteStamp | null = null

  constructor(
    readonly text: string,
    private readonly rowMode: RowMode,
    private readonly view: TypeView,
  ) {
    super(null)
    this.keepsReads = rowMode === 'lazy'
  }

  /** Aborted once written: the query string is cancelled on the server. */
  protected override stop(ctx: RequestContext): void {
    ctx.requestCancel(this)
  }

  encode(w: Writer, ctx: RequestContext): void {
    this.x = ctx
    this.written = ctx.writeStamp
    this.session = ctx.attachment as Session
    writeQuery(w, this.text)
  }

  /** See Request.notice. */
  notice(fields: PgNotice): void {
    ;(this.notices ??= []).push(fields)
  }

  private violation(type: number): never {
    throw new ProtocolError(`server sent ${backendMessageName(type)} where a reply to a simple query could not contain it`)
  }

  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    if (this.firstByte === 0) this.firstByte = this.x!.readAt
    switch (type) {
      case Backend.DataRow: {
        if (this.step !== Step.Rows) this.violation(type)
        if (this.held !== null) {
          this.held.push(copyBytes(buf, start, end))
          return false
        }
        const plan = this.plan!
        try {
          this.rows.push(plan.keptRow(this.rowMode, buf, start, end))
        } catch (err) {
          if (err instanceof ProtocolError) throw err
          this.failure ??= err as Error
        }
        return false
      }
      case Backend.RowDescription:
        if (this.step !== Step.Idle) this.violation(type)
        this.fields = decodeRowDescription(buf, start, end)
        this.plan = this.view.plan(this.fields, [])
        this.step = Step.Rows
        this.holdIfUnknown()
        return false
      case Backend.CommandComplete: {
        if (this.step !== Step.Idle && this.step !== Step.Rows && this.step !== Step.CopyOutDone) this.violation(type)
        const tag = decodeCommandComplete(buf, start, end)
        this.session.commandCompleted(tag)
        const { command, rowCount } = parseCommandTag(tag)
        this.finishStatement(command, rowCount)
        return false
      }
      case Backend.EmptyQueryResponse:
        if (this.step !== Step.Idle) this.violation(type)
        this.finishStatement('', null)
        return false
      case Backend.CopyOutResponse:
        if (this.step !== Step.Idle) this.violation(type)
        this.failure ??= new ProtocolError('COPY TO STDOUT cannot run through simpleQuery(); its data was discarded')
        this.step = Step.CopyOut
        return false
      case Backend.CopyData:
        if (this.step !== Step.CopyOut) this.violation(type)
        return false
      case Backend.CopyDone:
        if (this.step !== Step.CopyOut) this.violation(type)
        this.step = Step.CopyOutDone
        return false
      case Backend.CopyInResponse: {
        if (this.step !== Step.Idle) this.violation(type)
        const ctx = this.x!
        if (ctx.inflightBehind > 0) {
          ctx.destroy(new ProtocolError('COPY FROM STDIN was started through simpleQuery() while other queries were in flight; use copyFrom()'))
          return false
        }
        this.failure ??= new ProtocolError('COPY FROM STDIN cannot run through simpleQuery(); use copyFrom()')
        ctx.writeNow((w) => writeCopyFail(w, 'COPY FROM STDIN is not supported through simpleQuery()'))
        this.step = Step.CopyInRefused
        return false
      }
      case Backend.ReadyForQuery:
        if (this.step !== Step.Idle && this.step !== Step.Failed) this.violation(type)
        this.step = Step.Done
        if (this.waiting.length > 0) void Promise.all(this.waiting.map((w) => w.lookup)).then(() => this.settleHeld())
        else this.settle()
        return true
      default:
        this.violation(type)
    }
  }

  /** Columns of types the catalog does not know: keep the rows as bytes until they are looked up. */
  private holdIfUnknown(): void {
    const catalog = this.session.catalog
    const missing = this.fields.filter((f) => !catalog.knows(f.typeOid)).map((f) => f.typeOid)
    if (missing.length > 0) this.held = []
  }

  private finishStatement(command: string, rowCount: number | null): void {
    const result = { rows: this.rows, rowCount, command, fields: this.fields, notices: this.notices ?? noNotices, timing: timingNow(this.queued, this.written!.at, this.firstByte) }
    this.notices = null
    this.firstByte = 0
    this.results.push(result)
    if (this.held !== null) {
      const catalog = this.session.catalog
      const missing = this.fields.filter((f) => !catalog.knows(f.typeOid)).map((f) => f.typeOid)
      this.waiting.push({ result, held: this.held, lookup: this.session.lookupTypes(missing) })
      this.held = null
    }
    this.rows = []
    this.fields = []
    this.plan = null
    this.step = Step.Idle
  }

  /** Decodes the rows held for type lookups, now that the catalog knows what it could learn. */
  private settleHeld(): void {
    for (const { result, held } of this.waiting) {
      try {
        const plan = this.view.plan(result.fields, [])
        for (const raw of held) result.rows.push(plan.keptRow(this.rowMode, raw, 0, raw.length))
      } catch (err) {
        this.failure ??= err as Error
      }
    }
    this.waiting = []
    this.settle()
  }

  private settle(): void {
    if (this.failure !== null) this.rejectWith(this.failure)
    else this.resolveWith(this.results)
  }

  error(fields: PgErrorFields): void {
    if (this.step === Step.Failed || this.step === Step.Done) {
      throw new ProtocolError(`server sent an ErrorResponse where it was not allowed: ${fields.message}`)
    }
    if (this.step !== Step.CopyInRefused) this.failure = new PgError(fields, this.text)
    this.step = Step.Failed
  }

  fail(err: Error, _sent: boolean): void {
    if (this.step === Step.Done) return
    this.step = Step.Done
    this.rejectWith(err)
  }
}
