// Kysely over pipegres/postgres, through a small dialect written as a user
// of postgres.js would write one (no postgres.js dialect ships with Kysely):
// each query through sql.unsafe(), transactions on sql.reserve().

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql, type CompiledQuery, type DatabaseConnection, type Dialect, type Driver, type Generated, type QueryResult } from 'kysely'
import postgres, { type Sql } from '../../../../src/integrations/postgres/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'

const counted = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE'])

class Connection implements DatabaseConnection {
  constructor(readonly sql: Sql) {}
  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.sql.unsafe(compiled.sql, compiled.parameters as unknown[], { prepare: true })
    const rows = [...result] as R[]
    return counted.has(result.command) && result.count !== null ? { rows, numAffectedRows: BigInt(result.count) } : { rows }
  }
  async *streamQuery<R>(compiled: CompiledQuery, chunkSize = 100): AsyncIterableIterator<QueryResult<R>> {
    for await (const rows of this.sql.unsafe(compiled.sql, compiled.parameters as unknown[]).cursor(chunkSize)) yield { rows: rows as R[] }
  }
}

class PostgresJsDialect implements Dialect {
  constructor(private readonly sql: Sql) {}
  createDriver(): Driver {
    const root = this.sql
    return {
      init: async () => {},
      acquireConnection: async () => new Connection(await root.reserve()),
      beginTransaction: async (c) => void (await (c as Connection).sql.unsafe('begin')),
      commitTransaction: async (c) => void (await (c as Connection).sql.unsafe('commit')),
      rollbackTransaction: async (c) => void (await (c as Connection).sql.unsafe('rollback')),
      releaseConnection: async (c) => (c as Connection).sql.release(),
      destroy: async () => void (await root.end()),
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

const { connectionString, source } = await mainDatabase()
const skip = source === 'PGlite' ? 'pipegres/postgres opens sockets of its own' : false
const table = uniqueName('pgjs_kysely')
interface Pet {
  id: Generated<number>
  name: string
  legs: Generated<string>
}
const db = new Kysely<Record<string, Pet>>({ dialect: new PostgresJsDialect(postgres(connectionString ?? {}, { max: 3, onnotice: () => {} })) })
after(async () => {
  if (!skip) await db.schema.dropTable(table).ifExists().execute()
  await db.destroy()
})

test('schema, inserts, selects, updates, streaming', { skip }, async () => {
  await db.schema.createTable(table).addColumn('id', 'serial', (c) => c.primaryKey()).addColumn('name', 'text', (c) => c.notNull().unique()).addColumn('legs', 'int8', (c) => c.notNull().defaultTo(4)).execute()
  const rex = await db.insertInto(table).values({ name: 'Rex' }).returning(['id', 'legs']).executeTakeFirstOrThrow()
  assert.equal(rex.legs, '4')
  await db.insertInto(table).values([{ name: 'Tweety', legs: '2' }, { name: 'Nemo', legs: '0' }]).execute()
  const up = await db.updateTable(table).set({ legs: '3' }).where('name', '=', 'Rex').executeTakeFirst()
  assert.equal(up.numUpdatedRows, 1n)
  const names: string[] = []
  for await (const pet of db.selectFrom(table).select('name').orderBy('id').stream(2)) names.push(pet.name)
  assert.deepEqual(names, ['Rex', 'Tweety', 'Nemo'])
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(db)
  assert.deepEqual(rows, [{ n: 3 }])
})

test('transactions commit and roll back', { skip }, async () => {
  await db.transaction().execute(async (trx) => trx.insertInto(table).values({ name: 'Tx' }).execute())
  await assert.rejects(
    db.transaction().execute(async (trx) => {
      await trx.insertInto(table).values({ name: 'Gone' }).execute()
      throw new Error('undo')
    }),
    /undo/,
  )
  const names = (await db.selectFrom(table).select('name').execute()).map((r) => r.name)
  assert.ok(names.includes('Tx') && !names.includes('Gone'))
})
