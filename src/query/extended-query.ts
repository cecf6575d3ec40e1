import { ProtocolError } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import { DISCARD, Exchange, noFormats, Step } from './exchange.js'
import { ColumnBuilder } from '../types/columns.js'
import { ExtendedRequest } from './extended-request.js'
import { allBinary, binaryPlan, unnamedPlan } from './describe-cache.js'
import type { Result } from './result.js'

export type { QueryRowMode, RowMode } from './result.js'

/**
 * query(): the rows collected into one result that settles at ReadyForQuery.
 * A column of a type the catalog does not know yet makes the query keep its
 * rows as bytes until the type has been looked up, so every execution decodes
 * the same type the same way.
 */
export class ExtendedQuery extends ExtendedRequest {
  protected rowsBegin(x: Exchange, fields: FieldDescription[]): void {
    x.fields = fields
    x.step = Step.Rows
    const catalog = this.session.catalog
    const view = this.settings.view
    if (x.plan === null) {
      // Bound before the description was known: a named statement's rows come in text, an unnamed one's as DescribeCache chose.
      if (x.stmt !== null) {
        const shape = x.stmt.shape(view, catalog)
        x.plan = shape.textPlan
        x.planVersion = shape.version
        x.planUnknown = shape.unknown
      } else {
        try {
          x.plan = unnamedPlan(this.session.described, this.text, this.extra?.declared ?? null, fields, x.formats, catalog, view)
        } catch (err) {
          // Its rows cannot be read: they are let pass, and the query fails with why.
          x.failure = err as Error
          this.flags |= DISCARD
          x.plan = view.plan(fields, noFormats)
        }
        x.planVersion = catalog.version
        x.planUnknown = fields.filter((f) => !catalog.knows(f.typeOid)).map((f) => f.typeOid)
      }
    }
    if (x.planVersion === catalog.version && x.planUnknown.length === 0) return
    const missing = fields.filter((f) => !catalog.knows(f.typeOid)).map((f) => f.typeOid)
    if (missing.length > 0) {
      x.typesLookup = this.session.lookupTypes(missing)
      x.held = []
    } else if (x.planVersion !== catalog.version) {
      x.plan = view.plan(fields, x.formats)
      x.planVersion = catalog.version
    }
  }

  /** Columns are typed arrays only for binary results: the statement is described before its first execution is bound. */
  protected override get describeFirst(): boolean {
    return this.settings.rowMode === 'columns'
  }

  protected row(x: Exchange, buf: Uint8Array, start: number, end: number): void {
    if ((this.flags & DISCARD) !== 0) return
    const limits = this.settings.limits
    if (limits !== undefined && !this.withinLimits(x, limits, end - start)) return
    const plan = x.plan!
    const mode = this.settings.rowMode
    try {
      if (mode === 'columns') return (x.columnar ??= new ColumnBuilder(x.fields, x.formats, plan.decoders)).push(buf, start, end)
      const row = plan.keptRow(mode, buf, start, end)
      // Most pipelined queries return one row: an array of exactly one, not push()'s first 16 slots.
      if (x.rows === null) x.rows = [row]
      else x.rows.push(row)
    } catch (err) {
      if (err instanceof ProtocolError) throw err
      // A value that fails to decode fails this query only; the stream stays in step.
      x.failure ??= err as Error
    }
  }

  protected override outcome(x: Exchange): Result<unknown> {
    const result = super.outcome(x)
    if (this.settings.rowMode !== 'columns') return result
    const { columns, nulls } = (x.columnar ?? new ColumnBuilder(x.fields, x.formats, x.plan?.decoders ?? [])).finish()
    result.columns = columns
    result.nulls = nulls
    return result
  }

  /** Decodes the rows held for a type lookup, now that the catalog knows what it could learn. */
  protected override settleAfterLookup(x: Exchange): void {
    const held = x.held!
    x.held = null
    try {
      x.plan = x.formats === allBinary ? binaryPlan(x.fields, this.settings.view) : this.settings.view.plan(x.fields, x.formats)
    } catch (err) {
      x.failure ??= err as Error
    }
    if (x.failure === null) {
      for (const raw of held) {
        try {
          this.row(x, raw, 0, raw.length)
        } catch (err) {
          x.failure ??= err as Error
        }
      }
    }
    this.settle(x)
  }
}
