import { PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, type CompiledQuery, type DatabaseConnection, type Dialect, type Driver, type Kysely, type QueryResult } from 'kysely'
import type { Sql } from 'postgres'

// A minimal Kysely dialect over postgres.js, for the benchmark only (no
// community dialect is installed): every query goes to postgres.js's own
// pool, which pipelines on its connections. No transactions or streaming: the
// app workload uses neither.

const counted = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE'])

class Connection implements DatabaseConnection {
  constructor(private readonly sql: Sql) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.sql.unsafe(compiled.sql, compiled.parameters as never[], { prepare: true })
    const rows = [...result] as R[]
    return counted.has(result.command) && result.count !== null ? { rows, numAffectedRows: BigInt(result.count) } : { rows }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not part of the benchmark dialect')
  }
}

const unsupported = async (): Promise<never> => {
  throw new Error('transactions are not part of the benchmark dialect')
}

export class PostgresJsDialect implements Dialect {
  constructor(private readonly sql: Sql) {}

  createDriver(): Driver {
    const connection = new Connection(this.sql)
    return {
      init: async () => {},
      acquireConnection: async () => connection,
      beginTransaction: unsupported,
      commitTransaction: unsupported,
      rollbackTransaction: unsupported,
      releaseConnection: async () => {},
      destroy: async () => void (await this.sql.end()),
    }
  }

  createQueryCompiler(): PostgresQueryCompiler {
    return new PostgresQueryCompiler()
  }

  createAdapter(): PostgresAdapter {
    return new PostgresAdapter()
  }

  createIntrospector(db: Kysely<unknown>): PostgresIntrospector {
    return new PostgresIntrospector(db)
  }
}
