// test-tags: slow
// Delivery that loses nothing: the walsender killed at random moments while a
// writer commits numbered rows, a server restart, and a consumer slower than
// wal_sender_timeout. Afterwards every committed row was delivered, in
// order, and no transaction handled (hence acknowledged) came again.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startServer } from '../../support/servers/postgres.js'
import { Client } from '../../../src/index.js'
import type { ChangeMessage } from '../../../src/replication.js'
import { fileClient, openClient } from '../../support/client.js'
import { fixture, sleep, startSubscription } from '../../support/replication-db.js'
import { keepLedger } from '../../support/replication-ledger.js'
import { startAgain, stopPostmaster } from '../../support/servers/restart-server.js'
import { connectionUrl } from '../../support/servers/test-server.js'

const db = await fileClient()

async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p, new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`${what}: not within ${ms} ms`)), ms)))])
  } finally {
    clearTimeout(timer)
  }
}

const inOrder = (n: number) => Array.from({ length: n }, (_, i) => i + 1)

test('the walsender killed at random moments while rows are committed: every row once, in order', { timeout: 120_000 }, async (t) => {
  const f = await fixture(db, 'n int PRIMARY KEY, pad text')
  const writer = await openClient()
  const { sub } = await startSubscription(db, { slot: f.slot, publications: [f.publication], reconnectMaxDelay: 200, highWaterMark: 50 })
  const TRANSACTIONS = 600
  let next = 1
  let kills = 0
  // Some transactions are big enough to be cut off midway.
  const sizes = Array.from({ length: TRANSACTIONS }, (_, i) => (i % 50 === 0 ? 2000 : 1 + (i % 4)))
  const total = sizes.reduce((a, b) => a + b, 0)
  const ledger = keepLedger(sub, total, { slowEvery: 97, slowMs: 5 })
  try {
    let writing = true
    // A subscription that stopped leaves no walsender to kill: the killer gives up at its deadline, and the checks below say why.
    const killerDeadline = performance.now() + 60_000
    // A walsender that was sent the signal may still hold the slot at the next look (a loaded machine is slow to end
    // it): signalling it again is no new kill, and would be counted against the reconnects below.
    const killed = new Set<number>()
    const killer = (async () => {
      // At least a handful of kills, however fast the writer is.
      while ((writing || kills < 6) && performance.now() < killerDeadline) {
        await sleep(30 + Math.random() * 150)
        const r = await db.query<{ pid: number }>(`SELECT active_pid AS pid FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL`, [f.slot])
        const pid = r.rows[0]?.pid
        if (pid === undefined || killed.has(pid)) continue
        const k = await db.query<{ killed: boolean }>('SELECT pg_terminate_backend($1) AS killed', [pid])
        if (k.rows[0]?.killed === true) {
          killed.add(pid)
          kills++
        }
      }
    })()
    for (let i = 0; i < sizes.length; i++) {
      const size = sizes[i]!
      // The last transaction waits for the kills asked for: once every row is delivered the ledger closes the subscription, leaving no walsender to kill.
      while (i === sizes.length - 1 && kills < 6 && performance.now() < killerDeadline) await sleep(20)
      await writer.query(`INSERT INTO ${f.table} SELECT g, 'x' FROM generate_series($1::int, $2::int) g`, [next, next + size - 1])
      next += size
    }
    writing = false
    await within(killer, 70_000, `the killer (${kills} kills)`)
    await within(ledger.done, 60_000, `all ${total} rows (got ${ledger.applied.length}, walsender killed ${kills} times, reconnects ${ledger.reconnects})`)
    t.diagnostic(
      `transactions committed ${TRANSACTIONS}, handled ${ledger.transactions}, rows ${total}, delivered ${ledger.applied.length}, duplicated ${ledger.duplicates}, lost ${total - new Set(ledger.applied).size}; walsender killed ${kills} times, reconnects ${ledger.reconnects}, transactions restarted midway ${ledger.restartedMidway}`,
    )
    assert.ok(kills >= 6, `the walsender was killed ${kills} times`)
    assert.ok(ledger.reconnects >= kills, `${ledger.reconnects} reconnects for ${kills} kills`)
    assert.equal(ledger.duplicates, 0, 'no handled transaction came again')
    assert.equal(ledger.transactions, TRANSACTIONS)
    assert.deepEqual(ledger.applied, inOrder(total))
  } finally {
    await within(sub.close(), 10_000, 'close()')
    await writer.end()
    await f.drop()
  }
})

test('a consumer slower than wal_sender_timeout keeps its connection, with reading paused', { timeout: 60_000 }, async () => {
  // wal_sender_timeout can be set per connection (PostgreSQL 12+): the subscription's connection gets 3 s.
  const client = new Client({ ...(await import('../../support/servers/test-server.js').then((m) => m.mainDatabase())).options, params: { wal_sender_timeout: '3000' } })
  const f = await fixture(db, 'n int PRIMARY KEY, pad text')
  const { sub, reader } = await startSubscription(client, { slot: f.slot, publications: [f.publication], highWaterMark: 10 })
  const reconnects: string[] = []
  sub.on('reconnect', ({ error }) => reconnects.push(error.message))
  const pid = sub.processId
  try {
    await db.query(`INSERT INTO ${f.table} SELECT g, repeat('p', 200) FROM generate_series(1, 20000) g`)
    const first = await reader.next()
    assert.equal(first.type, 'begin')
    // Longer than the timeout, with the socket backed up behind a paused reader.
    await sleep(6500)
    // Memory stays bounded: reading paused at the high-water mark, past it only what one socket read brought.
    assert.ok(sub.buffered < 10 + 1000, `${sub.buffered} messages buffered`)
    let most = 0
    const watch = setInterval(() => (most = Math.max(most, sub.buffered)), 1)
    const got: ChangeMessage[] = await reader.until((m) => m.type === 'commit', 20_000).finally(() => clearInterval(watch))
    assert.ok(most < 10 + 1000, `at most ${most} messages buffered`)
    assert.deepEqual(reconnects, [], 'the server never timed the connection out')
    assert.equal(got.filter((m) => m.type === 'insert').length, 20000)
    assert.equal(sub.processId, pid)
  } finally {
    await within(sub.close(), 10_000, 'close()')
    await client.end()
    await f.drop()
  }
})

test('a server restart: the subscription reconnects and resumes; every row once, in order', { timeout: 90_000 }, async () => {
  const server = await startServer({ binDir: process.env.PIPEGRES_TEST_PGBIN || undefined, name: 'represtart' })
  let restarted: Awaited<ReturnType<typeof startAgain>> | undefined
  const url = connectionUrl(server, server.superuser)
  const own = new Client({ connectionString: url, reconnectMaxDelay: 200 })
  try {
    await own.query('CREATE TABLE r (n int PRIMARY KEY)')
    await own.query('CREATE PUBLICATION rp FOR TABLE r')
    const { sub } = await startSubscription(own, { slot: 'rs', publications: ['rp'], reconnectMaxDelay: 300 })
    const ledger = keepLedger(sub, 200)
    for (let i = 1; i <= 100; i++) await own.query('INSERT INTO r VALUES ($1)', [i])
    await sleep(100)
    await stopPostmaster(server.pid)
    restarted = await startAgain(server)
    const insertDeadline = performance.now() + 30_000
    for (let i = 101; i <= 200; i++) {
      for (;;) {
        try {
          await within(own.query('INSERT INTO r VALUES ($1)', [i]), 10_000, `insert ${i}`)
          break
        } catch (err) {
          if (performance.now() > insertDeadline) throw err
          await sleep(50)
        }
      }
    }
    await within(ledger.done, 30_000, `all 200 rows (got ${ledger.applied.length})`)
    assert.ok(ledger.reconnects >= 1)
    assert.equal(ledger.duplicates, 0)
    assert.deepEqual(ledger.applied, inOrder(200))
    await within(sub.close(), 10_000, 'close()')
  } finally {
    own.destroy()
    await restarted?.stop()
    await server.stop()
  }
})
