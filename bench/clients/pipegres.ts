import dc from 'node:diagnostics_channel'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { connect, createPool, type BatchBuilder, type Queryable, type Result } from '../../src/index.js'
import { childMain, latencySink, measure, reportInterval } from '../lib/measure.js'
import type { Task } from '../lib/protocol.js'
import {
  ByteCounter,
  checksumLookups,
  checksumRows,
  checksumUsers,
  COPY_COLUMNS,
  COPY_TABLE,
  copyFromSql,
  copyInUntimed,
  copyRows,
  copyTextChunks,
  copyToSql,
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
} from '../lib/workloads.js'

// pipegres: variant 'binary' (prepared statements: results in binary after the
// first execution) or 'unprepared' (prepare: false: unnamed statements, results
// in binary once the text's columns are known; the codec workload measures
// decoding from text).
// stream: variant 'stream' or 'cursor'; copy-from-rows: 'binary' or 'text', the
// format copyFromRows() sends; copy-to: '' (copyTo(), raw bytes) or 'rows'
// (copyToRows(), decoded rows).
// pipelined: variant 'traced' runs with a subscriber on pipegres:query that
// times every query, as a tracer would (the cost of tracing when it is on).
// pipelined and inserts: variant 'batch' sends the same statements through
// batch(), BATCH of them under each Sync (as pgbench's pipelines), every batch
// in flight at once.

const BATCH = 100

/**
 * rowMode 'lazy' decodes a column when it is read: reading every column of
 * every row, by name as an application does, does all the decoding the other
 * clients do, so the figures compare. The checksum is theirs (row count and the
 * key column's sum or total length); `seen` proves every value was made.
 */
function readEveryUser(rows: readonly Record<string, unknown>[]): string {
  let sum = 0
  let seen = 0
  for (const r of rows) {
    seen += +(r.id !== null) + +(r.name !== null) + +(r.password !== null)
    sum += (r.email as string).length
  }
  return seen > 0 || rows.length === 0 ? `${rows.length}:${sum}` : 'no values'
}

function readEveryTyped(rows: readonly Record<string, unknown>[]): string {
  let sum = 0
  let seen = 0
  for (const r of rows) {
    seen += +(r.i8 !== null) + +(r.f8 !== null) + +(r.num !== null) + +(r.flag !== null) + +(r.ts !== null) + +(r.d !== null)
    seen += +(r.u !== null) + +(r.j !== null) + +(r.by !== null) + +(r.tags !== null)
    sum += r.id as number
  }
  return seen > 0 || rows.length === 0 ? `${rows.length}:${sum}` : 'no values'
}

/** The results of `n` statements sent as batches of BATCH, all in flight, in order. */
async function batched<R>(db: Queryable, n: number, add: (b: BatchBuilder, i: number) => void): Promise<Result<R>[]> {
  const all: Promise<Result<R>[]>[] = []
  for (let i = 0; i < n; i += BATCH) {
    const end = Math.min(i + BATCH, n)
    all.push(db.batch<R>((b) => {
      for (let j = i; j < end; j++) add(b, j)
    }))
  }
  return (await Promise.all(all)).flat()
}

/** A subscriber doing what a tracer's least does: note the start, and the duration and outcome at the end. */
function subscribeTimer(): void {
  const starts = new WeakMap<object, number>()
  let total = 0
  let failed = 0
  dc.tracingChannel('pipegres:query').subscribe({
    start: (ctx) => void starts.set(ctx, performance.now()),
    end: () => {},
    asyncStart: () => {},
    asyncEnd: (ctx) => {
      total += performance.now() - (starts.get(ctx) ?? 0)
      if ((ctx as { error?: unknown }).error !== undefined) failed++
    },
    error: () => {},
  })
  process.on('exit', () => void (total + failed))
}

interface User {
  id: string
  name: string
  email: string
}

await childMain(async (task: Task) => {
  const n = task.size
  const keys = userKeys()
  if (task.workload === 'pool') {
    const pool = createPool({ ...task.target, sslmode: 'disable', max: 4 })
    try {
      return await measure(task, n, async () => {
        const all = new Array<Promise<{ rows: User[] }>>(n)
        for (let i = 0; i < n; i++) all[i] = pool.query<User>(selectUserSql, [keys[i % keys.length]])
        const rs = await Promise.all(all)
        return checksumLookups(keys, rs.map((r) => r.rows[0]))
      })
    } finally {
      await pool.end()
    }
  }
  if (task.workload in SMALL_READS) {
    const k = smallReadRows(task.workload)
    const text = smallReadSql(k)
    const pool = createPool({ ...task.target, sslmode: 'disable', max: 4 })
    try {
      return await measure(task, n, () => smallReads(keys, Math.ceil(n / k), async (key) => (await pool.query<User>(text, [key])).rows))
    } finally {
      await pool.end()
    }
  }
  if (task.variant === 'traced') subscribeTimer()
  const db = await connect({ ...task.target, sslmode: 'disable', prepare: task.variant !== 'unprepared' })
  const firstCheck = async (text: string): Promise<string | undefined> => (await db.query<{ check: string }>(text)).rows[0]?.check
  try {
    switch (task.workload) {
      case 'typed-read': {
        const sql = typedReadSql(n)
        if (task.variant === 'columns') {
          return await measure(task, n, async () => {
            const ids = (await db.query(sql, [], { rowMode: 'columns' })).columns!.id as Int32Array
            let sum = 0
            for (let i = 0; i < ids.length; i++) sum += ids[i]!
            return `${ids.length}:${sum}`
          })
        }
        if (task.variant === 'lazy') return await measure(task, n, async () => readEveryTyped((await db.query(sql, [], { rowMode: 'lazy' })).rows))
        return await measure(task, n, async () => checksumRows((await db.query(sql)).rows))
      }
      case 'users-read': {
        const sql = usersReadSql(n)
        if (task.variant === 'lazy') return await measure(task, n, async () => readEveryUser((await db.query(sql, [], { rowMode: 'lazy' })).rows))
        return await measure(task, n, async () => checksumUsers((await db.query<User>(sql)).rows))
      }
      case 'pipelined':
        if (task.variant === 'batch') {
          return await measure(task, n, async () => {
            const rs = await batched<User>(db, n, (b, i) => b.query(selectUserSql, [keys[i % keys.length]]))
            return checksumLookups(keys, rs.map((r) => r.rows[0]))
          })
        }
        return await measure(task, n, async () => {
          const all = new Array<Promise<{ rows: User[] }>>(n)
          for (let i = 0; i < n; i++) all[i] = db.query<User>(selectUserSql, [keys[i % keys.length]])
          const rs = await Promise.all(all)
          return checksumLookups(keys, rs.map((r) => r.rows[0]))
        })
      case 'sequential':
      case 'sequential-one-core':
        return await measure(task, n, async () => {
          const lat = latencySink()
          const rows = new Array<User | undefined>(n)
          for (let i = 0; i < n; i++) {
            const t0 = performance.now()
            rows[i] = (await db.query<User>(selectUserSql, [keys[i % keys.length]])).rows[0]
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
            if (task.variant === 'batch') return String((await batched(db, n, (b, i) => b.query(insertUserSql, insertParams(ids, i)))).length)
            const all = new Array<Promise<unknown>>(n)
            for (let i = 0; i < n; i++) all[i] = db.query(insertUserSql, insertParams(ids, i))
            return String((await Promise.all(all)).length)
          },
          false,
          insertUntimed(firstCheck),
        )
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
      case 'stream': {
        const sql = usersReadSql(n)
        if (task.variant === 'cursor') {
          return await measure(task, n, async () => {
            let count = 0
            let sum = 0
            for await (const rows of db.cursor<User>(sql, [], { batchSize: 1000 })) {
              for (const r of rows) sum += r.email.length
              count += rows.length
            }
            return `${count}:${sum}`
          })
        }
        // 'stream-lazy' reads the one column the checksum needs: the others are never decoded.
        const streamOptions = task.variant === 'stream-lazy' ? { rowMode: 'lazy' as const } : {}
        return await measure(task, n, async () => {
          let count = 0
          let sum = 0
          for await (const r of db.stream<User>(sql, [], streamOptions)) {
            sum += r.email.length
            count++
          }
          return `${count}:${sum}`
        })
      }
      case 'copy-from-text': {
        const chunks = copyTextChunks(n)
        return await measure(
          task,
          n,
          async () => {
            const w = db.copyFrom(copyFromSql)
            await pipeline(Readable.from(chunks), w)
            return String((await w.result).rowCount)
          },
          false,
          copyInUntimed(firstCheck),
        )
      }
      case 'copy-from-rows': {
        const rows = copyRows(n)
        const format = task.variant === 'text' ? 'text' : 'binary'
        return await measure(
          task,
          n,
          async () => String((await db.copyFromRows(COPY_TABLE, rows, { columns: COPY_COLUMNS, format })).rowCount),
          false,
          copyInUntimed(firstCheck),
        )
      }
      case 'copy-to': {
        if (task.variant === 'rows') {
          return await measure(task, n, async () => {
            let count = 0
            let sum = 0
            for await (const r of db.copyToRows<User>(usersReadSql(n), { format: 'binary' })) {
              sum += r.email.length
              count++
            }
            return `${count}:${sum}`
          })
        }
        return await measure(task, n, async () => {
          const counter = new ByteCounter()
          await pipeline(db.copyTo(copyToSql(n)), counter)
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
