import { connect, createPool } from '../../src/index.js'
import { childMain, measure, reportInterval } from '../lib/measure.js'
import type { Task } from '../lib/protocol.js'
import { checksumRows, selectUserSql, typedReadSql } from '../lib/workloads.js'

// pipegres: variant 'binary' (prepared statements: results in binary after the
// first execution) or 'text' (prepare: false: unnamed statements, text results).

await childMain(async (task: Task) => {
  if (task.workload === 'pool-select') {
    const pool = createPool({ ...task.target, sslmode: 'disable', max: 4 })
    try {
      const n = task.size
      return await measure(task, n, async () => {
        const all = new Array<Promise<{ rows: Record<string, unknown>[] }>>(n)
        for (let i = 0; i < n; i++) all[i] = pool.query(selectUserSql, [(i % 10000) + 1])
        const rs = await Promise.all(all)
        return checksumRows(rs.map((r) => r.rows[0]!))
      })
    } finally {
      await pool.end()
    }
  }
  const db = await connect({ ...task.target, sslmode: 'disable', prepare: task.variant !== 'text' })
  try {
    switch (task.workload) {
      case 'typed-read': {
        const sql = typedReadSql(task.size)
        return await measure(task, task.size, async () => checksumRows((await db.query(sql)).rows))
      }
      case 'select-pipelined': {
        const n = task.size
        return await measure(task, n, async () => {
          const all = new Array<Promise<{ rows: Record<string, unknown>[] }>>(n)
          for (let i = 0; i < n; i++) all[i] = db.query(selectUserSql, [(i % 10000) + 1])
          const rs = await Promise.all(all)
          return checksumRows(rs.map((r) => r.rows[0]!))
        })
      }
      case 'select-sequential': {
        const n = task.size
        return await measure(task, n, async () => {
          let sum = 0
          for (let i = 0; i < n; i++) sum += (await db.query<{ id: number }>(selectUserSql, [(i % 10000) + 1])).rows[0]!.id
          return `${n}:${sum}`
        })
      }
      case 'cancel': {
        // Time from abort() to the rejection of a running query, one at a time.
        return await measure(task, 1, async () => {
          const ac = new AbortController()
          const q = db.query('SELECT pg_sleep(10)', [], { signal: ac.signal })
          await new Promise((r) => setTimeout(r, 20))
          const t0 = performance.now()
          ac.abort()
          await q.catch(() => undefined)
          reportInterval(performance.now() - t0)
          return 'cancelled'
        }, true)
      }
      default:
        throw new Error(`unknown workload ${task.workload}`)
    }
  } finally {
    await db.end()
  }
})
