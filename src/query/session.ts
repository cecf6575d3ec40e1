import type { TypeRegistry } from '../types/registry.js'
import { StatementCache } from './statement-cache.js'

/** What queries on one connection share: its prepared statements and the type registry. */
export class Session {
  /** null when statements are not cached (prepare: false, or a cache size of 0). */
  readonly statements: StatementCache | null

  constructor(
    readonly registry: TypeRegistry,
    prepare: boolean,
    cacheSize: number,
  ) {
    this.statements = prepare && cacheSize > 0 ? new StatementCache(cacheSize) : null
  }

  /** Watches command tags for statements that drop every prepared statement on the server. */
  commandCompleted(tag: string): void {
    if (this.statements !== null && (tag === 'DISCARD ALL' || tag === 'DEALLOCATE ALL')) this.statements.clear()
  }
}
