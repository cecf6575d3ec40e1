import type { Writer } from '../protocol/writer.js'
import { builtinCodecs, extraCodecs } from './builtins.js'
import type { TypeInfo } from './type-info.js'
import { CodecError, type Codec, type Decoder, type ResolvedTypeOptions } from './codec.js'
import { arrayCodec } from './codecs/array.js'
import { enumCodec, unknownTypeCodec } from './fallback.js'
import { RowPlan, type ColumnInfo } from './row-plan.js'

const RECORD_OID = 2249

/**
 * A catalog seen through one set of type options: resolves OIDs to codecs,
 * building codecs of arrays, domains, enums, composites and ranges from their
 * parts, and caching them until the catalog learns something new.
 */
/** What a view reads of its catalog (TypeCatalog, which makes the views: named here so that neither file imports the other). */
export interface TypeSource {
  /** Bumped whenever what the catalog knows changes: cached codecs are dropped then. */
  readonly version: number
  info(oid: number): TypeInfo | undefined
  userCodec(oid: number, info: TypeInfo | undefined): Codec | undefined
}

export class TypeView {
  private readonly builtins: ReadonlyMap<number, Codec>
  private readonly cache = new Map<number, Codec | null>()
  private version = -1

  constructor(
    private readonly catalog: TypeSource,
    readonly options: ResolvedTypeOptions,
  ) {
    this.builtins = builtinCodecs(options)
  }

  /** The codec for a type, or undefined when the type is unknown (then text in, strings out). */
  get(oid: number): Codec | undefined {
    if (this.version !== this.catalog.version) {
      this.cache.clear()
      this.version = this.catalog.version
    }
    let codec = this.cache.get(oid)
    if (codec === undefined) {
      // Mark first: a composite that contains an array of itself cannot exist,
      // but a malformed catalog answer must not recurse forever.
      this.cache.set(oid, null)
      codec = this.build(oid)
      this.cache.set(oid, codec)
    }
    return codec ?? undefined
  }

  /** The codec to use, with the text fallback for unknown types. */
  codec(oid: number): Codec {
    return this.get(oid) ?? unknownTypeCodec
  }

  private build(oid: number): Codec | null {
    const info = this.catalog.info(oid)
    const user = this.catalog.userCodec(oid, info)
    if (user !== undefined) return user
    const builtin = this.builtins.get(oid)
    if (builtin !== undefined) return builtin
    if (info === undefined) return null
    switch (info.kind) {
      case 'A': {
        const elem = this.codec(info.elem)
        const delimiter = this.catalog.info(info.elem)?.delimiter ?? ','
        return arrayCodec(elem, info.elem, delimiter)
      }
      case 'd':
        return this.get(info.base) ?? null
      case 'e':
        return enumCodec(info.name)
    }
    // Learning a type from pg_type loads these too (see Session.lookupTypes): null only before.
    const extra = extraCodecs()
    if (extra === null) return null
    switch (info.kind) {
      case 'c':
        return extra.compositeCodec(
          info.name,
          info.attributes.map((a) => ({ name: a.name, oid: a.oid, codec: this.codec(a.oid) })),
        )
      case 'r':
        return extra.rangeCodec(this.codec(info.subtype), info.name)
      case 'm':
        return extra.multirangeCodec(this.codec(info.subtype), info.name)
      case 'p':
        return oid === RECORD_OID ? extra.recordCodec((o) => this.get(o)) : null
      default:
        return null
    }
  }

  /** 1 when results of this type are best requested in binary. */
  resultFormat(oid: number): 0 | 1 {
    const c = this.get(oid)
    return c !== undefined && c.decodeBinary !== undefined && c.preferBinary !== false ? 1 : 0
  }

  decoder(oid: number, format: number): Decoder {
    const c = this.codec(oid)
    if (format === 0) return c.decodeText
    if (c.decodeBinary === undefined) throw new CodecError(`no binary decoder for type ${c.name}`)
    return c.decodeBinary
  }

  /** A decode plan for rows of these columns in these formats (none: all text; one: for all; else one each). */
  plan(columns: readonly ColumnInfo[], formats: ArrayLike<number>): RowPlan {
    const decoders = columns.map((c, i) => this.decoder(c.typeOid, formats.length === 0 ? 0 : formats.length === 1 ? formats[0]! : formats[i]!))
    return new RowPlan(columns, decoders)
  }

  /** Result formats for these columns: empty when all are text (the shortest Bind). */
  resultFormats(columns: readonly ColumnInfo[]): number[] {
    const formats = columns.map((c) => this.resultFormat(c.typeOid))
    return formats.some((f) => f !== 0) ? formats : []
  }

  /**
   * Writes the bytes of one non-null parameter of type `oid` and returns the
   * format used: binary when the codec can, text otherwise. Throws CodecError.
   */
  writeParam(w: Writer, value: unknown, oid: number): 0 | 1 {
    const c = this.codec(oid)
    if (c.encodeBinary !== undefined && c.encodeBinary(w, value)) return 1
    w.str(c.encodeText(value))
    return 0
  }

  /** The name of a type for messages. */
  typeName(oid: number): string {
    return this.catalog.info(oid)?.name ?? this.get(oid)?.name ?? `type ${oid}`
  }
}
