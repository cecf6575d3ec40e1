import type { RequestContext } from '../connection/request.js'
import { ProtocolError } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import type { Exchange } from './exchange.js'
import type { Result } from './result.js'
import { resultOf, type RowSink, type RowSource } from './row-sink.js'

// Rows decoded as they arrive and handed to a consumer (stream(), cursor()):
// they cannot wait for a type lookup, so the statement is described and its
// types learned before it is bound (the policy describedFirst or
// portalPolicy), and a consumer that gives up has the rest of the result dropped.

/** Where decoded rows go, one by one. */
export interface RowConsumer {
  /** Rows follow, in these columns; `ctx` is the connection, for pausing reads. */
  begin(fields: FieldDescription[], ctx: RequestContext): void
  row(row: unknown): void
}

/** Where a cursor's rows go, a batch at a time. */
export interface BatchConsumer extends RowConsumer {
  /** The batch asked for is complete; `last` when the portal is exhausted. */
  batch(last: boolean): void
}

/** The decode plan, unless the statement's is current: described and its types looked up before it was bound, nothing is held. */
function planDecoded(q: RowSource, x: Exchange): void {
  const catalog = q.session.catalog
  if (x.plan === null || x.planVersion !== catalog.version) {
    x.plan = q.settings.view.plan(x.fields, x.formats)
    x.planVersion = catalog.version
  }
}

/** Returned by decode() for a row that failed to decode. */
const FAILED: unique symbol = Symbol('failed')

/** One row decoded; FAILED when a value cannot be (the consumer gets that error, the rest of the result is not worth reading). */
function decode(q: RowSource, x: Exchange, buf: Uint8Array, start: number, end: number): unknown {
  try {
    return x.plan!.row(q.settings.rowMode, buf, start, end)
  } catch (err) {
    if (err instanceof ProtocolError) throw err
    q.giveUp(x, err as Error)
    return FAILED
  }
}

/** stream(): rows one by one (the RowStream pauses reading while its reader lags). */
export class StreamSink<C extends RowConsumer = RowConsumer> implements RowSink {
  readonly streams = true

  constructor(protected readonly consumer: C) {}

  begin(q: RowSource, x: Exchange): void {
    planDecoded(q, x)
    this.consumer.begin(x.fields, x.ctx)
  }

  row(q: RowSource, x: Exchange, buf: Uint8Array, start: number, end: number): void {
    const row = decode(q, x, buf, start, end)
    if (row !== FAILED) this.consumer.row(row)
  }

  complete(): void {}

  outcome(q: RowSource, x: Exchange): Result<unknown> {
    return resultOf(q, x)
  }
}

/**
 * cursor(): rows a batch at a time, from a portal executed with a row limit
 * (see portalPolicy): a stream's rows, and the end of each batch told.
 */
export class CursorSink extends StreamSink<BatchConsumer> {
  suspended(): void {
    this.consumer.batch(false)
  }

  /** The portal is exhausted: the last batch. */
  override complete(): void {
    this.consumer.batch(true)
  }
}
