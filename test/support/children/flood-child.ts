// Runs one memory scenario of test/faults/floods/floods.test.ts in a process of its
// own, started with --expose-gc: heap figures are then read after a forced
// collection, and are not mixed with what other tests left behind.
//
//   node --expose-gc build/test/support/children/flood-child.js <scenario> [count]
//
// Prints one JSON report on its last line of output. The database is
// PIPEGRES_FLOOD_URL (with PIPEGRES_FLOOD_SSLMODE if set); the queued-memory
// scenario needs none (it runs against a stalled fake backend).

import { connect, createPool, ConnectionError, type Pool } from '../../../src/index.js'
import { internalsOf } from '../../../src/lane/internals.js'
import { stalledServer } from '../fakes/stalled-server.js'

const gc = (globalThis as { gc?: () => void }).gc

async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc!()
    await new Promise((r) => setTimeout(r, 20))
  }
}

const heap = (): number => process.memoryUsage().heapUsed

function dbOptions(): { connectionString?: string; sslmode?: 'disable' | 'require' } {
  const url = process.env.PIPEGRES_FLOOD_URL
  const sslmode = process.env.PIPEGRES_FLOOD_SSLMODE as 'disable' | 'require' | undefined
  return { ...(url ? { connectionString: url } : {}), ...(sslmode ? { sslmode } : {}) }
}

/**
 * `count` queries issued in one loop against a backend that stopped reading:
 * the heap they take, per query, once a collection has run. Counted as a
 * caller would see it: its own `[i]` parameter array and the slot where it
 * keeps the promise are included (as in `npm start`'s figure). A second batch
 * of the same size gives the marginal cost, which the queries that fitted in
 * the socket buffers (written, waiting for replies) do not blur.
 */
async function queuedMemory(count: number, withTimeout: boolean): Promise<Record<string, unknown>> {
  const server = await stalledServer()
  // A timeout that never fires here: its timer is part of what a query costs.
  const db = await connect({ ...server.options, ...(withTimeout ? { queryTimeout: 600_000 } : {}) })
  try {
    await settle()
    const base = heap()
    const first: Promise<unknown>[] = new Array(count)
    for (let i = 0; i < count; i++) first[i] = db.query('SELECT $1::int AS n', [i])
    gc!()
    const afterFirst = heap()
    const pendingAfterFirst = db.pendingQueries
    const second: Promise<unknown>[] = new Array(count)
    for (let i = 0; i < count; i++) second[i] = db.query('SELECT $1::int AS n', [count + i])
    gc!()
    const afterSecond = heap()
    const pendingAfterSecond = db.pendingQueries
    const rssAtPeak = process.memoryUsage.rss()
    const t0 = performance.now()
    db.destroy(new ConnectionError('PG_CONNECTION_ENDED', 'flood over'))
    const codes: Record<string, number> = {}
    let resolved = 0
    for (const batch of [first, second]) {
      const outcomes = await Promise.allSettled(batch)
      for (const o of outcomes) {
        if (o.status === 'fulfilled') resolved++
        else {
          const code = (o.reason as { code?: string }).code ?? String(o.reason)
          codes[code] = (codes[code] ?? 0) + 1
        }
      }
    }
    const settleMs = performance.now() - t0
    first.length = 0
    second.length = 0
    await settle()
    return {
      count,
      withTimeout,
      bytesPerQuery: (afterFirst - base) / count,
      marginalBytesPerQuery: (afterSecond - afterFirst) / count,
      pendingAfterFirst,
      pendingAfterSecond,
      heapBaseMiB: base / 2 ** 20,
      heapPeakMiB: afterSecond / 2 ** 20,
      rssPeakMiB: rssAtPeak / 2 ** 20,
      heapAfterMiB: heap() / 2 ** 20,
      resolved,
      codes,
      settleMs,
      sessions: server.sessions,
    }
  } finally {
    db.destroy()
    await server.close()
  }
}

/** Every listener on the pool, its clients and their sockets, by emitter and event. */
function listenerCounts(pool: Pool): Record<string, number> {
  const out: Record<string, number> = {}
  type Emitterish = { eventNames(): (string | symbol)[]; listenerCount(e: string | symbol): number }
  const count = (prefix: string, em: Emitterish | undefined): void => {
    if (em === undefined) return
    for (const e of em.eventNames()) out[`${prefix}.${String(e)}`] = em.listenerCount(e)
  }
  // Internals, read only to count listeners: a leak would show up here first.
  const p = internalsOf(pool)!
  count('pool', p.emitter)
  p.lanes().forEach((lane, i) => {
    const c = lane as unknown as { conn: { socket: Emitterish } | null }
    count(`socket${i}`, c.conn?.socket)
  })
  for (const e of ['exit', 'beforeExit', 'uncaughtException', 'unhandledRejection', 'warning'] as const) out[`process.${e}`] = process.listenerCount(e)
  return out
}

/**
 * `count` checkouts of a pool's connections (reserve + release, a query on
 * every thousandth), one after another, while pool.query() runs count/5
 * queries in batches beside them: listeners and the heap after a collection
 * must be the same at the end as at the start. (One checkout at a time:
 * concurrent reserve() calls have a test of their own in floods.test.ts.)
 */
async function poolCheckouts(count: number): Promise<Record<string, unknown>> {
  const MAX = 4
  const pool = createPool({ ...dbOptions(), max: MAX })
  let wrong = 0
  const checkouts = async (n: number, offset: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const conn = await pool.reserve()
      if ((i + offset) % 1000 === 0) {
        const r = await conn.query<{ n: number }>('SELECT $1::int AS n', [i + offset])
        if (r.rows[0]?.n !== i + offset) wrong++
      }
      await conn.release()
    }
  }
  const queries = async (n: number): Promise<void> => {
    const BATCH = 500
    for (let done = 0; done < n; done += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, n - done) }, (_, k) => pool.query<{ n: number }>('SELECT $1::int AS n', [done + k]))
      const results = await Promise.all(batch)
      results.forEach((r, k) => {
        if (r.rows[0]?.n !== done + k) wrong++
      })
    }
  }
  const round = async (n: number): Promise<void> => {
    await Promise.all([checkouts(n, 0), queries(n / 5)])
  }
  try {
    // Warm up, so that compiled code and caches are in place before the baseline.
    await round(40_000)
    await settle()
    const listenersBefore = listenerCounts(pool)
    const heapBefore = heap()
    const t0 = performance.now()
    await round(count)
    const ms = performance.now() - t0
    await settle()
    const heapAfter = heap()
    const listenersAfter = listenerCounts(pool)
    return {
      count,
      queries: count / 5,
      ms,
      wrong,
      heapBeforeMiB: heapBefore / 2 ** 20,
      heapAfterMiB: heapAfter / 2 ** 20,
      heapGrowthBytes: heapAfter - heapBefore,
      listenersBefore,
      listenersAfter,
      totalCount: pool.totalCount,
    }
  } finally {
    await pool.end()
  }
}

/**
 * Streams `count` rows through a consumer slower than the server (it sleeps
 * now and then), sampling memory; once, it stops reading for a while and asks
 * the server what the stream's backend is doing: waiting to write to the
 * client (ClientWrite), held back by TCP flow control.
 */
async function streamRows(count: number): Promise<Record<string, unknown>> {
  const db = await connect(dbOptions())
  const observer = await connect(dbOptions())
  try {
    await db.query('SELECT 1')
    await settle()
    const base = process.memoryUsage()
    const samples: { rows: number; heap: number; rss: number; buffers: number }[] = []
    let expected = 1
    let outOfOrder = 0
    let backendWait: string | null = null
    const t0 = performance.now()
    for await (const row of db.stream<{ g: number }>(`SELECT generate_series(1, ${count}) AS g`)) {
      if (row.g !== expected) outOfOrder++
      expected++
      if (expected % 20_000 === 0) await new Promise((r) => setTimeout(r, 1))
      if (expected % 250_000 === 0) {
        // What the stream keeps, not the garbage a larger young generation (Node 26) holds between collections.
        gc!()
        const m = process.memoryUsage()
        samples.push({ rows: expected - 1, heap: m.heapUsed, rss: m.rss, buffers: m.arrayBuffers })
      }
      if (expected === Math.floor(count / 4)) {
        await new Promise((r) => setTimeout(r, 300))
        const r = await observer.query<{ wait_event: string | null }>('SELECT wait_event FROM pg_stat_activity WHERE pid = $1', [db.processId])
        backendWait = r.rows[0]?.wait_event ?? null
      }
    }
    const ms = performance.now() - t0
    const half = samples.length >> 1
    const maxOf = (s: typeof samples, k: 'heap' | 'rss' | 'buffers') => Math.max(...s.map((x) => x[k]))
    const after = await db.query<{ n: number }>('SELECT 7 AS n')
    return {
      count,
      rows: expected - 1,
      outOfOrder,
      ms,
      backendWait,
      samples: samples.length,
      heapBaseMiB: base.heapUsed / 2 ** 20,
      heapMaxMiB: maxOf(samples, 'heap') / 2 ** 20,
      heapMaxFirstHalfMiB: maxOf(samples.slice(0, half), 'heap') / 2 ** 20,
      heapMaxSecondHalfMiB: maxOf(samples.slice(half), 'heap') / 2 ** 20,
      rssBaseMiB: base.rss / 2 ** 20,
      rssMaxMiB: maxOf(samples, 'rss') / 2 ** 20,
      rssMaxFirstHalfMiB: maxOf(samples.slice(0, half), 'rss') / 2 ** 20,
      rssMaxSecondHalfMiB: maxOf(samples.slice(half), 'rss') / 2 ** 20,
      buffersMaxFirstHalfMiB: maxOf(samples.slice(0, half), 'buffers') / 2 ** 20,
      buffersMaxSecondHalfMiB: maxOf(samples.slice(half), 'buffers') / 2 ** 20,
      afterwards: after.rows[0]?.n,
    }
  } finally {
    await Promise.all([db.end(), observer.end()])
  }
}

async function main(): Promise<number> {
  if (gc === undefined) {
    console.error('run with --expose-gc')
    return 2
  }
  const [scenario, countArg] = process.argv.slice(2)
  const count = Number(countArg)
  let report: Record<string, unknown>
  switch (scenario) {
    case 'queued-memory':
      report = await queuedMemory(count || 1_000_000, false)
      break
    case 'queued-memory-timeout':
      report = await queuedMemory(count || 1_000_000, true)
      break
    case 'pool-checkouts':
      report = await poolCheckouts(count || 1_000_000)
      break
    case 'stream-rows':
      report = await streamRows(count || 10_000_000)
      break
    default:
      console.error('usage: flood-child <queued-memory|queued-memory-timeout|pool-checkouts|stream-rows> [count]')
      return 2
  }
  console.log(JSON.stringify(report))
  return 0
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err)
    process.exit(1)
  },
)
