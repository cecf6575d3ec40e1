// test-tags: slow
// Dead peers: a server that stops answering without closing anything, made by
// a proxy in front of the real server that stops forwarding (and, for a write
// that must not drain, stops reading) while every socket stays open. With the
// keepalive settings small, each case is repeated at random moments and the
// time from the fault to its detection is measured against the documented
// bound: keepAliveIdle + keepAliveInterval × keepAliveCount (or tcpUserTimeout
// for a write), plus slack for a busy machine.
//   - an idle client that listens (LISTEN): its check (a Sync) goes unanswered,
//     the connection is dropped, a new one listens again and notifications
//     flow;
//   - queries without a timeout waiting on a server whose host is gone (new
//     connections go into a black hole too): ConnectionError;
//   - a long query on a live server is left alone, though the check runs;
//   - a write that does not drain: ConnectionError; in a pool, the queries
//     queued behind it (never written) run on a new connection.

import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { Client, ConnectionError, createPool, type ClientOptions } from '../../../src/index.js'
import { uniqueName } from '../../support/client.js'
import { isolateEnvironment } from '../../support/connect.js'
import { startFaultProxy, type FaultProxy } from '../../support/proxies/fault-proxy.js'
import { adminQuery, getTestServer } from '../../support/servers/test-server.js'

await isolateEnvironment('faults-dead-peer')
const server = await getTestServer()
const target = { host: server.host, port: server.port }
const user = server.users.scram

const IDLE = 300
const INTERVAL = 100
const COUNT = 3
const BOUND = IDLE + INTERVAL * COUNT
/** Timers firing late on a loaded machine, a connection opened through the proxy. */
const SLACK = 2000

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

function options(proxy: FaultProxy, extra: ClientOptions = {}): ClientOptions {
  return {
    host: proxy.host,
    port: proxy.port,
    database: server.database,
    user: user.user,
    password: user.password,
    sslmode: 'disable',
    reconnectMaxDelay: 200,
    keepAliveIdle: IDLE,
    keepAliveInterval: INTERVAL,
    keepAliveCount: COUNT,
    ...extra,
  }
}

/** Resolves with `p`'s outcome, or rejects when it takes longer than `ms`: no wait here is unbounded. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms)
  })
  return Promise.race([p, limit]).finally(() => clearTimeout(timer))
}

function until(check: () => boolean, ms: number, what: string): Promise<void> {
  return within(
    (async () => {
      while (!check()) await sleep(5)
    })(),
    ms,
    what,
  )
}

function summary(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b)
  return `min ${sorted[0]!.toFixed(0)} ms, median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms`
}

function assertLost(err: unknown, what: string): asserts err is ConnectionError {
  assert.ok(err instanceof ConnectionError, `${what}: ${String(err)}`)
  assert.match(err.message, /taken for lost/, what)
  assert.ok(!err.message.includes(user.password), 'no password in the message')
}

describe('dead peers', () => {
  test('an idle client listening: the unanswered check drops the connection, a new one listens again', { timeout: 120_000 }, async (t) => {
    const proxy = await startFaultProxy(target)
    const client = new Client(options(proxy))
    const channel = uniqueName('dead_peer')
    const got: string[] = []
    const losses: Error[] = []
    client.on('disconnect', (err) => losses.push(err))
    const times: number[] = []
    try {
      await client.listen(channel, (payload) => got.push(payload))
      for (let round = 0; round < 8; round++) {
        const conn = proxy.connections.at(-1)!
        // At a random moment of the idle cycle: before, during or after a check.
        await sleep(Math.random() * (IDLE + 200))
        const t0 = performance.now()
        conn.stall()
        await within(
          new Promise<void>((resolve) => client.once('disconnect', () => resolve())),
          BOUND + SLACK,
          `round ${round}: the stalled connection was not found dead`,
        )
        times.push(performance.now() - t0)
        assertLost(losses.at(-1), `round ${round}`)
        // The lane reconnects through the proxy (relaying again) and listens again.
        const payload = `round ${round}`
        await until(() => proxy.connections.length === round + 2, 5000, `round ${round}: no new connection`)
        await within(
          (async () => {
            while (!got.includes(payload)) {
              await adminQuery(`SELECT pg_notify('${channel}', '${payload}')`)
              await sleep(50)
            }
          })(),
          10_000,
          `round ${round}: no notification after the reconnect`,
        )
      }
      for (const time of times) assert.ok(time < BOUND + SLACK, `detected after ${time.toFixed(0)} ms`)
      t.diagnostic(`idle LISTEN connection found dead after ${summary(times)} (bound ${BOUND} ms)`)
      await client.end()
    } finally {
      client.destroy()
      await proxy.close()
    }
  })

  test('an idle client that listens to nothing is not checked (its server sees no message)', { timeout: 30_000 }, async () => {
    const proxy = await startFaultProxy(target)
    const client = new Client(options(proxy))
    try {
      await client.query('SELECT 1')
      const before = Buffer.concat(proxy.connections[0]!.toServer).length
      await sleep(IDLE * 4)
      assert.equal(Buffer.concat(proxy.connections[0]!.toServer).length, before, 'something was sent to an idle connection')
      await client.end()
    } finally {
      client.destroy()
      await proxy.close()
    }
  })

  test('queries without a timeout, the server host gone: ConnectionError within the bound', { timeout: 120_000 }, async (t) => {
    const proxy = await startFaultProxy(target)
    const client = new Client(options(proxy))
    const times: number[] = []
    try {
      for (let round = 0; round < 6; round++) {
        proxy.plan = () => ({})
        await client.query('SELECT 1')
        const conn = proxy.connections.at(-1)!
        // Half the rounds: the host vanishes while the connection is idle, and the queries meet it dead.
        const first = round % 2 === 0
        let t0 = performance.now()
        if (first) {
          proxy.plan = () => ({ blackhole: true })
          conn.stall()
        }
        // A query that runs past the stall, with a pipeline behind it.
        const queries = [client.query('SELECT pg_sleep(0.3)'), ...Array.from({ length: 20 }, (_, i) => client.query('SELECT $1::int AS n', [i]))]
        for (const q of queries) q.catch(() => undefined)
        if (!first) {
          await sleep(Math.random() * 250)
          t0 = performance.now()
          proxy.plan = () => ({ blackhole: true })
          conn.stall()
        }
        const settled = await within(Promise.allSettled(queries), BOUND + SLACK + 1000, `round ${round}`)
        const failed = settled.filter((s) => s.status === 'rejected')
        assert.ok(failed.length > 0, `round ${round}: every query came back through a stalled connection`)
        for (const s of failed) assertLost((s as PromiseRejectedResult).reason, `round ${round}`)
        // Only what had been answered before the stall succeeded.
        for (const [i, s] of settled.entries()) if (i > 0 && s.status === 'fulfilled') assert.deepEqual(s.value.rows, [{ n: i - 1 }])
        const time = performance.now() - t0
        times.push(time)
        assert.ok(time < BOUND + SLACK, `round ${round}: detected after ${time.toFixed(0)} ms`)
      }
      t.diagnostic(`busy connection to a vanished host found dead after ${summary(times)} (bound ${BOUND} ms)`)
      proxy.plan = () => ({})
      const r = await within(client.query('SELECT 42 AS n'), 10_000, 'the client after the host came back')
      assert.deepEqual(r.rows, [{ n: 42 }])
      await client.end()
    } finally {
      client.destroy()
      await proxy.close()
    }
  })

  test('a long query on a live server is left alone, though the check runs', { timeout: 30_000 }, async () => {
    const proxy = await startFaultProxy(target)
    // The check's own connection gets 3 s to be answered, not this file's 300 ms: on a loaded
    // machine a new connection through the proxy can take longer, and the test is of a live
    // server being left alone, not of how fast it answers.
    const client = new Client(options(proxy, { keepAliveInterval: 1000, keepAliveCount: 3 }))
    const sleepMs = IDLE * 6
    try {
      await client.query('SELECT 1')
      const r = await within(client.query('SELECT pg_sleep($1::float8 / 1000), 7 AS n', [sleepMs]), sleepMs + 10_000, 'the long query')
      assert.equal(r.rows[0]!.n, 7)
      // The check opened connections of its own (SSLRequest only) while the query ran.
      assert.ok(proxy.connections.length >= 2, `the check never ran (${proxy.connections.length} connections)`)
      await client.end()
    } finally {
      client.destroy()
      await proxy.close()
    }
  })

  test('a live server that reads nothing (a query waiting for a lock) behind an undrained write: kept without tcpUserTimeout', { timeout: 60_000 }, async () => {
    const table = uniqueName('busy_peer')
    await adminQuery(`CREATE TABLE ${table} (n int)`)
    await adminQuery(`GRANT ALL ON ${table} TO ${user.user}`)
    after(() => adminQuery(`DROP TABLE IF EXISTS ${table}`))
    const proxy = await startFaultProxy(target)
    // Straight to the server, whose backend stops reading: through the proxy the writes would drain into it.
    // A check's answer may take longer than this file's 300 ms while 24 MiB are being encoded in this process.
    const client = new Client({ ...options(proxy, { keepAliveInterval: 500, keepAliveCount: 3 }), ...target })
    const bound = IDLE + 500 * 3
    const holder = new Client(options(proxy))
    try {
      await client.query('SELECT 1')
      const pid = client.processId
      await holder.query('BEGIN')
      await holder.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
      // The backend waits for the lock and reads nothing; the next query's 24 MiB fill the buffers both ways.
      const waiting = client.query<{ c: number }>(`SELECT count(*)::int AS c FROM ${table}`)
      const behind = client.query<{ n: number }>('SELECT length($1::text) AS n', ['x'.repeat(24 * 1024 * 1024)])
      // Several write bounds (keepAliveIdle + interval × count) pass with the write undrained.
      await sleep(bound * 4)
      await holder.query('COMMIT')
      assert.equal((await within(waiting, 10_000, 'the query that waited for the lock')).rows[0]!.c, 0)
      assert.equal((await within(behind, 10_000, 'the query behind it')).rows[0]!.n, 24 * 1024 * 1024)
      assert.equal(client.processId, pid, 'the same connection: nothing was taken for lost')
      await client.end()
      await holder.end()
    } finally {
      client.destroy()
      holder.destroy()
      await proxy.close()
    }
  })

  test('a write that does not drain: ConnectionError after tcpUserTimeout; a pool sends the unwritten queries on a new connection', { timeout: 120_000 }, async (t) => {
    const table = uniqueName('dead_peer_w')
    await adminQuery(`CREATE TABLE ${table} (n int NOT NULL)`)
    await adminQuery(`GRANT SELECT, INSERT ON ${table} TO ${user.user}`)
    after(() => adminQuery(`DROP TABLE IF EXISTS ${table}`))
    const WRITE = 400
    const proxy = await startFaultProxy(target)
    // Checks of silence off: only the undrained write may be what finds it.
    const pool = createPool({ ...options(proxy, { keepAlive: false, tcpUserTimeout: WRITE }), max: 1 })
    const times: number[] = []
    // Big enough to fill the kernel's buffers on loopback both ways.
    const big = 'x'.repeat(24 * 1024 * 1024)
    try {
      for (let round = 0; round < 3; round++) {
        await pool.query('SELECT 1')
        const conn = proxy.connections.at(-1)!
        await sleep(Math.random() * 50)
        conn.freeze()
        const t0 = performance.now()
        const stuck = pool.query('SELECT length($1::text) AS n', [big])
        stuck.catch(() => undefined)
        // Queued once the socket has stopped draining: never written.
        await sleep(20)
        const queued = Array.from({ length: 5 }, (_, i) => pool.query(`INSERT INTO ${table} VALUES ($1) RETURNING n`, [round * 10 + i]))
        const err = await within(stuck.then(() => null, (e: unknown) => e), WRITE + SLACK + 4000, `round ${round}: the stuck write`)
        times.push(performance.now() - t0)
        assertLost(err, `round ${round}`)
        assert.match(err.message, /has not drained/)
        assert.equal(err.mayHaveRun, true)
        const rows = await within(Promise.all(queued), 10_000, `round ${round}: the queued queries`)
        assert.deepEqual(
          rows.map((r) => r.rows[0]!.n),
          [0, 1, 2, 3, 4].map((i) => round * 10 + i),
        )
      }
      const { rows } = await pool.query(`SELECT count(*)::int AS c FROM ${table}`)
      assert.equal(rows[0]!.c, 15, 'each queued insert ran exactly once')
      for (const time of times) assert.ok(time < WRITE + SLACK + 3000, `detected after ${time.toFixed(0)} ms`)
      t.diagnostic(`undrained write found after ${summary(times)} (tcpUserTimeout ${WRITE} ms, plus the time to fill the buffers)`)
      await pool.end()
    } finally {
      pool.destroy()
      await proxy.close()
    }
  })
})
