import type { PgNotice } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import { copyBytes } from '../protocol/reader.js'
import { ColumnBuilder } from '../types/columns.js'
import type { RowPlan } from '../types/row-plan.js'
import { planCollected } from './collect-sink.js'
import type { Exchange, QuerySettings } from './exchange.js'
import { ExtendedRequest } from './extended-request.js'
import { noNotices, parseCommandTag, type QueryRowMode, type Result } from './result.js'
import { describedFirst, runToEnd, type RowSink, type RowSource } from './row-sink.js'
import { timingNow } from './timing.js'

// One execution of a read whose result several callers share (the coalesce
// option, see queryable/coalesce.ts). Rows stay as the server's DataRow bytes
// and every caller decodes them for itself: each gets objects, arrays and
// Buffers of its own, so one caller changing its result never changes
// another's, and decoding costs each caller what its own query would have.
// Copying the rows once and decoding per caller measured faster than
// decoding once and deep-copying the values (structuredClone) for the others.

/** What a shared execution ended with, for each of its callers to make a result of its own. */
export class SharedOutcome {
  constructor(
    private readonly rows: readonly Uint8Array[],
    private readonly plan: RowPlan | null,
    private readonly fields: FieldDescription[],
    private readonly formats: number[],
    private readonly rowMode: QueryRowMode,
    private readonly tag: string,
    private readonly notices: readonly PgNotice[],
    private readonly written: number,
    private readonly firstByte: number,
  ) {}

  /**
   * A result of its own for a caller that issued its query at `queued`. Its
   * timing is the shared execution's, never earlier than the caller's own
   * call. Throws what a value that fails to decode throws (a CodecError).
   */
  resultFor(queued: number): Result<unknown> {
    const { command, rowCount } = parseCommandTag(this.tag)
    const written = Math.max(this.written, queued)
    const result: Result<unknown> = {
      rows: [],
      rowCount,
      command,
      fields: this.fields,
      notices: this.notices.length === 0 ? noNotices : this.notices.map((n) => ({ ...n })),
      timing: timingNow(queued, written, Math.max(this.firstByte, written)),
    }
    const raw = this.rows
    if (this.rowMode === 'columns') {
      const b = new ColumnBuilder(this.fields, this.formats, this.plan?.decoders ?? [])
      for (const r of raw) b.push(r, 0, r.length)
      const { columns, nulls } = b.finish()
      result.columns = columns
      result.nulls = nulls
      return result
    }
    if (raw.length === 0) return result
    const plan = this.plan!
    const rows = new Array<unknown>(raw.length)
    for (let i = 0; i < raw.length; i++) rows[i] = plan.row(this.rowMode, raw[i]!, 0, raw[i]!.length)
    result.rows = rows
    return result
  }
}

/** Told once when a shared execution is over: its outcome, or the error every caller fails with. */
export type SharedDone = (outcome: SharedOutcome | null, err: Error | null) => void

/**
 * query()'s sink for a read shared by several callers: it keeps its rows as
 * bytes and reports its end to `done` instead of settling a promise of its
 * own (its callers have theirs, each with its own signal and timeout).
 */
export class SharedSink implements RowSink<SharedOutcome> {
  readonly streams = false
  /** Rows are copied as they arrive: nothing keeps views of the socket's reads. */
  readonly copiesRows = true

  constructor(private readonly done: SharedDone) {}

  begin(q: RowSource, x: Exchange): void {
    planCollected(q, x)
  }

  row(_q: RowSource, x: Exchange, buf: Uint8Array, start: number, end: number): void {
    const row = copyBytes(buf, start, end)
    if (x.rows === null) x.rows = [row]
    else x.rows.push(row)
  }

  complete(): void {}

  outcome(q: RowSource, x: Exchange): SharedOutcome {
    const rows = (x.rows ?? []) as Uint8Array[]
    return new SharedOutcome(rows, x.plan, x.fields, x.formats, q.settings.rowMode, x.tag, x.notices ?? noNotices, x.written.at, x.firstByte)
  }

  ended(outcome: SharedOutcome | null, err: Error | null): void {
    this.done(outcome, err)
  }
}

/** The request of a shared read: described first for rowMode 'columns', as query() is. */
export function sharedRead(text: string, values: readonly unknown[], settings: QuerySettings, declared: number[] | null, done: SharedDone): ExtendedRequest<SharedOutcome> {
  return new ExtendedRequest(text, values, settings, declared, new SharedSink(done), settings.rowMode === 'columns' ? describedFirst : runToEnd)
}
