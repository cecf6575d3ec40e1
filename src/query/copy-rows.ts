import type { RequestContext } from '../connection/request.js'
import type { CopyDecoder } from '../copy/format.js'
import { ProtocolError } from '../errors.js'
import type { CopyResponse, FieldDescription } from '../protocol/backend.js'
import type { CopyOutSink } from './copy-out.js'
import type { RowConsumer } from './consumer-sinks.js'

/**
 * copyToRows(): decodes the data of a COPY TO STDOUT into rows, in place in
 * the socket's buffers, and hands them to a consumer (a RowStream, which pauses reading
 * while its consumer lags).
 */
export class CopyRowsSink implements CopyOutSink {
  private decoder: CopyDecoder | null = null
  private columns: FieldDescription[] = []
  private readonly out: unknown[] = []

  constructor(private readonly stream: RowConsumer) {}

  /** The columns (described before the COPY is sent) and their decoder. */
  prepare(columns: FieldDescription[], decoder: CopyDecoder): void {
    this.columns = columns
    this.decoder = decoder
  }

  begin(response: CopyResponse, ctx: RequestContext): void {
    const decoder = this.decoder
    if (decoder === null) throw new ProtocolError('COPY data arrived before its columns were described')
    if ((response.format === 1) !== (decoder.format === 'binary')) {
      throw new ProtocolError(`server started a ${response.format === 1 ? 'binary' : 'text'} COPY where ${decoder.format} was asked for`)
    }
    if (response.columnFormats.length !== this.columns.length) {
      throw new ProtocolError(`server's COPY has ${response.columnFormats.length} columns where the query described ${this.columns.length}`)
    }
    this.stream.begin(this.columns, ctx)
  }

  data(buf: Uint8Array, start: number, end: number): void {
    const out = this.out
    const n = this.decoder!.push(buf, start, end, out)
    for (let i = 0; i < n; i++) this.stream.row(out[i])
    out.length = 0
  }

  chunkEnd(): void {}

  end(): void {
    this.decoder!.finish()
  }

  fields(): FieldDescription[] {
    return this.columns
  }

  settled(): void {}
}
