// test-tags: slow, stress
// Pins a subscription that stopped for good after its walsender was killed
// while it (re)connected, and one that waited forever on a connection gone
// silent. A kill or a reset before the first stream ran ended the
// subscription with that ConnectionError (57P01) as if final; a connection
// lost between the commands of a start was reopened by the connection's lane
// behind the stream's back (the commands then ran on another walsender); and
// a connection the network dropped without a word was waited on until TCP
// gave up, minutes after the server had let the slot go. Here the
// subscription's server processes are killed (pg_terminate_backend) at every
// stage: while a connection opens, during the commands before
// START_REPLICATION, at START_REPLICATION, at the first message and while
// streaming, the first start included, hundreds of times while ten-row
// transactions commit; its connections are cut by a proxy at random points,
// and silenced. Every committed row arrives once, in order, and the
// subscription never ends by itself. Every wait has a deadline.

import assert from 'node:assert/strict'
import * as net from 'node:net'
import { describe, test } from 'node:test'
import { Client } from '../../../src/index.js'
import { connectReplication, subscribe, type Subscription } from '../../../src/replication.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'
import { startFaultProxy, type FaultPlan } from '../../support/proxies/fault-proxy.js'
import { fixture, sleep } from '../../support/replication-db.js'
import { keepLedger, type Ledger } from '../../support/replication-ledger.js'
import { connectionUrl, getTestServer, mainDatabase } from '../../support/servers/test-server.js'
import { stressSize } from '../../support/tier.js'

const db = await fileClient()

/** `p`, or a rejection naming `what` after `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p, new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`${what()}: not within ${ms} ms`)), ms)))])
  } finally {
    clearTimeout(timer)
  }
}

/** Resolves once `cond()` holds (polled); rejects naming `what` after `ms`. */
/** Terminates a server process and waits until it has exited (which pg_terminate_backend does itself from PostgreSQL 14 on). */
async function terminateAndWait(pid: number): Promise<void> {
  if ((await getTestServer()).version >= 14) {
    await db.query('SELECT pg_terminate_backend($1::int, 5000)', [pid])
    return
  }
  await db.query('SELECT pg_terminate_backend($1::int)', [pid])
  for (const deadline = performance.now() + 5000; ; ) {
    const { rows } = await db.query('SELECT 1 FROM pg_catalog.pg_stat_activity WHERE pid = $1', [pid])
    if (rows.length === 0) return
    if (performance.now() > deadline) throw new Error(`server process ${pid} did not exit within 5 s of its termination`)
    await sleep(20)
  }
}

async function until(cond: () => boolean, ms: number, what: () => string): Promise<void> {
  const deadline = performance.now() + ms
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`${what()}: not within ${ms} ms`)
    await sleep(10)
  }
}

const inOrder = (n: number) => Array.from({ length: n }, (_, i) => i + 1)

/** Where rows delivered in order from 1 first skip or repeat one, for messages. */
function gap(applied: readonly number[]): string {
  const i = applied.findIndex((n, k) => n !== k + 1)
  return i < 0 ? '' : ` (out of order from the ${i + 1}th: ${applied.slice(Math.max(0, i - 1), i + 2).join(', ')})`
}

interface Kills {
  /** The slot's walsender, streaming (or about to stream: START_REPLICATION took the slot). */
  streaming: number
  /** Processes that did not hold the slot: connecting, running the commands before START_REPLICATION, or starting it. */
  starting: number
  /** The walsender of a stream just started, at its first messages. */
  firstMessage: number
}

const total = (k: Kills) => k.streaming + k.starting + k.firstMessage

/**
 * Terminates the subscription's server processes (all of them, or only
 * those that do not hold the slot yet) and counts them in `kills`. The pids
 * are chosen first and terminated after (MATERIALIZED), so that no other
 * process is ever hit.
 */
async function kill(kills: Kills, which: 'all' | 'starting', slot: string, app: string): Promise<number> {
  const r = await db.query<{ killed: boolean; streaming: boolean }>(
    `WITH slot AS MATERIALIZED (SELECT active_pid FROM pg_catalog.pg_replication_slots WHERE slot_name = $2),
     victims AS MATERIALIZED (
       SELECT a.pid, a.pid IS NOT DISTINCT FROM (SELECT active_pid FROM slot) AS streaming
         FROM pg_catalog.pg_stat_activity a
        WHERE a.application_name = $1 AND a.pid <> pg_backend_pid())
     SELECT pg_terminate_backend(pid) AS killed, streaming FROM victims WHERE $3::text = 'all' OR NOT streaming`,
    [app, slot, which],
  )
  let n = 0
  for (const k of r.rows) {
    if (!k.killed) continue
    n++
    if (k.streaming) kills.streaming++
    else kills.starting++
  }
  return n
}

/** Kills the next process of the subscription that does not hold the slot yet, `lag` ms after it shows; 0 if none shows within `ms`. */
async function killNextStart(kills: Kills, slot: string, app: string, lag: number, ms = 600): Promise<number> {
  const deadline = performance.now() + ms
  for (;;) {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity a WHERE a.application_name = $1
          AND a.pid IS DISTINCT FROM (SELECT active_pid FROM pg_catalog.pg_replication_slots WHERE slot_name = $2)`,
      [app, slot],
    )
    if (rows[0]!.n > 0) {
      if (lag > 0) await sleep(lag)
      return kill(kills, 'starting', slot, app)
    }
    if (performance.now() > deadline) return 0
    await sleep(2)
  }
}

/** Commits ten-row transactions (rows from `first` on) until `stop()`; resolves with the number of rows. */
async function write(table: string, first: number, stop: () => boolean, on?: Client): Promise<number> {
  const writer = on ?? (await openClient())
  let next = first
  try {
    while (!stop()) {
      await writer.query(`INSERT INTO ${table} SELECT g, 'x' FROM generate_series($1::int, $2::int) g`, [next, next + 9])
      next += 10
      // About a hundred transactions a second: rows keep coming, and the consumer keeps up.
      await sleep(2 + Math.random() * 10)
    }
  } finally {
    if (on === undefined) await writer.end()
  }
  return next - first
}

/**
 * A TCP relay to the server that can go silent, as a network does that drops
 * connections without a word (a NAT or a firewall forgetting them): from then
 * on nothing crosses the connections open at that moment, either way, and
 * neither side hears of the other closing. New connections are relayed.
 */
async function silentRelay(target: { host: string; port: number }): Promise<{ port: number; connections: () => number; silence(): void; close(): void }> {
  const pairs: { client: net.Socket; server: net.Socket; silent: boolean }[] = []
  const relay = net.createServer((client) => {
    const pair = { client, server: net.connect(target.port, target.host), silent: false }
    pairs.push(pair)
    const pass = (from: net.Socket, to: net.Socket) => {
      from.on('data', (chunk: Buffer) => {
        if (!pair.silent) to.write(chunk)
      })
      from.on('close', () => {
        if (!pair.silent) to.destroy()
      })
      from.on('error', () => undefined)
    }
    pass(client, pair.server)
    pass(pair.server, client)
  })
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
  return {
    port: (relay.address() as net.AddressInfo).port,
    connections: () => pairs.length,
    silence: () => pairs.forEach((p) => (p.silent = true)),
    close() {
      relay.close()
      for (const p of pairs) {
        p.client.destroy()
        p.server.destroy()
      }
    },
  }
}

/** A subscription's books, with how it ended if it did (it should not). */
function watch(sub: Subscription): { ledger: Ledger; ended: () => Error | null; reconnects: string[] } {
  const ledger = keepLedger(sub, Number.MAX_SAFE_INTEGER, { slowEvery: 53, slowMs: 3 })
  let ended: Error | null = null
  ledger.done.then(
    () => (ended = new Error('the subscription ended')),
    (err: Error) => (ended = err),
  )
  const reconnects: string[] = []
  sub.on('reconnect', ({ error }) => reconnects.push(`${error.name}: ${error.message}`))
  return { ledger, ended: () => ended, reconnects }
}

interface LaneResult {
  rows: number
  kills: Kills
  /** Streams started. */
  streams: number
  reconnects: number
  restartedMidway: number
}

/**
 * One subscription through `rounds` rounds of at least `perRound` kills at
 * random moments 20 to 220 ms apart, while ten-row transactions commit; at
 * the end of each round every row committed so far has arrived, in order.
 */
async function killLane(name: string, rounds: number, perRound: number): Promise<LaneResult> {
  const f = await fixture(db, 'n int PRIMARY KEY, pad text', name)
  const app = uniqueName(name)
  const client = new Client({ ...(await mainDatabase()).options, applicationName: app })
  const kills: Kills = { streaming: 0, starting: 0, firstMessage: 0 }
  let rows = 0
  const sub = subscribe(client, { slot: f.slot, publications: [f.publication], reconnectMaxDelay: 150, highWaterMark: 50 })
  const { ledger, ended, reconnects } = watch(sub)
  const state = (round: number) =>
    `${name} round ${round}: rows committed ${rows}, delivered ${ledger.applied.length}${gap(ledger.applied)}, kills ${total(kills)}, reconnects ${reconnects.length} (last: ${reconnects.at(-1) ?? 'none'}), ended ${ended()?.message ?? 'no'}`
  // At the first message: now and then killed as soon as the stream is up.
  let armed = false
  let connects = 0
  let up = false
  sub.on('reconnect', () => (up = false))
  sub.on('connect', () => {
    connects++
    up = true
    if (armed || Math.random() >= 0.25) return
    armed = true
    const at: Kills = { streaming: 0, starting: 0, firstMessage: 0 }
    void kill(at, 'all', f.slot, app)
      .then(() => (kills.firstMessage += at.streaming + at.starting))
      .finally(() => (armed = false))
  })
  try {
    await within(sub.ready(), 10_000, () => `${name}: the first start`)
    for (let round = 1; round <= rounds; round++) {
      const before = total(kills)
      const deadline = performance.now() + 40_000
      let stop = false
      const writing = write(f.table, rows + 1, () => stop)
      let chasing: Promise<unknown> = Promise.resolve()
      let chased = true
      try {
        while (total(kills) - before < perRound && performance.now() < deadline && ended() === null) {
          // Half the time the stream runs again first (kills at random moments would otherwise nearly
          // always find it starting again after the last one).
          if (Math.random() < 0.5) await until(() => up || ended() !== null || performance.now() > deadline, 30_000, () => `${state(round)}: a stream`)
          // At a random moment, whatever the subscription is doing: streaming, or starting again after the last kill.
          await sleep(20 + Math.random() * 200)
          const n = await kill(kills, 'all', f.slot, app)
          // Often the reconnection that follows is killed too, at some point of its start, one chase at a time.
          if (n > 0 && chased && Math.random() < 0.5) {
            chased = false
            chasing = killNextStart(kills, f.slot, app, Math.random() * 40).finally(() => (chased = true))
          }
        }
      } finally {
        stop = true
        await chasing
      }
      rows += await within(writing, 10_000, () => `${state(round)}: the writer stopped`)
      assert.equal(ended(), null, state(round))
      // Every row of the round arrives, whatever the last kill interrupted.
      await until(() => ledger.applied.length >= rows || ended() !== null, 20_000, () => `${state(round)}: every row delivered`)
      assert.equal(ended(), null, state(round))
      // On a machine too loaded to reach the count before the round's deadline, a quarter of it still shows the faults happened.
      assert.ok(total(kills) - before >= perRound / 4, `${state(round)}: ${total(kills) - before} kills`)
    }
    assert.equal(ledger.duplicates, 0, `${name}: no handled transaction came again`)
    assert.deepEqual(ledger.applied, inOrder(rows), name)
    return { rows, kills, streams: connects, reconnects: ledger.reconnects, restartedMidway: ledger.restartedMidway }
  } finally {
    await within(sub.close(), 10_000, () => `${name}: close()`)
    await client.end()
    await f.drop()
  }
}

// Side by side: each has its own slot, publication and application_name, and kills only its own processes.
describe('a subscription under faults at every stage of (re)connecting', { concurrency: true }, () => {
  test('killed while its first stream starts, the subscription starts all the same', { timeout: 120_000 }, async () => {
    const f = await fixture(db, 'n int PRIMARY KEY, pad text', 'rrf1')
    const app = uniqueName('rrf_first')
    const client = new Client({ ...(await mainDatabase()).options, applicationName: app })
    const kills: Kills = { streaming: 0, starting: 0, firstMessage: 0 }
    try {
      // Eight starts, and more (up to 24) while fewer than five kills landed: a kill can miss its start on a loaded machine.
      for (let i = 0; i < 24 && (i < 8 || total(kills) < 5); i++) {
        const sub = subscribe(client, { slot: f.slot, publications: [f.publication], reconnectMaxDelay: 100 })
        try {
          const ready = sub.ready()
          ready.catch(() => undefined)
          // The first connection is killed at some point of its start, the one after it too, now and then;
          // every third start at once, which often lands before the server's ReadyForQuery reaches the client.
          await killNextStart(kills, f.slot, app, i % 3 === 1 ? 0 : Math.random() * 30, 3000)
          if (i % 3 === 0) await killNextStart(kills, f.slot, app, Math.random() * 30)
          await within(ready, 10_000, () => `start ${i + 1}`)
          await db.query(`INSERT INTO ${f.table} VALUES ($1, 'x')`, [i + 1])
          // The row of the start before may come again: close() does not acknowledge the last message handed out.
          const seen: number[] = []
          while (!seen.includes(i + 1)) {
            const r = await within(sub.next(), 10_000, () => `the row of start ${i + 1} (seen ${seen.join(', ')})`)
            assert.equal(r.done, false)
            if (r.value.type === 'insert') seen.push(Number(r.value.row.n))
          }
          assert.deepEqual(seen.filter((n) => n !== i), [i + 1])
        } finally {
          await within(sub.close(), 10_000, () => 'close()')
        }
      }
      assert.ok(total(kills) >= 5, `${total(kills)} processes killed while starting`)
    } finally {
      await client.end()
      await f.drop()
    }
  })

  test(`the walsender killed at every stage of reconnecting, ${stressSize('dozens', 'hundreds')} of times: every row once, in order`, { timeout: 180_000 }, async (t) => {
    // Two subscriptions side by side, each with its own slot: twice the kills in the same time.
    const ROUNDS = 2
    // Per round and subscription: 40 in the stress tier, 12 in `npm test` (test/support/tier.ts).
    const KILLS = stressSize(12, 40)
    const lanes = await Promise.all([killLane('rrf_a', ROUNDS, KILLS), killLane('rrf_b', ROUNDS, KILLS)])
    const kills: Kills = { streaming: 0, starting: 0, firstMessage: 0 }
    for (const l of lanes) for (const k of Object.keys(kills) as (keyof Kills)[]) kills[k] += l.kills[k]
    t.diagnostic(
      `rows ${lanes.map((l) => l.rows).join(' + ')}; kills ${total(kills)} (streaming ${kills.streaming}, while starting ${kills.starting}, at the first message ${kills.firstMessage}); streams ${lanes.map((l) => l.streams).join(' + ')}, reconnects ${lanes.map((l) => l.reconnects).join(' + ')}, transactions restarted midway ${lanes.map((l) => l.restartedMidway).join(' + ')}`,
    )
    // Of each kind, at least a sixteenth of what was asked for: which stage a kill lands in is timing's choice.
    const least = ROUNDS * Math.ceil(KILLS / 8)
    assert.ok(kills.starting >= least, `${kills.starting} kills while starting`)
    assert.ok(kills.streaming + kills.firstMessage >= least, `${kills.streaming + kills.firstMessage} kills while streaming`)
  })

  test('connections reset by the network at random points of opening and starting: every row once, in order', { timeout: 120_000 }, async (t) => {
    // The managed server's own: the proxy stands in front of it (DATABASE_URL may name another).
    const server = await getTestServer()
    const admin = new Client(connectionUrl(server, server.superuser))
    const f = await fixture(admin, 'n int PRIMARY KEY, pad text', 'rrf3')
    // Cut within the first bytes the server sends: the TLS handshake, startup, the commands' answers, START_REPLICATION's, the first messages.
    // Every third connection streams for a moment before it is reset. The first one is reset once
    // the subscription runs: a first connection that cannot open ends it (the settings may be wrong).
    const cut = (i: number): FaultPlan =>
      i === 0 ? {} : i % 3 === 2 ? { resetAfterMs: 150 + Math.random() * 300 } : { serverCutAt: Math.floor(Math.random() * 5000), cut: Math.random() < 0.5 ? 'reset' : 'fin' }
    const proxy = await startFaultProxy({ host: server.host, port: server.port }, cut)
    const client = new Client(connectionUrl({ ...server, port: proxy.port }, server.superuser, { params: { sslmode: Math.random() < 0.5 ? 'disable' : 'prefer' } }))
    const sub = subscribe(client, { slot: f.slot, publications: [f.publication], reconnectMaxDelay: 100, highWaterMark: 50 })
    const { ledger, ended, reconnects } = watch(sub)
    let rows = 0
    const state = () =>
      `rows committed ${rows}, delivered ${ledger.applied.length}${gap(ledger.applied)}, connections ${proxy.connections.length}, reconnects ${reconnects.length} (last: ${reconnects.at(-1) ?? 'none'}), ended ${ended()?.message ?? 'no'}`
    try {
      // The slot exists once the first stream runs: rows committed from then on are the slot's to deliver.
      await within(sub.ready(), 20_000, () => `the first start (${state()})`)
      let stop = false
      const writing = write(f.table, 1, () => stop, admin)
      await sleep(100)
      proxy.connections[0]!.reset()
      try {
        // 35 connections, or as many as a loaded machine makes in 40 s.
        const enough = performance.now() + 40_000
        await until(() => proxy.connections.length >= 35 || ended() !== null || performance.now() > enough, 45_000, () => `35 connections (${state()})`)
      } finally {
        stop = true
      }
      rows = await within(writing, 10_000, () => `the writer stopped (${state()})`)
      // The cuts stop: whatever connection comes next streams.
      proxy.plan = () => ({})
      await until(() => ledger.applied.length >= rows || ended() !== null, 20_000, () => `every row delivered (${state()})`)
      assert.equal(ended(), null, state())
      assert.ok(proxy.connections.length >= 15, `${state()}: too few connections to tell`)
      const causes = new Map<string, number>()
      for (const r of reconnects) {
        const k = r.replace(/\d+/g, 'N').slice(0, 110)
        causes.set(k, (causes.get(k) ?? 0) + 1)
      }
      t.diagnostic(`${state()}, transactions restarted midway ${ledger.restartedMidway}; ${[...causes].map(([k, n]) => `${n} × ${k}`).join('; ')}`)
      assert.equal(ledger.duplicates, 0)
      assert.deepEqual(ledger.applied, inOrder(rows))
    } finally {
      await within(sub.close(), 10_000, () => 'close()')
      await client.end()
      await proxy.close()
      await f.drop()
      await admin.end()
    }
  })

  test('a connection the network drops without a word: the silent stream is given up, and the subscription goes on', { timeout: 60_000 }, async () => {
    const server = await getTestServer()
    const admin = new Client(connectionUrl(server, server.superuser))
    const f = await fixture(admin, 'n int PRIMARY KEY, pad text', 'rrf4')
    const relay = await silentRelay(server)
    // The server gives up on the silent walsender after 2 s, letting the slot go; status updates go every 666 ms.
    const client = new Client({ connectionString: connectionUrl({ ...server, port: relay.port }, server.superuser), params: { wal_sender_timeout: '2000' } })
    const sub = subscribe(client, { slot: f.slot, publications: [f.publication], reconnectMaxDelay: 200 })
    const { ledger, ended, reconnects } = watch(sub)
    const state = () =>
      `delivered ${ledger.applied.length}${gap(ledger.applied)}, connections ${relay.connections()}, reconnects ${reconnects.length} (last: ${reconnects.at(-1) ?? 'none'}), ended ${ended()?.message ?? 'no'}`
    try {
      await within(sub.ready(), 20_000, () => `the first start (${state()})`)
      await admin.query(`INSERT INTO ${f.table} SELECT g, 'x' FROM generate_series(1, 10) g`)
      await until(() => ledger.applied.length >= 10, 10_000, () => `the first rows (${state()})`)
      relay.silence()
      await admin.query(`INSERT INTO ${f.table} SELECT g, 'x' FROM generate_series(11, 20) g`)
      // Given up after 5 s of silence (at least), then a new connection.
      await until(() => ledger.applied.length >= 20 || ended() !== null, 30_000, () => `the rows committed after the network went silent (${state()})`)
      assert.equal(ended(), null, state())
      assert.match(reconnects[0] ?? '', /nothing came from the server/, state())
      assert.deepEqual(ledger.applied, inOrder(20))
    } finally {
      await within(sub.close(), 10_000, () => 'close()')
      await client.end()
      relay.close()
      await f.drop()
      await admin.end()
    }
  })

  test('a replication connection that was lost is not opened again behind its user: its commands fail', { timeout: 30_000 }, async () => {
    const app = uniqueName('rrf_conn')
    const conn = await connectReplication({ ...(await mainDatabase()).options, applicationName: app })
    try {
      const pid = conn.processId
      await conn.command('IDENTIFY_SYSTEM')
      await terminateAndWait(pid)
      // Once the loss is seen (processId is 0 without a connection), the next command is sent.
      await until(() => conn.processId === 0, 5000, () => 'the loss seen')
      // What the lost session held (a temporary slot, say) is gone: a command must not run on a new session as if nothing happened.
      const err = await within(
        conn.command('IDENTIFY_SYSTEM').then(
          () => null,
          (e: Error) => e,
        ),
        10_000,
        () => 'a command after the loss',
      )
      assert.ok(err instanceof Error, 'the command after the loss failed')
      assert.equal(err.name, 'ConnectionError', String(err))
      const { rows } = await db.query('SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity WHERE application_name = $1', [app])
      assert.equal(rows[0]!.n, 0, 'no new connection was opened')
    } finally {
      await conn.close()
    }
  })
})
