import { APP_POOL_SIZE, runApp, type AppUser } from '../lib/app.js'
import { childMain } from '../lib/measure.js'
import { selectUserSql } from '../lib/workloads.js'

// The app workload on Bun's built-in SQL client (max: 4, prepared statements), run by the Bun runtime.

interface Sql {
  unsafe(text: string, values?: unknown[]): Promise<AppUser[]>
  close(options?: { timeout?: number }): Promise<void>
}
type SqlOptions = { adapter: 'postgres'; hostname: string; port: number; username: string; password: string; database: string; max: number; tls: boolean; prepare: boolean }
const BunSQL = (globalThis as unknown as { Bun?: { SQL: new (options: SqlOptions) => Sql } }).Bun?.SQL
if (!BunSQL) throw new Error('bench/clients/app-bun.js runs under Bun (node_modules/.bin/bun), not Node')

await childMain(async (task) => {
  const { host, user, ...target } = task.target
  const sql = new BunSQL({ adapter: 'postgres', ...target, hostname: host, username: user, max: APP_POOL_SIZE, tls: false, prepare: true })
  try {
    return await runApp(task, async (id) => (await sql.unsafe(selectUserSql, [id]))[0])
  } finally {
    await sql.close({ timeout: 0 })
  }
})
