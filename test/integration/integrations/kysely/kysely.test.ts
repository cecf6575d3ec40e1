import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { Kysely, sql, type Generated } from 'kysely'
import type { Migration } from 'kysely/migration'
import { AbortError, PgError, TimeoutError, connect, createPool, type Client, type Pool } from '../../../../src/index.js'
import { PipegresDialect } from '../../../../src/integrations/kysely/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'
import { atLeast, installedPackage } from '../../../support/peers/installed.js'

// Both lines of Kysely the peer range takes run this file (`npm run test:peers`).
const kyselyVersion = installedPackage('kysely').version
const withSignals = atLeast(kyselyVersion, '0.29.0')
const NO_SIGNALS = { skip: withSignals ? false : `Kysely ${kyselyVersion} passes dialects no AbortSignal (0.29 does)` }
// Kysely 0.29 moved the migrator to kysely/migration; 0.28 has it in kysely itself.
const { Migrator } = (await import(withSignals ? 'kysely/migration' : 'kysely')) as typeof import('kysely/migration')

interface Person {
  id: Generated<number>
  name: string
  age: number | null
}

const table = uniqueName('ky_person')
type DB = Record<string, Person>

let pool: Pool
let db: Kysely<DB>
const extra: { end(): Promise<void> }[] = []

before(async () => {
  const { options } = await mainDatabase()
  pool = createPool({ ...options, max: 4 })
  db = new Kysely<DB>({ dialect: new PipegresDialect({ pool }) })
  await db.schema
    .createTable(table)
    .addColumn('id', 'serial', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('age', 'integer')
    .execute()
})

after(async () => {
  await db.schema.dropTable(table).ifExists().execute()
  await db.destroy()
  await Promise.all(extra.map((e) => e.end()))
})

async function count(): Promise<number> {
  const r = await db.selectFrom(table).select((eb) => eb.fn.countAll<bigint>().as('n')).executeTakeFirstOrThrow()
  return Number(r.n)
}

test('the query builder: insert with returning, select, update, delete', async () => {
  const inserted = await db.insertInto(table).values([{ name: 'ada', age: 36 }, { name: 'alan', age: 41 }]).returning(['id', 'name']).execute()
  assert.deepEqual(inserted.map((r) => r.name), ['ada', 'alan'])
  assert.ok(inserted.every((r) => typeof r.id === 'number'))
  const ada = await db.selectFrom(table).selectAll().where('name', '=', 'ada').executeTakeFirstOrThrow()
  assert.deepEqual({ name: ada.name, age: ada.age }, { name: 'ada', age: 36 })
  const updated = await db.updateTable(table).set({ age: 37 }).where('name', '=', 'ada').executeTakeFirstOrThrow()
  assert.equal(updated.numUpdatedRows, 1n)
  const deleted = await db.deleteFrom(table).where('name', '=', 'alan').returning('age').execute()
  assert.deepEqual(deleted, [{ age: 41 }])
  await db.deleteFrom(table).execute()
})

test('500 concurrent queries are pipelined through the pool, each getting its own result', async () => {
  const results = await Promise.all(
    Array.from({ length: 500 }, (_, i) => db.selectNoFrom([sql<number>`${i}::int`.as('n'), sql<string>`${'v' + i}::text`.as('s')]).executeTakeFirstOrThrow()),
  )
  results.forEach((r, i) => assert.deepEqual(r, { n: i, s: 'v' + i }))
  assert.ok(pool.totalCount <= 4)
})

test('on a single client, concurrent Kysely queries are in flight together rather than one by one', async () => {
  const { options } = await mainDatabase()
  const client: Client = await connect(options)
  extra.push(client)
  const kdb = new Kysely<DB>({ dialect: new PipegresDialect({ pool: client, endOnDestroy: false }) })
  let maxPending = 0
  const sample = setInterval(() => (maxPending = Math.max(maxPending, client.pendingQueries)), 0)
  const pending = Array.from({ length: 200 }, (_, i) => kdb.selectFrom(sql`pg_sleep(0.002)`.as('s')).select(sql<number>`${i}::int`.as('n')).executeTakeFirstOrThrow())
  const results = await Promise.all(pending)
  clearInterval(sample)
  results.forEach((r, i) => assert.equal(r.n, i))
  assert.ok(maxPending > 20, `queries should overlap on the connection; at most ${maxPending} were in flight`)
  await kdb.destroy()
  assert.equal(client.closed, false, 'endOnDestroy: false leaves the client open')
})

test('transactions commit, roll back, and savepoints roll back part of one', async () => {
  await db.transaction().execute(async (trx) => {
    await trx.insertInto(table).values({ name: 'tx-commit', age: 1 }).execute()
  })
  assert.equal(await count(), 1)

  await assert.rejects(
    db.transaction().execute(async (trx) => {
      await trx.insertInto(table).values({ name: 'tx-rollback', age: 2 }).execute()
      throw new Error('undo')
    }),
    /undo/,
  )
  assert.equal(await count(), 1)

  const trx = await db.startTransaction().setIsolationLevel('serializable').execute()
  await trx.insertInto(table).values({ name: 'outer', age: 3 }).execute()
  const sp = await trx.savepoint('inner').execute()
  await sp.insertInto(table).values({ name: 'inner', age: 4 }).execute()
  await sp.rollbackToSavepoint('inner').execute()
  const sp2 = await trx.savepoint('kept').execute()
  await sp2.insertInto(table).values({ name: 'kept', age: 5 }).execute()
  await sp2.releaseSavepoint('kept').execute()
  const level = await trx.selectNoFrom(sql<string>`current_setting('transaction_isolation')`.as('l')).executeTakeFirstOrThrow()
  assert.equal(level.l, 'serializable')
  await trx.commit().execute()
  const names = (await db.selectFrom(table).select('name').orderBy('id').execute()).map((r) => r.name)
  assert.deepEqual(names, ['tx-commit', 'outer', 'kept'])
  await db.deleteFrom(table).execute()
})

test('a transaction runs on a connection of its own while other queries go on through the pool', async () => {
  const pids = new Set<number>()
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < 5; i++) pids.add((await trx.selectNoFrom(sql<number>`pg_backend_pid()`.as('p')).executeTakeFirstOrThrow()).p)
    // A query outside the transaction does not see its uncommitted row.
    await trx.insertInto(table).values({ name: 'invisible', age: 0 }).execute()
    assert.equal(await count(), 0)
  })
  assert.equal(pids.size, 1)
  assert.equal(await count(), 1)
  await db.deleteFrom(table).execute()
})

test('errors keep pipegres classes; a failed statement makes commit report an aborted transaction', async () => {
  await db.insertInto(table).values({ name: 'dup', age: 1 }).execute()
  const err = await db.insertInto(table).values({ name: 'dup', age: 2 }).execute().catch((e: unknown) => e)
  assert.ok(err instanceof PgError)
  assert.equal(err.code, '23505')
  const trx = await db.startTransaction().execute()
  await trx.insertInto(table).values({ name: 'dup', age: 3 }).execute().catch(() => undefined)
  const commit = await trx.commit().execute().catch((e: unknown) => e)
  if ('AbortedTransactionError' in (await import('kysely'))) {
    assert.equal((commit as Error).name, 'AbortedTransactionError')
    assert.equal(((commit as Error).cause as { code?: string }).code, 'PG_TRANSACTION_ROLLED_BACK')
  } else {
    // Before Kysely had that error (early 0.28 releases), pipegres's own comes as it is.
    assert.equal((commit as { code?: string }).code, 'PG_TRANSACTION_ROLLED_BACK')
  }
  await db.deleteFrom(table).execute()
})

test('stream() reads rows through pipegres streaming, in chunks', async () => {
  const seen: number[] = []
  for await (const row of db.selectNoFrom(sql<number>`generate_series(1, 2500)`.as('n')).stream(1000)) seen.push(row.n)
  assert.equal(seen.length, 2500)
  assert.equal(seen[2499], 2500)
  // Leaving early cancels the query; the pool goes on.
  for await (const row of db.selectNoFrom(sql<number>`generate_series(1, 10000000)`.as('n')).stream(100)) if (row.n === 5) break
  assert.equal(await count(), 0)
})

test('timeouts set in queryOptions cancel on the server', async () => {
  const { options } = await mainDatabase()
  const p = createPool({ ...options, max: 2 })
  extra.push(p)
  // Connected first: a timeout that fires while the connection opens drops the query before the server sees it.
  await p.query('SELECT 1')
  const kdb = new Kysely<DB>({ dialect: new PipegresDialect({ pool: p, queryOptions: { timeout: 100 }, endOnDestroy: false }) })
  const err = await kdb.selectNoFrom(sql`pg_sleep(5)`.as('s')).execute().catch((e: unknown) => e)
  assert.ok(err instanceof TimeoutError)
  assert.equal((err.cause as PgError).code, '57014')
  assert.ok(!(err instanceof AbortError))
  await kdb.destroy()
})

test('a Kysely signal cancels the running query on the server, whatever the abort strategy', NO_SIGNALS, async () => {
  for (const strategy of ['ignore query', 'cancel query'] as const) {
    const controller = new AbortController()
    const started = performance.now()
    const running = db.selectNoFrom(sql`pg_sleep(30)`.as('s')).execute({ signal: controller.signal, inflightQueryAbortStrategy: strategy })
    setTimeout(() => controller.abort(new Error(`stop (${strategy})`)), 200)
    await assert.rejects(running, new RegExp(`stop \\(${strategy}\\)`))
    // The server stopped too: nothing of the sleep is left running on the pool.
    await waitFor(async () => (await pool.query<{ n: bigint }>("SELECT count(*) AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(30)%' AND pid <> pg_backend_pid()")).rows[0]!.n === 0n)
    assert.ok(performance.now() - started < 20_000, `${strategy}: the sleep was cancelled`)
  }
  // A signal aborted before the query starts keeps it from being sent.
  await assert.rejects(db.selectNoFrom(sql<number>`1`.as('one')).execute({ signal: AbortSignal.abort(new Error('early')) }), /early/)
  assert.equal((await db.selectNoFrom(sql<number>`2::int`.as('two')).executeTakeFirstOrThrow()).two, 2)
})

test("'kill session' is refused: the dialect's connections carry other callers' queries", NO_SIGNALS, async () => {
  const query = db.selectNoFrom(sql<number>`1`.as('one'))
  await assert.rejects(query.execute({ signal: new AbortController().signal, inflightQueryAbortStrategy: 'kill session' }), /kill session/)
})

test('a Kysely signal stops a stream, and the pool goes on', NO_SIGNALS, async () => {
  const controller = new AbortController()
  const seen: number[] = []
  const rows = db.selectNoFrom(sql<number>`generate_series(1, 10000000)`.as('n')).stream({ chunkSize: 100, signal: controller.signal })
  await assert.rejects(
    (async () => {
      for await (const row of rows) {
        seen.push(row.n)
        if (row.n === 250) controller.abort(new Error('enough rows'))
      }
    })(),
    /enough rows/,
  )
  assert.ok(seen.length >= 250 && seen.length < 10_000, String(seen.length))
  assert.equal((await db.selectNoFrom(sql<number>`3::int`.as('three')).executeTakeFirstOrThrow()).three, 3)
})

async function waitFor(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const until = performance.now() + ms
  while (!(await check())) {
    if (performance.now() > until) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

test('Migrator runs migrations up and down', async () => {
  const mtable = uniqueName('ky_mig')
  const migrations: Record<string, Migration> = {
    '001_create': {
      up: async (k) => void (await k.schema.createTable(mtable).addColumn('id', 'integer', (c) => c.primaryKey()).execute()),
      down: async (k) => void (await k.schema.dropTable(mtable).execute()),
    },
    '002_column': {
      up: async (k) => void (await k.schema.alterTable(mtable).addColumn('note', 'text').execute()),
      down: async (k) => void (await k.schema.alterTable(mtable).dropColumn('note').execute()),
    },
  }
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: `${mtable}_log`,
    migrationLockTableName: `${mtable}_lock`,
  })
  const up = await migrator.migrateToLatest()
  assert.equal(up.error, undefined)
  assert.deepEqual(up.results?.map((r) => [r.migrationName, r.status]), [['001_create', 'Success'], ['002_column', 'Success']])
  const cols = await sql<{ column_name: string }>`SELECT column_name FROM information_schema.columns WHERE table_name = ${mtable} ORDER BY ordinal_position`.execute(db)
  assert.deepEqual(cols.rows.map((r) => r.column_name), ['id', 'note'])
  const down = await migrator.migrateDown()
  assert.deepEqual(down.results?.map((r) => [r.migrationName, r.direction, r.status]), [['002_column', 'Down', 'Success']])
  await migrator.migrateDown()
  await sql`DROP TABLE IF EXISTS ${sql.table(`${mtable}_log`)}, ${sql.table(`${mtable}_lock`)}`.execute(db)
})

test('a pool shared by Kysely and direct pipegres calls is one pool', async () => {
  const direct = pool.query<{ n: number }>('SELECT 1::int AS n')
  const viaKysely = db.selectNoFrom(sql<number>`2::int`.as('n')).executeTakeFirstOrThrow()
  assert.deepEqual([(await direct).rows[0], await viaKysely], [{ n: 1 }, { n: 2 }])
  assert.ok(pool.totalCount <= 4)
})
