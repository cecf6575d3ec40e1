import { ProtocolError } from '../errors.js'
import { ColumnBuilder } from '../types/columns.js'
import { unnamedPlan } from './describe-cache.js'
import { noFormats, type Exchange } from './exchange.js'
import { parseCommandTag, type Field, type QueryRowMode, type Result } from './result.js'
import { resultOf, type RowSink, type RowSource } from './row-sink.js'
import { settleOwn, type OwnPromise } from './settling-request.js'

export type { QueryRowMode, RowMode } from './result.js'

// query(): the rows collected into one result that settles at ReadyForQuery.
// A column of a type the catalog does not know yet makes the query keep its
// rows as bytes until the type has been looked up (x.held, replayed by the
// exchange), so every execution decodes the same type the same way.

/**
 * The decode plan of a collected result, once its columns are known (for
 * collect, columns, shared reads and batches alike): the statement's, unless
 * the catalog has learned types since, in which case rows are held while the
 * types still unknown are looked up.
 */
export function planCollected(q: RowSource, x: Exchange): void {
  const fields = x.fields
  const catalog = q.session.catalog
  const view = q.settings.view
  if (x.plan === null) {
    // Bound before the description was known: a named statement's rows come in text, an unnamed one's as DescribeCache chose.
    if (x.stmt !== null) {
      const shape = x.stmt.shape(view, catalog)
      x.plan = shape.textPlan
      x.planVersion = shape.version
      x.planUnknown = shape.unknown
    } else {
      try {
        x.plan = unnamedPlan(q.session.described, q.text, q.declared, fields, x.formats, catalog, view)
      } catch (err) {
        // Its rows cannot be read: they are let pass, and the query fails with why.
        x.failure = err as Error
        q.dropRows()
        x.plan = view.plan(fields, noFormats)
      }
      x.planVersion = catalog.version
      x.planUnknown = fields.filter((f) => !catalog.knows(f.typeOid)).map((f) => f.typeOid)
    }
  }
  if (x.planVersion === catalog.version && x.planUnknown.length === 0) return
  const missing = fields.filter((f) => !catalog.knows(f.typeOid)).map((f) => f.typeOid)
  if (missing.length > 0) {
    x.typesLookup = q.session.lookupTypes(missing)
    x.held = []
  } else if (x.planVersion !== catalog.version) {
    x.plan = view.plan(fields, x.formats)
    x.planVersion = catalog.version
  }
}

/**
 * One row decoded and kept in x.rows. The exchange calls this directly for
 * the default sink (see ExtendedRequest.deliver): the hot path of query().
 */
export function keepRow(x: Exchange, mode: QueryRowMode, buf: Uint8Array, start: number, end: number): void {
  try {
    const row = x.plan!.keptRow(mode, buf, start, end)
    // Most pipelined queries return one row: an array of exactly one, not push()'s first 16 slots.
    if (x.rows === null) x.rows = [row]
    else x.rows.push(row)
  } catch (err) {
    if (err instanceof ProtocolError) throw err
    // A value that fails to decode fails this query only; the stream stays in step.
    x.failure ??= err as Error
  }
}

/** Rows as objects, arrays or lazy rows (rowMode), kept in the result. */
export class CollectSink implements RowSink {
  readonly streams = false
  readonly collects = true

  begin(q: RowSource, x: Exchange): void {
    planCollected(q, x)
  }

  row(q: RowSource, x: Exchange, buf: Uint8Array, start: number, end: number): void {
    keepRow(x, q.settings.rowMode, buf, start, end)
  }

  complete(): void {}

  outcome(q: RowSource, x: Exchange): Result<unknown> {
    return resultOf(q, x)
  }
}

/** Every collected query's sink: it keeps nothing of its own (the rows are in the exchange). */
export const collectSink = new CollectSink()

/** rowMode 'columns': each column in one typed array (see ColumnBuilder), described before the first execution so it comes in binary. */
export class ColumnsSink implements RowSink {
  readonly streams = false
  readonly collects = true

  begin(q: RowSource, x: Exchange): void {
    planCollected(q, x)
  }

  row(_q: RowSource, x: Exchange, buf: Uint8Array, start: number, end: number): void {
    try {
      ;(x.columnar ??= new ColumnBuilder(x.fields, x.formats, x.plan!.decoders)).push(buf, start, end)
    } catch (err) {
      if (err instanceof ProtocolError) throw err
      x.failure ??= err as Error
    }
  }

  complete(): void {}

  outcome(q: RowSource, x: Exchange): Result<unknown> {
    const result = resultOf(q, x)
    const { columns, nulls } = (x.columnar ?? new ColumnBuilder(x.fields, x.formats, x.plan?.decoders ?? [])).finish()
    result.columns = columns
    result.nulls = nulls
    return result
  }
}

export const columnsSink = new ColumnsSink()

/**
 * @internal Rows collected as query() collects them, into an outcome its
 * caller makes (pipegres/postgres's result array, say) instead of a Result:
 * the request then resolves with what finish() returns, and with no Result
 * and timing made only to be taken apart. A query's own instance may carry
 * what the query needs to make it.
 */
export abstract class CollectInto<T> implements RowSink<T> {
  // On the prototype: one instance per query, fields of its own cost bytes each.
  declare readonly streams: false
  declare readonly collects: true

  /** The key under which an OwnPromise (see own) holds its resolve function: here, not a name of its own on the main entry. */
  static readonly settleOwn: typeof settleOwn = settleOwn

  begin(q: RowSource, x: Exchange): void {
    planCollected(q, x)
  }

  row(q: RowSource, x: Exchange, buf: Uint8Array, start: number, end: number): void {
    keepRow(x, q.settings.rowMode, buf, start, end)
  }

  complete(): void {}

  outcome(_q: RowSource, x: Exchange): T {
    const { command, rowCount } = parseCommandTag(x.tag)
    return this.finish(x.rows ?? [], command, rowCount, x.fields)
  }

  /** The outcome of the rows (the array is the query's own, for the taking), the command, its row count and the columns. */
  abstract finish(rows: unknown[], command: string, rowCount: number | null, fields: Field[]): T

  /** A promise of its own the request settles, instead of making one (see OwnPromise); null: the request makes one. */
  get own(): OwnPromise<T> | null {
    return null
  }
}
Object.defineProperties(CollectInto.prototype, { streams: { value: false }, collects: { value: true } })
