// Losing the connection and shutting down: queries in flight fail with a
// ConnectionError (never hang, never get another query's result), the client
// reconnects when a query needs it, with backoff while the server is away;
// end() finishes what was issued then Terminates; destroy() rejects everything.

import assert from 'node:assert/strict'
import * as net from 'node:net'
import { describe, test } from 'node:test'
import { Client, ConnectionError, type ClientOptions } from '../../../src/index.js'
import { openClient, uniqueName } from '../../support/client.js'
import { closedPort } from '../../support/connect.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

async function backendCount(where: string): Promise<number> {
  const r = await adminQuery(`SELECT count(*) FROM pg_stat_activity WHERE ${where}`)
  return Number(r.rows[0]![0])
}

/** Waits until no backend matches (the server ends a backend a moment after its client left). */
async function gone(where: string): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if ((await backendCount(where)) === 0) return true
    await sleep(20)
  }
  return false
}

interface Gate {
  port: number
  /** 'open': relays to the server; 'refuse': accepts and closes at once (counted as an attempt). */
  mode: 'open' | 'refuse'
  /** When each connection attempt arrived (performance.now()). */
  attempts: number[]
  /** Bytes each client sent, per connection. */
  sent: Buffer[][]
  /** Drops every relayed connection, as a broken network would. */
  dropAll(): void
  close(): Promise<void>
}

/** A TCP relay to the test server that counts connection attempts and can refuse them or drop them. */
async function startGate(): Promise<Gate> {
  const { connectionString } = await mainDatabase()
  const url = new URL(connectionString!)
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    gate.attempts.push(performance.now())
    if (gate.mode === 'refuse') {
      client.destroy()
      return
    }
    const sent: Buffer[] = []
    gate.sent.push(sent)
    const upstream = net.connect(Number(url.port), url.hostname)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => undefined)
    }
    client.on('data', (chunk) => sent.push(chunk))
    client.pipe(upstream)
    upstream.pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  const gate: Gate = {
    port: 0,
    mode: 'open',
    attempts: [],
    sent: [],
    dropAll() {
      for (const s of sockets) s.destroy()
    },
    close: async () => {
      gate.dropAll()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  gate.port = (server.address() as net.AddressInfo).port
  return gate
}

async function clientThrough(port: number, extra: ClientOptions = {}): Promise<Client> {
  const { connectionString } = await mainDatabase()
  // 3.0 from the start: a gate that accepts and closes would otherwise see the
  // first attempt twice (3.2, then the fallback to 3.0: see protocol-fallback's tests),
  // and these tests count attempts.
  return new Client({ connectionString: connectionString!, host: '127.0.0.1', port, sslmode: 'disable', maxProtocolVersion: '3.0', ...extra })
}

function assertConnectionError(e: unknown): asserts e is ConnectionError {
  assert.ok(e instanceof ConnectionError, `expected a ConnectionError, got ${String(e)}`)
}

describe('a lost connection', () => {
  test('terminated: the query the FATAL hit rejects with a ConnectionError, those behind it run on a new connection; disconnect fires once', async () => {
    const c = await openClient()
    try {
      const pid = c.processId
      const disconnects: Error[] = []
      const closes: unknown[] = []
      c.on('disconnect', (e) => disconnects.push(e))
      c.on('close', (e) => closes.push(e))
      const ps = [c.query('SELECT pg_sleep(5)'), ...Array.from({ length: 500 }, (_, i) => c.query('SELECT $1::int AS n', [i]))]
      const settled = Promise.allSettled(ps)
      await sleep(100)
      await adminQuery(`SELECT pg_terminate_backend(${pid})`)
      const [slept, ...behind] = await settled
      assert.equal(slept!.status, 'rejected')
      assertConnectionError((slept as PromiseRejectedResult).reason)
      assert.equal((slept as PromiseRejectedResult).reason.mayHaveRun, true)
      behind.forEach((s, i) => assert.deepEqual(s.status === 'fulfilled' ? s.value.rows : s.reason, [{ n: i }], `query ${i} behind the sleep`))
      assert.equal(disconnects.length, 1)
      assertConnectionError(disconnects[0])
      assert.equal(c.closed, false)
      assert.equal(c.pendingQueries, 0)
      const r = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
      assert.notEqual(r.rows[0]!.pid, pid)
      assert.equal(c.connected, true)
      assert.equal(c.processId, r.rows[0]!.pid)
      assert.deepEqual(closes, [], "a lost connection is not the client's close")
      assert.equal(await gone(`pid = ${pid}`), true)
    } finally {
      await c.end()
    }
  })

  test('dropped by the network with a backlog: what was written fails, what was not runs on the next connection, each with its own result', async () => {
    const gate = await startGate()
    const c = await clientThrough(gate.port)
    try {
      await c.connect()
      const pid = c.processId
      const big = 'x'.repeat(1 << 20)
      // The server sleeps and reads nothing; 32 MB of parameters back the socket up.
      const ps = [
        c.query<{ n: number; pid: number }>('SELECT 0 AS n, pg_backend_pid() AS pid, pg_sleep(0.3)'),
        ...Array.from({ length: 32 }, (_, i) => c.query<{ n: number; pid: number }>('SELECT $1::int AS n, pg_backend_pid() AS pid, length($2) AS len', [i + 1, big])),
        ...Array.from({ length: 200 }, (_, i) => c.query<{ n: number; pid: number }>('SELECT $1::int AS n, pg_backend_pid() AS pid', [i + 33])),
      ]
      const settled = Promise.allSettled(ps)
      await sleep(100)
      gate.dropAll()
      const results = await settled
      let firstOk = -1
      results.forEach((s, i) => {
        if (s.status === 'rejected') {
          assertConnectionError(s.reason)
          assert.equal(firstOk, -1, `query ${i} failed after a later-issued one succeeded: the failures are the ones written first`)
        } else {
          if (firstOk === -1) firstOk = i
          assert.equal(s.value.rows[0]!.n, i, 'its own result')
          assert.notEqual(s.value.rows[0]!.pid, pid, 'ran on the new connection')
        }
      })
      assert.ok(firstOk > 0, 'the sleeping query and those written behind it failed')
      assert.equal(results[results.length - 1]!.status, 'fulfilled', 'the unwritten ones ran on the next connection')
      assert.equal(gate.attempts.length, 2)
    } finally {
      await c.end()
      await gate.close()
    }
  })

  test('an idle client whose connection dropped opens a new one only when a query needs it', async () => {
    const gate = await startGate()
    const c = await clientThrough(gate.port)
    try {
      await c.connect()
      const lost = new Promise<Error>((r) => c.once('disconnect', r))
      gate.dropAll()
      assertConnectionError(await lost)
      assert.equal(c.connected, false)
      await sleep(300)
      assert.equal(gate.attempts.length, 1, 'no reconnect without a query')
      assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }])
      assert.equal(gate.attempts.length, 2)
    } finally {
      await c.end()
      await gate.close()
    }
  })
})

describe('an unreachable server', () => {
  test('queries fail with a ConnectionError and attempts back off: no storm, increasing gaps', async () => {
    const gate = await startGate()
    const c = await clientThrough(gate.port)
    try {
      await c.connect()
      gate.mode = 'refuse'
      gate.dropAll()
      await sleep(20)
      const before = gate.attempts.length
      // 50 queries over a second, and 50 more at once.
      const ps: Promise<unknown>[] = []
      for (let i = 0; i < 50; i++) {
        ps.push(c.query('SELECT 1').catch((e: unknown) => e))
        await sleep(20)
      }
      for (let i = 0; i < 50; i++) ps.push(c.query('SELECT 1').catch((e: unknown) => e))
      for (const e of await Promise.all(ps)) assertConnectionError(e)
      const attempts = gate.attempts.slice(before)
      assert.ok(attempts.length >= 3 && attempts.length <= 7, `${attempts.length} attempts for 100 queries over a second`)
      const gaps = attempts.slice(1).map((t, i) => t - attempts[i]!)
      // 100 ms doubling, with jitter taking off up to half: each gap is at
      // least 50, 100, 200, 400 ms (a busy machine only makes them longer).
      gaps.forEach((g, k) => {
        assert.ok(g >= 50 * 2 ** k - 5, `gap ${k} was ${g.toFixed(1)} ms: ${gaps.map((x) => x.toFixed(0)).join(', ')}`)
      })
      // Idle: no attempts at all.
      const idle = gate.attempts.length
      await sleep(400)
      assert.equal(gate.attempts.length, idle)
      // The server is back: the next query works, within the current backoff.
      gate.mode = 'open'
      assert.deepEqual((await c.query('SELECT 2 AS two')).rows, [{ two: 2 }])
      // Backoff starts over after a success: the next loss reconnects at once.
      gate.dropAll()
      await sleep(20)
      const t0 = performance.now()
      assert.deepEqual((await c.query('SELECT 3 AS three')).rows, [{ three: 3 }])
      // Without the reset it would wait the next step of the backoff, at least 50 ms doubled once per
      // gap seen above (400 ms or more); a busy machine can take a while to connect, never that long.
      const nextStep = 50 * 2 ** (gaps.length + 1)
      assert.ok(performance.now() - t0 < nextStep, `reconnected without waiting (${(performance.now() - t0).toFixed(0)} ms; the backoff's next step ${nextStep} ms)`)
    } finally {
      await c.end()
      await gate.close()
    }
  })

  test('reconnectMaxDelay caps the backoff', async () => {
    const gate = await startGate()
    gate.mode = 'refuse'
    const c = await clientThrough(gate.port, { reconnectMaxDelay: 150 })
    try {
      const ps: Promise<unknown>[] = []
      const until = performance.now() + 1200
      while (performance.now() < until) {
        ps.push(c.query('SELECT 1').catch((e: unknown) => e))
        await sleep(10)
      }
      for (const e of await Promise.all(ps)) assertConnectionError(e)
      const gaps = gate.attempts.slice(1).map((t, i) => t - gate.attempts[i]!)
      assert.ok(gaps.length >= 6, `${gate.attempts.length} attempts`)
      // Uncapped, the fourth gap would be 400-800 ms.
      for (const g of gaps) assert.ok(g <= 300, `gap ${g.toFixed(1)} ms: ${gaps.map((x) => x.toFixed(0)).join(', ')}`)
    } finally {
      c.destroy()
      await gate.close()
    }
  })

  test('a client with listened channels keeps trying, backing off, until the server is back, then listens again', async () => {
    const gate = await startGate()
    const c = await clientThrough(gate.port, { reconnectMaxDelay: 200 })
    try {
      const channel = uniqueName('outage')
      const got: string[] = []
      await c.listen(channel, (p) => got.push(p))
      gate.mode = 'refuse'
      gate.dropAll()
      await sleep(700)
      // Attempts without any query, spaced by the backoff (capped at 200 ms): no storm.
      const during = gate.attempts.length - 1
      assert.ok(during >= 3 && during <= 12, `${during} attempts in 700 ms`)
      gate.mode = 'open'
      for (let i = 0; i < 100 && !c.connected; i++) await sleep(10)
      assert.ok(c.connected, 'reconnected once the server was back')
      for (let i = 0; i < 100 && got.length === 0; i++) {
        await adminQuery(`SELECT pg_notify('${channel.replace(/'/g, "''")}', 'back')`)
        await sleep(20)
      }
      assert.equal(got[0], 'back')
      // end() stops the attempts for good.
      await c.end()
      gate.mode = 'refuse'
      const after = gate.attempts.length
      await sleep(300)
      assert.equal(gate.attempts.length, after)
    } finally {
      await c.end()
      await gate.close()
    }
  })

  test('a closed port: PG_CONNECTION_REFUSED, for connect() and for queries', async () => {
    const port = await closedPort()
    const c = await clientThrough(port)
    try {
      await assert.rejects(c.connect(), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_REFUSED')
      await assert.rejects(c.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_REFUSED')
      assert.equal(c.connected, false)
      assert.equal(c.closed, false)
    } finally {
      await c.end()
    }
  })
})

describe('end()', () => {
  test('lets every query in flight finish, then sends Terminate; the backend is gone; later queries are refused', async () => {
    const gate = await startGate()
    const app = uniqueName('ending')
    const c = await clientThrough(gate.port, { applicationName: app })
    try {
      await c.connect()
      const closes: unknown[] = []
      c.on('close', (e) => closes.push(e))
      const ps = [c.query('SELECT pg_sleep(0.1), 0 AS n'), ...Array.from({ length: 100 }, (_, i) => c.query('SELECT $1::int AS n', [i + 1]))]
      let allDone = false
      const done = Promise.all(ps).then((rs) => {
        allDone = true
        return rs
      })
      const ended = c.end()
      assert.equal(c.end(), ended, 'end() twice is the same promise')
      assert.equal(c.closed, true)
      await assert.rejects(c.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_ENDED')
      await ended
      assert.equal(allDone, true, 'everything issued before end() completed first')
      ;(await done).forEach((r, i) => assert.equal(r.rows[0]!.n, i))
      assert.deepEqual(closes, [null])
      // The last message the client sent was Terminate.
      const sent = Buffer.concat(gate.sent[0]!)
      assert.deepEqual(sent.subarray(sent.length - 5), Buffer.from([0x58, 0, 0, 0, 4]))
      assert.equal(await gone(`application_name = '${app}'`), true)
      await assert.rejects(c.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_ENDED')
      await assert.rejects(c.connect(), ConnectionError)
      await c.end()
      assert.deepEqual(closes, [null], 'close fires once')
    } finally {
      await gate.close()
    }
  })

  test('queries issued before end() while a transaction held the client still run', async () => {
    const c = await openClient()
    const tx = c.begin(async (t) => {
      await t.query('SELECT pg_sleep(0.1)')
      return 'tx'
    })
    await sleep(10)
    const held = c.query('SELECT 1 AS one')
    const ended = c.end()
    const [txResult, heldResult] = await Promise.allSettled([tx, held])
    await ended
    assert.deepEqual(txResult, { status: 'fulfilled', value: 'tx' })
    assert.equal(heldResult.status, 'fulfilled', `issued before end(), so it runs: ${String((heldResult as PromiseRejectedResult).reason)}`)
    assert.deepEqual((heldResult as PromiseFulfilledResult<{ rows: unknown[] }>).value.rows, [{ one: 1 }])
  })

  test('a client that never connected can be ended; its queries are refused', async () => {
    const c = await clientThrough(await closedPort())
    const closes: unknown[] = []
    c.on('close', (e) => closes.push(e))
    await c.end()
    assert.equal(c.closed, true)
    assert.deepEqual(closes, [null])
    await assert.rejects(c.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_ENDED')
    await assert.rejects(c.connect(), ConnectionError)
    c.destroy()
    assert.deepEqual(closes, [null])
  })
})

describe('destroy()', () => {
  test('rejects everything at once with the reason: in flight, held behind a transaction, and the transaction', async () => {
    const app = uniqueName('destroyed')
    const c = await openClient({ applicationName: app })
    const closes: unknown[] = []
    c.on('close', (e) => closes.push(e))
    const reason = new Error('shutting down')
    // (A backend notices its client is gone only once its query ends.)
    const inFlight = Array.from({ length: 10 }, () => c.query('SELECT pg_sleep(0.2)'))
    let txStarted!: () => void
    const started = new Promise<void>((r) => (txStarted = r))
    const tx = c.begin(async (t) => {
      txStarted()
      await t.query('SELECT pg_sleep(0.2)')
    })
    await started
    const held = Array.from({ length: 10 }, () => c.query('SELECT 1'))
    const all = [...inFlight, tx, ...held]
    const states = all.map(() => 'pending')
    all.forEach((p, i) =>
      p.then(
        () => (states[i] = 'fulfilled'),
        (e: unknown) => (states[i] = e === reason ? 'reason' : `other: ${String(e)}`),
      ),
    )
    await sleep(30)
    c.destroy(reason)
    await new Promise((r) => setImmediate(r))
    assert.deepEqual(
      states.slice(0, 10).concat(states.slice(11)),
      Array(20).fill('reason'),
      'queries in flight and held ones reject with the reason itself, at once',
    )
    await sleep(20)
    assert.notEqual(states[10], 'pending', 'begin() settled')
    assert.notEqual(states[10], 'fulfilled')
    assert.deepEqual(closes, [reason])
    assert.equal(c.closed, true)
    await assert.rejects(c.query('SELECT 1'), ConnectionError)
    assert.equal(await gone(`application_name = '${app}'`), true)
    c.destroy()
    await c.end()
    assert.deepEqual(closes, [reason], 'close fires once')
  })

  test('destroy() while connecting: the waiting queries get the reason, no backend is left, later queries are refused alike', async () => {
    const { connectionString } = await mainDatabase()
    const app = uniqueName('destroy_connecting')
    const c = new Client({ connectionString: connectionString!, applicationName: app })
    const closes: unknown[] = []
    c.on('close', (e) => closes.push(e))
    const reason = new Error('never mind')
    const waiting = c.query('SELECT 1').catch((e: unknown) => e)
    const connecting = c.connect().catch((e: unknown) => e)
    c.destroy(reason)
    const right = await c.query('SELECT 1').catch((e: unknown) => e)
    assert.equal(await waiting, reason)
    assert.ok((await connecting) instanceof Error)
    // Once the connection attempt has finished (and its connection was closed):
    await sleep(100)
    const later = await c.query('SELECT 1').catch((e: unknown) => e)
    assertConnectionError(right)
    assertConnectionError(later)
    assert.equal(later.code, right.code, `${later.message} / ${right.message}`)
    assert.equal(later.cause, right.cause)
    assert.deepEqual(closes, [reason])
    assert.equal(await gone(`application_name = '${app}'`), true)
  })

  test('destroy() during the reconnect backoff: no attempt is made afterwards', async () => {
    const gate = await startGate()
    gate.mode = 'refuse'
    const c = await clientThrough(gate.port)
    try {
      // Three failed attempts: the next one is 200-400 ms away.
      for (let i = 0; i < 3; i++) await c.query('SELECT 1').catch(() => undefined)
      assert.equal(gate.attempts.length, 3)
      const waiting = c.query('SELECT 1').catch((e: unknown) => e)
      const reason = new Error('gone for good')
      c.destroy(reason)
      assert.equal(await waiting, reason)
      gate.mode = 'open'
      await sleep(600)
      assert.equal(gate.attempts.length, 3, 'a destroyed client opens no connection')
    } finally {
      await gate.close()
    }
  })

  test('a client that never connected can be destroyed', async () => {
    const c = await clientThrough(await closedPort())
    const closes: unknown[] = []
    c.on('close', (e) => closes.push(e))
    c.destroy()
    assert.equal(c.closed, true)
    assert.equal(closes.length, 1)
    assertConnectionError(closes[0])
    await assert.rejects(c.query('SELECT 1'), ConnectionError)
    await c.end()
  })
})
