import { eq } from 'drizzle-orm'
import { createPool } from '../../src/index.js'
import { drizzle } from '../../src/integrations/drizzle/index.js'
import { APP_POOL_SIZE, runApp } from '../lib/app.js'
import { appUsers } from '../lib/app-schema.js'
import { childMain } from '../lib/measure.js'

// The app workload through drizzle's query builder on a pipegres Pool of 4.

await childMain(async (task) => {
  const pool = createPool({ ...task.target, sslmode: 'disable', max: APP_POOL_SIZE })
  const db = drizzle(pool)
  try {
    return await runApp(task, async (id) => (await db.select({ id: appUsers.id, name: appUsers.name, email: appUsers.email }).from(appUsers).where(eq(appUsers.id, id)))[0])
  } finally {
    await pool.end()
  }
})
