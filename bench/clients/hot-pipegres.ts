import { createPool } from '../../src/index.js'
import { HOT_POOL_SIZE, runHotKeys, type HotUser } from '../lib/hot-keys.js'
import { childMain } from '../lib/measure.js'
import { selectUserSql } from '../lib/workloads.js'

// The hot-key workload on a pipegres Pool of 4; variant 'coalesce' with the pool's coalesce option on.

await childMain(async (task) => {
  const pool = createPool({ ...task.target, sslmode: 'disable', max: HOT_POOL_SIZE, coalesce: task.variant === 'coalesce' })
  try {
    return await runHotKeys(task, async (id) => (await pool.query<HotUser>(selectUserSql, [id])).rows[0])
  } finally {
    await pool.end()
  }
})
