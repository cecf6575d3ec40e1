import { latencySink, measure } from './measure.js'
import type { Measurement, Task } from './protocol.js'
import { userKey } from './workloads.js'

// The hot-key workload: what the coalesce option is for. 256 requests are in
// progress at any time; each awaits three single-row SELECTs of the users
// table, one after the other, over a pool of 4 connections, and the keys
// follow a Zipf distribution over 100,000 users, so that most lookups hit the
// same few rows (a feature flag, a popular product, the signed-in user of
// every request on one page). Every client gets only a way to look one user
// up by id; the key sequence is the same for all (a fixed seed), and the
// checksum counts the lookups that returned the row their own key asked for.
//
// Adding a client: one file bench/clients/hot-<name>.ts that calls runHotKeys(),
// and one line in the hot-keys workload's variants (bench/lib/workload-table.ts).

export const HOT_CONCURRENCY = 256
export const HOT_POOL_SIZE = 4
export const HOT_LOOKUPS_PER_REQUEST = 3
/** Users the keys are drawn from (the users table holds at least this many). */
export const HOT_ROWS = 100_000
/**
 * The Zipf exponent: 1.3 puts about 60% of lookups on the 10 hottest users
 * and a quarter on the hottest one; of 256 lookups drawn at once, about 90
 * are distinct. (With 1.0, the classic value, the 10 hottest get a quarter
 * of the lookups and about 185 of 256 are distinct.)
 */
export const HOT_EXPONENT = 1.3

export interface HotUser {
  id: string
  name: string | null
  email: string | null
}

/** Looks one user up by id; undefined when there is none. */
export type HotLookup = (id: string) => Promise<HotUser | undefined>

/** `n` ranks (0-based) drawn from Zipf(HOT_EXPONENT) over HOT_ROWS, the same for every client (a fixed seed). */
function zipfRanks(n: number): Uint32Array {
  const cdf = new Float64Array(HOT_ROWS)
  let total = 0
  for (let i = 0; i < HOT_ROWS; i++) cdf[i] = total += 1 / Math.pow(i + 1, HOT_EXPONENT)
  let seed = 0x2545f491
  const random = (): number => {
    // xorshift32: fast, and the same sequence on every runtime.
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) / 4294967296
  }
  const out = new Uint32Array(n)
  for (let i = 0; i < n; i++) {
    const u = random() * total
    let lo = 0
    let hi = HOT_ROWS - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cdf[mid]! < u) lo = mid + 1
      else hi = mid
    }
    out[i] = lo
  }
  return out
}

/** The keys of `requests` requests' lookups, in order, computed before anything is timed. */
export function hotKeys(requests: number): string[] {
  const ranks = zipfRanks(requests * HOT_LOOKUPS_PER_REQUEST)
  const byRank = new Map<number, string>()
  const keys = new Array<string>(ranks.length)
  for (let i = 0; i < ranks.length; i++) {
    const r = ranks[i]!
    let key = byRank.get(r)
    if (key === undefined) byRank.set(r, (key = userKey(r + 1)))
    keys[i] = key
  }
  return keys
}

/**
 * Runs `task.size` requests, HOT_CONCURRENCY at a time, each awaiting
 * HOT_LOOKUPS_PER_REQUEST lookups; reports requests, their latency, and a
 * checksum of how many lookups returned the row their own key asked for.
 */
export function runHotKeys(task: Task, lookup: HotLookup): Promise<Measurement> {
  const n = task.size
  const keys = hotKeys(n)
  return measure(task, n, async () => {
    const latencies = latencySink()
    let next = 0
    let answered = 0
    let matched = 0
    const worker = async (): Promise<void> => {
      for (let r = next++; r < n; r = next++) {
        const t0 = performance.now()
        for (let q = 0; q < HOT_LOOKUPS_PER_REQUEST; q++) {
          const key = keys[r * HOT_LOOKUPS_PER_REQUEST + q]!
          const row = await lookup(key)
          answered++
          if (row?.id === key) matched++
        }
        latencies.push(performance.now() - t0)
      }
    }
    await Promise.all(Array.from({ length: HOT_CONCURRENCY }, worker))
    // A wrong row is a failed run, not a slower one.
    if (matched !== answered) throw new Error(`${answered - matched} of ${answered} lookups did not return the row their key asked for`)
    return `${answered}:${matched}`
  })
}
