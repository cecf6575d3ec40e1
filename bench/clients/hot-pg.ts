import pg from 'pg'
import { HOT_POOL_SIZE, runHotKeys, type HotUser } from '../lib/hot-keys.js'
import { childMain } from '../lib/measure.js'
import { selectUserSql } from '../lib/workloads.js'

// The hot-key workload on a pg Pool of 4 (a named, prepared statement, as in W3).

await childMain(async (task) => {
  const pool = new pg.Pool({ ...task.target, max: HOT_POOL_SIZE })
  try {
    return await runHotKeys(task, async (id) => (await pool.query<HotUser>({ name: 'sel', text: selectUserSql, values: [id] })).rows[0])
  } finally {
    await pool.end()
  }
})
