import { Kysely } from 'kysely'
import postgres from '../../src/integrations/postgres/index.js'
import { APP_POOL_SIZE, runApp } from '../lib/app.js'
import type { AppDatabase } from '../lib/app-schema.js'
import { PostgresJsDialect } from '../lib/kysely-postgres-js.js'
import { childMain } from '../lib/measure.js'

// The app workload through Kysely's query builder on pipegres/postgres (max: 4), through the benchmark's minimal dialect for postgres.js.

await childMain(async (task) => {
  const db = new Kysely<AppDatabase>({ dialect: new PostgresJsDialect(postgres({ ...task.target, max: APP_POOL_SIZE, ssl: false, onnotice: () => {} }) as never) })
  try {
    return await runApp(task, (id) => db.selectFrom('bench_users').select(['id', 'name', 'email']).where('id', '=', id).executeTakeFirst())
  } finally {
    await db.destroy()
  }
})
