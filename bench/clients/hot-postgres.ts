import postgres from 'postgres'
import { HOT_POOL_SIZE, runHotKeys, type HotUser } from '../lib/hot-keys.js'
import { childMain } from '../lib/measure.js'
import { selectUserSql } from '../lib/workloads.js'

// The hot-key workload on postgres.js with max: 4 (prepared statements).

await childMain(async (task) => {
  const sql = postgres({ ...task.target, max: HOT_POOL_SIZE, ssl: false, onnotice: () => {} })
  try {
    return await runHotKeys(task, async (id) => (await sql.unsafe(selectUserSql, [id], { prepare: true }))[0] as HotUser | undefined)
  } finally {
    await sql.end()
  }
})
