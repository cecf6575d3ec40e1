import * as orm from 'drizzle-orm'
import { createTableRelationsHelpers, DefaultLogger, extractTablesRelationalConfig, type DrizzleConfig, type Logger, type RelationalSchemaConfig, type TablesRelationalConfig } from 'drizzle-orm'
import { readMigrationFiles, type MigrationConfig } from 'drizzle-orm/migrator'
import { PgDatabase, PgDialect, type PgSession } from 'drizzle-orm/pg-core'
import { ArgumentError, type Client, type Pool, type QueryOptions, type ReservedClient } from '../../index.js'
import { PipegresSession, type PipegresQueryResultHKT, type SessionOptions } from './session.js'

export { PipegresSession, PipegresTransaction, PipegresPreparedQuery, type PipegresQueryResultHKT } from './session.js'

export type PipegresDrizzleClient = Pool | Client | ReservedClient

export interface PipegresDrizzleConfig<TSchema extends Record<string, unknown>> extends DrizzleConfig<TSchema> {
  /** Per-query options for every query drizzle runs: `timeout`, `prepare`. */
  queryOptions?: Omit<QueryOptions, 'rowMode' | 'types' | 'signal'>
}

export class PipegresDatabase<TSchema extends Record<string, unknown> = Record<string, never>> extends PgDatabase<PipegresQueryResultHKT, TSchema> {
  static override readonly [orm.entityKind]: string = 'PipegresDatabase'
}

function isClient(v: unknown): v is PipegresDrizzleClient {
  return typeof v === 'object' && v !== null && typeof (v as PipegresDrizzleClient).query === 'function' && typeof (v as PipegresDrizzleClient).begin === 'function'
}

/**
 * drizzle-orm's PostgreSQL API on a pipegres Pool or Client:
 * `const db = drizzle(pool, { schema })`, or `drizzle({ client: pool, schema })`.
 */
export function drizzle<TSchema extends Record<string, unknown> = Record<string, never>, TClient extends PipegresDrizzleClient = Pool>(
  ...params: [TClient] | [TClient, PipegresDrizzleConfig<TSchema>] | [PipegresDrizzleConfig<TSchema> & { client: TClient }]
): PipegresDatabase<TSchema> & { $client: TClient } {
  const [client, config] = isClient(params[0]) ? [params[0], (params[1] ?? {}) as PipegresDrizzleConfig<TSchema>] : [(params[0] as { client?: unknown })?.client, params[0] as PipegresDrizzleConfig<TSchema>]
  if (!isClient(client)) throw new ArgumentError('drizzle() needs a pipegres Pool or Client (createPool() or connect()), or { client }')
  const dialect = new PgDialect({ casing: config.casing })
  let logger: Logger | undefined
  if (config.logger === true) logger = new DefaultLogger()
  else if (config.logger !== false) logger = config.logger
  let schema: RelationalSchemaConfig<TablesRelationalConfig> | undefined
  if (config.schema !== undefined) {
    const tables = extractTablesRelationalConfig(config.schema, createTableRelationsHelpers)
    schema = { fullSchema: config.schema, schema: tables.tables, tableNamesMap: tables.tableNamesMap }
  }
  const options: SessionOptions = {}
  if (logger !== undefined) options.logger = logger
  if (config.cache !== undefined) options.cache = config.cache
  if (config.queryOptions !== undefined) options.queryOptions = config.queryOptions
  const session = new PipegresSession(client, dialect, schema, options)
  const db = new PipegresDatabase<TSchema>(dialect, session, schema as RelationalSchemaConfig<any>) as PipegresDatabase<TSchema> & { $client: TClient }
  db.$client = client as TClient
  if (config.cache !== undefined) {
    // Where drizzle's query builders look for the cache, and how they invalidate it.
    const cache = config.cache as unknown as { invalidate?: unknown; onMutate: unknown }
    cache.invalidate = cache.onMutate
    ;(db as unknown as { $cache: unknown }).$cache = cache
  }
  return db
}

/** Applies the migrations of a drizzle-kit folder (drizzle-orm's migrator, on pipegres). */
export async function migrate<TSchema extends Record<string, unknown>>(db: PipegresDatabase<TSchema>, config: MigrationConfig): Promise<void> {
  const migrations = readMigrationFiles(config)
  const internals = db as unknown as { dialect: PgDialect; session: PgSession }
  await internals.dialect.migrate(migrations, internals.session, config)
}
