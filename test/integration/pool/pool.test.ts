// test-tags: slow
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { createPool, ArgumentError, ConnectionError, type CustomType, type Pool, type PoolOptions } from '../../../src/index.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'
import { uniqueName } from '../../support/client.js'
import { until } from '../../support/fault-checks.js'
import { collect } from '../../support/memory.js'

const pools: Pool[] = []
after(async () => {
  await Promise.all(pools.map((p) => p.end()))
})

async function newPool(extra: PoolOptions = {}): Promise<Pool> {
  const { options } = await mainDatabase()
  const p = createPool({ ...options, ...extra })
  pools.push(p)
  return p
}

async function backendsOf(appName: string): Promise<number> {
  const r = await adminQuery(`SELECT count(*) FROM pg_stat_activity WHERE application_name = '${appName}'`)
  return Number(r.rows[0]![0])
}

test('a burst of queries is spread over up to max pipelined connections, each query getting its own result', async () => {
  const pool = await newPool({ max: 4 })
  assert.equal(pool.totalCount, 0, 'connections open lazily')
  const rs = await Promise.all(Array.from({ length: 5000 }, (_, i) => pool.query<{ n: number; pid: number }>('SELECT $1::int AS n, pg_backend_pid() AS pid', [i])))
  rs.forEach((r, i) => assert.equal(r.rows[0]!.n, i))
  const pids = new Set(rs.map((r) => r.rows[0]!.pid))
  assert.equal(pids.size, 4)
  assert.equal(pool.totalCount, 4)
})

test('a trickle of queries needs a single connection', async () => {
  const pool = await newPool({ max: 4 })
  const pids = new Set<number>()
  for (let i = 0; i < 50; i++) pids.add((await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid)
  assert.equal(pids.size, 1)
  assert.equal(pool.totalCount, 1)
})

test('idle connections close after idleTimeout', async () => {
  // Not a race against the clock: three reservations held at once make the pool open three
  // connections, however slow the machine; then the wait for them to close is bounded, and may
  // not end before idleTimeout has passed since their last use.
  const app = uniqueName('idle')
  const idleTimeout = 300
  const pool = await newPool({ max: 3, idleTimeout, applicationName: app })
  const held = await Promise.all(Array.from({ length: 3 }, () => pool.reserve()))
  await Promise.all(held.map((c) => c.query('SELECT 1')))
  await Promise.all(held.map((c) => c.release()))
  const lastUse = performance.now()
  assert.equal(pool.totalCount, 3)
  await until('the idle connections closed', () => pool.totalCount === 0, 10_000)
  assert.ok(performance.now() - lastUse >= idleTimeout - 5, `closed ${Math.round(performance.now() - lastUse)} ms after their last use`)
  await until('the server saw them go', async () => (await backendsOf(app)) === 0, 10_000)
  // And it opens again when needed.
  assert.deepEqual((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }])
})

test('connections are replaced after maxLifetime, without failing queries', async () => {
  const pool = await newPool({ max: 2, maxLifetime: 200, idleTimeout: 0 })
  const pids = new Set<number>()
  const until = performance.now() + 1200
  while (performance.now() < until) {
    const r = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
    pids.add(r.rows[0]!.pid)
    await new Promise((r) => setTimeout(r, 20))
  }
  assert.ok(pids.size >= 3, `saw ${pids.size} backends`)
})

test('a broken connection is replaced; queries not yet sent on it run elsewhere', async () => {
  const pool = await newPool({ max: 3 })
  const warm = await Promise.all(Array.from({ length: 300 }, () => pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')))
  const victim = warm[0]!.rows[0]!.pid
  // Enough queries that each connection has many waiting behind a backed-up socket.
  const n = 150_000
  const all: Promise<{ rows: { n: number }[] }>[] = new Array(n)
  for (let i = 0; i < n; i++) all[i] = pool.query<{ n: number }>('SELECT $1::int AS n', [i])
  // Observed before the kill, so that the rejections it causes are never unhandled.
  const outcome = Promise.allSettled(all)
  await adminQuery(`SELECT pg_terminate_backend(${victim})`)
  const settled = await outcome
  let ok = 0
  let failed = 0
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') {
      assert.equal(s.value.rows[0]!.n, i)
      ok++
    } else {
      assert.ok(s.reason instanceof ConnectionError, String(s.reason))
      failed++
    }
  })
  assert.ok(ok > n / 2, `${ok} succeeded`)
  assert.ok(failed < n / 3, `${failed} failed`)
  // If the kill landed after the victim had answered everything, the pool learns
  // of it when the server closes the connection, a moment after the kill returns.
  await new Promise((r) => setTimeout(r, 100))
  const after = await Promise.all(Array.from({ length: 100 }, () => pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')))
  assert.ok(after.every((r) => r.rows[0]!.pid !== victim))
})

test("'lost' tells of a connection the server closed: its error, its backend, and whether a reservation held it", async () => {
  const pool = await newPool({ max: 2 })
  const seen: [string | undefined, number, boolean][] = []
  pool.on('lost', (err, pid, reserved) => seen.push([(err.cause as { code?: string } | undefined)?.code, pid, reserved]))
  const reserved = await pool.reserve()
  const held = (await reserved.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
  await adminQuery(`SELECT pg_terminate_backend(${held})`)
  await until('the lost reservation', () => seen.length === 1, 10_000)
  await reserved.release()
  const shared = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
  await adminQuery(`SELECT pg_terminate_backend(${shared})`)
  await until('the lost idle connection', () => seen.length === 2, 10_000)
  assert.deepEqual(seen, [['57P01', held, true], ['57P01', shared, false]])
  // Ended by the pool: not lost.
  await pool.end()
  assert.equal(seen.length, 2)
})

test('reserve() hands out a connection exclusively; pool queries go to the others meanwhile', async () => {
  const pool = await newPool({ max: 2 })
  const r = await pool.reserve()
  const mine = (await r.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
  assert.equal(r.processId, mine)
  const others = await Promise.all(Array.from({ length: 200 }, () => pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')))
  assert.ok(others.every((x) => x.rows[0]!.pid !== mine))
  await r.release()
  await assert.rejects(r.query('SELECT 1'), /released/)
})

test('reserve() waits when every connection is reserved, and gets the next one released', async () => {
  const pool = await newPool({ max: 1 })
  const a = await pool.reserve()
  let got = false
  const b = pool.reserve().then((x) => ((got = true), x))
  await new Promise((r) => setTimeout(r, 50))
  assert.equal(got, false)
  assert.equal(pool.waitingCount, 1)
  // Plain queries wait too, and run after the reservations.
  const q = pool.query<{ one: number }>('SELECT 1 AS one')
  await a.release()
  const bc = await b
  await bc.release()
  assert.deepEqual((await q).rows, [{ one: 1 }])
})

test('releasing a reservation rolls back a transaction left open on it', async () => {
  const t = uniqueName('rel')
  const pool = await newPool({ max: 1 })
  await pool.query(`CREATE TABLE ${t} (a int)`)
  try {
    const r = await pool.reserve()
    await r.query('BEGIN')
    await r.query(`INSERT INTO ${t} VALUES (1)`)
    await r.release()
    const r2 = await pool.reserve()
    assert.deepEqual((await r2.query(`SELECT count(*)::int AS n FROM ${t}`)).rows, [{ n: 0 }])
    assert.deepEqual((await r2.query('SELECT 1 AS ok')).rows, [{ ok: 1 }])
    await r2.release()
  } finally {
    await pool.query(`DROP TABLE ${t}`)
  }
})

test('pool.begin() runs on a connection of its own while other queries use the rest', async () => {
  const t = uniqueName('ptx')
  const pool = await newPool({ max: 2 })
  await pool.query(`CREATE TABLE ${t} (a int)`)
  try {
    const outside: Promise<{ rows: { n: number }[] }>[] = []
    const result = await pool.begin(async (tx) => {
      await tx.query(`INSERT INTO ${t} VALUES (1)`)
      for (let i = 0; i < 100; i++) outside.push(pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t}`))
      await Promise.all(outside)
      return 'done'
    })
    assert.equal(result, 'done')
    // The outside queries never saw the uncommitted row: none ran inside the transaction.
    for (const r of await Promise.all(outside)) assert.deepEqual(r.rows, [{ n: 0 }])
    assert.deepEqual((await pool.query(`SELECT count(*)::int AS n FROM ${t}`)).rows, [{ n: 1 }])
    await assert.rejects(
      pool.begin(async (tx) => {
        await tx.query(`INSERT INTO ${t} VALUES (2)`)
        throw new Error('nope')
      }),
      /nope/,
    )
    assert.deepEqual((await pool.query(`SELECT count(*)::int AS n FROM ${t}`)).rows, [{ n: 1 }])
  } finally {
    await pool.query(`DROP TABLE ${t}`)
  }
})

test('a million checkouts leak no listeners and no memory', { timeout: 120_000 }, async () => {
  const pool = await newPool({ max: 2 })
  const warnings: Error[] = []
  const onWarning = (w: Error) => {
    if (w.name === 'MaxListenersExceededWarning') warnings.push(w)
  }
  process.on('warning', onWarning)
  try {
    await pool.query('SELECT 1')
    // A real collection before each measure: without one, heapUsed swings by tens of MB with the collector's timing.
    const gc = collect
    let heapAfterWarmup = 0
    for (let i = 0; i < 1_000_000; i++) {
      const c = await pool.reserve()
      await c.release()
      if (i === 100_000) {
        gc()
        heapAfterWarmup = process.memoryUsage().heapUsed
      }
    }
    gc()
    const growth = process.memoryUsage().heapUsed - heapAfterWarmup
    assert.ok(growth < 20 * 1024 * 1024, `heap grew by ${(growth / 1048576).toFixed(1)} MB`)
    await new Promise((r) => setImmediate(r))
    assert.deepEqual(warnings, [])
    assert.equal(pool.reservedCount, 0)
  } finally {
    process.off('warning', onWarning)
  }
})

test('LISTEN uses a dedicated connection; notify() goes through the pool', async () => {
  const pool = await newPool({ max: 2 })
  const got: string[] = []
  const l = await pool.listen('pool chan', (payload) => got.push(payload))
  await pool.notify('pool chan', 'one')
  await adminQuery(`NOTIFY "pool chan", 'two'`)
  for (let i = 0; i < 50 && got.length < 2; i++) await new Promise((r) => setTimeout(r, 20))
  assert.deepEqual(got, ['one', 'two'])
  await l.unlisten()
})

test('end() lets in-flight queries finish and closes every connection; later queries fail clearly', async () => {
  const app = uniqueName('end')
  const pool = await newPool({ max: 3, applicationName: app })
  const inflight = Array.from({ length: 3000 }, (_, i) => pool.query<{ n: number }>('SELECT $1::int AS n', [i]))
  const ended = pool.end()
  await assert.rejects(pool.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_ENDED')
  const rs = await Promise.all(inflight)
  rs.forEach((r, i) => assert.equal(r.rows[0]!.n, i))
  await ended
  assert.equal(pool.totalCount, 0)
  for (let i = 0; i < 50 && (await backendsOf(app)) > 0; i++) await new Promise((r) => setTimeout(r, 20))
  assert.equal(await backendsOf(app), 0)
  await assert.rejects(pool.reserve(), ConnectionError)
})

test('destroy() rejects everything at once', async () => {
  const pool = await newPool({ max: 2 })
  const pending = Array.from({ length: 100 }, () => pool.query('SELECT pg_sleep(1)'))
  const reason = new Error('shutting down')
  pool.destroy(reason)
  const settled = await Promise.allSettled(pending)
  for (const s of settled) assert.equal(s.status, 'rejected')
  await assert.rejects(pool.query('SELECT 1'), /shutting down/)
})

test('registerType on a pool checks the description as a client does', async () => {
  const pool = await newPool()
  assert.throws(() => pool.registerType(null as unknown as CustomType), ArgumentError)
  assert.throws(() => pool.registerType({} as CustomType), /needs a name or an oid/)
  assert.throws(() => pool.registerType({ name: 'hstore', parse: 'no' } as unknown as CustomType), /parse must be a function/)
  assert.throws(() => createPool({ customTypes: [{ oid: 1, serialize: 1 } as unknown as CustomType] }), /serialize must be a function/)
})

test('the client settings of a pool are checked when it is made, not at its first query', () => {
  assert.throws(() => createPool({ queryTimeout: -1 }), /queryTimeout/)
  assert.throws(() => createPool({ maxPending: 0 }), /maxPending/)
  assert.throws(() => createPool({ onNotice: 1 as unknown as () => void }), /onNotice/)
})
