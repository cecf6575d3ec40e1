// Knex 3 with pipegres/pg as its driver (its pg client class, with _driver()
// giving pipegres/pg): migrations, the schema builder, queries, returning,
// transactions with savepoints, raw bindings and search_path.

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import knexFactory, { type Knex } from 'knex'
import pg from '../../../../src/integrations/pg/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'

const require = createRequire(import.meta.url)
const ClientPG = require('knex/lib/dialects/postgres/index.js') as new (config: Knex.Config) => object

class PipegresKnexClient extends (ClientPG as new (config: Knex.Config) => { _driver(): unknown }) {
  override _driver(): unknown {
    return pg
  }
}

const { connectionString } = await mainDatabase()
const schema = uniqueName('pgk')
const db = knexFactory({ client: PipegresKnexClient as never, connection: connectionString, pool: { min: 0, max: 4 }, searchPath: [schema, 'public'] })
after(async () => {
  await db.raw('DROP SCHEMA ?? CASCADE', [schema])
  await db.destroy()
})
await db.raw('CREATE SCHEMA ??', [schema])

const migrations: Record<string, { up(k: Knex): Promise<void>; down(k: Knex): Promise<void> }> = {
  '001_accounts': {
    up: (k) =>
      k.schema.withSchema(schema).createTable('accounts', (t) => {
        t.increments('id')
        t.string('owner').notNullable().unique()
        t.bigInteger('cents').notNullable().defaultTo(0)
        t.jsonb('meta')
        t.timestamp('created_at', { useTz: true }).defaultTo(k.fn.now())
      }),
    down: (k) => k.schema.withSchema(schema).dropTable('accounts'),
  },
  '002_ledger': {
    up: (k) =>
      k.schema.withSchema(schema).createTable('ledger', (t) => {
        t.increments('id')
        t.integer('account_id').references('id').inTable(`${schema}.accounts`)
        t.decimal('amount', 12, 2)
      }),
    down: (k) => k.schema.withSchema(schema).dropTable('ledger'),
  },
}
const migrationSource = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (m: string) => m,
  getMigration: async (m: string) => migrations[m]!,
}
const migrateConfig = { migrationSource, schemaName: schema, tableName: 'knex_migrations' }

test('migrations run, roll back and run again', async () => {
  const [batch, applied] = (await db.migrate.latest(migrateConfig)) as [number, string[]]
  assert.equal(batch, 1)
  assert.deepEqual(applied, ['001_accounts', '002_ledger'])
  assert.ok(await db.schema.withSchema(schema).hasTable('ledger'))
  await db.migrate.rollback(migrateConfig)
  assert.equal(await db.schema.withSchema(schema).hasTable('accounts'), false)
  await db.migrate.latest(migrateConfig)
  assert.ok(await db.schema.withSchema(schema).hasTable('accounts'))
})

test('queries: insert returning, select, update, delete, aggregates, raw bindings', async () => {
  const inserted = await db(`${schema}.accounts`).insert([{ owner: 'ada', cents: 100, meta: { vip: true } }, { owner: 'bob', cents: '9007199254740993' }]).returning(['id', 'owner', 'cents'])
  assert.equal(inserted.length, 2)
  assert.equal(inserted[1].cents, '9007199254740993', 'int8 as a string, as with pg')
  const ada = await db(`${schema}.accounts`).where({ owner: 'ada' }).first()
  assert.deepEqual(ada.meta, { vip: true })
  assert.ok(ada.created_at instanceof Date)
  assert.equal(await db(`${schema}.accounts`).where({ owner: 'ada' }).update({ cents: db.raw('cents + ?', [5]) }), 1)
  const sums = await db(`${schema}.accounts`).sum({ total: 'cents' })
  assert.equal(sums[0]!.total, '9007199254741098')
  const raw = await db.raw('SELECT ?::int AS a, ?::text AS b, ?? AS c FROM ?? LIMIT 1', [1, 'x', 'owner', `${schema}.accounts`])
  assert.equal(raw.rows[0].a, 1)
  assert.equal(raw.rows[0].b, 'x')
  assert.equal(raw.command, 'SELECT')
  assert.equal(await db(`${schema}.accounts`).where({ owner: 'bob' }).del(), 1)
  // search_path set by Knex on every connection it opens.
  assert.equal((await db('accounts').count({ n: '*' }))[0]!.n, '1')
})

test('transactions: commit, rollback on error, savepoints, concurrent transactions', async () => {
  const [acct] = await db(`${schema}.accounts`).insert({ owner: 'tx' }).returning('id')
  await db.transaction(async (trx) => {
    await trx(`${schema}.ledger`).insert({ account_id: acct.id, amount: '10.25' })
    await trx.transaction(async (inner) => {
      await inner(`${schema}.ledger`).insert({ account_id: acct.id, amount: '99.00' })
      throw new Error('inner undo')
    }).catch(() => undefined)
  })
  const amounts = await db(`${schema}.ledger`).where({ account_id: acct.id }).pluck('amount')
  assert.deepEqual(amounts, ['10.25'])
  await assert.rejects(
    db.transaction(async (trx) => {
      await trx(`${schema}.ledger`).insert({ account_id: acct.id, amount: '1.00' })
      await trx.raw('SELECT 1/0')
    }),
    (err: Error & { code?: string }) => err.code === '22012',
  )
  assert.equal((await db(`${schema}.ledger`).where({ account_id: acct.id })).length, 1)
  await Promise.all(Array.from({ length: 8 }, (_, i) => db.transaction((trx) => trx(`${schema}.ledger`).insert({ account_id: acct.id, amount: String(i) }))))
  assert.equal((await db(`${schema}.ledger`).where({ account_id: acct.id })).length, 9)
})
