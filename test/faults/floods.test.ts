// test-tags: slow
// Floods: a million queries queued behind a server that does not answer, a
// million pool checkouts, ten million streamed rows. What must hold: memory
// per queued query stays small and memory does not grow with the work done,
// every query settles (timeouts fire, nothing hangs, no unhandled rejection),
// and an optional limit refuses the excess at once.
//
// Heap figures come from a child process started with --expose-gc
// (test/helpers/flood-child.ts), read after a forced collection.

import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { ArgumentError, Client, createPool, PgError, TimeoutError } from '../../src/index.js'
import { internalsOf } from '../../src/lane/internals.js'
import { openClient } from '../helpers/client.js'
import { assertCleanError, outcome, passwordsOf, settleAllWithin } from '../helpers/fault-checks.js'
import { getTestServer, mainDatabase } from '../helpers/server.js'
import { stalledServer } from '../helpers/stalled-server.js'

const MILLION = 1_000_000
const childScript = fileURLToPath(new URL('../helpers/flood-child.js', import.meta.url))

// Any unhandled rejection during a flood is a failure of the test that caused it.
const unhandled: unknown[] = []
const onUnhandled = (reason: unknown): void => void unhandled.push(reason)
before(() => process.on('unhandledRejection', onUnhandled))
after(() => process.off('unhandledRejection', onUnhandled))

function noUnhandledRejections(): void {
  assert.deepEqual(unhandled.map(String), [], 'unhandled rejections')
}

let passwords: string[] = []
before(async () => {
  passwords = passwordsOf(await getTestServer())
})

// The runner's own limit is 120 s per test: a child that takes longer fails with its own message first.
async function runChild(scenario: string, count?: number, timeoutMs = 100_000): Promise<Record<string, unknown>> {
  const db = await mainDatabase()
  const env: NodeJS.ProcessEnv = { ...process.env }
  if (db.connectionString !== undefined) env.PIPEGRES_FLOOD_URL = db.connectionString
  else delete env.PIPEGRES_FLOOD_URL
  // The managed server takes plain TCP: figures of the client's own, not of TLS.
  if (db.source === 'managed server') env.PIPEGRES_FLOOD_SSLMODE = 'disable'
  else delete env.PIPEGRES_FLOOD_SSLMODE
  const args = ['--expose-gc', childScript, scenario, ...(count === undefined ? [] : [String(count)])]
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s))
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-4000)))
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])))
  clearTimeout(timer)
  assert.equal(code, 0, `flood child ${scenario} exited with ${code ?? signal}:\n${stderr}\n${stdout.slice(-2000)}`)
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>
}

const mib = (n: unknown): string => `${(n as number).toFixed(1)} MiB`
const bytes = (n: unknown): string => (n as number).toFixed(0)

describe('a million queries queued behind a server that stopped reading', () => {
  test('take at most 400 bytes of heap each, promise and parameters included, and all reject when the client is destroyed', async (t) => {
    const r = await runChild('queued-memory', MILLION)
    t.diagnostic(
      `${bytes(r.bytesPerQuery)} bytes per queued query over the first million (marginal ${bytes(r.marginalBytesPerQuery)}); ` +
        `heap ${mib(r.heapBaseMiB)} -> ${mib(r.heapPeakMiB)} with two million queued, RSS ${mib(r.rssPeakMiB)}; ` +
        `all settled ${(r.settleMs as number).toFixed(0)} ms after destroy(); heap afterwards ${mib(r.heapAfterMiB)}`,
    )
    assert.equal(r.pendingAfterFirst, MILLION)
    assert.equal(r.pendingAfterSecond, 2 * MILLION)
    assert.ok((r.bytesPerQuery as number) <= 400, `${r.bytesPerQuery as number} bytes per queued query`)
    assert.ok((r.marginalBytesPerQuery as number) <= 400, `marginal ${r.marginalBytesPerQuery as number} bytes per queued query`)
    assert.equal(r.resolved, 0)
    assert.deepEqual(r.codes, { PG_CONNECTION_ENDED: 2 * MILLION })
    // Nothing of them is kept once they have settled.
    assert.ok((r.heapAfterMiB as number) - (r.heapBaseMiB as number) < 16, `heap ${mib(r.heapBaseMiB)} before, ${mib(r.heapAfterMiB)} after`)
  })

  test('with a query timeout, each also carries its timer: still under 800 bytes', async (t) => {
    const r = await runChild('queued-memory-timeout', MILLION)
    t.diagnostic(`${bytes(r.bytesPerQuery)} bytes per queued query with queryTimeout set (marginal ${bytes(r.marginalBytesPerQuery)})`)
    assert.ok((r.bytesPerQuery as number) <= 800, `${r.bytesPerQuery as number} bytes per queued query`)
    assert.deepEqual(r.codes, { PG_CONNECTION_ENDED: 2 * MILLION })
  })

  test('all reject with TimeoutError when their timeout fires: the unsent at once, the written ones once the silent connection is given up', async (t) => {
    const TIMEOUT = 1500
    // Also bounds how long a connection may stay silent after a cancel request reached its server.
    const CONNECT_TIMEOUT = 2000
    const server = await stalledServer()
    const db = new Client({ ...server.options, queryTimeout: TIMEOUT, connectTimeout: CONNECT_TIMEOUT })
    await db.connect()
    try {
      let timeouts = 0
      let resolved = 0
      let lastAt = 0
      const strays: unknown[] = []
      const samples: unknown[] = []
      const causes: Record<string, number> = {}
      const onErr = (err: unknown): void => {
        lastAt = performance.now()
        if (err instanceof TimeoutError) {
          if (timeouts++ % 9973 === 0) samples.push(err)
          const cause = err.cause === undefined ? 'none' : `${(err.cause as Error).constructor.name} ${(err.cause as { code?: string }).code}`
          causes[cause] = (causes[cause] ?? 0) + 1
        } else if (strays.length < 5) strays.push(err)
      }
      const onOk = (): void => void resolved++
      const t0 = performance.now()
      const all: Promise<unknown>[] = new Array(MILLION)
      for (let i = 0; i < MILLION; i++) all[i] = db.query('SELECT $1::int AS n', [i]).then(onOk, onErr)
      const issuedMs = performance.now() - t0
      await new Promise((r) => setImmediate(r))
      assert.equal(timeouts + strays.length + resolved, 0, 'nothing settles before its timeout')
      // Internals: how many went out before the socket backed up (pendingQueries counts both kinds).
      // Final once the timeouts fire: cancelling holds the writer.
      const conn = (internalsOf(db)!.lanes()[0] as unknown as { conn: { inflightCount: number } }).conn
      while (performance.now() < t0 + issuedMs + TIMEOUT) await new Promise((r) => setTimeout(r, 50))
      const written = conn.inflightCount
      assert.ok(written > 0 && written < MILLION / 2, `${written} written`)

      // Firing a million timers takes a while on a busy machine; then the silence after the cancel.
      await settleAllWithin(all, issuedMs + TIMEOUT + CONNECT_TIMEOUT + 60_000, 'a million queries against a stalled server')
      const allMs = lastAt - t0
      assert.deepEqual(strays, [])
      assert.equal(resolved, 0)
      assert.equal(timeouts, MILLION)
      // The unsent ones were dropped (no cause); the written ones settled when the connection was closed.
      assert.equal(causes.none, MILLION - written)
      assert.equal(causes['ConnectionError PG_CONNECTION_CLOSED'], written)
      for (const err of samples) assertCleanError(err, passwords)
      t.diagnostic(
        `issued in ${issuedMs.toFixed(0)} ms, ${written} written before the socket backed up; ` +
          `all settled ${allMs.toFixed(0)} ms after the first was issued (timeout ${TIMEOUT} ms, cancel silence limit ${CONNECT_TIMEOUT} ms)`,
      )
      noUnhandledRejections()
    } finally {
      db.destroy()
      await server.close()
    }
  })

  test('behind a real query waiting for a lock, all reject with TimeoutError; then this client and a fresh one work', async (t) => {
    const TIMEOUT = 2000
    const KEY = 7_100_117
    const holder = await openClient()
    const db = await openClient({ queryTimeout: TIMEOUT })
    try {
      await holder.query('SELECT pg_advisory_lock($1)', [KEY])
      const blocked = outcome(db.query('SELECT pg_advisory_xact_lock($1)', [KEY]))
      let timeouts = 0
      let resolved = 0
      const strays: unknown[] = []
      const samples: unknown[] = []
      const onErr = (err: unknown): void => {
        if (err instanceof TimeoutError && err.code === 'PG_QUERY_TIMEOUT') {
          if (timeouts++ % 9973 === 0) samples.push(err)
        } else if (strays.length < 5) strays.push(err)
      }
      const onOk = (): void => void resolved++
      const t0 = performance.now()
      const all: Promise<unknown>[] = new Array(MILLION)
      for (let i = 0; i < MILLION; i++) all[i] = db.query('SELECT $1::int AS n', [i]).then(onOk, onErr)
      const issuedMs = performance.now() - t0
      const outcomes = await settleAllWithin(all, issuedMs + TIMEOUT + 60_000, 'a million queries behind a lock')
      const settledMs = performance.now() - t0
      assert.equal(outcomes.length, MILLION)
      assert.deepEqual(strays, [])
      assert.equal(resolved, 0)
      assert.equal(timeouts, MILLION)
      for (const e of samples) assertCleanError(e, passwords)
      const head = await blocked
      assert.equal(head.status, 'rejected')
      const err = (head as PromiseRejectedResult).reason as TimeoutError
      assertCleanError(err, passwords)
      assert.ok(err instanceof TimeoutError)
      assert.ok(err.cause instanceof PgError && err.cause.code === '57014', `cause: ${String(err.cause)}`)
      t.diagnostic(`issued in ${issuedMs.toFixed(0)} ms; all settled ${settledMs.toFixed(0)} ms after the first was issued (timeout ${TIMEOUT} ms)`)

      const again = await db.query<{ n: number }>('SELECT $1::int AS n', [42])
      assert.equal(again.rows[0]!.n, 42)
      assert.equal(db.pendingQueries, 0)
      const fresh = await openClient()
      assert.equal((await fresh.query<{ n: number }>('SELECT $1::int AS n', [43])).rows[0]!.n, 43)
      await fresh.end()
      noUnhandledRejections()
    } finally {
      await holder.query('SELECT pg_advisory_unlock_all()').catch(() => undefined)
      await Promise.all([holder.end(), db.end()])
    }
  })
})

describe('maxPending', () => {
  test('refuses the queries beyond it at once, with an ArgumentError naming the setting', async () => {
    const server = await stalledServer()
    const db = new Client({ ...server.options, maxPending: 1000 })
    await db.connect()
    try {
      const outcomes: (string | null)[] = new Array(1500).fill(null)
      const all = Array.from({ length: 1500 }, (_, i) =>
        db.query('SELECT $1::int AS n', [i]).then(
          () => (outcomes[i] = 'resolved'),
          (err: unknown) => {
            assertCleanError(err, passwords)
            outcomes[i] = err instanceof ArgumentError ? 'refused' : String(err)
            if (err instanceof ArgumentError) assert.match(err.message, /maxPending is 1000/)
          },
        ),
      )
      await new Promise((r) => setImmediate(r))
      assert.deepEqual(outcomes.slice(0, 1000), new Array(1000).fill(null), 'the first thousand wait for the server')
      assert.deepEqual(outcomes.slice(1000), new Array(500).fill('refused'), 'the rest are refused before any reply')
      assert.equal(db.pendingQueries, 1000)
      db.destroy()
      const handled = await settleAllWithin(all, 10_000, 'queries after destroy()')
      for (const h of handled) assert.equal(h.status, 'fulfilled', String((h as PromiseRejectedResult).reason))
      assert.ok(outcomes.slice(0, 1000).every((o) => o !== null && o !== 'resolved' && o !== 'refused'), 'the waiting ones fail with the destroyed connection')
    } finally {
      db.destroy()
      await server.close()
    }
  })

  test('on a real server: the accepted ones get their own results, and the limit frees up as they complete', async () => {
    const db = await openClient({ maxPending: 100 })
    try {
      const first = await settleAllWithin(
        Array.from({ length: 150 }, (_, i) => db.query<{ n: number }>('SELECT $1::int AS n', [i])),
        30_000,
        'first burst',
      )
      first.forEach((o, i) => {
        if (i < 100) assert.equal(o.status === 'fulfilled' && o.value.rows[0]!.n, i)
        else assert.ok(o.status === 'rejected' && o.reason instanceof ArgumentError, `query ${i}`)
      })
      const second = await settleAllWithin(
        Array.from({ length: 100 }, (_, i) => db.query<{ n: number }>('SELECT $1::int AS n', [1000 + i])),
        30_000,
        'second burst',
      )
      second.forEach((o, i) => assert.equal(o.status === 'fulfilled' && o.value.rows[0]!.n, 1000 + i))
      // A transaction's own statements are never refused, however busy the client.
      const busy = Array.from({ length: 100 }, (_, i) => db.query('SELECT $1::int AS n, pg_sleep(0.001)', [i]))
      const inTx = await db.begin(async (tx) => (await tx.query<{ n: number }>('SELECT 5 AS n')).rows[0]!.n)
      assert.equal(inTx, 5)
      await Promise.all(busy)
    } finally {
      await db.end()
    }
  })

  test('on a pool it bounds each connection', async () => {
    const db = await mainDatabase()
    const pool = createPool({ ...db.options, max: 2, maxPending: 50 })
    try {
      const outcomes = await settleAllWithin(
        Array.from({ length: 300 }, (_, i) => pool.query<{ n: number }>('SELECT $1::int AS n', [i])),
        30_000,
        'pool burst',
      )
      let accepted = 0
      outcomes.forEach((o, i) => {
        if (o.status === 'fulfilled') {
          accepted++
          assert.equal(o.value.rows[0]!.n, i)
        } else assert.ok(o.reason instanceof ArgumentError, `query ${i}: ${String(o.reason)}`)
      })
      assert.equal(accepted, 100)
    } finally {
      await pool.end()
    }
  })

  test('must be a positive integer', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, '10']) {
      assert.throws(() => new Client({ maxPending: bad as number }), ArgumentError, `maxPending ${String(bad)}`)
    }
  })
})

test('concurrent reserve() calls on a pool each get a connection of their own, and none waits forever', async () => {
  const db = await mainDatabase()
  const pool = createPool({ ...db.options, max: 4 })
  try {
    const checkout = async (): Promise<number> => {
      const conn = await pool.reserve()
      try {
        return (await conn.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
      } finally {
        await conn.release()
      }
    }
    // Twice as many callers as connections, all at once, twice over.
    for (let round = 0; round < 2; round++) {
      const outcomes = await settleAllWithin(Array.from({ length: 8 }, checkout), 15_000, 'eight concurrent checkouts of a pool of four')
      for (const o of outcomes) assert.equal(o.status, 'fulfilled', String((o as PromiseRejectedResult).reason))
    }
    assert.equal(pool.reservedCount, 0)
  } finally {
    pool.destroy()
  }
})

test('a million pool checkouts leave no listener and no heap behind', async (t) => {
  const r = await runChild('pool-checkouts', MILLION)
  t.diagnostic(
    `${MILLION} reserve/release beside ${r.queries as number} pool.query() in ${((r.ms as number) / 1000).toFixed(1)} s; ` +
      `heap after GC ${mib(r.heapBeforeMiB)} -> ${mib(r.heapAfterMiB)} (${r.heapGrowthBytes as number} bytes); ${r.totalCount as number} connections`,
  )
  assert.equal(r.wrong, 0)
  assert.deepEqual(r.listenersAfter, r.listenersBefore)
  assert.ok((r.totalCount as number) <= 4)
  // Under two bytes per checkout: a leak of even one small object each would be sixteen or more.
  assert.ok(Math.abs(r.heapGrowthBytes as number) < 2 * 2 ** 20, `heap grew by ${r.heapGrowthBytes as number} bytes`)
})

test('ten million rows streamed to a slow consumer in flat memory, the server held back by flow control', async (t) => {
  const COUNT = 10_000_000
  const r = await runChild('stream-rows', COUNT)
  t.diagnostic(
    `${COUNT} rows in ${((r.ms as number) / 1000).toFixed(1)} s; heap ${mib(r.heapBaseMiB)} base, max ${mib(r.heapMaxMiB)} ` +
      `(first half ${mib(r.heapMaxFirstHalfMiB)}, second ${mib(r.heapMaxSecondHalfMiB)}); RSS ${mib(r.rssBaseMiB)} base, max ${mib(r.rssMaxMiB)} ` +
      `(first half ${mib(r.rssMaxFirstHalfMiB)}, second ${mib(r.rssMaxSecondHalfMiB)}); Buffers max ${mib(r.buffersMaxFirstHalfMiB)} first half, ` +
      `${mib(r.buffersMaxSecondHalfMiB)} second; backend waited on ${String(r.backendWait)}`,
  )
  assert.equal(r.rows, COUNT)
  assert.equal(r.outOfOrder, 0)
  assert.equal(r.backendWait, 'ClientWrite')
  // Ten million rows held at once would take hundreds of MiB; the stream keeps about a thousand.
  assert.ok((r.heapMaxMiB as number) - (r.heapBaseMiB as number) < 64, 'heap')
  assert.ok((r.rssMaxMiB as number) - (r.rssBaseMiB as number) < 128, 'RSS')
  // Flat: the second half of the rows needs no more than the first, on the JS heap and in
  // the Buffers off it. (Not RSS half by half: newer V8 keeps freed pages pooled for reuse,
  // and the allocator keeps arenas, so RSS can step up once late without anything growing.)
  assert.ok((r.heapMaxSecondHalfMiB as number) < (r.heapMaxFirstHalfMiB as number) + 16, 'heap grows with the rows')
  assert.ok((r.buffersMaxSecondHalfMiB as number) < (r.buffersMaxFirstHalfMiB as number) + 16, 'Buffers grow with the rows')
  assert.equal(r.afterwards, 7)
})

test('afterwards: a fresh client works', async () => {
  const db = await openClient()
  try {
    assert.equal((await db.query<{ n: number }>('SELECT $1::int AS n', [1])).rows[0]!.n, 1)
  } finally {
    await db.end()
  }
  noUnhandledRejections()
})
