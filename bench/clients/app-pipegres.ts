import { createPool } from '../../src/index.js'
import { APP_POOL_SIZE, runApp, type AppUser } from '../lib/app.js'
import { childMain } from '../lib/measure.js'
import { selectUserSql } from '../lib/workloads.js'

// The app workload on pipegres directly: a Pool of 4.

await childMain(async (task) => {
  const pool = createPool({ ...task.target, sslmode: 'disable', max: APP_POOL_SIZE })
  try {
    return await runApp(task, async (id) => (await pool.query<AppUser>(selectUserSql, [id])).rows[0])
  } finally {
    await pool.end()
  }
})
