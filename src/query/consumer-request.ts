import type { RequestContext } from '../connection/request.js'
import { ProtocolError, type PgError, type PgErrorFields } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import { DISCARD, EXECUTING, Step, type Exchange, type QuerySettings } from './exchange.js'
import { ExtendedRequest } from './extended-request.js'

/**
 * A request whose rows go to a consumer as they arrive (stream(), cursor(),
 * queryRaw()) instead of into its result: they cannot wait for a type lookup,
 * so the statement is described and its types learned before it is bound, and
 * a consumer that gives up makes the rest of the result be dropped.
 */
export abstract class ConsumerRequest extends ExtendedRequest {
  protected override get describeFirst(): boolean {
    return true
  }

  protected override stop(x: Exchange): void {
    this.flags |= DISCARD
    this.halt(x)
  }

  protected override failed(x: Exchange, fields: PgErrorFields, err: PgError): void {
    // A decoding failure or a limit that made the query stop early is what the consumer gets.
    super.failed(x, fields, err)
    this.flags &= ~EXECUTING
  }
}

/** Where decoded rows go, one by one. */
export interface RowConsumer {
  /** Rows follow, in these columns; `ctx` is the connection, for pausing reads. */
  begin(fields: FieldDescription[], ctx: RequestContext): void
  row(row: unknown): void
}

/** Rows decoded as they arrive and handed to a consumer. */
export abstract class DecodingRequest<C extends RowConsumer> extends ConsumerRequest {
  constructor(text: string, values: readonly unknown[], settings: QuerySettings, declared: number[] | null, protected readonly consumer: C) {
    super(text, values, settings, declared)
  }

  protected rowsBegin(x: Exchange, fields: FieldDescription[]): void {
    x.fields = fields
    x.step = Step.Rows
    // Described and its types looked up before it was bound: nothing to hold.
    const catalog = this.session.catalog
    if (x.plan === null || x.planVersion !== catalog.version) {
      x.plan = this.settings.view.plan(fields, x.formats)
      x.planVersion = catalog.version
    }
    this.consumer.begin(fields, x.ctx)
  }

  protected row(x: Exchange, buf: Uint8Array, start: number, end: number): void {
    if ((this.flags & DISCARD) !== 0) return
    const limits = this.settings.limits
    if (limits !== undefined && !this.withinLimits(x, limits, end - start)) return
    const plan = x.plan!
    let row: unknown
    try {
      row = plan.row(this.settings.rowMode, buf, start, end)
    } catch (err) {
      if (err instanceof ProtocolError) throw err
      // The consumer gets this error; the rest of the result is not worth reading.
      x.failure ??= err as Error
      this.flags |= DISCARD
      this.halt(x)
      return
    }
    this.consumer.row(row)
  }
}

/** stream(): rows one by one, reading paused while the consumer lags. */
export class StreamQuery extends DecodingRequest<RowConsumer> {}
