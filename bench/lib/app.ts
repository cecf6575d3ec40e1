import { latencySink, measure } from './measure.js'
import type { Measurement, Task } from './protocol.js'
import { USERS_TABLE, userKeys } from './workloads.js'

// The app workload: a web application's shape. 64 requests are in progress at
// any time; each awaits three indexed single-row SELECTs on the users table,
// one after the other, over a pool of 4 connections. Every client (a driver
// used directly, or an ORM on top of one) gets only a way to look one user up
// by id: the request loop, the timing and the checksum are the same for all.
//
// Adding a client: one file bench/clients/app-<name>.ts that calls runApp(),
// and one line in the app workload's variants in bench/run.ts.

export const APP_CONCURRENCY = 64
export const APP_POOL_SIZE = 4
export const APP_QUERIES_PER_REQUEST = 3

/** The table the ORMs map: the users table's columns the lookups read. */
export const APP_TABLE = USERS_TABLE

export interface AppUser {
  id: string
  name: string | null
  email: string | null
}

/** Looks one user up by id; undefined when there is none. */
export type Lookup = (id: string) => Promise<AppUser | undefined>

/**
 * Runs `task.size` requests, APP_CONCURRENCY at a time, each awaiting
 * APP_QUERIES_PER_REQUEST lookups; reports requests, their latency, and a
 * checksum of how many lookups returned the row their own id asked for.
 */
export function runApp(task: Task, lookup: Lookup): Promise<Measurement> {
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
        for (let q = 0; q < APP_QUERIES_PER_REQUEST; q++) {
          const key = keys[(r * APP_QUERIES_PER_REQUEST + q) % keys.length]!
          const row = await lookup(key)
          answered++
          if (row?.id === key) matched++
        }
        latencies.push(performance.now() - t0)
      }
    }
    await Promise.all(Array.from({ length: APP_CONCURRENCY }, worker))
    return `${answered}:${matched}`
  })
}
