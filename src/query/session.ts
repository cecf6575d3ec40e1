import type { Request, RequestContext } from '../connection/request.js'
import { PgError } from '../errors.js'
import { Codes } from '../protocol/sql-state-codes.js'
import type { TypeCatalog } from '../types/catalog.js'
import { loadExtraCodecs } from '../types/builtins.js'
import { builtinInfos, type TypeInfo } from '../types/type-info.js'
import type { TypeView } from '../types/view.js'
import { StatementCache } from './statement-cache.js'
import { DescribeCache } from './describe-cache.js'

/**
 * What queries on one connection share: its prepared statements, the type
 * catalog and default view, and the lookups of types met for the first time.
 */
/**
 * Whether the connection reaches the server directly or through a pooler that
 * may hand each transaction to a different server connection. Named statements
 * only survive between Syncs on a direct connection (or a session-mode pooler),
 * or through a pooler that keeps them itself ('keeping': PgBouncer 1.21+ with
 * max_prepared_statements, declared by prepare: 'always'), which prepares a
 * client's statement on whichever server connection runs it.
 */
export type Pooling = 'unknown' | 'direct' | 'pooled' | 'keeping'

/** Whether a statement prepared under an earlier Sync can be bound here without preparing it again. */
export function namedStatementsSurvive(pooling: Pooling): boolean {
  return pooling === 'direct' || pooling === 'keeping'
}

/** Reads the descriptions of the given types (and those they are made of) from the catalog, sending the query with `send`. */
export type TypeLookup = (oids: readonly number[], serverMajor: number, view: TypeView, send: (req: Request) => void) => Promise<TypeInfo[]>

export class Session {
  /**
   * null when statements are not cached (prepare: false, a cache size of 0),
   * or once the server lost a named statement between two Syncs (a
   * transaction-mode pooler): from then on every query uses the unnamed statement.
   */
  statements: StatementCache | null
  pooling: Pooling = 'unknown'
  /** Texts whose unnamed statements may return binary results (see DescribeCache). */
  readonly described = new DescribeCache()
  /** A probe of `pooling` is on its way (see Client.probePooling). */
  probing = false
  /** Type lookups in flight, by OID, so a type is looked up once however many queries meet it. */
  private readonly lookups = new Map<number, Promise<void>>()

  constructor(
    readonly catalog: TypeCatalog,
    readonly view: TypeView,
    prepare: boolean,
    cacheSize: number,
    /** Sends an internal request on this session's connection, behind what is already queued. */
    private readonly send: (req: Request) => void,
    /** The server's major version (for catalog queries that differ between versions). */
    private readonly serverVersion: () => number,
    /**
     * Sends a request again, as its owner sent it the first time (inside the
     * same reservation, or held back behind another holder's).
     */
    readonly resend: (req: Request) => void,
    /** Runs the catalog query for types met for the first time (query/type-lookup.ts, given by the owner: it is a request like any other). */
    private readonly lookup: TypeLookup,
  ) {
    this.statements = prepare && cacheSize > 0 ? new StatementCache(cacheSize) : null
  }

  /**
   * The server did not have a statement this connection prepared (26000), or
   * already had one of its name (42P05): a pooler moved the connection to
   * another server connection between two Syncs. Named statements cannot be
   * relied on here any more.
   */
  namedStatementsLost(): void {
    this.statements = null
    this.pooling = 'pooled'
  }

  /** Watches command tags for statements that drop every prepared statement on the server. */
  commandCompleted(tag: string): void {
    if (this.statements !== null && (tag === 'DISCARD ALL' || tag === 'DEALLOCATE ALL')) this.statements.clear()
  }

  /**
   * Learns the given types (and the types they are made of) from pg_type.
   * Never rejects: a type that cannot be learned stays unknown and is decoded
   * as text, which is what the caller falls back to.
   */
  lookupTypes(oids: readonly number[]): Promise<void> {
    const waits: Promise<void>[] = []
    const needed: number[] = []
    const builtin: number[] = []
    for (const oid of new Set(oids)) {
      if (this.catalog.knows(oid)) continue
      if (builtinInfos().has(oid)) {
        builtin.push(oid)
        continue
      }
      const pending = this.lookups.get(oid)
      if (pending !== undefined) waits.push(pending)
      else needed.push(oid)
    }
    if (needed.length > 0) {
      const lookup: Promise<void> = this.runLookup(needed, this.send).then(() => {
        for (const oid of needed) if (this.lookups.get(oid) === lookup) this.lookups.delete(oid)
      })
      for (const oid of needed) this.lookups.set(oid, lookup)
      waits.push(lookup)
    } else if (builtin.length > 0) waits.push(this.loadCodecs(builtin))
    return waits.length === 1 ? waits[0]! : Promise.all(waits).then(() => undefined)
  }

  /**
   * Looks types up at once, ahead of everything queued, for a request that
   * holds the writer and cannot bind its parameters without them.
   */
  lookupTypesAhead(oids: readonly number[], ctx: RequestContext): Promise<void> {
    const unique = [...new Set(oids)]
    const needed = unique.filter((oid) => !builtinInfos().has(oid))
    return needed.length > 0 ? this.runLookup(needed, (req) => ctx.writeAhead(req)) : this.loadCodecs(unique)
  }

  /**
   * The rarer built-in codecs, loaded for built-in types met for the first
   * time (and for types learned from pg_type, which may be made of them).
   * Never rejects: if they cannot load, those types are read as text.
   */
  private loadCodecs(oids: readonly number[]): Promise<void> {
    return loadExtraCodecs().catch(() => this.catalog.giveUp(oids))
  }

  private runLookup(oids: number[], send: (req: Request) => void): Promise<void> {
    // A type learned from pg_type may be made of the rarer built-in types, or be a composite or a range: their codecs load beside it.
    const codecs = loadExtraCodecs().catch(() => undefined)
    return this.lookup(oids, this.serverVersion(), this.catalog.view(), send).then(
      (infos) => {
        this.catalog.learn(infos)
        const found = new Set(infos.map((i) => i.oid))
        this.catalog.giveUp(oids.filter((o) => !found.has(o)))
      },
      (err: unknown) => {
        // In a failed transaction the lookup cannot run; it is tried again the
        // next time the type is met. Any other failure is final for this session.
        if (!(err instanceof PgError && err.code === Codes.InFailedSqlTransaction)) this.catalog.giveUp(oids)
      },
    ).then(() => codecs)
  }
}

/** The session a connection carries for the query layer (see Client): what every request written on it shares. */
export function sessionOf(ctx: RequestContext): Session {
  return ctx.attachment as Session
}

