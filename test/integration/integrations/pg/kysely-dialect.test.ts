// Kysely's own PostgresDialect given a pipegres/pg Pool: schema, queries,
// transactions (each on a connection of its own), streaming is not tested
// (it needs pg-cursor, which pipegres/pg does not run).

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Kysely, PostgresDialect, sql, type Generated } from 'kysely'
import pg from '../../../../src/integrations/pg/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'

const table = uniqueName('pgky_pets')

interface Pet {
  id: Generated<number>
  name: string
  born: Date | null
  legs: Generated<string>
}
type Database = Record<string, Pet>

const { connectionString } = await mainDatabase()
const pool = new pg.Pool({ connectionString, max: 4 })
const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
after(async () => {
  await db.schema.dropTable(table).ifExists().execute()
  await db.destroy()
})

await db.schema
  .createTable(table)
  .addColumn('id', 'serial', (c) => c.primaryKey())
  .addColumn('name', 'text', (c) => c.notNull().unique())
  .addColumn('born', 'timestamptz')
  .addColumn('legs', 'int8', (c) => c.notNull().defaultTo(4))
  .execute()

test('inserts with returning, selects, updates, deletes', async () => {
  const born = new Date('2020-05-01T10:00:00.000Z')
  const rex = await db.insertInto(table).values({ name: 'Rex', born }).returning(['id', 'legs', 'born']).executeTakeFirstOrThrow()
  assert.equal(rex.legs, '4')
  assert.equal((rex.born as Date).toISOString(), born.toISOString())
  await db.insertInto(table).values([{ name: 'Tweety', legs: '2' }, { name: 'Nemo', legs: '0' }]).execute()
  const twoLegged = await db.selectFrom(table).select(['name']).where('legs', '=', '2').execute()
  assert.deepEqual(twoLegged, [{ name: 'Tweety' }])
  const up = await db.updateTable(table).set({ legs: '3' }).where('name', '=', 'Rex').executeTakeFirst()
  assert.equal(up.numUpdatedRows, 3n - 2n)
  const del = await db.deleteFrom(table).where('name', '=', 'Nemo').executeTakeFirst()
  assert.equal(del.numDeletedRows, 1n)
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)}`.execute(db)
  assert.deepEqual(rows, [{ n: 2 }])
})

test('transactions commit and roll back, and run alongside other queries', async () => {
  await db.transaction().execute(async (trx) => {
    await trx.insertInto(table).values({ name: 'Tx' }).execute()
  })
  await assert.rejects(
    db.transaction().execute(async (trx) => {
      await trx.insertInto(table).values({ name: 'Gone' }).execute()
      throw new Error('undo')
    }),
    /undo/,
  )
  const names = (await db.selectFrom(table).select('name').orderBy('name').execute()).map((r) => r.name)
  assert.ok(names.includes('Tx') && !names.includes('Gone'))
  // More concurrent transactions than connections, with plain queries in between.
  await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      i % 3 === 0
        ? db.selectFrom(table).selectAll().execute()
        : db.transaction().execute((trx) => trx.insertInto(table).values({ name: `p${i}` }).execute()),
    ),
  )
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)} WHERE name LIKE 'p%'`.execute(db)
  assert.equal(rows[0]!.n, 8)
})

test('a unique violation surfaces pg\'s DatabaseError', async () => {
  await assert.rejects(db.insertInto(table).values({ name: 'Rex' }).execute(), (err: unknown) => err instanceof pg.DatabaseError && err.code === '23505' && err.constraint !== undefined)
})
