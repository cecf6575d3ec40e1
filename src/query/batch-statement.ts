import type { RequestContext } from '../connection/request.js'
import { PgError, type PgErrorFields } from '../errors.js'
import { decodeParameterDescription, decodeRowDescription } from '../protocol/backend.js'
import { writeBind, writeDescribe, writeExecute, writeParse, writeSync } from '../protocol/frontend.js'
import { Backend } from '../protocol/message-codes.js'
import type { Writer } from '../protocol/writer.js'
import type { TypeCatalog } from '../types/catalog.js'
import { checkCount, needsTypes, presize, writeParam } from './binder.js'
import { Exchange, noFields, noFormats, noOids, Step, type QuerySettings } from './exchange.js'
import { ExtendedQuery } from './extended-query.js'
import type { Result } from './result.js'
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
 */
export class BatchStatement extends ExtendedQuery {
  owner: BatchOwner | null = null
  prelude = Prelude.None
  /** Where the prelude is in its replies. */
  private pstep = Step.Complete

  constructor(
    /** The statement's position in its batch, from 0. */
    readonly index: number,
    text: string,
    values: readonly unknown[],
    settings: QuerySettings,
    declared: number[] | null,
  ) {
    super(text, values, settings, declared)
  }

  /** The exchange of this statement, once its batch is written. */
  get exchange(): Exchange | null {
    return this.x
  }

  get valuesGiven(): readonly unknown[] {
    return this.values
  }

  /**
   * Decides how the statement goes out on this connection: whether a prelude
   * prepares or describes it first. `created` holds the statements this batch
   * prepares, so a text repeated in the batch is prepared once. True when its
   * Bind must wait for the description (a value whose type must be known,
   * rowMode 'columns').
   */
  plan(ctx: RequestContext, cache: StatementCache | null, tx: object | null, direct: boolean, created: Map<string, Statement>): boolean {
    const x = new Exchange(ctx)
    this.x = x
    this.flags = 0
    const declared = this.extra?.declared ?? null
    const describe = this.describeFirst || needsTypes(this.values, declared ?? noOids)
    if (cache === null || !this.settings.prepare || !cacheableText(this.text)) {
      this.prelude = describe ? Prelude.DescribeUnnamed : Prelude.None
      return describe
    }
    const key = statementKey(this.text, declared)
    let stmt = created.get(key)
    if (stmt !== undefined) this.prelude = Prelude.None
    else if ((stmt = cache.find(key, tx, direct)) !== undefined) {
      if (stmt.state === StatementState.Ready) {
        x.stmt = stmt
        this.prelude = Prelude.None
        return false
      }
      this.prelude = describe ? Prelude.Describe : Prelude.None
    } else {
      stmt = cache.create(key, this.text, declared ?? noOids)
      stmt.preparedIn = tx
      created.set(key, stmt)
      this.prelude = Prelude.Prepare
    }
    x.stmt = stmt
    return describe
  }

  /** Writes the prelude (see Prelude) with its Sync; false when there is none. */
  writePrelude(w: Writer): boolean {
    const stmt = this.x!.stmt
    switch (this.prelude) {
      case Prelude.None:
        return false
      case Prelude.Prepare:
        writeParse(w, stmt!.name, this.text, stmt!.declaredTypes)
        writeDescribe(w, 'S', stmt!.name)
        this.pstep = Step.Parse
        break
      case Prelude.Describe:
        writeDescribe(w, 'S', stmt!.name)
        this.pstep = Step.ParamDesc
        break
      case Prelude.DescribeUnnamed:
        writeParse(w, '', this.text, this.extra?.declared ?? noOids)
        writeDescribe(w, 'S', '')
        this.pstep = Step.Parse
        break
    }
    writeSync(w)
    return true
  }

  /** Bind and Execute (preceded by Parse for the unnamed statement), without a Sync. Throws ParameterError for a value that does not fit. */
  writeMain(w: Writer): void {
    const x = this.x!
    const stmt = x.stmt
    const catalog = this.session.catalog
    if (stmt === null) {
      const declared = this.extra?.declared ?? noOids
      writeParse(w, '', this.text, declared)
      if (this.prelude === Prelude.DescribeUnnamed) this.bindTyped(w, x, '', x.paramTypes, makeShape(x.fields, x.paramTypes, this.settings.view, catalog))
      else this.bindText(w, '', declared)
      writeDescribe(w, 'P', '')
      x.step = Step.Parse
    } else {
      if (stmt.state === StatementState.Ready) this.bindTyped(w, x, stmt.name, stmt.paramTypes!, stmt.shape(this.settings.view, catalog))
      else this.bindText(w, stmt.name, stmt.declaredTypes)
      x.step = Step.Bind
    }
    writeExecute(w, '', 0)
  }

  private bindTyped(w: Writer, x: Exchange, name: string, types: readonly number[], shape: Shape): void {
    checkCount(this.values, types)
    const view = this.settings.view
    presize(w, this.values)
    writeBind(w, '', name, this.values.length, (w, i) => writeParam(w, view, this.values, i, types[i]!), shape.resultFormats)
    x.useShape(shape.resultFormats, shape)
  }

  /** Parameters as untyped text, results in text: the first execution, bound before its description is known (as query() does). */
  private bindText(w: Writer, name: string, declared: readonly number[]): void {
    const view = this.settings.view
    presize(w, this.values)
    writeBind(w, '', name, this.values.length, (w, i) => writeParam(w, view, this.values, i, declared[i] ?? 0), noFormats)
  }

  /** Parameter and column types the description showed and the catalog does not know: looked up before the Bind. */
  unknownTypes(catalog: TypeCatalog, out: number[]): void {
    const x = this.x!
    const types = x.stmt?.paramTypes ?? x.paramTypes
    for (const oid of types) if (!catalog.knows(oid)) out.push(oid)
    if (this.describeFirst) for (const f of x.stmt?.fields ?? x.fields) if (!catalog.knows(f.typeOid)) out.push(f.typeOid)
  }

  /** A reply to the prelude, other than ReadyForQuery and ErrorResponse. */
  preludeReply(type: number, buf: Uint8Array, start: number, end: number): void {
    const x = this.x!
    switch (type) {
      case Backend.ParseComplete:
        if (this.pstep !== Step.Parse) this.violation(type)
        this.pstep = Step.ParamDesc
        return
      case Backend.ParameterDescription:
        if (this.pstep !== Step.ParamDesc) this.violation(type)
        x.paramTypes = decodeParameterDescription(buf, start, end)
        if (x.stmt !== null) x.stmt.paramTypes = x.paramTypes
        this.pstep = Step.StmtDesc
        return
      case Backend.RowDescription:
      case Backend.NoData: {
        if (this.pstep !== Step.StmtDesc) this.violation(type)
        x.describedAs(type === Backend.NoData ? noFields : decodeRowDescription(buf, start, end))
        this.pstep = Step.Complete
        return
      }
      default:
        this.violation(type)
    }
  }

  /**
   * The prelude failed: the statement is forgotten by the cache as a failed
   * Parse would be. Returns the error, and whether the server had lost the
   * statement (nothing ran: the batch may be sent again).
   */
  preludeError(fields: PgErrorFields): { err: PgError; lost: boolean } {
    const x = this.x!
    const stmt = x.stmt
    let err = new PgError(fields, this.text)
    let lost = false
    if (stmt !== null) {
      const fault = statementFailed(this.session.statements, stmt, err, this.prelude === Prelude.Prepare, this.pstep)
      if (fault === StatementFault.ParseFailed) err = new PgError(stmt.parseError!, this.text)
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
    this.finish(this.x!)
  }

  protected override settle(_x: Exchange): void {
    this.owner!.statementSettled()
  }

  protected override halt(x: Exchange): void {
    this.owner!.halt(x.ctx)
  }

  /** Whether the server lost a statement prepared earlier (see ExtendedRequest.lostStatement). */
  get lost(): boolean {
    return this.x?.resend === true
  }

  get failure(): Error | null {
    return this.x?.failure ?? null
  }

  result(): Result<unknown> {
    return this.outcome(this.x!)
  }

  /** Made ready to be written again, on whatever connection (see Batch.rewind). */
  reset(): void {
    this.x = null
    this.flags = 0
    this.prelude = Prelude.None
    this.pstep = Step.Complete
  }
}
