// test-tags: exclusive (it asserts how long the event loop stalls and races cancels against running queries)
// Cancellation by timeouts, and the CancelRequest under load, against the
// signals a server sends for it, and over TLS and unix sockets: a query that
// runs too long is cancelled on the server, without ever hitting another
// query of the pipeline. Cancellation by an AbortSignal: abort-signal.test.ts.

import assert from 'node:assert/strict'
import * as net from 'node:net'
import { after, before, describe, test } from 'node:test'
import { AbortError, ArgumentError, Client, PgError, TimeoutError, type ClientOptions } from '../../../src/index.js'
import { assertAbortError, assertCanceledOnServer, assertMisfires, backendState, followerOutcome } from '../../support/cancel-checks.js'
import { openClient } from '../../support/client.js'
import { getTestServer, mainDatabase } from '../../support/servers/test-server.js'

const server = await getTestServer()
let db: Client

before(async () => {
  db = await openClient()
})
after(async () => {
  await db.end()
})

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Waits (at most 10 s) until the backend `pid` is running `text`. */
async function untilRunning(pid: number, text: string): Promise<void> {
  const deadline = performance.now() + 10_000
  for (;;) {
    const st = await backendState(pid)
    if (st?.state === 'active' && st.query === text) return
    if (performance.now() > deadline) assert.fail(`the backend never ran ${text}: ${JSON.stringify(st)}`)
    await sleep(5)
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

describe('timeouts', () => {
  test('timeout per query: TimeoutError, and the sleep is cancelled on the server', async () => {
    const c = await openClient()
    try {
      const pid = c.processId
      const t0 = performance.now()
      const e = await c.query('SELECT pg_sleep(30)', [], { timeout: 150 }).catch((err: unknown) => err)
      const took = performance.now() - t0
      assert.ok(e instanceof TimeoutError, String(e))
      assert.equal(e.code, 'PG_QUERY_TIMEOUT')
      assert.equal(e.timeout, 150)
      assertCanceledOnServer(e)
      assert.ok(took >= 145 && took < 2000, `took ${took} ms`)
      const st = await backendState(pid)
      assert.equal(st?.state, 'idle', 'the backend is idle again')
      assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }])
      assert.equal(c.processId, pid)
    } finally {
      await c.end()
    }
  })

  test('queryTimeout per client applies to every query; a per-query timeout overrides it', async () => {
    const c = await openClient({ queryTimeout: 120 })
    try {
      const pid = c.processId
      const t0 = performance.now()
      const e = await c.query('SELECT pg_sleep(30)').catch((err: unknown) => err)
      const took = performance.now() - t0
      assert.ok(e instanceof TimeoutError, String(e))
      assert.equal(e.timeout, 120)
      assertCanceledOnServer(e)
      assert.ok(took >= 115 && took < 2000, `took ${took} ms`)
      assert.equal((await backendState(pid))?.state, 'idle')
      // A query shorter than the timeout is unaffected, and so are the ones behind it.
      const ok = await Promise.all([c.query('SELECT pg_sleep(0.05), 1 AS n'), c.query('SELECT 2 AS n')])
      assert.deepEqual(
        ok.map((r) => r.rows[0]!.n),
        [1, 2],
      )
      // Longer per query.
      assert.deepEqual((await c.query('SELECT pg_sleep(0.2), 3 AS n', [], { timeout: 5000 })).rows[0]!.n, 3)
      // simpleQuery takes the client's default too.
      await assert.rejects(c.simpleQuery('SELECT pg_sleep(30)'), (x: unknown) => x instanceof TimeoutError && x.timeout === 120)
      assert.equal(c.cancelMisfires, 0)
    } finally {
      await c.end()
    }
  })

  test('timeouts are measured on the monotonic clock, not Date.now()', async () => {
    const c = await openClient()
    const realNow = Date.now
    try {
      // The wall clock jumps an hour forward (then back): the timeout neither fires early nor late.
      let offset = 0
      Date.now = () => realNow() + offset
      const p = c.query('SELECT pg_sleep(30)', [], { timeout: 200 })
      offset = 3600_000
      const t0 = performance.now()
      await sleep(50)
      offset = -3600_000
      const e = await p.catch((err: unknown) => err)
      const took = performance.now() - t0
      assert.ok(e instanceof TimeoutError)
      assert.ok(took >= 140 && took < 2000, `took ${took} ms`)
    } finally {
      Date.now = realNow
      await c.end()
    }
  })

  test('20,000 queries timing out together take time linear in their number', async () => {
    // Regression: each timeout looked its query up in the in-flight queue
    // (quadratic: the event loop stalled for 6 s, all of it this process's CPU).
    // Bounded by the CPU this process spends, not by wall time, which a loaded
    // machine stretches: linear work costs well under a second of it.
    const c = await openClient()
    try {
      const head = c.query('SELECT pg_sleep(0.3)')
      const cpu0 = process.cpuUsage()
      const ps = Array.from({ length: 20_000 }, (_, i) => c.query('SELECT $1::int AS n', [i], { timeout: 100 }).catch((e: unknown) => e))
      await head
      const errors = await Promise.all(ps)
      const cpu = process.cpuUsage(cpu0)
      const cpuMs = (cpu.user + cpu.system) / 1000
      for (const e of errors) assert.ok(e instanceof TimeoutError, String(e))
      assert.ok(cpuMs < 3000, `the 20,000 timeouts cost ${cpuMs.toFixed(0)} ms of CPU`)
      assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    } finally {
      await c.end()
    }
  })

  test('invalid timeout and signal are ArgumentErrors', async () => {
    for (const timeout of [0, -1, Number.NaN, 2 ** 31, '10' as unknown as number]) {
      await assert.rejects(db.query('SELECT 1', [], { timeout }), ArgumentError)
      await assert.rejects(db.simpleQuery('SELECT 1', { timeout }), ArgumentError)
    }
    await assert.rejects(db.query('SELECT 1', [], { signal: {} as AbortSignal }), ArgumentError)
    assert.throws(() => new Client({ queryTimeout: 0 }), ArgumentError)
  })
})

describe('simpleQuery', () => {
  test('takes a signal: cancelled on the server, the AbortError carries 57014', async () => {
    const c = await openClient()
    try {
      const ac = new AbortController()
      const p = c.simpleQuery('SELECT 1; SELECT pg_sleep(10); SELECT 2', { signal: ac.signal })
      const follower = c.simpleQuery('SELECT 3 AS n')
      await sleep(50)
      ac.abort('simple')
      const e = await p.catch((err: unknown) => err)
      assertAbortError(e, 'simple')
      assertCanceledOnServer(e)
      assert.deepEqual((await follower)[0]!.rows, [{ n: 3 }])
      assert.equal(c.cancelMisfires, 0)
    } finally {
      await c.end()
    }
  })

  test('takes a timeout', async () => {
    const c = await openClient()
    try {
      const pid = c.processId
      const e = await c.simpleQuery('SELECT pg_sleep(10)', { timeout: 100 }).catch((err: unknown) => err)
      assert.ok(e instanceof TimeoutError)
      assertCanceledOnServer(e)
      assert.equal((await backendState(pid))?.state, 'idle')
    } finally {
      await c.end()
    }
  })
})

describe('under load', () => {
  test('cancels of a sleep with followers in flight, 50 or more: a follower gets its own result or query_canceled; hits are counted as misfires, and on 18 stay rare', async () => {
    const clients = await Promise.all(Array.from({ length: 5 }, () => openClient()))
    let cancelledOnServer = 0
    let completedFirst = 0
    let rounds = 0
    let hitsOn18 = 0
    try {
      await Promise.all(
        clients.map(async (c) => {
          let hits = 0
          // Ten rounds each, and more (up to forty) until more than ten sleeps were cancelled while
          // running: on a loaded machine a cancel request can take longer than what is left of a
          // sleep, so the extra rounds sleep longer (0.3 to 1.5 s).
          for (let round = 0; round < 10 || (cancelledOnServer <= 10 && round < 40); round++) {
            const sleepMs = round < 10 ? 50 + Math.floor(Math.random() * 150) : 300 + Math.floor(Math.random() * 1200)
            const ac = new AbortController()
            let settled = false
            const target = c.query('SELECT pg_sleep($1::float8 / 1000)', [sleepMs], { signal: ac.signal })
            target.then(
              () => (settled = true),
              () => (settled = true),
            )
            const followers = Array.from({ length: 5 }, (_, i) => c.query('SELECT $1::int AS n', [round * 10 + i]))
            // Any time while it runs, up to the very end of the sleep.
            await sleep(Math.floor(Math.random() * sleepMs))
            const abortedFirst = !settled
            ac.abort('load')
            const e = await target.then(
              () => (abortedFirst ? assert.fail('a query aborted before it settled never resolves') : null),
              (err: unknown) => err,
            )
            if (abortedFirst) {
              assertAbortError(e, 'load')
              if (e.cause instanceof PgError) {
                assert.equal(e.cause.code, '57014')
                cancelledOnServer++
              } else {
                assert.equal(e.cause, undefined)
                completedFirst++
              }
            } else assert.equal(e, null, 'the sleep completed before the abort')
            const got = await Promise.allSettled(followers)
            rounds++
            // The abort comes at a random moment of the sleep, now and then just as it ends: see followerOutcome.
            got.forEach((s, i) => {
              if (followerOutcome(s, server.version, (r) => assert.equal(r.rows[0]!.n, round * 10 + i), 'a follower', true)) hits++
            })
          }
          if (server.version < 18) assertMisfires(c.cancelMisfires, hits)
          else {
            // On 18 a hit is the moment between the last look and the signal; a starved machine may also leave one uncounted (see the next test).
            assert.ok(c.cancelMisfires <= hits, `only real hits are counted (${c.cancelMisfires}, ${hits} hits)`)
            hitsOn18 += hits
          }
        }),
      )
      assert.ok(cancelledOnServer > 10, `${cancelledOnServer} were cancelled while running, ${completedFirst} completed first`)
      // Five followers a round: a tenth of the rounds' followers would be the window opening far wider than designed.
      assert.ok(hitsOn18 <= rounds / 2, `${hitsOn18} followers hit in ${rounds} rounds on PostgreSQL 18`)
    } finally {
      await Promise.all(clients.map((c) => c.end()))
    }
  })

  test('aborts timed for the worst moment: every follower hit is counted as a misfire, and hits stay rare', async () => {
    // The cancel goes out 20 ms after the abort when followers are in flight;
    // aborting a 50 ms sleep 27-33 ms in sends it just as the sleep ends on its
    // own, so the signal may land on a follower (each runs 5 ms). That window is
    // the time from the client's last look at the target to the signal reaching
    // the backend. Regression: with the cancel connection opened only then
    // (~5 ms) two rounds in three hit a follower, and a hit whose error arrived
    // after the cancel connection closed went uncounted.
    const clients = await Promise.all(Array.from({ length: 4 }, () => openClient()))
    const rounds = 25
    let roundsHit = 0
    let late = 0
    try {
      await Promise.all(
        clients.map(async (c) => {
          let hits = 0
          let abortedHits = 0
          for (let round = 0; round < rounds; round++) {
            const ac = new AbortController()
            let settled = false
            const target = c.query('SELECT pg_sleep(0.05)', [], { signal: ac.signal }).then(
              (r) => ((settled = true), r),
              (e: unknown) => ((settled = true), e),
            )
            const followers = Array.from({ length: 5 }, (_, i) => c.query('SELECT $1::int AS n, pg_sleep(0.005)', [i]))
            await sleep(27 + Math.random() * 6)
            // On a busy machine the timer may fire after the sleep is over.
            const settledEarly = settled
            if (settled) late++
            else {
              ac.abort('worst moment')
              assertAbortError(await target, 'worst moment')
            }
            let hit = false
            ;(await Promise.allSettled(followers)).forEach((s, i) => {
              if (s.status === 'fulfilled') assert.equal(s.value.rows[0]!.n, i)
              else {
                const e = s.reason as PgError
                assert.ok(e instanceof PgError && e.code === '57014', `a follower failed otherwise: ${String(e)}`)
                hits++
                if (!settledEarly) abortedHits++
                hit = true
              }
            })
            if (hit) roundsHit++
          }
          // Hits are noticed and only hits are counted. Not every hit: on a
          // starved machine (the whole suite running at once) some hits, 4 of 7
          // in one client, arrived where the connection no longer attributed
          // them to a cancel; the cause is not known yet. A hit is never a wrong
          // result either way: the follower fails with query_canceled.
          assert.ok(abortedHits === 0 || c.cancelMisfires > 0, `hits by this client's cancels are noticed (${c.cancelMisfires} of ${abortedHits})`)
          assert.ok(c.cancelMisfires <= hits, `only real hits are counted (${c.cancelMisfires}, ${hits} hits)`)
        }),
      )
      const total = clients.length * rounds - late
      assert.ok(total > clients.length * rounds * 0.75, `${late} rounds came too late to abort`)
      // The rate depends on scheduling (a loaded machine widens the window), so
      // the bound only separates today's behaviour (about one round in six) from
      // the regression above (two in three). Before 18 it separates nothing: the
      // second SIGINT of every cancel (see cancel-scheduler.ts) lands on a
      // follower whenever the process sending it is preempted, which on a busy
      // machine was 52 rounds in 100; there the counting above is what is checked.
      console.log(`PostgreSQL ${server.version}: ${roundsHit} of ${total} rounds hit a follower`)
      if (server.version >= 18) assert.ok(roundsHit < total / 2, `${roundsHit} of ${total} rounds hit a follower`)
    } finally {
      await Promise.all(clients.map((c) => c.end()))
    }
  })

  test('abort-to-rejection time, with and without followers', async () => {
    const c = await openClient()
    let hits = 0
    try {
      const measure = async (followers: number): Promise<number[]> => {
        const times: number[] = []
        for (let i = 0; i < 15; i++) {
          const ac = new AbortController()
          const p = c.query('SELECT pg_sleep(10)', [], { signal: ac.signal })
          const fs = Array.from({ length: followers }, (_, k) => c.query('SELECT $1::int AS n', [k]))
          // Until the server runs it, not a fixed 30 ms: on a loaded machine the previous round's
          // cancel can still hold the writer then, and a query aborted unsent has no server error.
          await untilRunning(c.processId, 'SELECT pg_sleep(10)')
          await sleep(30)
          const t0 = performance.now()
          ac.abort()
          const e = await p.catch((err: unknown) => err)
          times.push(performance.now() - t0)
          assert.ok(e instanceof AbortError)
          assertCanceledOnServer(e)
          ;(await Promise.allSettled(fs)).forEach((s, k) => {
            if (followerOutcome(s, server.version, (r) => assert.equal(r.rows[0]!.n, k))) hits++
          })
        }
        return times
      }
      const alone = median(await measure(0))
      const behind = median(await measure(10))
      console.log(`abort() to rejection, median of 15: ${alone.toFixed(2)} ms alone, ${behind.toFixed(2)} ms with 10 followers in flight`)
      // A few ms alone; 20 ms more with followers (the cancel waits for the target to have run that long).
      assert.ok(alone < 100, `alone: ${alone} ms`)
      assert.ok(behind >= 20 && behind < 250, `with followers: ${behind} ms`)
      assertMisfires(c.cancelMisfires, hits)
    } finally {
      await c.end()
    }
  })
})

describe('the signals a CancelRequest sends', () => {
  test('a follower is never hit on 18; before 18 (two SIGINTs per cancel) every hit is counted as a misfire', async () => {
    // Servers before 18 signal the backend and then its process group. When
    // the process sending them is preempted in between, the second SIGINT lands
    // on the query after the target, which the client wrote long before: a
    // pg_sleep cancelled through a slow link took the INSERT behind it along on
    // PostgreSQL 15. No client timing prevents that, but the hit must never go
    // unnoticed. A follower of 100 ms widens the window enough to be seen on a
    // busy machine; on 18 it must never be hit.
    const c = await openClient()
    let hits = 0
    try {
      for (let i = 0; i < 30; i++) {
        const target = c.query('SELECT pg_sleep(2)', [], { timeout: 40 }).catch((e: unknown) => e)
        const follower = c.query('SELECT $1::int AS n, pg_sleep(0.1)', [i]).catch((e: unknown) => e)
        const [e, got] = await Promise.all([target, follower])
        assert.ok(e instanceof TimeoutError, `the target: ${String(e)}`)
        if (got instanceof PgError) {
          assert.equal(got.code, '57014')
          hits++
        } else assert.equal((got as { rows: { n: number }[] }).rows[0]!.n, i)
      }
      console.log(`followers hit by a cancel's second signal: ${hits} of 30 on PostgreSQL ${server.version}`)
      if (server.version >= 18) assert.equal(hits, 0, 'one signal per cancel: no follower is hit')
      assert.equal(c.cancelMisfires, hits, `every hit is counted, and only hits (${hits} hits)`)
    } finally {
      await c.end()
    }
  })
})

describe('cancel over TLS', () => {
  /** A TCP relay to the server that records the first bytes each connection sends. */
  async function tap(target: { host: string; port: number }): Promise<{ port: number; openings: Buffer[]; close(): Promise<void> }> {
    const openings: Buffer[] = []
    const sockets = new Set<net.Socket>()
    const server = net.createServer((client) => {
      const index = openings.length
      openings.push(Buffer.alloc(0))
      const upstream = net.connect(target.port, target.host)
      for (const s of [client, upstream]) {
        sockets.add(s)
        s.on('close', () => sockets.delete(s))
        s.on('error', () => undefined)
      }
      client.on('data', (chunk) => {
        if (openings[index]!.length < 8) openings[index] = Buffer.concat([openings[index]!, chunk]).subarray(0, 8)
        upstream.write(chunk)
      })
      upstream.on('data', (chunk) => client.write(chunk))
      client.on('end', () => upstream.end())
      upstream.on('end', () => client.end())
      client.on('close', () => upstream.destroy())
      upstream.on('close', () => client.destroy())
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    return {
      port: (server.address() as net.AddressInfo).port,
      openings,
      close: async () => {
        for (const s of sockets) s.destroy()
        await new Promise<void>((r) => server.close(() => r()))
      },
    }
  }

  const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])
  const CANCEL_REQUEST_CODE = Buffer.from([0x04, 0xd2, 0x16, 0x2e])

  async function cancelThrough(sslmode: 'require' | 'disable', extra: ClientOptions = {}): Promise<Buffer[]> {
    const { connectionString } = await mainDatabase()
    const url = new URL(connectionString!)
    const t = await tap({ host: url.hostname, port: Number(url.port) })
    const options: ClientOptions = { connectionString: connectionString!, host: '127.0.0.1', port: t.port, sslmode, ...extra }
    const c = new Client(options)
    try {
      await c.connect()
      assert.equal(c.tls, sslmode === 'require')
      const ac = new AbortController()
      const p = c.query('SELECT pg_sleep(10)', [], { signal: ac.signal })
      await sleep(50)
      ac.abort('over tls')
      const e = await p.catch((err: unknown) => err)
      assertAbortError(e, 'over tls')
      assertCanceledOnServer(e)
      assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    } finally {
      await c.end()
      await t.close()
    }
    return t.openings
  }

  test('with sslmode=require the CancelRequest goes over TLS too', async () => {
    const openings = await cancelThrough('require')
    assert.equal(openings.length, 2, 'the connection and the cancel connection')
    assert.deepEqual(openings[0], SSL_REQUEST)
    assert.deepEqual(openings[1], SSL_REQUEST, 'the cancel connection starts with SSLRequest, not a plaintext CancelRequest')
  })

  if (server.version >= 17) {
    test('with sslnegotiation=direct the cancel connection starts TLS directly too', async () => {
      const openings = await cancelThrough('require', { sslnegotiation: 'direct' })
      assert.equal(openings.length, 2)
      // A TLS handshake record (ClientHello), neither SSLRequest nor a plaintext CancelRequest.
      assert.equal(openings[0]![0], 0x16)
      assert.equal(openings[1]![0], 0x16)
    })
  }

  test('over a unix socket', async () => {
    const c = await openClient({ host: server.socketDir, port: server.port })
    try {
      assert.equal(c.tls, false)
      const ac = new AbortController()
      const p = c.query('SELECT pg_sleep(10)', [], { signal: ac.signal })
      const follower = c.query('SELECT 1 AS one')
      await sleep(30)
      ac.abort('unix')
      const e = await p.catch((err: unknown) => err)
      assertAbortError(e, 'unix')
      assertCanceledOnServer(e)
      assert.deepEqual((await follower).rows, [{ one: 1 }])
    } finally {
      await c.end()
    }
  })

  test('without TLS the CancelRequest is plaintext (the tap tells them apart)', async () => {
    const openings = await cancelThrough('disable')
    assert.equal(openings.length, 2)
    assert.deepEqual(openings[1]!.subarray(4, 8), CANCEL_REQUEST_CODE)
  })
})
