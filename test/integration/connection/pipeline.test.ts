// test-tags: slow, pglite, stress
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as net from 'node:net'
import { Client, ConnectionError, PgError } from '../../../src/index.js'
import { fileClient, openClient } from '../../support/client.js'
import { mainDatabase } from '../../support/servers/test-server.js'
import { NOT_ON_PGLITE, serverOnly } from '../../support/target.js'
import { stressSize } from '../../support/tier.js'

const db = await fileClient()

test('ten thousand queries in flight at once each get their own result, in order', async () => {
  const n = 10_000
  const order: number[] = []
  const all = []
  for (let i = 0; i < n; i++) all.push(db.query<{ n: number }>('SELECT $1::int AS n', [i]).then((r) => (order.push(i), r.rows[0]!.n)))
  assert.ok(db.pendingQueries > 0)
  const got = await Promise.all(all)
  for (let i = 0; i < n; i++) assert.equal(got[i], i)
  assert.deepEqual(order, got)
})

test('an error rejects its own query only; the queries around it succeed', async () => {
  const all: Promise<unknown>[] = []
  for (let i = 0; i < 700; i++) {
    all.push(i % 7 === 3 ? db.query('SELECT 1 / ($1::int - $1::int) AS n', [i]) : db.query('SELECT $1::int AS n', [i]))
  }
  const settled = await Promise.allSettled(all)
  settled.forEach((s, i) => {
    if (i % 7 === 3) {
      assert.equal(s.status, 'rejected')
      assert.ok(s.status === 'rejected' && s.reason instanceof PgError && s.reason.code === '22012')
    } else {
      assert.equal(s.status, 'fulfilled')
      assert.deepEqual(s.status === 'fulfilled' && (s.value as { rows: unknown[] }).rows, [{ n: i }])
    }
  })
})

test('a statement that fails to parse fails every query bound to it, with the parse error', async () => {
  const text = 'SELECT $1::int FROM no_such_table_anywhere'
  const a = db.query(text, [1])
  const b = db.query(text, [2])
  const c = db.query('SELECT $1::int AS n', [3])
  const d = db.query(text, [4])
  for (const p of [a, b, d]) await assert.rejects(p, (e: unknown) => e instanceof PgError && e.code === '42P01' && e.query === text)
  assert.deepEqual((await c).rows, [{ n: 3 }])
  // Not poisoned: the same text is parsed again, and fails again for the same reason.
  await assert.rejects(db.query(text, [5]), (e: unknown) => e instanceof PgError && e.code === '42P01')
})

test('queries issued in one tick go out in one socket write', serverOnly(NOT_ON_PGLITE.socket), async () => {
  const c = await openClient({ sslmode: 'disable' })
  try {
    await c.query('SELECT $1::int AS n', [0])
    const original = net.Socket.prototype.write
    let writes = 0
    net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
      writes++
      return (original as (...a: unknown[]) => boolean).apply(this, args)
    } as typeof original
    let all
    try {
      const ps = []
      for (let i = 0; i < 200; i++) ps.push(c.query('SELECT $1::int AS n', [i]))
      all = Promise.all(ps)
      await new Promise((r) => setImmediate(r))
    } finally {
      net.Socket.prototype.write = original
    }
    assert.equal(writes, 1)
    assert.equal((await all).length, 200)
  } finally {
    await c.end()
  }
})

test('queries issued before the connection is ready are sent once it is', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
  const { options } = await mainDatabase()
  const c = new Client(options)
  try {
    const [a, b, s] = await Promise.all([c.query('SELECT 1 AS a'), c.sql`SELECT ${2}::int AS b`, c.simpleQuery('SELECT 3 AS c')])
    assert.deepEqual(a.rows, [{ a: 1 }])
    assert.deepEqual(b.rows, [{ b: 2 }])
    assert.deepEqual(s[0]!.rows, [{ c: 3 }])
    assert.equal(await c.connect(), c)
  } finally {
    await c.end()
  }
})

test('end() while still connecting runs the queries already issued, then closes', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
  const { options } = await mainDatabase()
  const c = new Client(options)
  const q = c.query('SELECT 42 AS n')
  const ended = c.end()
  await assert.rejects(c.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_ENDED')
  assert.deepEqual((await q).rows, [{ n: 42 }])
  await ended
  assert.equal(c.closed, true)
  await assert.rejects(c.connect(), ConnectionError)
})

test('end() on a client that never connected', async () => {
  const { options } = await mainDatabase()
  const c = new Client(options)
  await c.end()
  assert.equal(c.closed, true)
  await assert.rejects(c.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_ENDED')
})

test('end() lets every issued query finish, then later queries are rejected', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
  const c = await openClient()
  const ps = []
  for (let i = 0; i < 500; i++) ps.push(c.query('SELECT $1::int AS n', [i]))
  const ended = c.end()
  await assert.rejects(c.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_ENDED')
  const results = await Promise.all(ps)
  assert.deepEqual(results[499]!.rows, [{ n: 499 }])
  await ended
  assert.equal(c.closed, true)
  await c.end()
})

test('transaction status follows ReadyForQuery', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
  const c = await openClient()
  try {
    assert.equal(c.transactionStatus, 'I')
    await c.query('BEGIN')
    assert.equal(c.transactionStatus, 'T')
    await assert.rejects(c.query('SELECT 1/0'))
    assert.equal(c.transactionStatus, 'E')
    await assert.rejects(c.query('SELECT 1'), (e: unknown) => e instanceof PgError && e.code === '25P02')
    await c.query('ROLLBACK')
    assert.equal(c.transactionStatus, 'I')
  } finally {
    await c.end()
  }
})

// A million in the stress tier (test/support/tier.ts).
const QUEUED = stressSize(250_000, 1_000_000)
test(`${QUEUED} queries issued at once wait as small objects while the socket is backed up`, { timeout: 120_000, ...serverOnly(NOT_ON_PGLITE.secondSession) }, async () => {
  const c = await openClient({ sslmode: 'disable' })
  try {
    await c.query('SELECT $1::int AS n', [0])
    const n = QUEUED
    const before = process.memoryUsage().heapUsed
    const ps: Promise<unknown>[] = new Array(n)
    for (let i = 0; i < n; i++) ps[i] = c.query('SELECT $1::int AS n', [i])
    const perQuery = (process.memoryUsage().heapUsed - before) / n
    // Nearly all of them are still queued, not encoded into a buffer.
    assert.ok(c.pendingQueries > n * 0.9, `pending ${c.pendingQueries}`)
    assert.ok(perQuery < 700, `${perQuery.toFixed(0)} bytes per queued query`)
    let ok = 0
    for (let i = 0; i < n; i += 1000) {
      const r = (await ps[i]) as { rows: { n: number }[] }
      if (r.rows[0]!.n === i) ok++
    }
    await Promise.all(ps)
    assert.equal(ok, n / 1000)
  } finally {
    await c.end()
  }
})
