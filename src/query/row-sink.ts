import type { RequestContext } from '../connection/request.js'
import type { PgErrorFields } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'

export const enum SinkKind {
  /** stream(): rows one by one, reading paused while the consumer lags. */
  Stream = 1,
  /** cursor(): the portal executed a batch at a time, the writer held throughout. */
  Cursor = 2,
  /** queryRaw(): the server's messages passed on undecoded. */
  Raw = 3,
}

/**
 * Where the rows of a query go instead of into its result. The query keeps
 * the protocol (and the promise that settles at ReadyForQuery); the sink
 * decides what the consumer sees and when reading pauses.
 */
export interface RowSink {
  readonly kind: SinkKind
  /** Cursor: rows per Execute. */
  readonly batchSize: number
  /** Raw: the result formats to ask for, by column type. */
  formats(fields: readonly FieldDescription[]): number[]
  /** Rows follow, in these columns; `ctx` is the connection, for pausing reads. */
  begin(fields: FieldDescription[], ctx: RequestContext): void
  /** Stream and cursor: one decoded row. */
  row(row: unknown): void
  /** Cursor: the batch asked for is complete; `last` when the portal is exhausted. */
  batch(last: boolean): void
  /** Raw: one whole message, its body [start, end) in buf and its 5 header bytes just before. */
  message(buf: Uint8Array, start: number, end: number): void
  /** Raw: the server's ErrorResponse for the query. */
  error(fields: PgErrorFields): void
  /** Raw: the socket chunk was processed (or the query is over): write out what was gathered. */
  chunkEnd(): void
}
