import type { RequestContext } from '../connection/request.js'
import { ProtocolError, type PgErrorFields } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import type { Exchange } from './exchange.js'
import type { Result } from './result.js'
import { resultOf, type RowSink, type RowSource } from './row-sink.js'

/** Where queryRaw() passes the server's messages, undecoded. */
export interface MessageConsumer {
  /** The result formats to ask for, by column type. */
  formats(fields: readonly FieldDescription[]): number[]
  /** Messages follow; `ctx` is the connection, for pausing reads. */
  begin(ctx: RequestContext): void
  /** One whole message, its body [start, end) in buf and its 5 header bytes just before. */
  message(buf: Uint8Array, start: number, end: number): void
  /** The server's ErrorResponse for the query. */
  error(fields: PgErrorFields): void
  /** The socket chunk was processed (or the query is over): write out what was gathered. */
  chunkEnd(): void
}

/**
 * queryRaw(): RowDescription (of the portal, so it carries the formats: see
 * rawPolicy), DataRows and CommandComplete or the ErrorResponse, passed on as
 * the server sent them.
 */
export class RawSink implements RowSink {
  readonly streams = true
  readonly chunkEnd: () => void

  constructor(private readonly consumer: MessageConsumer) {
    this.chunkEnd = () => consumer.chunkEnd()
  }

  formats(fields: readonly FieldDescription[]): number[] {
    return this.consumer.formats(fields)
  }

  begin(_q: RowSource, x: Exchange): void {
    this.consumer.begin(x.ctx)
  }

  /** The portal's RowDescription, with the formats, is part of what is passed on. */
  description(buf: Uint8Array, start: number, end: number): void {
    this.consumer.message(buf, start, end)
  }

  row(_q: RowSource, x: Exchange, buf: Uint8Array, start: number, end: number): void {
    // Passed on undecoded, but never a row that does not fit the description.
    const n = end - start >= 2 ? (buf[start]! << 8) | buf[start + 1]! : -1
    if (n !== x.fields.length) throw new ProtocolError(`server sent a DataRow with ${n} columns where the RowDescription has ${x.fields.length}`)
    this.consumer.message(buf, start, end)
  }

  complete(_q: RowSource, _x: Exchange, buf: Uint8Array, start: number, end: number): void {
    this.consumer.message(buf, start, end)
  }

  errorResponse(fields: PgErrorFields): void {
    this.consumer.error(fields)
  }

  outcome(q: RowSource, x: Exchange): Result<unknown> {
    return resultOf(q, x)
  }
}
