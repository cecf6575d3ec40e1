// test-tags: slow, stress
// Floods: a million pool checkouts, ten million streamed rows, maxPending. What
// must hold: memory does not grow with the work done, every query settles
// (nothing hangs, no unhandled rejection), and an optional limit refuses the
// excess at once. The million queued queries are in floods-queued.test.ts.

import { before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { ArgumentError, Client, createPool } from '../../../src/index.js'
import { openClient } from '../../support/client.js'
import { assertCleanError, passwordsOf, settleAllWithin } from '../../support/fault-checks.js'
import { mib, MILLION, runChild, watchUnhandledRejections } from '../../support/flood-run.js'
import { stressSize } from '../../support/tier.js'
import { getTestServer, mainDatabase } from '../../support/servers/test-server.js'
import { stalledServer } from '../../support/fakes/stalled-server.js'

// Any unhandled rejection during a flood is a failure of the test that caused it.
const noUnhandledRejections = watchUnhandledRejections()

let passwords: string[] = []
before(async () => {
  passwords = passwordsOf(await getTestServer())
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

const CHECKOUTS = stressSize(250_000, MILLION)
test(`${CHECKOUTS} pool checkouts leave no listener and no heap behind`, async (t) => {
  const r = await runChild('pool-checkouts', CHECKOUTS)
  t.diagnostic(
    `${CHECKOUTS} reserve/release beside ${r.queries as number} pool.query() in ${((r.ms as number) / 1000).toFixed(1)} s; ` +
      `heap after GC ${mib(r.heapBeforeMiB)} -> ${mib(r.heapAfterMiB)} (${r.heapGrowthBytes as number} bytes); ${r.totalCount as number} connections`,
  )
  assert.equal(r.wrong, 0)
  assert.deepEqual(r.listenersAfter, r.listenersBefore)
  assert.ok((r.totalCount as number) <= 4)
  // Under two bytes per checkout: a leak of even one small object each would be sixteen or more.
  assert.ok(Math.abs(r.heapGrowthBytes as number) < 2 * CHECKOUTS, `heap grew by ${r.heapGrowthBytes as number} bytes`)
})

const ROWS = stressSize(2_000_000, 10_000_000)
test(`${ROWS} rows streamed to a slow consumer in flat memory, the server held back by flow control`, async (t) => {
  const COUNT = ROWS
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
  // Millions of rows held at once would take hundreds of MiB; the stream keeps about a thousand.
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

