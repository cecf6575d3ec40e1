// test-tags: slow
// What the network does to a connection, through a fault-injecting proxy in
// front of the real server: every chunk delayed; every byte delivered alone;
// a black hole that swallows everything, cancel requests included; refused
// connections; a server that keeps dropping connections as soon as they are
// up; and a reset under a backlog of INSERTs. Cuts at recorded points of a
// session: network-cuts.test.ts.
//
// For every query issued (test/support/network-workload.ts): it settles
// within a deadline; a rejection is a pipegres error with a code, a message
// naming the cause, and no password in it; a result is its own query's
// (distinct values, pipelined); a query that may have run is never sent again
// (an INSERT is applied at most once); and afterwards the same client (its
// next query reconnects) and a fresh client both work. node:test fails a test
// on any uncaught exception or unhandled rejection.

import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import { Client, ConnectionError, createPool, PgError, TimeoutError, type ClientOptions } from '../../../src/index.js'
import { uniqueName } from '../../support/client.js'
import { isolateEnvironment } from '../../support/connect.js'
import { networkWorkload, settleWithin, sleep } from '../../support/network-workload.js'
import { splitBackend, startFaultProxy, type FaultPlan, type FaultProxy } from '../../support/proxies/fault-proxy.js'
import { adminQuery } from '../../support/servers/test-server.js'

await isolateEnvironment('faults-network')
const { server, target, scramUser, table, assertRejection, issueWorkload, newTag, serverSideGone, countTag, checkOutcomes, workloadSucceeds, clientOptions, record } = await networkWorkload()
const plainRecording = await record(scramUser, 'disable')

// --- slow and fragmented ----------------------------------------------------------

describe('a slow or fragmenting network', () => {
  test('every chunk delayed by 20 ms: results intact; a timeout is still cancelled on the server', { timeout: 45_000 }, async () => {
    const proxy = await startFaultProxy(target, { delayMs: 20 })
    const client = new Client(clientOptions(proxy, scramUser))
    try {
      await workloadSucceeds(client, proxy, 'through a 20 ms delay')
      const slow = client.query('SELECT pg_sleep(10)', [], { timeout: 200 })
      const behind = issueWorkload(client, newTag())
      const behindSettled = settleWithin(behind, 15_000)
      const t0 = performance.now()
      const err = await slow.then(
        () => assert.fail('pg_sleep(10) resolved despite its timeout'),
        (e: unknown) => e,
      )
      assert.ok(err instanceof TimeoutError, `got ${String(err)}`)
      assertRejection(err, proxy, 'pg_sleep')
      assert.equal((err.cause as { code?: string }).code, '57014', 'cancelled on the server')
      assert.ok(performance.now() - t0 < 8000)
      const settled = await behindSettled
      // Before PostgreSQL 18 the cancel's second signal may hit a query behind (see test/support/cancel-checks.ts).
      const hit = settled.filter((s) => s.status === 'rejected')
      if (server.version < 18 && hit.length > 0 && hit.every((s) => s.reason instanceof PgError && s.reason.code === '57014')) {
        settled.forEach((s, i) => {
          if (s.status === 'fulfilled') behind[i]!.check(s.value)
        })
        assert.equal(client.cancelMisfires, hit.length, 'every follower hit is counted as a misfire')
      } else {
        checkOutcomes(behind, settled, proxy)
        assert.ok(settled.every((s) => s.status === 'fulfilled'), 'queries behind a cancelled one complete')
      }
      await client.end()
    } finally {
      client.destroy()
      await proxy.close()
    }
  })

  for (const sslmode of ['disable', 'require'] as const) {
    test(`every byte delivered alone, both ways (sslmode=${sslmode})`, { timeout: 60_000 }, async () => {
      const proxy = await startFaultProxy(target, { bytewise: true })
      const client = new Client(clientOptions(proxy, scramUser, { sslmode }))
      try {
        await workloadSucceeds(client, proxy, 'one byte at a time')
        assert.equal(client.tls, sslmode === 'require')
        const conn = proxy.connections[0]!
        assert.ok(conn.toClient.length > 3000 && conn.toClient.every((b) => b.length === 1), 'the server stream went over in 1-byte pieces')
        assert.ok(conn.toServer.length > 500 && conn.toServer.every((b) => b.length === 1), 'the client stream went over in 1-byte pieces')
        await client.end()
      } finally {
        client.destroy()
        await proxy.close()
      }
    })
  }
})

// --- a black hole -----------------------------------------------------------------

interface BlackHoleOptions {
  sslmode?: 'disable' | 'require'
  /** What a new connection (the CancelRequest's) meets: the black hole, a refusal, or the server. */
  newConnections: 'blackhole' | 'refused' | 'relayed'
  /** Client setting; bounds the cancel connection too. */
  connectTimeout?: number
  /** How long the rejections may take after the timeout, generously. */
  within: number
}

const QUERY_TIMEOUT = 300

/**
 * The connection goes silent both ways while the workload is in flight, each
 * query with a timeout. Every query must reject with a TimeoutError, whether
 * or not its CancelRequest can reach the server; queries issued after them
 * must not hang either. Then the network heals and the client works again.
 */
async function blackHoleScenario(t: TestContext, o: BlackHoleOptions): Promise<void> {
  const proxy = await startFaultProxy(target)
  const opts = clientOptions(proxy, scramUser, { sslmode: o.sslmode ?? 'disable', connectTimeout: o.connectTimeout })
  const client = new Client(opts)
  const fresh = new Client(opts)
  try {
    await client.connect()
    assert.equal(client.tls, o.sslmode === 'require')
    proxy.stallAll()
    if (o.newConnections === 'blackhole') proxy.plan = () => ({ blackhole: true })
    if (o.newConnections === 'refused') await proxy.refuse()
    const tag = newTag()
    const t0 = performance.now()
    const issued = issueWorkload(client, tag, { timeout: QUERY_TIMEOUT })
    const settling = settleWithin(issued, QUERY_TIMEOUT + o.within)
    await sleep(QUERY_TIMEOUT + 50)
    // Issued once the others have timed out, while their cancel is pending: it must not wait forever.
    // Without connectTimeout it would: it goes to a new connection, and one opened into a black
    // hole waits for as long as the operating system lets a connection attempt wait (as in libpq).
    const late =
      o.connectTimeout === undefined && o.newConnections === 'blackhole'
        ? null
        : { label: 'a query without timeout, issued later', promise: client.query('SELECT $1::int AS n', [-1]) }
    late?.promise.catch(() => undefined)
    const settled = await settling
    const elapsed = performance.now() - t0
    for (const [i, s] of settled.entries()) {
      assert.equal(s.status, 'rejected', `${issued[i]!.label} resolved through a black hole`)
      const err = (s as PromiseRejectedResult).reason as unknown
      assert.ok(err instanceof TimeoutError, `${issued[i]!.label}: ${String(err)}`)
      assertRejection(err, proxy, issued[i]!.label)
    }
    assert.ok(elapsed < QUERY_TIMEOUT + o.within, `took ${elapsed} ms`)
    t.diagnostic(`every query rejected ${elapsed.toFixed(0)} ms after it was issued (timeout ${QUERY_TIMEOUT} ms)`)
    if (late !== null) {
      const [lateOutcome] = await settleWithin([late], 15_000)
      if (lateOutcome!.status === 'rejected') assertRejection(lateOutcome!.reason, proxy, late.label)
      else assert.deepEqual(lateOutcome!.value.rows, [{ n: -1 }])
    }
    await serverSideGone(proxy.connections[0]!)
    assert.ok((await countTag(tag)) <= 1)

    // The network heals.
    proxy.plan = () => ({})
    await proxy.accept()
    await workloadSucceeds(client, proxy, 'the same client afterwards')
    await workloadSucceeds(fresh, proxy, 'a fresh client')
    await client.end()
    await fresh.end()
  } finally {
    client.destroy()
    fresh.destroy()
    await proxy.close()
  }
}

describe('a black hole (nothing gets through either way)', () => {
  test('cancel connections are black-holed too: every query rejects with a TimeoutError, bounded by connectTimeout', { timeout: 45_000 }, (t) =>
    blackHoleScenario(t, { newConnections: 'blackhole', connectTimeout: 1500, within: 1500 + 6000 }))

  test('cancel connections are refused: every query rejects with a TimeoutError at once', { timeout: 45_000 }, (t) =>
    blackHoleScenario(t, { newConnections: 'refused', within: 4000 }))

  test('over TLS, the cancel connection never gets past SSLRequest: TimeoutError, bounded by connectTimeout', { timeout: 45_000 }, (t) =>
    blackHoleScenario(t, { sslmode: 'require', newConnections: 'blackhole', connectTimeout: 1500, within: 1500 + 6000 }))

  test('only the connection is black-holed: the cancel reaches the server, its answer never comes back', { timeout: 45_000 }, (t) =>
    blackHoleScenario(t, { newConnections: 'relayed', connectTimeout: 1500, within: 1500 + 6000 }))

  test('with default settings the wait is bounded too (the cancel connection times out after 10 s)', { timeout: 60_000 }, (t) =>
    blackHoleScenario(t, { newConnections: 'blackhole', within: 10_000 + 8000 }))

  test('keepalive settings are accepted', { timeout: 30_000 }, async () => {
    const proxy = await startFaultProxy(target)
    try {
      const url = `postgresql://${encodeURIComponent(scramUser.user)}:${encodeURIComponent(scramUser.password)}@${proxy.host}:${proxy.port}/${server.database}?sslmode=disable&keepalives=1&keepalives_idle=1`
      const settings: (ClientOptions | string)[] = [
        clientOptions(proxy, scramUser, { keepAlive: true, keepAliveIdle: 1000 }),
        clientOptions(proxy, scramUser, { keepAlive: false }),
        url,
      ]
      for (const s of settings) {
        const c = new Client(s)
        try {
          await workloadSucceeds(c, proxy, `keepalive ${typeof s === 'string' ? 'in the URL' : String(s.keepAlive)}`)
          await c.end()
        } finally {
          c.destroy()
        }
      }
    } finally {
      await proxy.close()
    }
  })
})

// --- refused and flapping ---------------------------------------------------------

describe('a server that refuses or keeps dropping connections', () => {
  test('refused: connect() rejects with a ConnectionError naming the address; queries too; then it works', { timeout: 30_000 }, async () => {
    const proxy = await startFaultProxy(target)
    await proxy.refuse()
    const client = new Client(clientOptions(proxy, scramUser))
    try {
      const err = await client.connect().then(
        () => assert.fail('connected to a closed port'),
        (e: unknown) => e,
      )
      assert.ok(err instanceof ConnectionError, String(err))
      assert.equal(err.code, 'PG_CONNECTION_REFUSED')
      assertRejection(err, proxy, 'connect()')
      const issued = issueWorkload(client, newTag())
      const settled = await settleWithin(issued, 15_000)
      for (const s of settled) {
        assert.equal(s.status, 'rejected')
        assert.equal(((s as PromiseRejectedResult).reason as ConnectionError).code, 'PG_CONNECTION_REFUSED')
      }
      checkOutcomes(issued, settled, proxy)
      await proxy.accept()
      await workloadSucceeds(client, proxy, 'the same client once the port is open')
      await client.end()
    } finally {
      client.destroy()
      await proxy.close()
    }
  })

  /**
   * Connection attempts over a window while every connection is dropped as
   * soon as it is up (or, with `duringStartup`, before it is): returns when
   * each attempt came, relative to the start of the window.
   */
  async function attemptsWhileFlapping(proxy: FaultProxy, plan: FaultPlan, windowMs: number): Promise<number[]> {
    const first = proxy.connections.length
    const t0 = performance.now()
    proxy.plan = () => plan
    proxy.resetAll()
    await sleep(windowMs)
    proxy.plan = () => ({})
    return proxy.connections.slice(first).map((c) => c.acceptedAt - t0)
  }

  const readyLength = splitBackend(plainRecording.fromServer).find((m) => m.type === 'Z')!.end
  const flaps: { what: string; plan: FaultPlan }[] = [
    { what: 'dropped as soon as it is ready', plan: { serverCutAt: readyLength } },
    { what: 'dropped during authentication', plan: { serverCutAt: 30 } },
    { what: 'dropped 30 ms after it was accepted', plan: { resetAfterMs: 30 } },
  ]

  for (const f of flaps) {
    for (const kind of ['client', 'pool'] as const) {
      test(`a listening ${kind}, every connection ${f.what}: attempts back off (no storm), bounded; it listens again once the network heals`, { timeout: 45_000 }, async (t) => {
        const proxy = await startFaultProxy(target)
        const maxDelay = 800
        const options = clientOptions(proxy, scramUser, { reconnectMaxDelay: maxDelay })
        const listener = kind === 'client' ? new Client(options) : createPool(options)
        const notifier = new Client(clientOptions(proxy, scramUser))
        const channel = uniqueName('net_flap')
        const received: string[] = []
        const disconnects: Error[] = []
        if (listener instanceof Client) listener.on('disconnect', (e) => disconnects.push(e))
        try {
          await listener.listen(channel, (p) => received.push(p ?? ''))
          const windowMs = 3000
          const attempts = await attemptsWhileFlapping(proxy, f.plan, windowMs)
          t.diagnostic(`${attempts.length} connection attempts in ${windowMs} ms, at ${attempts.map((a) => a.toFixed(0)).join(', ')} ms`)
          for (const e of disconnects) assertRejection(e, proxy, 'disconnect')
          // Backoff from 100 ms doubling to 800 ms gives about 7 attempts in 3 s; a storm gives hundreds.
          assert.ok(attempts.length >= 2, `only ${attempts.length} attempts: the ${kind} stopped trying`)
          assert.ok(
            attempts.length <= 14,
            `${attempts.length} connection attempts in ${windowMs} ms: a reconnect storm (${attempts.map((a) => a.toFixed(0)).join(', ')})`,
          )
          const gaps = attempts.slice(1).map((a, i) => a - attempts[i]!)
          assert.ok(Math.max(...gaps) < maxDelay + 1500, `a gap of ${Math.max(...gaps)} ms exceeds reconnectMaxDelay`)
          // Healed: it reconnects within the bounded backoff and listens again.
          const healedAt = performance.now()
          let delivered = false
          while (!delivered && performance.now() - healedAt < 10_000) {
            await notifier.notify(channel, 'back').catch(() => undefined)
            await sleep(100)
            delivered = received.includes('back')
          }
          assert.ok(delivered, `the listening ${kind} did not listen again after the network healed`)
          assert.ok(performance.now() - healedAt < maxDelay + 5000)
          await workloadSucceeds(listener, proxy, `the listening ${kind} afterwards`)
          await listener.end()
          await notifier.end()
        } finally {
          listener.destroy()
          notifier.destroy()
          await proxy.close()
        }
      })
    }
  }

  test('a pool whose every connection is dropped as soon as it is ready: queries settle, attempts back off, and it recovers', { timeout: 45_000 }, async (t) => {
    const proxy = await startFaultProxy(target)
    const pool = createPool({ ...clientOptions(proxy, scramUser), max: 4 })
    const windowMs = 3000
    try {
      await workloadSucceeds(pool, proxy, 'the pool before')
      const first = proxy.connections.length
      const t0 = performance.now()
      proxy.plan = () => ({ serverCutAt: readyLength })
      proxy.resetAll()
      // Four callers issuing queries back to back, as a busy application would.
      let issued = 0
      const outcomes: Promise<void>[] = []
      const callers = Array.from({ length: 4 }, async () => {
        while (performance.now() - t0 < windowMs) {
          const v = issued++
          const p = pool.query('SELECT $1::int AS n', [v]).then(
            (r) => assert.deepEqual(r.rows, [{ n: v }]),
            (e: unknown) => assertRejection(e, proxy, `pool query ${v}`),
          )
          outcomes.push(p)
          await settleWithin([{ label: `pool query ${v}`, promise: p }], 15_000)
        }
      })
      await Promise.all(callers)
      await Promise.all(outcomes)
      const attempts = proxy.connections.slice(first).map((c) => c.acceptedAt - t0)
      proxy.plan = () => ({})
      t.diagnostic(`${attempts.length} connection attempts in ${windowMs} ms for ${issued} queries`)
      assert.ok(attempts.length <= 40, `${attempts.length} connection attempts in ${windowMs} ms for ${issued} queries: a reconnect storm`)
      await workloadSucceeds(pool, proxy, 'the pool afterwards')
      await pool.end()
    } finally {
      pool.destroy()
      await proxy.close()
    }
  })
})

// --- INSERTs with a backlog -------------------------------------------------------

describe('no query that may have run is sent again', () => {
  test('2,000 pipelined INSERTs, the connection reset mid-stream: each applied at most once, those that resolved exactly once', { timeout: 60_000 }, async () => {
    const proxy = await startFaultProxy(target, (i) => (i === 0 ? { serverCutAt: 20_000 } : {}))
    const client = new Client(clientOptions(proxy, scramUser))
    const tag = newTag()
    const payload = 'y'.repeat(1000)
    try {
      await client.connect()
      const inserts = Array.from({ length: 2000 }, (_, n) => ({
        label: `INSERT ${n}`,
        promise: client.query(`INSERT INTO ${table} (tag, n) SELECT $1, $2 WHERE length($3) = 1000`, [tag, n, payload]),
      }))
      const settled = await settleWithin(inserts, 30_000)
      await serverSideGone(proxy.connections[0]!)
      const counts = new Map<number, number>()
      for (const row of (await adminQuery(`SELECT n, count(*) FROM ${table} WHERE tag = '${tag}' GROUP BY n`)).rows) counts.set(Number(row[0]), Number(row[1]))
      let resolved = 0
      let rejected = 0
      settled.forEach((s, n) => {
        const count = counts.get(n) ?? 0
        assert.ok(count <= 1, `INSERT ${n} applied ${count} times`)
        if (s.status === 'fulfilled') {
          resolved++
          assert.equal(s.value.rowCount, 1)
          assert.equal(count, 1, `INSERT ${n} resolved but is not there`)
        } else {
          rejected++
          assertRejection(s.reason, proxy, `INSERT ${n}`)
        }
      })
      assert.ok(rejected > 0, 'the reset hit nothing')
      assert.ok(resolved > 0, 'nothing resolved: the cut came too early to test a backlog')
      await workloadSucceeds(client, proxy, 'the same client afterwards')
      await client.end()
    } finally {
      client.destroy()
      await proxy.close()
    }
  })
})
