// test-tags: exclusive (it asserts how long the event loop stalls and races aborts against running queries)
// Cancellation by an AbortSignal: a query not sent yet is dropped (it rejects
// at once and never runs), one running on the server is cancelled there,
// without ever hitting another query of the pipeline; and one signal shared
// by thousands of queries. Timeouts and the CancelRequest itself: cancel.test.ts.

import assert from 'node:assert/strict'
import { getEventListeners } from 'node:events'
import { after, before, describe, test } from 'node:test'
import { Client, TimeoutError } from '../../../src/index.js'
import { assertAbortError, assertCanceledOnServer, assertMisfires, backendState, followerOutcome } from '../../support/cancel-checks.js'
import { openClient, uniqueName } from '../../support/client.js'
import { startProxy } from '../../support/proxies/proxy.js'
import { getTestServer, mainDatabase } from '../../support/servers/test-server.js'

const server = await getTestServer()
let db: Client
const table = uniqueName('cancel_side_effects')

before(async () => {
  db = await openClient()
  await db.query(`CREATE TABLE ${table} (tag text NOT NULL)`)
})
after(async () => {
  await db.query(`DROP TABLE IF EXISTS ${table}`)
  await db.end()
})

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** The promise's outcome if it settles within `ms`, else 'pending'. */
async function outcome<T>(p: Promise<T>, ms = 0): Promise<{ value: T } | { error: unknown } | 'pending'> {
  const pending = Symbol('pending')
  const r = await Promise.race([
    p.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    new Promise<typeof pending>((res) => (ms === 0 ? setImmediate(() => res(pending)) : setTimeout(() => res(pending), ms))),
  ])
  return r === pending ? 'pending' : r
}

async function rowsTagged(tag: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE tag = $1`, [tag])
  return rows[0]!.n
}

/**
 * Waits until the backend runs `query` (pg_stat_activity shows it active):
 * a cancel that reaches the server before the query starts finds nothing to
 * cancel, and a fixed sleep is no guarantee on a loaded machine.
 */
async function untilRunning(pid: number, query: string): Promise<void> {
  for (const deadline = performance.now() + 10_000; ; ) {
    const s = await backendState(pid)
    if (s?.state === 'active' && s.query === query) return
    if (performance.now() > deadline) throw new Error(`backend ${pid} did not start ${query} within 10 s: ${JSON.stringify(s)}`)
    await sleep(5)
  }
}

describe('a query not sent yet', () => {
  test('aborted while the client is connecting: rejects at once with the signal reason and never runs', async () => {
    const { connectionString } = await mainDatabase()
    const url = new URL(connectionString!)
    const proxy = await startProxy({ host: url.hostname, port: Number(url.port) }, { delayMs: 60 })
    const c = new Client({ connectionString: connectionString!, host: proxy.host, port: proxy.port, sslmode: 'disable' })
    try {
      const ac = new AbortController()
      const tag = uniqueName('connecting')
      const p = c.query(`INSERT INTO ${table} VALUES ($1)`, [tag], { signal: ac.signal })
      const later = c.query('SELECT 2 AS two')
      await sleep(20)
      assert.equal(c.connected, false, 'still connecting (the proxy delays every packet by 60 ms)')
      const reason = new Error('changed my mind')
      ac.abort(reason)
      const r = await outcome(p)
      assert.ok(r !== 'pending', 'rejected at once')
      assert.ok('error' in r)
      assertAbortError(r.error, reason)
      assert.equal(r.error.cause, undefined, 'nothing happened on the server')
      assert.deepEqual((await later).rows, [{ two: 2 }])
      assert.equal(await rowsTagged(tag), 0)
    } finally {
      await c.end()
      await proxy.close()
    }
  })

  test('an already-aborted signal rejects immediately, without touching the connection', async () => {
    const tag = uniqueName('pre')
    const reason = 'no thanks'
    const before = db.pendingQueries
    const p = db.query(`INSERT INTO ${table} VALUES ($1)`, [tag], { signal: AbortSignal.abort(reason) })
    assert.equal(db.pendingQueries, before, 'never queued')
    const r = await outcome(p)
    assert.ok(r !== 'pending' && 'error' in r)
    assertAbortError(r.error, reason)
    // A DOMException reason (what AbortSignal.abort() gives without an argument) is kept as it is.
    const s = AbortSignal.abort()
    const r2 = await outcome(db.simpleQuery(`INSERT INTO ${table} VALUES ('${tag}')`, { signal: s }))
    assert.ok(r2 !== 'pending' && 'error' in r2)
    assertAbortError(r2.error, s.reason)
    assert.equal(await rowsTagged(tag), 0)
  })

  test('aborted while the socket is backed up: rejects at once and never runs', async () => {
    const c = await openClient()
    try {
      const pid = c.processId
      const tag = uniqueName('backedup')
      // The server sleeps and reads nothing meanwhile; 48 MB of parameters fill
      // the kernel's buffers, so what is issued next waits in the client.
      const blocker = c.query('SELECT pg_sleep(0.4)')
      const big = 'x'.repeat(1 << 20)
      const bigOnes = Array.from({ length: 48 }, () => c.query('SELECT length($1) AS n', [big]))
      const ac = new AbortController()
      const p = c.query(`INSERT INTO ${table} VALUES ($1)`, [tag], { signal: ac.signal })
      const after = c.query('SELECT 3 AS three')
      await sleep(50)
      ac.abort('backed up')
      const r = await outcome(p)
      assert.ok(r !== 'pending', 'an unsent query rejects without waiting for the server')
      assert.ok('error' in r)
      assertAbortError(r.error, 'backed up')
      await blocker
      for (const q of await Promise.all(bigOnes)) assert.deepEqual(q.rows, [{ n: 1 << 20 }])
      assert.deepEqual((await after).rows, [{ three: 3 }])
      assert.equal(await rowsTagged(tag), 0)
      assert.equal(c.processId, pid, 'same connection throughout')
    } finally {
      await c.end()
    }
  })

  test('aborted while waiting behind a transaction: rejects at once and never runs', async () => {
    const c = await openClient()
    try {
      const tag = uniqueName('held')
      let inTx!: () => void
      const txStarted = new Promise<void>((r) => (inTx = r))
      const tx = c.begin(async (t) => {
        inTx()
        await t.query('SELECT pg_sleep(0.2)')
      })
      await txStarted
      const ac = new AbortController()
      const p = c.query(`INSERT INTO ${table} VALUES ($1)`, [tag], { signal: ac.signal })
      const timed = c.query(`INSERT INTO ${table} VALUES ($1)`, [tag], { timeout: 30 })
      await sleep(10)
      ac.abort('held')
      const r = await outcome(p)
      assert.ok(r !== 'pending' && 'error' in r, 'rejected at once')
      assertAbortError(r.error, 'held')
      // A timeout runs out while the query is held: TimeoutError, not sent either.
      const t0 = performance.now()
      await assert.rejects(timed, (e: unknown) => e instanceof TimeoutError && e.code === 'PG_QUERY_TIMEOUT' && e.timeout === 30)
      assert.ok(performance.now() - t0 < 150, 'the timeout fired while the transaction still held the connection')
      await tx
      assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }])
      assert.equal(await rowsTagged(tag), 0)
    } finally {
      await c.end()
    }
  })
})

describe('a running query', () => {
  test('aborted with nothing behind it: cancelled on the server within a few ms; the connection stays usable', async () => {
    const c = await openClient()
    try {
      const pid = c.processId
      const ac = new AbortController()
      const p = c.query('SELECT pg_sleep(10)', [], { signal: ac.signal })
      await untilRunning(pid, 'SELECT pg_sleep(10)')
      const reason = new Error('stop')
      const t0 = performance.now()
      ac.abort(reason)
      const e = await p.then(
        () => assert.fail('should have been aborted'),
        (err: unknown) => err,
      )
      const took = performance.now() - t0
      assertAbortError(e, reason)
      assertCanceledOnServer(e)
      assert.ok(took < 250, `took ${took} ms`)
      assert.deepEqual((await c.query('SELECT 42 AS n')).rows, [{ n: 42 }])
      assert.equal(c.processId, pid, 'no reconnect')
      assert.equal(c.cancelMisfires, 0)
      assert.equal((await backendState(pid))?.state, 'idle')
    } finally {
      await c.end()
    }
  })

  test('cancel works with either protocol version (3.2 has a longer cancel key)', async () => {
    for (const version of ['3.0', '3.2'] as const) {
      const c = await openClient({ maxProtocolVersion: version })
      try {
        assert.equal(c.protocolVersion, server.version >= 18 ? version : '3.0')
        const ac = new AbortController()
        const p = c.query('SELECT pg_sleep(10)', [], { signal: ac.signal })
        await untilRunning(c.processId, 'SELECT pg_sleep(10)')
        ac.abort('v' + version)
        const e = await p.catch((err: unknown) => err)
        assertAbortError(e, 'v' + version)
        assertCanceledOnServer(e)
      } finally {
        await c.end()
      }
    }
  })

  test('aborted with queries in flight behind it: they all complete with their own results (before 18, bar counted misfires)', async () => {
    const c = await openClient()
    try {
      const ac = new AbortController()
      const before = c.query('SELECT 1 AS n')
      const target = c.query('SELECT pg_sleep(10)', [], { signal: ac.signal })
      const followers = Array.from({ length: 20 }, (_, i) => c.query('SELECT $1::int AS n, pg_sleep(0.001)', [i]))
      await untilRunning(c.processId, 'SELECT pg_sleep(10)')
      ac.abort('enough')
      const e = await target.catch((err: unknown) => err)
      assertAbortError(e, 'enough')
      assertCanceledOnServer(e)
      assert.deepEqual((await before).rows, [{ n: 1 }])
      let hits = 0
      ;(await Promise.allSettled(followers)).forEach((s, i) => {
        if (followerOutcome(s, server.version, (r) => assert.equal(r.rows[0]!.n, i))) hits++
      })
      // Issued while the cancel was in progress: waits for it, then runs normally.
      assert.deepEqual((await c.query('SELECT 5 AS five')).rows, [{ five: 5 }])
      assertMisfires(c.cancelMisfires, hits)
    } finally {
      await c.end()
    }
  })

  test('cancelling the 500th of 1,000 in-flight queries rejects exactly that one', async () => {
    const c = await openClient()
    let hits = 0
    try {
      for (const lead of [0, 0.2]) {
        // With a leading sleep every query is in flight, queued on the server, when the abort comes.
        const head = c.query('SELECT pg_sleep($1::float8)', [lead])
        const ac = new AbortController()
        const ps = Array.from({ length: 1000 }, (_, i) => c.query('SELECT $1::int AS n', [i], i === 499 ? { signal: ac.signal } : undefined))
        if (lead > 0) await sleep(50)
        ac.abort('the 500th')
        await head
        const settled = await Promise.allSettled(ps)
        settled.forEach((s, i) => {
          if (i === 499) {
            assert.equal(s.status, 'rejected')
            assertAbortError((s as PromiseRejectedResult).reason, 'the 500th')
          } else if (followerOutcome(s, server.version, (r) => assert.deepEqual(r.rows, [{ n: i }]), `query ${i}`)) hits++
        })
      }
      assertMisfires(c.cancelMisfires, hits)
    } finally {
      await c.end()
    }
  })

  test('a query that completes before the abort takes effect still rejects with AbortError', async () => {
    const c = await openClient()
    try {
      const tag = uniqueName('completed')
      const ac = new AbortController()
      // The server has run the INSERT by the time the abort takes effect (it
      // sits behind a sleep in our queue only from the client's point of view).
      const p = c.query(`INSERT INTO ${table} VALUES ($1)`, [tag], { signal: ac.signal })
      const follower = c.query('SELECT pg_sleep(0.1)')
      // Wait until the server has committed it, then abort before the client read the reply.
      await new Promise<void>((r) => setImmediate(r))
      ac.abort('too late')
      const e = await p.catch((err: unknown) => err)
      assertAbortError(e, 'too late')
      await follower
      // Documented: an abort does not undo what the server already did.
      assert.equal(await rowsTagged(tag), 1)
      assert.equal(c.cancelMisfires, 0)
    } finally {
      await c.end()
    }
  })

  test('a signal aborted after its query settled changes nothing', async () => {
    const ac = new AbortController()
    const r = await db.query('SELECT 7 AS n', [], { signal: ac.signal })
    ac.abort()
    assert.deepEqual(r.rows, [{ n: 7 }])
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0)
    assert.deepEqual((await db.query('SELECT 8 AS n')).rows, [{ n: 8 }])
  })
})

describe('one signal shared by many queries', () => {
  async function withWarnings<T>(fn: () => Promise<T>): Promise<{ result: T; warnings: Error[] }> {
    const warnings: Error[] = []
    const onWarning = (w: Error) => warnings.push(w)
    process.on('warning', onWarning)
    try {
      const result = await fn()
      // Warnings are emitted on a later tick.
      await new Promise((r) => setImmediate(r))
      return { result, warnings }
    } finally {
      process.off('warning', onWarning)
    }
  }

  test('1,000 queries add one listener, and none is left once they settle', async () => {
    const ac = new AbortController()
    const { warnings } = await withWarnings(async () => {
      const ps = Array.from({ length: 1000 }, (_, i) => db.query('SELECT $1::int AS n', [i], { signal: ac.signal }))
      assert.equal(getEventListeners(ac.signal, 'abort').length, 1)
      const rs = await Promise.all(ps)
      rs.forEach((r, i) => assert.equal(r.rows[0]!.n, i))
      // Simple queries share the same bookkeeping.
      await Promise.all(Array.from({ length: 50 }, () => db.simpleQuery('SELECT 1', { signal: ac.signal })))
    })
    assert.deepEqual(
      warnings.filter((w) => w.name === 'MaxListenersExceededWarning'),
      [],
    )
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0)
  })

  test('aborting it with 20,000 queries in flight takes milliseconds, not seconds', async () => {
    // Regression: each query looked itself up in the in-flight queue (quadratic:
    // 6 s for 20,000 queries, 38 s for 50,000, with the event loop blocked).
    const c = await openClient()
    try {
      const ac = new AbortController()
      // Long enough that no follower is answered before the abort, even when writing 20,000 queries keeps the event loop busy.
      const head = c.query('SELECT pg_sleep(1)')
      const ps = Array.from({ length: 20_000 }, (_, i) => c.query('SELECT $1::int AS n', [i], { signal: ac.signal }).catch((e: unknown) => e))
      await sleep(100)
      // CPU time, not the clock's: on a loaded machine the clock runs on while this process waits
      // for a core, and the quadratic lookup this guards against costs seconds of CPU either way.
      const cpuMs = (since?: NodeJS.CpuUsage) => {
        const u = process.cpuUsage(since)
        return (u.user + u.system) / 1000
      }
      const t0 = process.cpuUsage()
      ac.abort('bulk')
      const took = cpuMs(t0)
      await head
      const t1 = process.cpuUsage()
      const errors = await Promise.all(ps)
      const settling = cpuMs(t1)
      for (const e of errors) assertAbortError(e, 'bulk')
      assert.ok(took < 1000, `abort() blocked the event loop for ${took.toFixed(0)} ms of CPU`)
      assert.ok(settling < 3000, `the aborted queries took ${settling.toFixed(0)} ms of CPU to settle`)
      assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }])
      assert.equal(c.cancelMisfires, 0)
    } finally {
      await c.end()
    }
  })

  test('each query gets its own AbortError: the cause of one is not another one\'s', async () => {
    // One signal for a unit of work spread over two connections: on one the
    // query is running (cancelled on the server), on the other not sent yet.
    const running = await openClient()
    const { connectionString } = await mainDatabase()
    const url = new URL(connectionString!)
    const proxy = await startProxy({ host: url.hostname, port: Number(url.port) }, { delayMs: 60 })
    const connecting = new Client({ connectionString: connectionString!, host: proxy.host, port: proxy.port, sslmode: 'disable' })
    try {
      const ac = new AbortController()
      const a = running.query('SELECT pg_sleep(10)', [], { signal: ac.signal }).catch((e: unknown) => e)
      const b = connecting.query('SELECT 1', [], { signal: ac.signal }).catch((e: unknown) => e)
      await sleep(30)
      ac.abort('shared')
      const [ea, eb] = await Promise.all([a, b])
      assertAbortError(ea, 'shared')
      assertAbortError(eb, 'shared')
      assert.notEqual(ea, eb)
      assertCanceledOnServer(ea)
      assert.equal(eb.cause, undefined, 'the query that never ran has no server error as its cause')
    } finally {
      await running.end()
      await connecting.end()
      await proxy.close()
    }
  })

  test('aborting it rejects every query still pending, and leaves no listener', async () => {
    const c = await openClient()
    try {
      const ac = new AbortController()
      const { result: settled, warnings } = await withWarnings(async () => {
        const head = c.query('SELECT pg_sleep(0.1)')
        const ps = Array.from({ length: 1000 }, (_, i) => c.query('SELECT $1::int AS n', [i], { signal: ac.signal }))
        assert.equal(getEventListeners(ac.signal, 'abort').length, 1)
        await sleep(20)
        ac.abort('all of them')
        await head
        return Promise.allSettled(ps)
      })
      for (const s of settled) {
        assert.equal(s.status, 'rejected')
        assertAbortError((s as PromiseRejectedResult).reason, 'all of them')
      }
      assert.deepEqual(
        warnings.filter((w) => w.name === 'MaxListenersExceededWarning'),
        [],
      )
      assert.equal(getEventListeners(ac.signal, 'abort').length, 0)
      assert.deepEqual((await c.query('SELECT 9 AS n')).rows, [{ n: 9 }])
      assert.equal(c.cancelMisfires, 0)
    } finally {
      await c.end()
    }
  })
})
