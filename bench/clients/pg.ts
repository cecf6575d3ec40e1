import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { from as copyFrom, to as copyTo } from 'pg-copy-streams'
import PgCursor from 'pg-cursor'
import QueryStream from 'pg-query-stream'
import { childMain, latencySink, measure } from '../lib/measure.js'
import type { Task } from '../lib/protocol.js'
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
} from '../lib/workloads.js'

// node-postgres with its defaults (text results, pg-types parsers). Variant
// 'pipeline' turns on its opt-in pipelining (pg 8.23+); variant 'native' runs
// the same API over libpq (pg.native, from pg-native), which has no cursors,
// streams or COPY. stream: variant 'query-stream' (pg-query-stream) or 'cursor'
// (pg-cursor); COPY through pg-copy-streams, 'text' or 'binary' data encoded
// by the benchmark's own encoders.

interface User {
  id: string
  name: string
  email: string
}

type Queryable = Pick<pg.Client, 'query'>

await childMain(async (task: Task) => {
  const n = task.size
  const keys = userKeys()
  const native = task.variant === 'native'
  if (native && !pg.native) throw new Error('pg-native is not installed (it needs libpq and a C++ toolchain to build)')
  const api = native ? pg.native! : pg
  const lookups = (db: Queryable) =>
    measure(task, n, async () => {
      const all = new Array<Promise<pg.QueryResult<User>>>(n)
      for (let i = 0; i < n; i++) all[i] = db.query<User>({ name: 'sel', text: selectUserSql, values: [keys[i % keys.length]] })
      const rs = await Promise.all(all)
      return checksumLookups(keys, rs.map((r) => r.rows[0]))
    })
  if (task.workload in SMALL_READS) {
    const k = smallReadRows(task.workload)
    const text = smallReadSql(k)
    const pool = new api.Pool({ ...task.target, max: 4 })
    try {
      return await measure(task, n, () => smallReads(keys, Math.ceil(n / k), async (key) => (await pool.query<User>({ name: `small${k}`, text, values: [key] })).rows))
    } finally {
      await pool.end()
    }
  }
  if (task.workload === 'pool') {
    const pool = new api.Pool({ ...task.target, max: 4 })
    try {
      return await lookups(pool)
    } finally {
      await pool.end()
    }
  }
  const db = new api.Client({ ...task.target, ...(task.variant === 'pipeline' ? { pipeline: true } : {}) } as pg.ClientConfig)
  await db.connect()
  const firstCheck = async (text: string): Promise<string | undefined> => (await db.query<{ check: string }>(text)).rows[0]?.check
  try {
    switch (task.workload) {
      case 'typed-read': {
        const sql = typedReadSql(n)
        return await measure(task, n, async () => checksumRows((await db.query(sql)).rows))
      }
      case 'users-read': {
        const sql = usersReadSql(n)
        return await measure(task, n, async () => checksumUsers((await db.query<User>(sql)).rows))
      }
      case 'pipelined':
        return await lookups(db)
      case 'sequential':
      case 'sequential-one-core':
        return await measure(task, n, async () => {
          const lat = latencySink()
          const rows = new Array<User | undefined>(n)
          for (let i = 0; i < n; i++) {
            const t0 = performance.now()
            rows[i] = (await db.query<User>({ name: 'sel', text: selectUserSql, values: [keys[i % keys.length]] })).rows[0]
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
            for (let i = 0; i < n; i++) all[i] = db.query({ name: 'ins', text: insertUserSql, values: insertParams(ids, i) })
            return String((await Promise.all(all)).length)
          },
          false,
          insertUntimed(firstCheck),
        )
      }
      case 'stream': {
        const sql = usersReadSql(n)
        if (task.variant === 'cursor') {
          return await measure(task, n, async () => {
            const cursor = db.query(new PgCursor<User>(sql))
            let count = 0
            let sum = 0
            for (;;) {
              const rows = await cursor.read(1000)
              if (rows.length === 0) break
              for (const r of rows) sum += r.email.length
              count += rows.length
            }
            await cursor.close()
            return `${count}:${sum}`
          })
        }
        return await measure(task, n, async () => {
          let count = 0
          let sum = 0
          // Its default batchSize (100) costs it a round trip per 100 rows; 1000 matches the others.
          for await (const r of db.query(new QueryStream(sql, [], { batchSize: 1000 })) as AsyncIterable<User>) {
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
            const w = db.query(copyFrom(copyFromSql))
            await pipeline(Readable.from(chunks), w)
            return String(w.rowCount)
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
            const w = db.query(copyFrom(binary ? copyFromBinarySql : copyFromSql))
            await pipeline(Readable.from(binary ? encodeCopyBinary(rows) : encodeCopyText(rows)), w)
            return String(w.rowCount)
          },
          false,
          copyInUntimed(firstCheck),
        )
      }
      case 'copy-to': {
        return await measure(task, n, async () => {
          const counter = new ByteCounter()
          await pipeline(db.query(copyTo(copyToSql(n))), counter)
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
