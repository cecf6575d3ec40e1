import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { createPool, ArgumentError, type Pool, type PoolOptions } from '../../../src/index.js'
import { Pool as PgPool } from '../../../src/integrations/pg/index.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'
import { uniqueName } from '../../support/client.js'
import { until } from '../../support/fault-checks.js'

// A pool's `min`: connections kept open once the pool is in use, opened again
// when lost, never closed for being idle, never more than `max`. What counts
// is what the server sees: its backends of the pool's application_name.

const pools: { end(): Promise<void> }[] = []
after(async () => {
  await Promise.all(pools.map((p) => p.end()))
})

async function newPool(extra: PoolOptions): Promise<Pool> {
  const { options } = await mainDatabase()
  const p = createPool({ ...options, ...extra })
  pools.push(p)
  return p
}

async function backends(app: string): Promise<number[]> {
  const r = await adminQuery(`SELECT pid FROM pg_stat_activity WHERE application_name = '${app}' ORDER BY pid`)
  return r.rows.map((row) => Number(row[0]))
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

test('min: nothing opens before the first use; then min connections open, and idleTimeout closes only those above min', async () => {
  const app = uniqueName('min')
  const pool = await newPool({ min: 3, max: 6, idleTimeout: 200, applicationName: app })
  assert.equal(pool.options.min, 3)
  await sleep(300)
  assert.deepEqual(await backends(app), [], 'no connection before the first use')
  assert.equal(pool.totalCount, 0)
  await pool.query('SELECT 1')
  await until('min connections open', async () => (await backends(app)).length === 3, 10_000)
  // A burst opens more, up to max; once idle past idleTimeout, the pool shrinks back to min, not below.
  // Six held at once make the pool open six, however slow the machine.
  const held = await Promise.all(Array.from({ length: 6 }, () => pool.reserve()))
  assert.equal(pool.totalCount, 6)
  await Promise.all(held.map((r) => r.query('SELECT 1')))
  await Promise.all(held.map((r) => r.release()))
  const deadline = performance.now() + 10_000
  let seen = 6
  while (seen > 3) {
    assert.ok(performance.now() < deadline, `still ${seen} connections`)
    await sleep(20)
    seen = (await backends(app)).length
    assert.ok(pool.totalCount >= 3, `the pool went down to ${pool.totalCount}`)
  }
  // Well past the idle timeout: min stay, and stay warm (the same backends).
  const kept = await backends(app)
  await sleep(600)
  assert.deepEqual(await backends(app), kept)
  assert.equal(pool.totalCount, 3)
})

test('min: connections killed again and again, at random moments and under queries, are opened again, never above max', async () => {
  const app = uniqueName('minkill')
  const min = 3
  const max = 4
  const pool = await newPool({ min, max, idleTimeout: 100, reconnectMaxDelay: 200, applicationName: app })
  await pool.query('SELECT 1')
  await until('min connections open', async () => (await backends(app)).length === min, 10_000)
  let over = 0
  const watch = setInterval(() => {
    if (pool.totalCount > max) over++
  }, 5)
  let stop = false
  const killed = new Set<number>()
  // Queries keep coming meanwhile: some are on a connection as it is killed (they fail with a ConnectionError).
  const load = (async () => {
    let ok = 0
    while (!stop) {
      await Promise.all(Array.from({ length: 1 + Math.floor(Math.random() * 6) }, () => pool.query('SELECT pg_sleep(0.005)').then(() => ok++, () => undefined)))
      await sleep(Math.random() * 20)
    }
    return ok
  })()
  try {
    for (let round = 0; round < 25; round++) {
      const pids = await backends(app)
      const victims = pids.filter(() => Math.random() < 0.6)
      await sleep(Math.random() * 30)
      for (const pid of victims) killed.add(pid)
      if (victims.length > 0) await adminQuery(`SELECT pg_terminate_backend(pid) FROM unnest(ARRAY[${victims.join(',')}]::int[]) AS pid`)
      // A killed backend may linger in pg_stat_activity for a moment: count the others.
      const live = (await backends(app)).filter((pid) => !killed.has(pid)).length
      assert.ok(live <= max, `round ${round}: ${live} backends, above max ${max}`)
    }
  } finally {
    stop = true
  }
  const ok = await load
  assert.ok(ok > 0, 'queries ran between the kills')
  // Once the killing stops, the pool is back to min (or up to max while the last queries finish, then min).
  await until('min connections open again', async () => (await backends(app)).length === min && pool.totalCount === min, 15_000)
  clearInterval(watch)
  assert.equal(over, 0, 'the pool never had more than max connections')
  const r = await pool.query<{ one: number }>('SELECT 1 AS one')
  assert.equal(r.rows[0]!.one, 1)
})

test('min: a connection past its lifetime is replaced, and min stay open', async () => {
  const app = uniqueName('minlife')
  const pool = await newPool({ min: 2, max: 2, maxLifetime: 1000, applicationName: app })
  await pool.query('SELECT 1')
  await until('min connections open', async () => (await backends(app)).length === 2, 10_000)
  const first = await backends(app)
  await until('both replaced', async () => {
    const now = await backends(app)
    return now.length === 2 && now.every((p) => !first.includes(p))
  }, 20_000)
  assert.equal(pool.totalCount, 2)
})

test('min: a bad value is refused, naming the fix', async () => {
  const { options } = await mainDatabase()
  assert.throws(() => createPool({ ...options, min: 5, max: 3 }), (err: unknown) => err instanceof ArgumentError && /min \(5\) cannot be above max \(3\)/.test(err.message))
  assert.throws(() => createPool({ ...options, min: -1 }), (err: unknown) => err instanceof ArgumentError && /min must be a non-negative integer/.test(err.message))
  assert.throws(() => createPool({ ...options, min: 1.5 }), ArgumentError)
  assert.throws(() => createPool({ ...options, min: '2' as unknown as number }), ArgumentError)
})

test('pipegres/pg: min keeps connections through idleTimeoutMillis, as pg-pool does', async () => {
  const app = uniqueName('pgmin')
  const { connectionString } = await mainDatabase()
  const pool = new PgPool({ connectionString, application_name: app, min: 2, max: 4, idleTimeoutMillis: 100 })
  pools.push(pool)
  await Promise.all(Array.from({ length: 4 }, () => pool.query('SELECT pg_sleep(0.05)')))
  await until('back to min', async () => (await backends(app)).length === 2, 10_000)
  await sleep(400)
  assert.equal((await backends(app)).length, 2)
})
