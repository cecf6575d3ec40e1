import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { connect, createPool } from '../../src/index.js'
import { childMain, measure, reportInterval } from '../lib/measure.js'
import type { Task } from '../lib/protocol.js'
import {
  ByteCounter,
  checksumRows,
  COPY_COLUMNS,
  COPY_TABLE,
  copyFromSql,
  copyInUntimed,
  copyRows,
  copyTextChunks,
  copyToSql,
  selectUserSql,
  STREAM_TABLE,
  streamSelectSql,
  typedReadSql,
} from '../lib/workloads.js'

// pipegres: variant 'binary' (prepared statements: results in binary after the
// first execution) or 'text' (prepare: false: unnamed statements, text results).
// stream-select: variant 'stream' or 'cursor'; copy-from-rows: 'binary' or
// 'text', the format copyFromRows() sends; copy-to: '' (copyTo(), raw bytes) or
// 'rows' (copyToRows(), decoded rows).

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
  const db = await connect({ ...task.target, sslmode: 'disable', prepare: !(task.workload === 'typed-read' && task.variant === 'text') })
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
      case 'stream-select': {
        const sql = streamSelectSql(task.size)
        if (task.variant === 'cursor') {
          return await measure(task, task.size, async () => {
            let n = 0
            let sum = 0
            for await (const rows of db.cursor<{ id: number }>(sql, [], { batchSize: 1000 })) {
              for (const r of rows) sum += r.id
              n += rows.length
            }
            return `${n}:${sum}`
          })
        }
        return await measure(task, task.size, async () => {
          let n = 0
          let sum = 0
          for await (const r of db.stream<{ id: number }>(sql)) {
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
            const w = db.copyFrom(copyFromSql)
            await pipeline(Readable.from(chunks), w)
            return String((await w.result).rowCount)
          },
          false,
          copyIn,
        )
      }
      case 'copy-from-rows': {
        const rows = copyRows(task.size)
        const format = task.variant === 'text' ? 'text' : 'binary'
        return await measure(
          task,
          task.size,
          async () => String((await db.copyFromRows(COPY_TABLE, rows, { columns: COPY_COLUMNS, format })).rowCount),
          false,
          copyIn,
        )
      }
      case 'copy-to': {
        if (task.variant === 'rows') {
          return await measure(task, task.size, async () => {
            let n = 0
            let sum = 0
            for await (const r of db.copyToRows<{ id: number }>(`SELECT id, name, n FROM ${STREAM_TABLE}`, { format: 'binary' })) {
              sum += r.id
              n++
            }
            if (n !== task.size) throw new Error(`copied ${n} rows, expected ${task.size}`)
            return `${n}:${sum}`
          })
        }
        return await measure(task, task.size, async () => {
          const counter = new ByteCounter()
          await pipeline(db.copyTo(copyToSql), counter)
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
