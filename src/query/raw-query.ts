import type { RequestContext } from '../connection/request.js'
import type { PgError, PgErrorFields } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import { writeDescribe, writeExecuteSync } from '../protocol/frontend.js'
import { ProtocolError } from '../errors.js'
import type { Writer } from '../protocol/writer.js'
import { ConsumerRequest } from './consumer-request.js'
import { DISCARD, Step, type Exchange } from './exchange.js'
import type { QuerySettings } from './exchange.js'

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
 * queryRaw(): RowDescription (of the portal, so it carries the formats),
 * DataRows and CommandComplete or the ErrorResponse, passed on as the server
 * sent them.
 */
export class RawQuery extends ConsumerRequest {
  constructor(text: string, values: readonly unknown[], settings: QuerySettings, declared: number[] | null, private readonly consumer: MessageConsumer) {
    super(text, values, settings, declared)
  }

  /** See Request.chunkEnd. */
  chunkEnd(): void {
    this.consumer.chunkEnd()
  }

  protected override resultFormats(fields: readonly FieldDescription[]): number[] {
    return this.consumer.formats(fields)
  }

  protected override writeTail(w: Writer): void {
    writeDescribe(w, 'P', '')
    writeExecuteSync(w)
  }

  /** The portal is described: its RowDescription, with the formats, is part of what is passed on. */
  protected override bound(x: Exchange): void {
    x.step = Step.PortalDesc
  }

  protected override portalDescription(buf: Uint8Array, start: number, end: number): void {
    this.consumer.message(buf, start, end)
  }

  protected rowsBegin(x: Exchange, fields: FieldDescription[]): void {
    x.fields = fields
    x.step = Step.Rows
    this.consumer.begin(x.ctx)
  }

  protected row(x: Exchange, buf: Uint8Array, start: number, end: number): void {
    if ((this.flags & DISCARD) !== 0) return
    // Passed on undecoded, but never a row that does not fit the description.
    const n = end - start >= 2 ? (buf[start]! << 8) | buf[start + 1]! : -1
    if (n !== x.fields.length) throw new ProtocolError(`server sent a DataRow with ${n} columns where the RowDescription has ${x.fields.length}`)
    this.consumer.message(buf, start, end)
  }

  protected override completed(_x: Exchange, buf: Uint8Array, start: number, end: number): void {
    if ((this.flags & DISCARD) === 0) this.consumer.message(buf, start, end)
  }

  protected override failed(x: Exchange, fields: PgErrorFields, err: PgError): void {
    if ((this.flags & DISCARD) === 0) this.consumer.error(fields)
    super.failed(x, fields, err)
  }

  /** Its consumer saw the error already: the query cannot be sent again unseen. */
  protected override get resendable(): boolean {
    return false
  }

  /** What was gathered is written out before the caller hears the end. */
  protected override finish(x: Exchange): void {
    this.consumer.chunkEnd()
    this.settle(x)
  }
}
