// test-tags: matrix
// A pool's hooks against a real server: onConnect before a new connection
// takes any query, onReserve and onRelease around a reservation, a reset
// statement before a reserved connection serves anyone else, and a failing
// hook that discards its connection with an error naming it.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ArgumentError, ConnectionError, createPool, type PoolOptions } from '../../../src/index.js'
import { mainDatabase } from '../../support/servers/test-server.js'

async function pool(options: PoolOptions): Promise<ReturnType<typeof createPool>> {
  const { connectionString } = await mainDatabase()
  return createPool({ ...(connectionString === undefined ? {} : { connectionString }), ...options })
}

const setting = "SELECT current_setting('application_name') AS app, pg_backend_pid() AS pid"

test('onConnect runs once on each new connection before any query, even those issued while it connects', async () => {
  let calls = 0
  const p = await pool({
    max: 3,
    onConnect: async (c) => {
      calls++
      await c.query("SELECT set_config('application_name', 'hooked', false)")
    },
  })
  try {
    const rows = await Promise.all(Array.from({ length: 300 }, () => p.query<{ app: string; pid: number }>(setting)))
    assert.ok(rows.every((r) => r.rows[0]!.app === 'hooked'), 'a query ran before onConnect')
    const pids = new Set(rows.map((r) => r.rows[0]!.pid))
    assert.equal(calls, p.totalCount)
    assert.equal(pids.size, p.totalCount)
  } finally {
    await p.end()
  }
})

test('a reservation that takes a connection before it opens runs after onConnect, on that connection', async () => {
  const p = await pool({ max: 1, onConnect: (c) => c.query("SELECT set_config('application_name', 'hooked', false)") })
  try {
    const r = await p.begin(async (tx) => {
      const first = await tx.query<{ app: string; pid: number }>(setting)
      const second = await tx.query<{ app: string; pid: number }>(setting)
      return [first.rows[0]!, second.rows[0]!]
    })
    assert.equal(r[0]!.app, 'hooked')
    assert.equal(r[0]!.pid, r[1]!.pid)
  } finally {
    await p.end()
  }
})

test('a failing onConnect fails the queries waiting for that connection with an error naming it, and the pool recovers', async () => {
  let fail = true
  const p = await pool({
    max: 1,
    onConnect: async (c) => {
      await c.query('SELECT 1')
      if (fail) throw new Error('no search_path for you')
    },
  })
  try {
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => p.query('SELECT 1 AS n')))
    for (const r of results) {
      assert.equal(r.status, 'rejected')
      const err = (r as PromiseRejectedResult).reason
      assert.ok(err instanceof ConnectionError, String(err))
      assert.match(err.message, /onConnect failed, so its connection was discarded: no search_path for you/)
    }
    fail = false
    assert.deepEqual((await p.query('SELECT 1 AS n')).rows, [{ n: 1 }])
  } finally {
    await p.end()
  }
})

test('onConnect may not leave a transaction open', async () => {
  const p = await pool({ max: 1, onConnect: (c) => c.query('BEGIN') })
  try {
    await assert.rejects(p.query('SELECT 1'), /onConnect failed, so its connection was discarded: it left a transaction open/)
  } finally {
    p.destroy()
  }
})

test('onReserve and onRelease wrap each reservation; reset runs before the connection serves anyone else', async () => {
  const log: string[] = []
  const p = await pool({
    max: 1,
    onReserve: async (c) => {
      log.push('reserve')
      await c.query("SELECT set_config('app.tenant', 'acme', false)")
    },
    onRelease: async (c) => {
      log.push('release')
      await c.query("SELECT set_config('app.tenant', '', false)")
    },
    reset: 'DISCARD ALL',
  })
  try {
    const tenant = "SELECT current_setting('app.tenant', true) AS t, current_setting('work_mem') AS wm"
    const r = await p.begin(async (tx) => {
      await tx.query("SET work_mem = '1234kB'")
      return tx.query<{ t: string; wm: string }>(tenant)
    })
    assert.deepEqual(r.rows[0], { t: 'acme', wm: '1234kB' })
    const reserved = await p.reserve()
    await reserved.query("SET work_mem = '2345kB'")
    await reserved.release()
    // The same (only) connection afterwards: the tenant is cleared, and DISCARD ALL reset work_mem.
    const after = await p.query<{ t: string | null; wm: string }>(tenant)
    assert.notEqual(after.rows[0]!.wm, '2345kB')
    assert.ok(after.rows[0]!.t === null || after.rows[0]!.t === '')
    assert.deepEqual(log, ['reserve', 'release', 'reserve', 'release'])
  } finally {
    await p.end()
  }
})

test('a failing onReserve rejects the reservation and discards its connection; a failing onRelease or reset rejects release()', async () => {
  let failReserve = true
  const p = await pool({
    max: 1,
    onReserve: () => {
      if (failReserve) throw new Error('tenant unknown')
    },
  })
  try {
    const before = (await p.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
    await assert.rejects(p.reserve(), (e: unknown) => e instanceof ConnectionError && /onReserve failed, so its connection was discarded: tenant unknown/.test(e.message))
    failReserve = false
    const after = (await p.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
    assert.notEqual(after, before, 'the discarded connection was used again')
  } finally {
    await p.end()
  }

  const q = await pool({ max: 1, reset: 'SELECT no_such_function()' })
  try {
    const reserved = await q.reserve()
    await reserved.query('SELECT 1')
    await assert.rejects(reserved.release(), /reset failed, so its connection was discarded: .*no_such_function/)
    // begin() keeps its transaction's outcome: the failing reset only discards the connection.
    assert.equal(await q.begin(async (tx) => (await tx.query<{ n: number }>('SELECT 7 AS n')).rows[0]!.n), 7)
    assert.deepEqual((await q.query('SELECT 1 AS n')).rows, [{ n: 1 }])
  } finally {
    await q.end()
  }
})

test('hook options are checked', async () => {
  await assert.rejects(pool({ onConnect: 'SET x' as never }), (e: unknown) => e instanceof ArgumentError && /onConnect must be a function/.test(e.message))
  await assert.rejects(pool({ reset: ' ' }), /reset must be an SQL statement/)
  await assert.rejects(pool({ onRelease: 1 as never }), /onRelease must be a function/)
})
