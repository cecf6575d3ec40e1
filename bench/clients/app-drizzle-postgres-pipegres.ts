import { eq } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from '../../src/integrations/postgres/index.js'
import { APP_POOL_SIZE, runApp } from '../lib/app.js'
import { appUsers } from '../lib/app-schema.js'
import { childMain } from '../lib/measure.js'

// The app workload through drizzle's query builder on its postgres-js driver (max: 4), given pipegres/postgres.

await childMain(async (task) => {
  const sql = postgres({ ...task.target, max: APP_POOL_SIZE, ssl: false, onnotice: () => {} })
  const db = drizzle(sql as never)
  try {
    return await runApp(task, async (id) => (await db.select({ id: appUsers.id, name: appUsers.name, email: appUsers.email }).from(appUsers).where(eq(appUsers.id, id)))[0])
  } finally {
    await sql.end()
  }
})
