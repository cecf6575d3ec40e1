import type {
  ConnectionInfo,
  IsolationLevel,
  SqlDriverAdapter,
  SqlDriverAdapterFactory,
  SqlQuery,
  SqlQueryable,
  SqlResultSet,
  Transaction as PrismaTransaction,
  TransactionOptions as PrismaTransactionOptions,
} from '@prisma/driver-adapter-utils'
import { DriverAdapterError } from '@prisma/driver-adapter-utils'
import {
  ArgumentError,
  createPool,
  quoteIdentifier,
  type Client,
  type Pool,
  type PoolOptions,
  type QueryOptions,
  type ReservedClient,
  type StartedTransaction,
  type StartTransactionOptions,
  type Transaction,
} from '../../index.js'
import { columnsOf, mapArgs, prismaTypes, UnsupportedColumn } from './columns.js'
import { toPrismaError } from './errors.js'

export { toPrismaError } from './errors.js'

export interface PrismaPipegresOptions {
  /** The schema Prisma's queries use when the schema file names none (default: the connection's search_path). */
  schema?: string
  /** Options for every query: `timeout` (ms), `prepare`. */
  queryOptions?: Omit<QueryOptions, 'rowMode' | 'types' | 'signal'>
}

const ADAPTER_NAME = 'pipegres'

/** What the adapter runs on: a pool, a client, or a connection reserved from a pool. */
type PipegresTarget = Pool | Client | ReservedClient

class PipegresQueryable implements SqlQueryable {
  readonly provider = 'postgres' as const
  readonly adapterName = ADAPTER_NAME
  protected readonly queryOptions: QueryOptions

  constructor(
    protected readonly runner: Pick<Transaction, 'query' | 'simpleQuery'>,
    settings: PrismaPipegresOptions,
  ) {
    this.queryOptions = { ...settings.queryOptions, types: prismaTypes, rowMode: 'array' }
  }

  async queryRaw(query: SqlQuery): Promise<SqlResultSet> {
    let r
    try {
      r = await this.runner.query<unknown[]>(query.sql, mapArgs(query.args, query.argTypes), this.queryOptions)
    } catch (err) {
      throw toPrismaError(err)
    }
    let columns
    try {
      columns = columnsOf(r.fields)
    } catch (err) {
      if (err instanceof UnsupportedColumn) throw new DriverAdapterError({ kind: 'UnsupportedNativeDataType', type: `OID ${err.field.typeOid}` })
      throw err
    }
    const rows = r.rows
    if (columns.converts.length > 0) {
      for (const row of rows) for (const [i, convert] of columns.converts) if (row[i] !== null) row[i] = convert(row[i])
    }
    return { columnNames: r.fields.map((f) => f.name), columnTypes: columns.types, rows }
  }

  async executeRaw(query: SqlQuery): Promise<number> {
    try {
      const r = await this.runner.query(query.sql, mapArgs(query.args, query.argTypes), this.queryOptions)
      return r.rowCount ?? 0
    } catch (err) {
      throw toPrismaError(err)
    }
  }
}

/** A transaction Prisma drives: BEGIN at start, and COMMIT or ROLLBACK sent by commit() and rollback(). */
class PipegresTransaction extends PipegresQueryable implements PrismaTransaction {
  // Prisma then leaves COMMIT and ROLLBACK to commit() and rollback(), which
  // end the transaction through pipegres (a COMMIT answered with ROLLBACK fails).
  readonly options: PrismaTransactionOptions = { usePhantomQuery: true }

  constructor(
    private readonly tx: StartedTransaction,
    settings: PrismaPipegresOptions,
  ) {
    super(tx, settings)
  }

  async commit(): Promise<void> {
    await this.tx.commit().catch((err: unknown) => {
      throw toPrismaError(err)
    })
  }

  async rollback(): Promise<void> {
    await this.tx.rollback().catch((err: unknown) => {
      throw toPrismaError(err)
    })
  }

  private async control(sql: string): Promise<void> {
    try {
      await this.tx.query(sql, [], { prepare: false })
    } catch (err) {
      throw toPrismaError(err)
    }
  }

  createSavepoint(name: string): Promise<void> {
    return this.control(`SAVEPOINT ${quoteIdentifier(name)}`)
  }

  rollbackToSavepoint(name: string): Promise<void> {
    return this.control(`ROLLBACK TO SAVEPOINT ${quoteIdentifier(name)}`)
  }

  releaseSavepoint(name: string): Promise<void> {
    return this.control(`RELEASE SAVEPOINT ${quoteIdentifier(name)}`)
  }
}

const isolations: Record<string, StartTransactionOptions['isolation']> = {
  'READ UNCOMMITTED': 'read uncommitted',
  'READ COMMITTED': 'read committed',
  'REPEATABLE READ': 'repeatable read',
  SERIALIZABLE: 'serializable',
}

class PipegresAdapter extends PipegresQueryable implements SqlDriverAdapter {
  constructor(
    private readonly target: PipegresTarget,
    private readonly settings: PrismaPipegresOptions,
    private readonly owned: boolean,
  ) {
    super(target, settings)
  }

  async executeScript(script: string): Promise<void> {
    try {
      // The simple protocol runs every statement of the script, in one round trip.
      await this.target.simpleQuery(script)
    } catch (err) {
      throw toPrismaError(err)
    }
  }

  async startTransaction(isolationLevel?: IsolationLevel): Promise<PrismaTransaction> {
    const options: StartTransactionOptions = {}
    if (isolationLevel !== undefined) {
      const isolation = isolations[isolationLevel]
      if (isolation === undefined) throw new DriverAdapterError({ kind: 'InvalidIsolationLevel', level: isolationLevel })
      options.isolation = isolation
    }
    try {
      return new PipegresTransaction(await this.target.startTransaction(options), this.settings)
    } catch (err) {
      throw toPrismaError(err)
    }
  }

  getConnectionInfo(): ConnectionInfo {
    const info: ConnectionInfo = { supportsRelationJoins: true, maxBindValues: 32767 }
    if (this.settings.schema !== undefined) info.schemaName = this.settings.schema
    return info
  }

  async dispose(): Promise<void> {
    if (this.owned && 'end' in this.target) await this.target.end()
  }
}

function isTarget(v: unknown): v is PipegresTarget {
  return typeof v === 'object' && v !== null && typeof (v as PipegresTarget).query === 'function' && typeof (v as PipegresTarget).startTransaction === 'function'
}

/**
 * Prisma's driver adapter factory for pipegres, in the manner of Prisma's own
 * (`new PrismaPg(...)`): `new PrismaClient({ adapter: new PrismaPipegres(pool) })`.
 * Given a Pool or Client, Prisma shares it (and disconnecting Prisma leaves it
 * open); given a connection string or pool options, the adapter opens a pool
 * of its own and ends it when Prisma disconnects.
 */
export class PrismaPipegres implements SqlDriverAdapterFactory {
  readonly provider = 'postgres' as const
  readonly adapterName = ADAPTER_NAME
  readonly #source: Pool | Client | ReservedClient | string | PoolOptions
  readonly #options: PrismaPipegresOptions

  constructor(source: Pool | Client | ReservedClient | string | PoolOptions, options: PrismaPipegresOptions = {}) {
    if (source === undefined || source === null || (typeof source !== 'string' && typeof source !== 'object')) {
      throw new ArgumentError('PrismaPipegres needs a pipegres Pool or Client, a connection string, or pool options')
    }
    this.#source = source
    this.#options = options
  }

  async connect(): Promise<SqlDriverAdapter> {
    const source = this.#source
    if (isTarget(source)) return new PipegresAdapter(source, this.#options, false)
    return new PipegresAdapter(createPool(source), this.#options, true)
  }
}
