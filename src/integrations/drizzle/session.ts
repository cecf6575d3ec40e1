import * as orm from 'drizzle-orm'
import { fillPlaceholders, NoopLogger, type Logger, type Query, type SQL, type RelationalSchemaConfig, type TablesRelationalConfig } from 'drizzle-orm'
import type { Cache } from 'drizzle-orm/cache/core'
import type { WithCacheConfig } from 'drizzle-orm/cache/core/types'
import {
  PgDialect,
  PgPreparedQuery,
  PgSession,
  PgTransaction,
  type PgQueryResultHKT,
  type PgTransactionConfig,
  type PreparedQueryConfig,
  type SelectedFieldsOrdered,
} from 'drizzle-orm/pg-core'
import type { Client, Pool, QueryOptions, ReservedClient, Result, Transaction, TransactionOptions } from '../../index.js'
import { convertArrayRows, convertObjectRows, drizzleTypes } from './values.js'

/** Where queries go: the pool or client, or the pipegres transaction (or savepoint) drizzle's transaction runs in. */
export type Runner = Pool | Client | ReservedClient | Transaction

/** Drizzle's result type for db.execute() and queries without a column list: pipegres's Result. */
export interface PipegresQueryResultHKT extends PgQueryResultHKT {
  type: Result<this['row'] extends Record<string, unknown> ? this['row'] : Record<string, unknown>>
}

export interface SessionOptions {
  logger?: Logger
  cache?: Cache
  /** Per-query options for every query (timeout, prepare); the type options are the integration's. */
  queryOptions?: Omit<QueryOptions, 'rowMode' | 'types' | 'signal'>
}

type Mapper = (rows: unknown[][]) => unknown

// Drizzle's own drivers use these members of its base classes, which its type
// declarations leave out (they are marked internal): declared here once.
interface PreparedInternals {
  joinsNotNullableMap?: Record<string, boolean>
  queryWithCache<R>(queryString: string, params: unknown[], query: () => Promise<R>): Promise<R>
}
type MapResultRow = (fields: SelectedFieldsOrdered, row: unknown[], joinsNotNullableMap: Record<string, boolean> | undefined) => unknown
const mapResultRow = (orm as unknown as { mapResultRow: MapResultRow }).mapResultRow

export class PipegresPreparedQuery<T extends PreparedQueryConfig> extends PgPreparedQuery<T> {
  static override readonly [orm.entityKind]: string = 'PipegresPreparedQuery'
  private readonly arrayOptions: QueryOptions
  private readonly objectOptions: QueryOptions

  constructor(
    private readonly runner: Runner,
    private readonly queryString: string,
    private readonly params: unknown[],
    private readonly logger: Logger,
    cache: Cache | undefined,
    queryMetadata: { type: 'select' | 'update' | 'delete' | 'insert'; tables: string[] } | undefined,
    cacheConfig: WithCacheConfig | undefined,
    private readonly fields: SelectedFieldsOrdered | undefined,
    private readonly arrayMode: boolean,
    private readonly customResultMapper: Mapper | undefined,
    options: SessionOptions,
  ) {
    super({ sql: queryString, params }, cache, queryMetadata, cacheConfig)
    this.objectOptions = { ...options.queryOptions, types: drizzleTypes, rowMode: 'object' }
    this.arrayOptions = { ...this.objectOptions, rowMode: 'array' }
  }

  private get internals(): PreparedInternals {
    return this as unknown as PreparedInternals
  }

  async execute(placeholderValues: Record<string, unknown> = {}): Promise<T['execute']> {
    const params = fillPlaceholders(this.params, placeholderValues)
    this.logger.logQuery(this.queryString, params)
    const { fields, customResultMapper } = this
    if (fields === undefined && customResultMapper === undefined) {
      return this.internals.queryWithCache(this.queryString, params, () => this.objects(params))
    }
    const rows = await this.internals.queryWithCache(this.queryString, params, async () => {
      const r = await this.runner.query<unknown[]>(this.queryString, params, this.arrayOptions)
      return convertArrayRows(r.rows, r.fields)
    })
    if (customResultMapper !== undefined) return customResultMapper(rows) as T['execute']
    const joins = this.internals.joinsNotNullableMap
    return rows.map((row) => mapResultRow(fields!, row, joins)) as T['execute']
  }

  async all(placeholderValues: Record<string, unknown> = {}): Promise<T['all']> {
    const params = fillPlaceholders(this.params, placeholderValues)
    this.logger.logQuery(this.queryString, params)
    const r = await this.internals.queryWithCache(this.queryString, params, () => this.objects(params))
    return r.rows as T['all']
  }

  private async objects(params: unknown[]): Promise<Result> {
    const r = await this.runner.query(this.queryString, params, this.objectOptions)
    convertObjectRows(r.rows, r.fields)
    return r
  }

  /** @internal */
  isResponseInArrayMode(): boolean {
    return this.arrayMode
  }
}

export class PipegresSession<TFullSchema extends Record<string, unknown>, TSchema extends TablesRelationalConfig> extends PgSession<
  PipegresQueryResultHKT,
  TFullSchema,
  TSchema
> {
  static override readonly [orm.entityKind]: string = 'PipegresSession'
  private readonly logger: Logger

  constructor(
    readonly runner: Runner,
    readonly pgDialect: PgDialect,
    readonly schema: RelationalSchemaConfig<TSchema> | undefined,
    readonly options: SessionOptions = {},
  ) {
    super(pgDialect)
    this.logger = options.logger ?? new NoopLogger()
  }

  prepareQuery<T extends PreparedQueryConfig = PreparedQueryConfig>(
    query: Query,
    fields: SelectedFieldsOrdered | undefined,
    // The statement is prepared by its text on each connection, named or not.
    _name: string | undefined,
    isResponseInArrayMode: boolean,
    customResultMapper?: (rows: unknown[][]) => T['execute'],
    queryMetadata?: { type: 'select' | 'update' | 'delete' | 'insert'; tables: string[] },
    cacheConfig?: WithCacheConfig,
  ): PgPreparedQuery<T> {
    return new PipegresPreparedQuery<T>(
      this.runner,
      query.sql,
      query.params,
      this.logger,
      this.options.cache,
      queryMetadata,
      cacheConfig,
      fields,
      isResponseInArrayMode,
      customResultMapper,
      this.options,
    )
  }

  /** db.$count(): execute() gives a Result here, not an array of rows. */
  override async count(query: SQL): Promise<number> {
    const r = await this.execute<Result<{ count: unknown }>>(query)
    return Number(r.rows[0]!.count)
  }

  /**
   * Runs on a connection of its own through pipegres's begin(): on a pool a
   * reserved connection, on a client its exclusive lane.
   */
  override async transaction<T>(fn: (tx: PipegresTransaction<TFullSchema, TSchema>) => Promise<T>, config?: PgTransactionConfig): Promise<T> {
    const runner = this.runner
    if (!('begin' in runner)) throw new Error('a transaction cannot begin inside a transaction; use tx.transaction() for a savepoint')
    return runner.begin(transactionOptions(config), (ptx) => {
      const session = new PipegresSession<TFullSchema, TSchema>(ptx, this.pgDialect, this.schema, this.options)
      return fn(new PipegresTransaction<TFullSchema, TSchema>(this.pgDialect, session, this.schema, 0))
    })
  }
}

function transactionOptions(config: PgTransactionConfig | undefined): TransactionOptions {
  const options: TransactionOptions = {}
  if (config?.isolationLevel !== undefined) options.isolation = config.isolationLevel
  if (config?.accessMode !== undefined) options.readOnly = config.accessMode === 'read only'
  if (config?.deferrable !== undefined) options.deferrable = config.deferrable
  return options
}

export class PipegresTransaction<TFullSchema extends Record<string, unknown>, TSchema extends TablesRelationalConfig> extends PgTransaction<
  PipegresQueryResultHKT,
  TFullSchema,
  TSchema
> {
  static override readonly [orm.entityKind]: string = 'PipegresTransaction'

  constructor(
    private readonly pgDialect: PgDialect,
    private readonly pgSession: PipegresSession<TFullSchema, TSchema>,
    private readonly relational: RelationalSchemaConfig<TSchema> | undefined,
    private readonly depth: number,
  ) {
    super(pgDialect, pgSession, relational, depth)
  }

  /** A nested transaction is a savepoint, through pipegres's savepoint(). */
  override async transaction<T>(fn: (tx: PipegresTransaction<TFullSchema, TSchema>) => Promise<T>): Promise<T> {
    const ptx = this.pgSession.runner as Transaction
    return ptx.savepoint((sp) => {
      const session = new PipegresSession<TFullSchema, TSchema>(sp, this.pgDialect, this.relational, this.pgSession.options)
      return fn(new PipegresTransaction<TFullSchema, TSchema>(this.pgDialect, session, this.relational, this.depth + 1))
    })
  }
}
