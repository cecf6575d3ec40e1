import postgres from 'postgres'
import { childMain, measure } from '../lib/measure.js'
import type { Task } from '../lib/protocol.js'
import { checksumRows, selectUserSql, typedReadSql } from '../lib/workloads.js'

// postgres.js with its defaults (prepared statements, text results), on one connection.

await childMain(async (task: Task) => {
  const sql = postgres({ ...task.target, max: 1, ssl: false, onnotice: () => {} })
  try {
    switch (task.workload) {
      case 'typed-read': {
        const text = typedReadSql(task.size)
        return await measure(task, task.size, async () => checksumRows(await sql.unsafe(text, [], { prepare: true })))
      }
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
      default:
        throw new Error(`unknown workload ${task.workload}`)
    }
  } finally {
    await sql.end()
  }
})
