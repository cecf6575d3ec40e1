import { createRequire } from 'node:module'
import { measure, latencySink } from '../lib/measure.js'
import type { Measurement, Task } from '../lib/protocol.js'
import { userKeys } from '../lib/workloads.js'

// The app-pg-orms workload: the app workload's shape (64 requests in progress,
// each awaiting three indexed single-row SELECTs on bench_users by id, a pool
// of 4) through ORMs that take the pg module as their driver. Each ORM's file
// runs it twice over: task.variant 'pg' hands the ORM real pg, 'pipegres'
// hands it pipegres/pg. Nothing else differs between the two.

export const CONCURRENCY = 64
export const POOL_SIZE = 4
export const QUERIES_PER_REQUEST = 3

export interface User {
  id: string
  name: string | null
  email: string | null
}

export type Lookup = (id: string) => Promise<User | undefined | null>

const require = createRequire(import.meta.url)

/** The pg module the ORM gets: real pg, or pipegres/pg (as a CommonJS caller would see either). */
export async function driverFor(task: Task): Promise<unknown> {
  if (task.variant === 'pg') return require('pg') as unknown
  if (task.variant === 'pipegres') return (await import('../../src/integrations/pg/index.js')).default
  throw new Error(`unknown driver variant ${JSON.stringify(task.variant)}: 'pg' or 'pipegres'`)
}

/** A connection URL for the target, every part percent-encoded. */
export function targetUrl(task: Task): string {
  const t = task.target
  return `postgresql://${encodeURIComponent(t.user)}:${encodeURIComponent(t.password)}@${t.host}:${t.port}/${encodeURIComponent(t.database)}?sslmode=disable`
}

/** Runs task.size requests, CONCURRENCY at a time; the checksum counts lookups answered with their own row. */
export function runRequests(task: Task, lookup: Lookup): Promise<Measurement> {
  const keys = userKeys()
  const n = task.size
  return measure(task, n, async () => {
    const latencies = latencySink()
    let next = 0
    let answered = 0
    let matched = 0
    const worker = async (): Promise<void> => {
      for (let r = next++; r < n; r = next++) {
        const t0 = performance.now()
        for (let q = 0; q < QUERIES_PER_REQUEST; q++) {
          const key = keys[(r * QUERIES_PER_REQUEST + q) % keys.length]!
          const row = await lookup(key)
          answered++
          if (row?.id === key) matched++
        }
        latencies.push(performance.now() - t0)
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))
    return `${answered}:${matched}`
  })
}
