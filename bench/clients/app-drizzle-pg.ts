import { eq } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import pg from 'pg'
import { APP_POOL_SIZE, runApp } from '../lib/app.js'
import { appUsers } from '../lib/app-schema.js'
import { childMain } from '../lib/measure.js'

// The app workload through drizzle's query builder on its node-postgres driver, a pg Pool of 4.

await childMain(async (task) => {
  const pool = new pg.Pool({ ...task.target, max: APP_POOL_SIZE })
  const db = drizzle(pool)
  try {
    return await runApp(task, async (id) => (await db.select({ id: appUsers.id, name: appUsers.name, email: appUsers.email }).from(appUsers).where(eq(appUsers.id, id)))[0])
  } finally {
    await pool.end()
  }
})
