import type { Writer } from '../protocol/writer.js'
import { RowPlan, type ColumnInfo } from './row-plan.js'
import { textDecoderFor, type Decoder } from './text-decoders.js'
import { writeTextParam } from './text-params.js'

/**
 * The seam between queries and values: which format to ask for per column, how
 * to decode a column, how to encode a parameter of a known type. Everything the
 * query layer knows of types goes through here.
 */
export class TypeRegistry {
  /** Result format to request for a column of this type: 0 text, 1 binary. */
  resultFormat(_oid: number): 0 | 1 {
    return 0
  }

  /** Parameter format for a parameter of this type. */
  paramFormat(_oid: number): 0 | 1 {
    return 0
  }

  decoder(oid: number, format: number): Decoder {
    if (format !== 0) throw new Error(`no binary decoder for type ${oid}`)
    return textDecoderFor(oid)
  }

  /** A decode plan for rows of these columns in these formats (one format for all, or one each). */
  plan(columns: readonly ColumnInfo[], formats: ArrayLike<number>): RowPlan {
    const decoders = columns.map((c, i) => this.decoder(c.typeOid, formats.length === 0 ? 0 : formats.length === 1 ? formats[0]! : formats[i]!))
    return new RowPlan(columns, decoders)
  }

  /** Writes parameter `index` (1-based) for a parameter the server typed as `oid` (0 when unknown). */
  writeParam(w: Writer, value: unknown, _oid: number, index: number): void {
    writeTextParam(w, value, index)
  }
}

export const defaultRegistry = new TypeRegistry()
