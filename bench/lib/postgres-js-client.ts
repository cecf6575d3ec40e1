import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type postgres from 'postgres'
import { childMain, latencySink, measure, reportInterval } from './measure.js'
import type { Task } from './protocol.js'
import {
  ByteCounter,
  checksumLookups,
  checksumRows,
  checksumUsers,
  copyFromBinarySql,
  copyFromSql,
  copyInUntimed,
  copyRows,
  copyTextChunks,
  copyToSql,
  encodeCopyBinary,
  encodeCopyText,
  insertParams,
  insertUntimed,
  insertUserSql,
  selectUserSql,
  smallReadRows,
  smallReadSql,
  smallReads,
  SMALL_READS,
  typedReadSql,
  userKeys,
  usersReadSql,
} from './workloads.js'

// The workloads of a postgres.js-shaped client (postgres.js itself, or
// pipegres/postgres, its API on pipegres), with its defaults (prepared
// statements), on one connection (max: 4 for the pool workload). stream:
// variant 'cursor' (.cursor(1000)) or 'forEach'; COPY FROM 'text' or 'binary'
// data encoded by the benchmark's own encoders. Variant 'tagged' runs the
// lookups of W1, W2 and W3 as tagged templates (the SQL text cached per call
// site) instead of unsafe().

/** Runs the task given to this child on `makeSql` (postgres.js's `postgres` function, or one with its API). */
export function runPostgresJs(makeSql: typeof postgres): Promise<void> {
  return childMain(async (task: Task) => {
  const n = task.size
  const keys = userKeys()
  const sql = makeSql({ ...task.target, max: task.workload === 'pool' || task.workload in SMALL_READS ? 4 : 1, ssl: false, onnotice: () => {} })
  // The W1-W3 lookup: unsafe() with the benchmark's SQL text, or (variant 'tagged') the same text as a tagged template.
  const lookup =
    task.variant === 'tagged'
      ? (key: string) => sql`SELECT id, name, email FROM bench_users WHERE id = ${key}`
      : (key: string) => sql.unsafe(selectUserSql, [key], { prepare: true })
  const firstCheck = async (text: string): Promise<string | undefined> => (await sql.unsafe(text))[0]?.check as string | undefined
  try {
    if (task.workload in SMALL_READS) {
      const k = smallReadRows(task.workload)
      const text = smallReadSql(k)
      return await measure(task, n, () => smallReads(keys, Math.ceil(n / k), (key) => sql.unsafe(text, [key], { prepare: true })))
    }
    switch (task.workload) {
      case 'typed-read': {
        const text = typedReadSql(n)
        return await measure(task, n, async () => checksumRows(await sql.unsafe(text, [], { prepare: true })))
      }
      case 'users-read': {
        const text = usersReadSql(n)
        return await measure(task, n, async () => checksumUsers(await sql.unsafe(text, [], { prepare: true })))
      }
      case 'pool':
      case 'pipelined':
        return await measure(task, n, async () => {
          const all = new Array<Promise<postgres.RowList<postgres.Row[]>>>(n)
          for (let i = 0; i < n; i++) all[i] = lookup(keys[i % keys.length]!)
          const rs = await Promise.all(all)
          return checksumLookups(keys, rs.map((r) => r[0]))
        })
      case 'sequential':
      case 'sequential-one-core':
        return await measure(task, n, async () => {
          const lat = latencySink()
          const rows = new Array<postgres.Row | undefined>(n)
          for (let i = 0; i < n; i++) {
            const t0 = performance.now()
            rows[i] = (await lookup(keys[i % keys.length]!))[0]
            lat.push(performance.now() - t0)
          }
          return checksumLookups(keys, rows)
        })
      case 'inserts': {
        const ids = userKeys(n)
        return await measure(
          task,
          n,
          async () => {
            const all = new Array<Promise<unknown>>(n)
            for (let i = 0; i < n; i++) all[i] = sql.unsafe(insertUserSql, insertParams(ids, i), { prepare: true })
            return String((await Promise.all(all)).length)
          },
          false,
          insertUntimed(firstCheck),
        )
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
      case 'stream': {
        const text = usersReadSql(n)
        if (task.variant === 'forEach') {
          return await measure(task, n, async () => {
            let count = 0
            let sum = 0
            await sql.unsafe(text, [], { prepare: true }).forEach((r) => {
              sum += (r.email as string).length
              count++
            })
            return `${count}:${sum}`
          })
        }
        return await measure(task, n, async () => {
          let count = 0
          let sum = 0
          for await (const rows of sql.unsafe(text, [], { prepare: true }).cursor(1000)) {
            for (const r of rows) sum += (r.email as string).length
            count += rows.length
          }
          return `${count}:${sum}`
        })
      }
      // writable() does not tell how many rows the server took: the table's count says it.
      case 'copy-from-text': {
        const chunks = copyTextChunks(n)
        return await measure(
          task,
          n,
          async () => {
            await pipeline(Readable.from(chunks), await sql.unsafe(copyFromSql).writable())
            return '-'
          },
          false,
          copyInUntimed(firstCheck),
        )
      }
      case 'copy-from-rows': {
        const rows = copyRows(n)
        const binary = task.variant === 'binary'
        return await measure(
          task,
          n,
          async () => {
            const data = binary ? encodeCopyBinary(rows) : encodeCopyText(rows)
            await pipeline(Readable.from(data), await sql.unsafe(binary ? copyFromBinarySql : copyFromSql).writable())
            return '-'
          },
          false,
          copyInUntimed(firstCheck),
        )
      }
      case 'copy-to': {
        return await measure(task, n, async () => {
          const counter = new ByteCounter()
          await pipeline(await sql.unsafe(copyToSql(n)).readable(), counter)
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
}
