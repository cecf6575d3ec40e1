import { HOT_POOL_SIZE, runHotKeys, type HotUser } from '../lib/hot-keys.js'
import { childMain } from '../lib/measure.js'
import { selectUserSql } from '../lib/workloads.js'

// The hot-key workload on Bun's built-in SQL client (max: 4, prepared statements), run by the Bun runtime.

interface Sql {
  unsafe(text: string, values?: unknown[]): Promise<HotUser[]>
  close(options?: { timeout?: number }): Promise<void>
}
type SqlOptions = { adapter: 'postgres'; hostname: string; port: number; username: string; password: string; database: string; max: number; tls: boolean; prepare: boolean }
const BunSQL = (globalThis as unknown as { Bun?: { SQL: new (options: SqlOptions) => Sql } }).Bun?.SQL
if (!BunSQL) throw new Error('bench/clients/hot-bun.js runs under Bun (node_modules/.bin/bun), not Node')

await childMain(async (task) => {
  const { host, user, ...target } = task.target
  const sql = new BunSQL({ adapter: 'postgres', ...target, hostname: host, username: user, max: HOT_POOL_SIZE, tls: false, prepare: true })
  try {
    return await runHotKeys(task, async (id) => (await sql.unsafe(selectUserSql, [id]))[0])
  } finally {
    await sql.close({ timeout: 0 })
  }
})
