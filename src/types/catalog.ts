import { defaultTypeOptions, typeOptionsKey, type Codec, type ResolvedTypeOptions, type TypeOptions } from './codec.js'
import { customCodec, type CustomType } from './custom.js'
import { unknownTypeCodec } from './fallback.js'
import { awaitsCodec, builtinsEpoch } from './builtins.js'
import { builtinInfos, type TypeInfo } from './type-info.js'
import { TypeView } from './view.js'

/**
 * Everything a client (or a pool) knows about the types of one database: the
 * built-in types, the types learned from pg_type as queries meet them, and the
 * codecs the application registered. Views over it (one per set of type
 * options) turn OIDs into codecs. Never global: two clients can decode the
 * same type differently.
 */
export class TypeCatalog {
  private own = 0
  private readonly learned = new Map<number, TypeInfo>()
  private readonly userByOid = new Map<number, Codec>()
  private readonly userByName = new Map<string, Codec>()
  private readonly views = new Map<string, TypeView>()
  /** OIDs a lookup could not resolve (not in pg_type, or the lookup failed), with the version it failed at. */
  private readonly failed = new Map<number, number>()

  /**
   * textOnly: every type is treated as one without a codec (text results, the
   * string PostgreSQL prints), so nothing is ever looked up in pg_type. For
   * layers that convert values themselves (pipegres/pg applies pg's parsers).
   */
  constructor(
    readonly options: ResolvedTypeOptions = defaultTypeOptions,
    readonly textOnly = false,
  ) {}

  /** Bumped whenever what the catalog knows changes (here, or the built-in codecs loaded since); views and statements rebuild from it. */
  get version(): number {
    return this.own + builtinsEpoch
  }

  info(oid: number): TypeInfo | undefined {
    return builtinInfos().get(oid) ?? this.learned.get(oid)
  }

  /** True when decoding `oid` needs nothing more: from the server, or a codec still to load (see builtins.ts). */
  knows(oid: number): boolean {
    if (oid === 0 || this.textOnly || this.userByOid.has(oid)) return true
    if (builtinInfos().has(oid)) return !awaitsCodec(oid) || this.failed.has(oid)
    return this.learned.has(oid) || this.failed.has(oid)
  }

  userCodec(oid: number, info: TypeInfo | undefined): Codec | undefined {
    if (this.textOnly) return unknownTypeCodec
    const byOid = this.userByOid.get(oid)
    if (byOid !== undefined || info === undefined) return byOid
    return this.userByName.get(`${info.schema}.${info.name}`) ?? this.userByName.get(info.name)
  }

  /** Adds what a catalog lookup found. */
  learn(infos: readonly TypeInfo[]): void {
    for (const info of infos) {
      this.learned.set(info.oid, info)
      this.failed.delete(info.oid)
    }
    this.own++
  }

  /** Remembers that these OIDs could not be resolved, so they are not looked up again and again. */
  giveUp(oids: readonly number[]): void {
    for (const oid of oids) this.failed.set(oid, this.version)
  }

  /** Forgets failed lookups (after a failure caused by the transaction state, worth retrying later). */
  retryFailed(): void {
    if (this.failed.size > 0) {
      this.failed.clear()
      this.own++
    }
  }

  /** Registers an application codec, by OID or by (optionally schema-qualified) name. */
  register(custom: CustomType): void {
    const codec = customCodec(custom)
    if (custom.oid !== undefined) this.userByOid.set(custom.oid, codec)
    if (custom.name !== undefined) this.userByName.set(custom.name, codec)
    this.own++
  }

  /** The view for a set of options (cached: only a handful of combinations exist). */
  view(options: TypeOptions = {}): TypeView {
    const resolved: ResolvedTypeOptions = { ...this.options, ...definedOnly(options) }
    const key = typeOptionsKey(resolved)
    let view = this.views.get(key)
    if (view === undefined) {
      view = new TypeView(this, resolved)
      this.views.set(key, view)
    }
    return view
  }
}

function definedOnly(o: TypeOptions): TypeOptions {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v
  return out as TypeOptions
}
