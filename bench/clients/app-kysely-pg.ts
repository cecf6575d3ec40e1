import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { APP_POOL_SIZE, runApp } from '../lib/app.js'
import type { AppDatabase } from '../lib/app-schema.js'
import { childMain } from '../lib/measure.js'

// The app workload through Kysely's query builder on its own PostgresDialect over a pg Pool of 4.

await childMain(async (task) => {
  const db = new Kysely<AppDatabase>({ dialect: new PostgresDialect({ pool: new pg.Pool({ ...task.target, max: APP_POOL_SIZE }) }) })
  try {
    return await runApp(task, (id) => db.selectFrom('bench_users').select(['id', 'name', 'email']).where('id', '=', id).executeTakeFirst())
  } finally {
    await db.destroy()
  }
})
