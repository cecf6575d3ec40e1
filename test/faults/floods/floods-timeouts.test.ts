// test-tags: slow, stress
// Floods: a million queries queued behind a server that does not answer, or
// behind a query waiting for a lock, all with a timeout. What must hold: every
// query settles with a TimeoutError (nothing hangs, no unhandled rejection),
// and the client works afterwards. The memory figures are in
// floods-queued.test.ts; each file takes minutes, and has its own time limit.

import { before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Client, PgError, TimeoutError } from '../../../src/index.js'
import { internalsOf } from '../../../src/lane/internals.js'
import { openClient } from '../../support/client.js'
import { assertCleanError, outcome, passwordsOf, settleAllWithin } from '../../support/fault-checks.js'
import { MILLION, watchUnhandledRejections } from '../../support/flood-run.js'
import { stressSize } from '../../support/tier.js'
import { getTestServer } from '../../support/servers/test-server.js'
import { stalledServer } from '../../support/fakes/stalled-server.js'

// A million in the stress tier; in `npm test`, enough that most stay unsent while the socket is backed up.
const N = stressSize(300_000, MILLION)

// Any unhandled rejection during a flood is a failure of the test that caused it.
const noUnhandledRejections = watchUnhandledRejections()

let passwords: string[] = []
before(async () => {
  passwords = passwordsOf(await getTestServer())
})

describe(`${N} queries queued behind a server that stopped reading`, () => {
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
      const all: Promise<unknown>[] = new Array(N)
      for (let i = 0; i < N; i++) all[i] = db.query('SELECT $1::int AS n', [i]).then(onOk, onErr)
      const issuedMs = performance.now() - t0
      await new Promise((r) => setImmediate(r))
      assert.equal(timeouts + strays.length + resolved, 0, 'nothing settles before its timeout')
      // Internals: how many went out before the socket backed up (pendingQueries counts both kinds).
      // Final once the timeouts fire: cancelling holds the writer.
      const conn = (internalsOf(db)!.lanes()[0] as unknown as { conn: { inflightCount: number } }).conn
      while (performance.now() < t0 + issuedMs + TIMEOUT) await new Promise((r) => setTimeout(r, 50))
      const written = conn.inflightCount
      assert.ok(written > 0 && written < N / 2, `${written} written`)

      // Firing that many timers takes a while on a busy machine; then the silence after the cancel.
      await settleAllWithin(all, issuedMs + TIMEOUT + CONNECT_TIMEOUT + 60_000, `${N} queries against a stalled server`)
      const allMs = lastAt - t0
      assert.deepEqual(strays, [])
      assert.equal(resolved, 0)
      assert.equal(timeouts, N)
      // The unsent ones were dropped (no cause); the written ones settled when the connection was closed.
      assert.equal(causes.none, N - written)
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
      const all: Promise<unknown>[] = new Array(N)
      for (let i = 0; i < N; i++) all[i] = db.query('SELECT $1::int AS n', [i]).then(onOk, onErr)
      const issuedMs = performance.now() - t0
      const outcomes = await settleAllWithin(all, issuedMs + TIMEOUT + 60_000, `${N} queries behind a lock`)
      const settledMs = performance.now() - t0
      assert.equal(outcomes.length, N)
      assert.deepEqual(strays, [])
      assert.equal(resolved, 0)
      assert.equal(timeouts, N)
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
