import type { RequestContext } from '../connection/request.js'
import { PgError, type PgErrorFields } from '../errors.js'
import { decodeParameterDescription, decodeRowDescription } from '../protocol/backend.js'
import { writeBind, writeDescribe, writeExecute, writeParse, writeSync } from '../protocol/frontend.js'
import { Backend } from '../protocol/message-codes.js'
import type { Writer } from '../protocol/writer.js'
import type { TypeCatalog } from '../types/catalog.js'
import { awaitsTypes, checkCount, needsTypes, presize, writeParam } from './binder.js'
import { collectSink, columnsSink } from './collect-sink.js'
import { noFields, noFormats, noOids, Step, type Exchange, type QuerySettings } from './exchange.js'
import { ExtendedRequest } from './extended-request.js'
import type { Result } from './result.js'
import { describedFirst, runToEnd, type RowSink, type RowSource } from './row-sink.js'
import { cacheableText, makeShape, statementFailed, StatementFault, statementKey, StatementState, type Shape, type Statement, type StatementCache } from './statement-cache.js'

/** What a statement of a batch writes ahead of the batch, behind a Sync of its own. */
export const enum Prelude {
  None,
  /** Parse + Describe of a named statement met for the first time on this connection. */
  Prepare,
  /** Describe of a named statement another request is preparing: its parameter types are needed. */
  Describe,
  /** Parse + Describe of the unnamed statement: its parameter types are needed. */
  DescribeUnnamed,
}

/** What a statement needs of the batch it belongs to. */
export interface BatchOwner {
  /** The statement's result is settled (at once, or after a type lookup its rows waited for). */
  statementSettled(): void
  /** A result limit was passed: the batch is cancelled on the server. */
  halt(ctx: RequestContext): void
}

/**
 * One statement of a batch: its Bind and Execute go out with the others', under
 * the batch's one Sync, and the replies between them are its own. The rows are
 * handled as query() handles them; what differs is how it is written.
 *
 * A statement met for the first time is prepared ahead of the batch, Parse and
 * Describe behind a Sync of their own, never inside the batch: an error in the
 * batch makes the server skip every message up to its Sync, and a skipped Parse
 * would leave the cache believing in a statement the server never made. On its
 * own Sync a failed Parse concerns that statement alone: the batch's Bind of it
 * then fails with the Parse's error, and the batch with it.
 *
 * The statement's replies go through an exchange of its own (req), of which
 * it is the sink: rows are collected as query() collects them (the collect or
 * columns sink), and its end and a halt go to the batch.
 */
export class BatchStatement implements RowSink {
  readonly streams = false
  owner: BatchOwner | null = null
  prelude = Prelude.None
  /** Where the prelude is in its replies. */
  private pstep = Step.Complete
  readonly req: ExtendedRequest
  /** Where the rows are collected. */
  private readonly rows: RowSink
  private outcomeOf: Result<unknown> | null = null

  constructor(
    /** The statement's position in its batch, from 0. */
    readonly index: number,
    text: string,
    values: readonly unknown[],
    settings: QuerySettings,
    declared: number[] | null,
  ) {
    const columns = settings.rowMode === 'columns'
    this.rows = columns ? columnsSink : collectSink
    this.req = new ExtendedRequest(text, values, settings, declared, this, columns ? describedFirst : runToEnd)
  }

  get text(): string {
    return this.req.text
  }

  get keepsReads(): boolean {
    return this.req.keepsReads
  }

  /** The exchange of this statement, once its batch is written. */
  get exchange(): Exchange | null {
    return this.req.exchange
  }

  get valuesGiven(): readonly unknown[] {
    return this.req.values
  }

  // --- As the sink of its exchange -------------------------------------------

  begin(q: RowSource, x: Exchange): void {
    this.rows.begin(q, x)
  }

  row(q: RowSource, x: Exchange, buf: Uint8Array, start: number, end: number): void {
    this.rows.row(q, x, buf, start, end)
  }

  complete(): void {}

  outcome(q: RowSource, x: Exchange): Result<unknown> {
    return this.rows.outcome(q, x)
  }

  /** A result limit was passed: the batch is cancelled. */
  halt(x: Exchange): void {
    this.owner!.halt(x.ctx)
  }

  /** Settled (at once, or after a type lookup its rows waited for): the batch gathers the results once all are. */
  ended(outcome: Result<unknown> | null): void {
    this.outcomeOf = outcome
    this.owner!.statementSettled()
  }

  // --- As written by its batch -----------------------------------------------

  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    return this.req.handle(type, buf, start, end)
  }

  error(fields: PgErrorFields): void {
    this.req.error(fields)
  }

  notice(fields: PgErrorFields): void {
    this.req.notice(fields)
  }

  /**
   * Decides how the statement goes out on this connection: whether a prelude
   * prepares or describes it first. `created` holds the statements this batch
   * prepares, so a text repeated in the batch is prepared once. True when its
   * Bind must wait for the description (a value whose type must be known,
   * rowMode 'columns').
   */
  plan(ctx: RequestContext, cache: StatementCache | null, tx: object | null, direct: boolean, created: Map<string, Statement>): boolean {
    const req = this.req
    const x = req.attach(ctx)
    const declared = req.declared
    const catalog = req.session.catalog
    const describe = req.policy.describeFirst || needsTypes(req.values, declared ?? noOids) || (declared !== null && awaitsTypes(req.values, declared, catalog))
    if (cache === null || !req.settings.prepare || !cacheableText(req.text)) {
      this.prelude = describe ? Prelude.DescribeUnnamed : Prelude.None
      return describe
    }
    const key = statementKey(req.text, declared)
    let stmt = created.get(key)
    if (stmt !== undefined) this.prelude = Prelude.None
    else if ((stmt = cache.find(key, tx, direct)) !== undefined) {
      if (stmt.state === StatementState.Ready) {
        x.stmt = stmt
        // A value whose type's codec is not known yet: the statement is described again and its types learned before the Bind.
        const again = stmt.shape(req.settings.view, catalog).unknown.length > 0 && awaitsTypes(req.values, stmt.paramTypes!, catalog)
        this.prelude = again ? Prelude.Describe : Prelude.None
        return again
      }
      this.prelude = describe ? Prelude.Describe : Prelude.None
    } else {
      stmt = cache.create(key, req.text, declared ?? noOids)
      stmt.preparedIn = tx
      created.set(key, stmt)
      this.prelude = Prelude.Prepare
    }
    x.stmt = stmt
    return describe
  }

  /** Writes the prelude (see Prelude) with its Sync; false when there is none. */
  writePrelude(w: Writer): boolean {
    const stmt = this.req.exchange!.stmt
    const text = this.req.text
    switch (this.prelude) {
      case Prelude.None:
        return false
      case Prelude.Prepare:
        writeParse(w, stmt!.name, text, stmt!.declaredTypes)
        writeDescribe(w, 'S', stmt!.name)
        this.pstep = Step.Parse
        break
      case Prelude.Describe:
        writeDescribe(w, 'S', stmt!.name)
        this.pstep = Step.ParamDesc
        break
      case Prelude.DescribeUnnamed:
        writeParse(w, '', text, this.req.declared ?? noOids)
        writeDescribe(w, 'S', '')
        this.pstep = Step.Parse
        break
    }
    writeSync(w)
    return true
  }

  /** Bind and Execute (preceded by Parse for the unnamed statement), without a Sync. Throws ParameterError for a value that does not fit. */
  writeMain(w: Writer): void {
    const req = this.req
    const x = req.exchange!
    const stmt = x.stmt
    const catalog = req.session.catalog
    if (stmt === null) {
      const declared = req.declared ?? noOids
      writeParse(w, '', req.text, declared)
      if (this.prelude === Prelude.DescribeUnnamed) this.bindTyped(w, x, '', x.paramTypes, makeShape(x.fields, x.paramTypes, req.settings.view, catalog))
      else this.bindText(w, '', declared)
      writeDescribe(w, 'P', '')
      x.step = Step.Parse
    } else {
      if (stmt.state === StatementState.Ready) this.bindTyped(w, x, stmt.name, stmt.paramTypes!, stmt.shape(req.settings.view, catalog))
      else this.bindText(w, stmt.name, stmt.declaredTypes)
      x.step = Step.Bind
    }
    writeExecute(w, '', 0)
  }

  private bindTyped(w: Writer, x: Exchange, name: string, types: readonly number[], shape: Shape): void {
    const values = this.req.values
    checkCount(values, types)
    const view = this.req.settings.view
    presize(w, values)
    writeBind(w, '', name, values.length, (w, i) => writeParam(w, view, values, i, types[i]!), shape.resultFormats)
    x.useShape(shape.resultFormats, shape)
  }

  /** Parameters as untyped text, results in text: the first execution, bound before its description is known (as query() does). */
  private bindText(w: Writer, name: string, declared: readonly number[]): void {
    const values = this.req.values
    const view = this.req.settings.view
    presize(w, values)
    writeBind(w, '', name, values.length, (w, i) => writeParam(w, view, values, i, declared[i] ?? 0), noFormats)
  }

  /** Parameter and column types the description showed and the catalog does not know: looked up before the Bind. */
  unknownTypes(catalog: TypeCatalog, out: number[]): void {
    const x = this.req.exchange!
    const types = x.stmt?.paramTypes ?? x.paramTypes
    for (const oid of types) if (!catalog.knows(oid)) out.push(oid)
    if (this.req.policy.describeFirst) for (const f of x.stmt?.fields ?? x.fields) if (!catalog.knows(f.typeOid)) out.push(f.typeOid)
  }

  /** A reply to the prelude, other than ReadyForQuery and ErrorResponse. */
  preludeReply(type: number, buf: Uint8Array, start: number, end: number): void {
    const x = this.req.exchange!
    switch (type) {
      case Backend.ParseComplete:
        if (this.pstep !== Step.Parse) this.req.violation(type)
        this.pstep = Step.ParamDesc
        return
      case Backend.ParameterDescription:
        if (this.pstep !== Step.ParamDesc) this.req.violation(type)
        x.paramTypes = decodeParameterDescription(buf, start, end)
        if (x.stmt !== null) x.stmt.paramTypes = x.paramTypes
        this.pstep = Step.StmtDesc
        return
      case Backend.RowDescription:
      case Backend.NoData: {
        if (this.pstep !== Step.StmtDesc) this.req.violation(type)
        x.describedAs(type === Backend.NoData ? noFields : decodeRowDescription(buf, start, end))
        this.pstep = Step.Complete
        return
      }
      default:
        this.req.violation(type)
    }
  }

  /**
   * The prelude failed: the statement is forgotten by the cache as a failed
   * Parse would be. Returns the error, and whether the server had lost the
   * statement (nothing ran: the batch may be sent again).
   */
  preludeError(fields: PgErrorFields): { err: PgError; lost: boolean } {
    const req = this.req
    const stmt = req.exchange!.stmt
    let err = new PgError(fields, req.text)
    let lost = false
    if (stmt !== null) {
      const fault = statementFailed(req.session.statements, stmt, err, this.prelude === Prelude.Prepare, this.pstep)
      if (fault === StatementFault.ParseFailed) err = new PgError(stmt.parseError!, req.text)
      lost = fault === StatementFault.Lost
    }
    this.pstep = Step.Complete
    return { err, lost }
  }

  /** The prelude has had all its replies. */
  get preludeDone(): boolean {
    return this.pstep === Step.Complete
  }

  /** At the batch's ReadyForQuery: settles (see statementSettled), after a type lookup its rows wait for. */
  end(): void {
    this.req.finish(this.req.exchange!)
  }

  /** Whether the server lost a statement prepared earlier (see ExtendedRequest.lostStatement). */
  get lost(): boolean {
    return this.req.exchange?.resend === true
  }

  get failure(): Error | null {
    return this.req.exchange?.failure ?? null
  }

  /** The statement's result, once it settled without failing. */
  result(): Result<unknown> {
    return this.outcomeOf!
  }

  /** Made ready to be written again, on whatever connection (see Batch.rewind). */
  reset(): void {
    this.req.detach()
    this.outcomeOf = null
    this.prelude = Prelude.None
    this.pstep = Step.Complete
  }
}
