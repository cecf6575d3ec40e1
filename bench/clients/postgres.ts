import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import postgres from 'postgres'
import { childMain, measure, reportInterval } from '../lib/measure.js'
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

// postgres.js with its defaults (prepared statements, text results), on one
// connection. stream-select: variant 'cursor' (.cursor(1000)) or 'forEach'.

await childMain(async (task: Task) => {
  const sql = postgres({ ...task.target, max: task.workload === 'pool-select' ? 4 : 1, ssl: false, onnotice: () => {} })
  const copyIn = copyInUntimed(async (text) => (await sql.unsafe(text))[0]?.check as string | undefined)
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
      case 'stream-select': {
        const text = streamSelectSql(task.size)
        if (task.variant === 'forEach') {
          return await measure(task, task.size, async () => {
            let n = 0
            let sum = 0
            await sql.unsafe(text, [], { prepare: true }).forEach((r) => {
              sum += r.id as number
              n++
            })
            return `${n}:${sum}`
          })
        }
        return await measure(task, task.size, async () => {
          let n = 0
          let sum = 0
          for await (const rows of sql.unsafe(text, [], { prepare: true }).cursor(1000)) {
            for (const r of rows) sum += r.id as number
            n += rows.length
          }
          return `${n}:${sum}`
        })
      }
      // writable() does not tell how many rows the server took: the table's count says it.
      case 'copy-from-text': {
        const chunks = copyTextChunks(task.size)
        return await measure(
          task,
          task.size,
          async () => {
            await pipeline(Readable.from(chunks), await sql.unsafe(copyFromSql).writable())
            return '-'
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
            await pipeline(Readable.from(encodeCopyText(rows)), await sql.unsafe(copyFromSql).writable())
            return '-'
          },
          false,
          copyIn,
        )
      }
      case 'copy-to': {
        return await measure(task, task.size, async () => {
          const counter = new ByteCounter()
          await pipeline(await sql.unsafe(copyToSql).readable(), counter)
          return `${counter.bytes} bytes`
        })
      }
      default:
        throw new Error(`unknown workload ${task.workload}`)
    }
  } finally {
    await sql.end()
  }
})
