import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { from as copyFrom, to as copyTo } from 'pg-copy-streams'
import PgCursor from 'pg-cursor'
import QueryStream from 'pg-query-stream'
import { childMain, measure } from '../lib/measure.js'
import type { Task } from '../lib/protocol.js'
import {
  ByteCounter,
  checksumRows,
  copyFromSql,
  copyInUntimed,
  copyRows,
  copyTextChunks,
  copyToSql,
  encodeCopyText,
  selectUserSql,
  streamSelectSql,
  typedReadSql,
} from '../lib/workloads.js'

// node-postgres with its defaults (text results, pg-types parsers). Variant
// 'pipeline' turns on its opt-in pipelining (pg 8.23+). stream-select: variant
// 'query-stream' (pg-query-stream) or 'cursor' (pg-cursor); COPY through
// pg-copy-streams.

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
  const copyIn = copyInUntimed(async (text) => (await db.query<{ check: string }>(text)).rows[0]?.check)
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
      case 'stream-select': {
        const sql = streamSelectSql(task.size)
        if (task.variant === 'cursor') {
          return await measure(task, task.size, async () => {
            const cursor = db.query(new PgCursor<{ id: number }>(sql))
            let n = 0
            let sum = 0
            for (;;) {
              const rows = await cursor.read(1000)
              if (rows.length === 0) break
              for (const r of rows) sum += r.id
              n += rows.length
            }
            await cursor.close()
            return `${n}:${sum}`
          })
        }
        return await measure(task, task.size, async () => {
          let n = 0
          let sum = 0
          // Its default batchSize (100) costs it a round trip per 100 rows; 1000 matches the others.
          for await (const r of db.query(new QueryStream(sql, [], { batchSize: 1000 })) as AsyncIterable<{ id: number }>) {
            sum += r.id
            n++
          }
          return `${n}:${sum}`
        })
      }
      case 'copy-from-text': {
        const chunks = copyTextChunks(task.size)
        return await measure(
          task,
          task.size,
          async () => {
            const w = db.query(copyFrom(copyFromSql))
            await pipeline(Readable.from(chunks), w)
            return String(w.rowCount)
          },
          false,
          copyIn,
        )
      }
      case 'copy-from-rows': {
        const rows = copyRows(task.size)
        return await measure(
          task,
          task.size,
          async () => {
            const w = db.query(copyFrom(copyFromSql))
            await pipeline(Readable.from(encodeCopyText(rows)), w)
            return String(w.rowCount)
          },
          false,
          copyIn,
        )
      }
      case 'copy-to': {
        return await measure(task, task.size, async () => {
          const counter = new ByteCounter()
          await pipeline(db.query(copyTo(copyToSql)), counter)
          return `${counter.bytes} bytes`
        })
      }
      default:
        throw new Error(`unknown workload ${task.workload}`)
    }
  } finally {
    await db.end()
  }
})
