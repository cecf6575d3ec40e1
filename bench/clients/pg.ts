import pg from 'pg'
import { childMain, measure } from '../lib/measure.js'
import type { Task } from '../lib/protocol.js'
import { checksumRows, selectUserSql, typedReadSql } from '../lib/workloads.js'

// node-postgres with its defaults (text results, pg-types parsers). Variant
// 'pipeline' turns on its opt-in pipelining (pg 8.23+).

await childMain(async (task: Task) => {
  if (task.workload === 'pool-select') {
    const pool = new pg.Pool({ ...task.target, max: 4 })
    try {
      const n = task.size
      return await measure(task, n, async () => {
        const all = new Array<Promise<pg.QueryResult>>(n)
        for (let i = 0; i < n; i++) all[i] = pool.query({ name: 'sel', text: selectUserSql, values: [(i % 10000) + 1] })
        const rs = await Promise.all(all)
        return checksumRows(rs.map((r) => r.rows[0] as Record<string, unknown>))
      })
    } finally {
      await pool.end()
    }
  }
  const db = new pg.Client({ ...task.target, ...(task.variant === 'pipeline' ? { pipeline: true } : {}) } as pg.ClientConfig)
  await db.connect()
  try {
    switch (task.workload) {
      case 'typed-read': {
        const sql = typedReadSql(task.size)
        return await measure(task, task.size, async () => checksumRows((await db.query(sql)).rows))
      }
      case 'select-pipelined': {
        const n = task.size
        return await measure(task, n, async () => {
          const all = new Array<Promise<pg.QueryResult>>(n)
          for (let i = 0; i < n; i++) all[i] = db.query({ name: 'sel', text: selectUserSql, values: [(i % 10000) + 1] })
          const rs = await Promise.all(all)
          return checksumRows(rs.map((r) => r.rows[0] as Record<string, unknown>))
        })
      }
      case 'select-sequential': {
        const n = task.size
        return await measure(task, n, async () => {
          let sum = 0
          for (let i = 0; i < n; i++) sum += (await db.query({ name: 'sel', text: selectUserSql, values: [(i % 10000) + 1] })).rows[0].id
          return `${n}:${sum}`
        })
      }
      default:
        throw new Error(`unknown workload ${task.workload}`)
    }
  } finally {
    await db.end()
  }
})
