import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { attachDatabasePool } from '@vercel/functions/db-connections'
import { createPool, type Pool } from '../../../src/index.js'
import { Pool as PgPool } from '../../../src/integrations/pg/index.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'
import { uniqueName } from '../../support/client.js'
import { until } from '../../support/fault-checks.js'

// Vercel's attachDatabasePool() (the real @vercel/functions) with pipegres's
// Pool and pipegres/pg's. On Vercel, a function instance is frozen once its
// handler has returned and every promise handed to waitUntil() has settled;
// connections still open then stay open on the server, held by an instance
// that may never run again. attachDatabasePool listens to the pool's
// 'release' and hands waitUntil a promise that settles when the pool's idle
// timeout (plus 100 ms) has passed, so the pool must have closed its idle
// connections by then. The platform's side is simulated as the package reads
// it: VERCEL_URL and VERCEL_REGION set, and the request context it looks up
// under Symbol.for('@vercel/request-context').

process.env.VERCEL_URL = 'pipegres-test.invalid'
process.env.VERCEL_REGION = 'dev1'
const CONTEXT = Symbol.for('@vercel/request-context')
const global = globalThis as unknown as Record<symbol, unknown>

const pools: { end(): Promise<void> }[] = []
after(async () => {
  delete global[CONTEXT]
  await Promise.all(pools.map((p) => p.end()))
})

async function backends(app: string): Promise<number> {
  const r = await adminQuery(`SELECT count(*) FROM pg_stat_activity WHERE application_name = '${app}'`)
  return Number(r.rows[0]![0])
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/**
 * One invocation: the handler runs in a request context, then the instance
 * waits for what was handed to waitUntil (more may come while it waits) and
 * is frozen. Resolves with how long it stayed alive after the handler, and
 * how many connections the pool still had open at the freeze.
 */
async function invoke(pool: { totalCount: number }, handler: () => Promise<void>): Promise<{ aliveMs: number; openAtFreeze: number; waited: number }> {
  const pending: Promise<unknown>[] = []
  global[CONTEXT] = { get: () => ({ waitUntil: (p: Promise<unknown>) => void pending.push(p) }) }
  await handler()
  const returned = performance.now()
  for (let i = 0; i < pending.length; i++) await pending[i]
  const openAtFreeze = pool.totalCount
  delete global[CONTEXT]
  return { aliveMs: performance.now() - returned, openAtFreeze, waited: pending.length }
}

/** A few queries, some at once, some one after another: what a handler does. */
async function work(query: (sql: string) => Promise<unknown>): Promise<void> {
  await Promise.all(Array.from({ length: 1 + Math.floor(Math.random() * 4) }, () => query('SELECT pg_sleep(0.01)')))
  for (let i = Math.floor(Math.random() * 3); i > 0; i--) await query('SELECT 1')
}

async function lifecycle(app: string, pool: { totalCount: number }, handler: () => Promise<void>, invocations: number): Promise<void> {
  for (let i = 0; i < invocations; i++) {
    const { openAtFreeze, waited } = await invoke(pool, handler)
    assert.ok(waited > 0, `invocation ${i}: nothing was handed to waitUntil: the pool's 'release' never came`)
    assert.equal(openAtFreeze, 0, `invocation ${i}: ${openAtFreeze} connections still open when the instance froze`)
    await until('the server saw them go', async () => (await backends(app)) === 0, 5_000)
    // Frozen for a while, then thawed by the next request.
    await sleep(Math.random() * 100)
  }
}

async function url(): Promise<string> {
  const { connectionString } = await mainDatabase()
  assert.ok(connectionString, 'these tests need the database as a connection string')
  return connectionString
}

test("pipegres's Pool: attachDatabasePool recognises it, and its connections are closed before the instance freezes", async () => {
  const app = uniqueName('vercel')
  const pool: Pool = createPool({ connectionString: await url(), applicationName: app, max: 4, idleTimeout: 300 })
  pools.push(pool)
  attachDatabasePool(pool)
  // Queries alone: no reservation, yet each connection going idle is a release.
  await lifecycle(app, pool, () => work((sql) => pool.query(sql)), 4)
  // Reservations and transactions.
  await lifecycle(
    app,
    pool,
    async () => {
      const reserved = await pool.reserve()
      await reserved.query('SELECT 1')
      await reserved.release()
      await pool.begin((tx) => tx.query('SELECT 1'))
    },
    3,
  )
})

test("pipegres/pg's Pool: pool.query() and pool.connect() both release, and nothing is open at the freeze", async () => {
  const app = uniqueName('vercelpg')
  const pool = new PgPool({ connectionString: await url(), application_name: app, max: 4, idleTimeoutMillis: 300 })
  pools.push(pool)
  attachDatabasePool(pool)
  await lifecycle(app, pool, () => work((sql) => pool.query(sql)), 4)
  await lifecycle(
    app,
    pool,
    async () => {
      const client = await pool.connect()
      await client.query('SELECT 1')
      client.release()
    },
    3,
  )
})

test('the idle timeout is kept to the millisecond: a long one still closes within the 100 ms attachDatabasePool adds', async () => {
  // A sweep on a coarse fixed tick (a quarter of the timeout, up to a second) would close these up to 500 ms late.
  const app = uniqueName('vercellong')
  const idleTimeout = 2000
  const pool = createPool({ connectionString: await url(), applicationName: app, max: 4, idleTimeout })
  pools.push(pool)
  attachDatabasePool(pool)
  for (let i = 0; i < 2; i++) {
    const { aliveMs, openAtFreeze } = await invoke(pool, () => work((sql) => pool.query(sql)))
    assert.equal(openAtFreeze, 0)
    assert.ok(aliveMs >= idleTimeout && aliveMs < idleTimeout + 1000, `alive ${Math.round(aliveMs)} ms after the handler`)
    await until('the server saw them go', async () => (await backends(app)) === 0, 5_000)
  }
})
