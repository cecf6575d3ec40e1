import postgres from 'postgres'
import { childMain, measure, reportInterval } from '../lib/measure.js'
import type { Task } from '../lib/protocol.js'
import { checksumRows, selectUserSql, typedReadSql } from '../lib/workloads.js'

// postgres.js with its defaults (prepared statements, text results), on one connection.

await childMain(async (task: Task) => {
  const sql = postgres({ ...task.target, max: task.workload === 'pool-select' ? 4 : 1, ssl: false, onnotice: () => {} })
  try {
    switch (task.workload) {
      case 'typed-read': {
        const text = typedReadSql(task.size)
        return await measure(task, task.size, async () => checksumRows(await sql.unsafe(text, [], { prepare: true })))
      }
      case 'pool-select':
      case 'select-pipelined': {
        const n = task.size
        return await measure(task, n, async () => {
          const all = new Array<Promise<postgres.RowList<postgres.Row[]>>>(n)
          for (let i = 0; i < n; i++) all[i] = sql.unsafe(selectUserSql, [(i % 10000) + 1], { prepare: true })
          const rs = await Promise.all(all)
          return checksumRows(rs.map((r) => r[0]!))
        })
      }
      case 'select-sequential': {
        const n = task.size
        return await measure(task, n, async () => {
          let sum = 0
          for (let i = 0; i < n; i++) sum += (await sql.unsafe(selectUserSql, [(i % 10000) + 1], { prepare: true }))[0]!.id as number
          return `${n}:${sum}`
        })
      }
      case 'cancel': {
        return await measure(task, 1, async () => {
          const q = sql.unsafe('SELECT pg_sleep(10)')
          const done = q.catch(() => undefined)
          await new Promise((r) => setTimeout(r, 20))
          const t0 = performance.now()
          q.cancel()
          await done
          reportInterval(performance.now() - t0)
          return 'cancelled'
        }, true)
      }
      default:
        throw new Error(`unknown workload ${task.workload}`)
    }
  } finally {
    await sql.end()
  }
})
