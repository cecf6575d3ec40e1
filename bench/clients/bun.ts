import { pipeline } from 'node:stream/promises'
import { childMain, latencySink, measure, reportInterval } from '../lib/measure.js'
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

// Bun's built-in SQL client (Bun.SQL, PostgreSQL adapter), run by the Bun
// runtime (node_modules/.bin/bun), with its defaults: prepared statements,
// row objects, int8 and numeric as strings (bigint: false), on one connection
// (max: 4 for the pool workload). COPY through query.readable() and
// query.writable() (web streams), FROM 'text' or 'binary' data encoded by the
// benchmark's own encoders; cancel through query.cancel(), which sends a
// CancelRequest. Bun.SQL has no cursor or row stream: 'stream' loads every row.

/** The little of Bun.SQL this client uses (the bun-types package is not installed). */
type Row = Record<string, unknown>
type Rows = Row[] & { count: number | null; command: string }
interface Query extends Promise<Rows> {
  cancel(): Query
  readable(): ReadableStream<Uint8Array>
  writable(): WritableStream<Uint8Array>
}
interface Sql {
  (strings: TemplateStringsArray, ...values: unknown[]): Query
  /** With values, a prepared statement; without (or with []), the simple query protocol, never prepared. */
  unsafe(text: string, values?: unknown[]): Query
  close(options?: { timeout?: number }): Promise<void>
}
interface SqlOptions {
  adapter: 'postgres'
  hostname: string
  port: number
  username: string
  password: string
  database: string
  max: number
  tls: boolean
  prepare: boolean
}
const BunSQL = (globalThis as unknown as { Bun?: { SQL: new (options: SqlOptions) => Sql } }).Bun?.SQL
if (!BunSQL) throw new Error('bench/clients/bun.js runs under Bun (node_modules/.bin/bun), not Node')

/**
 * A statement without parameters, as a tagged template: Bun prepares those,
 * as it does sql`SELECT ... LIMIT 20000` written out, whereas sql.unsafe(text)
 * without values takes the simple query protocol.
 */
function statement(text: string): TemplateStringsArray {
  const strings = [text]
  Object.defineProperty(strings, 'raw', { value: [text] })
  return strings as unknown as TemplateStringsArray
}

/** Writes COPY data into a writable() query; resolves with the row count the server reported. */
async function copyIn(query: Query, chunks: Iterable<Uint8Array>): Promise<string> {
  const writer = query.writable().getWriter()
  for (const chunk of chunks) await writer.write(chunk)
  await writer.close()
  return String((await query).count)
}

await childMain(async (task: Task) => {
  const n = task.size
  const keys = userKeys()
  const { host, user, ...target } = task.target
  const sql = new BunSQL({ adapter: 'postgres', ...target, hostname: host, username: user, max: task.workload === 'pool' || task.workload in SMALL_READS ? 4 : 1, tls: false, prepare: true })
  const firstCheck = async (text: string): Promise<string | undefined> => (await sql.unsafe(text))[0]?.check as string | undefined
  try {
    if (task.workload in SMALL_READS) {
      const k = smallReadRows(task.workload)
      const text = smallReadSql(k)
      return await measure(task, n, () => smallReads(keys, Math.ceil(n / k), (key) => sql.unsafe(text, [key])))
    }
    switch (task.workload) {
      case 'typed-read': {
        const text = statement(typedReadSql(n))
        return await measure(task, n, async () => checksumRows(await sql(text)))
      }
      case 'users-read': {
        const text = statement(usersReadSql(n))
        return await measure(task, n, async () => checksumUsers(await sql(text)))
      }
      case 'pool':
      case 'pipelined':
        // A Bun query starts when first awaited (then()): Promise.all starts all n in one go.
        return await measure(task, n, async () => {
          const all = new Array<Query>(n)
          for (let i = 0; i < n; i++) all[i] = sql.unsafe(selectUserSql, [keys[i % keys.length]!])
          const rs = await Promise.all(all)
          return checksumLookups(keys, rs.map((r) => r[0]))
        })
      case 'sequential':
      case 'sequential-one-core':
        return await measure(task, n, async () => {
          const lat = latencySink()
          const rows = new Array<Row | undefined>(n)
          for (let i = 0; i < n; i++) {
            const t0 = performance.now()
            rows[i] = (await sql.unsafe(selectUserSql, [keys[i % keys.length]!]))[0]
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
            const all = new Array<Query>(n)
            for (let i = 0; i < n; i++) all[i] = sql.unsafe(insertUserSql, insertParams(ids, i))
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
        // Not streaming: Bun.SQL (1.4.5) has no cursor, row callback or row
        // stream, so this is one query that holds every row until it ends.
        const text = statement(usersReadSql(n))
        return await measure(task, n, async () => {
          let count = 0
          let sum = 0
          for (const r of await sql(text)) {
            sum += (r.email as string).length
            count++
          }
          return `${count}:${sum}`
        })
      }
      case 'copy-from-text': {
        const chunks = copyTextChunks(n)
        return await measure(task, n, () => copyIn(sql.unsafe(copyFromSql), chunks), false, copyInUntimed(firstCheck))
      }
      case 'copy-from-rows': {
        const rows = copyRows(n)
        const binary = task.variant === 'binary'
        return await measure(
          task,
          n,
          () => copyIn(sql.unsafe(binary ? copyFromBinarySql : copyFromSql), binary ? encodeCopyBinary(rows) : encodeCopyText(rows)),
          false,
          copyInUntimed(firstCheck),
        )
      }
      case 'copy-to': {
        return await measure(task, n, async () => {
          const counter = new ByteCounter()
          await pipeline(sql.unsafe(copyToSql(n)).readable(), counter)
          return `${counter.bytes} bytes`
        })
      }
      default:
        throw new Error(`unknown workload ${task.workload}`)
    }
  } finally {
    await sql.close()
  }
})
