// What a real server does to its sessions: pg_terminate_backend, a restart,
// statement_timeout and lock_timeout firing in the middle of a pipeline. For
// every query: it settles within a hard limit; a rejection is a pipegres error
// with a code and no password in it; a resolved value is its own query's
// (`SELECT $1::int` with distinct values, INSERT ... RETURNING); afterwards the
// same client and a fresh one both work.

import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { connect, ConnectionError, PgError, TransactionError, type Client } from '../../../src/index.js'
import { startServer } from '../../support/servers/postgres.js'
import { openClient, uniqueName } from '../../support/client.js'
import { assertCleanError, outcome, passwordsOf, settleAllWithin, settleWithin, type Settled } from '../../support/fault-checks.js'
import { startAgain, stopPostmaster } from '../../support/servers/restart-server.js'
import { connectionUrl, getTestServer } from '../../support/servers/test-server.js'

/** No query may take longer than this to settle, whatever happens to its server. */
const HARD_LIMIT_MS = 30_000

let passwords: string[] = []
let other: Client
before(async () => {
  passwords = passwordsOf(await getTestServer())
  // Terminates backends and inspects tables, from a session of its own.
  other = await openClient()
})
after(() => other.end())

async function waitFor(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = performance.now() + ms
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

const n = (db: Pick<Client, 'query'>, v: number): Promise<number> => db.query<{ n: number }>('SELECT $1::int AS n', [v]).then((r) => r.rows[0]!.n)

/** The same client answers, and so does a new one. */
async function bothWork(db: Client, value: number): Promise<void> {
  const same = await settleWithin(n(db, value), HARD_LIMIT_MS, 'a query on the same client afterwards')
  assert.deepEqual(same, { status: 'fulfilled', value })
  const fresh = await openClient()
  try {
    assert.equal(await n(fresh, value + 1), value + 1)
  } finally {
    await fresh.end()
  }
}

/** A rejection caused by the server ending the session: a ConnectionError whose message and cause name the FATAL error. */
function assertFatal(err: unknown, sqlstate: string, what: string): void {
  assertCleanError(err, passwords, what)
  assert.ok(err instanceof ConnectionError, `${what}: ${String(err)}`)
  assert.equal(err.code, 'PG_CONNECTION_CLOSED', what)
  assert.match(err.message, new RegExp(`SQLSTATE ${sqlstate}`), what)
  assert.ok(err.cause instanceof PgError && err.cause.code === sqlstate && err.cause.severity === 'FATAL', `${what}: cause ${String(err.cause)}`)
}

describe('pg_terminate_backend', () => {
  test('while idle: the client reports disconnect (no error event, nothing thrown), and the next query reconnects', async () => {
    const db = await openClient()
    try {
      const disconnects: Error[] = []
      db.on('disconnect', (err) => disconnects.push(err))
      const pid = db.processId
      await other.query('SELECT pg_terminate_backend($1)', [pid])
      await waitFor(() => disconnects.length > 0, HARD_LIMIT_MS, 'disconnect event')
      assert.equal(disconnects.length, 1)
      assertFatal(disconnects[0], '57P01', 'disconnect')
      assert.match(disconnects[0]!.message, /terminating connection due to administrator command/)
      assert.equal(db.connected, false)
      assert.equal(db.closed, false)
      await bothWork(db, 10)
      assert.notEqual(db.processId, pid)
    } finally {
      await db.end()
    }
  })

  test('while idle, with no listener at all: the process goes on (an unhandled error event would crash the test)', async () => {
    const db = await openClient()
    try {
      const pid = db.processId
      await other.query('SELECT pg_terminate_backend($1)', [pid])
      await waitFor(() => !db.connected, HARD_LIMIT_MS, 'connection loss noticed')
      await bothWork(db, 20)
    } finally {
      await db.end()
    }
  })

  test('with hundreds of INSERTs in flight: the query the FATAL hit fails (it may have run), those behind it never started and are sent again, every one reported done is in the table once', async () => {
    const table = uniqueName('terminated_inserts')
    await other.query(`CREATE TABLE ${table} (v int NOT NULL)`)
    const db = await openClient()
    try {
      const insert = (v: number): Promise<number> => db.query<{ v: number }>(`INSERT INTO ${table} (v) VALUES ($1) RETURNING v`, [v]).then((r) => r.rows[0]!.v)
      // Done before the kill: these complete while the sleep below runs.
      const done = Array.from({ length: 200 }, (_, i) => insert(i))
      const sleep = outcome(db.query('SELECT pg_sleep(30)'))
      // In flight behind the sleep when the backend is terminated.
      const inFlight: Promise<Settled<number>>[] = []
      for (let i = 0; i < 300; i++) inFlight.push(outcome(i % 3 === 0 ? n(db, 10_000 + i) : insert(1000 + i)))
      const pid = db.processId
      assert.deepEqual(await settleAllWithin(done, HARD_LIMIT_MS, 'INSERTs before the sleep'), done.map((_, i) => ({ status: 'fulfilled', value: i })))
      await other.query('SELECT pg_terminate_backend($1)', [pid])
      const slept = await settleWithin(sleep, HARD_LIMIT_MS, 'the sleep')
      assert.equal(slept.status, 'fulfilled')
      const hit = (slept as PromiseFulfilledResult<Settled<unknown>>).value
      assert.equal(hit.status, 'rejected', 'the sleep resolved')
      const hitErr = (hit as PromiseRejectedResult).reason as ConnectionError
      assertFatal(hitErr, '57P01', 'the sleep')
      assert.equal(hitErr.mayHaveRun, true)
      assert.match(hitErr.message, /may have run/)
      const behind = await settleAllWithin<Settled<unknown>>(inFlight, HARD_LIMIT_MS, 'queries behind the sleep')
      behind.forEach((s, i) => {
        const o = (s as PromiseFulfilledResult<Settled<unknown>>).value
        assert.deepEqual(o, { status: 'fulfilled', value: i % 3 === 0 ? 10_000 + i : 1000 + i }, `query ${i} behind the sleep`)
      })
      assert.notEqual(db.processId, pid)
      // Issued after the loss: they go on a new connection.
      const later = await settleAllWithin(
        Array.from({ length: 100 }, (_, i) => insert(5000 + i)),
        HARD_LIMIT_MS,
        'INSERTs after the loss',
      )
      later.forEach((o, i) => assert.deepEqual(o, { status: 'fulfilled', value: 5000 + i }))

      const rows = (await other.query<{ v: number; c: string }>(`SELECT v, count(*)::text AS c FROM ${table} GROUP BY v`)).rows
      const counts = new Map(rows.map((r) => [r.v, Number(r.c)]))
      for (const [v, c] of counts) assert.equal(c, 1, `value ${v} is in the table ${c} times`)
      for (let i = 0; i < 200; i++) assert.equal(counts.get(i), 1, `reported INSERT ${i} is missing`)
      for (let i = 0; i < 100; i++) assert.equal(counts.get(5000 + i), 1, `reported INSERT ${5000 + i} is missing`)
      // The ones behind the sleep ran once, on the new connection.
      for (let i = 0; i < 300; i++) if (i % 3 !== 0) assert.equal(counts.get(1000 + i), 1, `re-sent INSERT ${1000 + i} is missing`)
      assert.equal(counts.size, 500)
      await bothWork(db, 30)
    } finally {
      await db.end()
      await other.query(`DROP TABLE IF EXISTS ${table}`)
    }
  })

  test('under a steady stream of queries: each settles with its own value or the FATAL error, only the query the FATAL hit fails, and the stream goes on', async () => {
    const table = uniqueName('terminated_stream')
    await other.query(`CREATE TABLE ${table} (v int NOT NULL)`)
    const db = await openClient()
    try {
      const issued: { v: number; p: Promise<Settled<number>> }[] = []
      let v = 0
      let kill: Promise<unknown> | undefined
      const t0 = performance.now()
      while (performance.now() - t0 < 600) {
        // The batch that goes out with the kill starts with a slow INSERT: the termination finds it and those behind it in flight.
        const killNow = kill === undefined && performance.now() - t0 > 200
        for (let k = 0; k < 20; k++, v++) {
          const value = v
          const sleep = killNow && k === 0 ? 0.2 : 0
          const p = db.query<{ v: number }>(`INSERT INTO ${table} (v) SELECT $1::int FROM pg_sleep($2::float8) RETURNING v`, [value, sleep])
          issued.push({ v: value, p: outcome(p.then((r) => r.rows[0]!.v)) })
        }
        if (killNow) kill = other.query('SELECT pg_terminate_backend($1)', [db.processId])
        await new Promise((r) => setTimeout(r, 2))
      }
      await kill
      const outcomes = await settleAllWithin(
        issued.map((x) => x.p),
        HARD_LIMIT_MS,
        'the stream of INSERTs',
      )
      const ok = new Set<number>()
      let lost = 0
      outcomes.forEach((s, i) => {
        const o = (s as PromiseFulfilledResult<Settled<number>>).value
        if (o.status === 'fulfilled') {
          assert.equal(o.value, issued[i]!.v, `INSERT ${issued[i]!.v} got another query's row`)
          ok.add(o.value)
        } else {
          lost++
          assertFatal(o.reason, '57P01', `INSERT ${issued[i]!.v}`)
          assert.equal((o.reason as ConnectionError).mayHaveRun, true)
        }
      })
      // The slow INSERT at the head; those behind it were sent again.
      assert.equal(lost, 1, 'queries lost to the termination')
      assert.ok(ok.size > 0)
      const rows = (await other.query<{ v: number; c: string }>(`SELECT v, count(*)::text AS c FROM ${table} GROUP BY v`)).rows
      for (const r of rows) assert.equal(r.c, '1', `value ${r.v} is in the table ${r.c} times`)
      const present = new Set(rows.map((r) => r.v))
      for (const value of ok) assert.ok(present.has(value), `reported INSERT ${value} is missing`)
      await bothWork(db, 40)
    } finally {
      await db.end()
      await other.query(`DROP TABLE IF EXISTS ${table}`)
    }
  })
})

test('a server restart with queries in flight: they fail naming the shutdown, queries meanwhile fail fast, the client reconnects afterwards', async (t) => {
  // A server of its own: stopping the shared one would break every other test.
  const server = await startServer({ binDir: process.env.PIPEGRES_TEST_PGBIN || undefined, name: 'restart' })
  let restarted: Awaited<ReturnType<typeof startAgain>> | undefined
  const url = connectionUrl(server, server.superuser)
  const db = await connect({ connectionString: url, reconnectMaxDelay: 200 })
  const restartPasswords = passwordsOf(server)
  try {
    const pid = db.processId
    const sleep = outcome(db.query('SELECT pg_sleep(30)'))
    const inFlight = Array.from({ length: 200 }, (_, i) => outcome(n(db, i)))
    await new Promise((r) => setTimeout(r, 100))
    const t0 = performance.now()
    await stopPostmaster(server.pid)
    const failed = await settleAllWithin<Settled<unknown>>([sleep, ...inFlight], HARD_LIMIT_MS, 'queries in flight at shutdown')
    failed.forEach((s, i) => {
      const o = (s as PromiseFulfilledResult<Settled<unknown>>).value
      assert.equal(o.status, 'rejected', `query ${i} in flight resolved`)
      const reason = (o as PromiseRejectedResult).reason
      assertCleanError(reason, restartPasswords, `query ${i}`)
      if (i === 0) {
        assertFatal(reason, '57P01', 'the query the shutdown hit')
        assert.equal((reason as ConnectionError).mayHaveRun, true)
      } else {
        // Never started: sent again, to a server that is going or gone, so refused there.
        assert.ok(!(reason instanceof ConnectionError && reason.mayHaveRun === true), `query ${i} behind: ${String(reason)}`)
      }
    })
    // Down: a query fails at once (connection refused), it does not wait for the server.
    const down = await settleWithin(n(db, 1), HARD_LIMIT_MS, 'a query while the server is down')
    assert.equal(down.status, 'rejected')
    assertCleanError((down as PromiseRejectedResult).reason, restartPasswords, 'query while down')
    assert.ok((down as PromiseRejectedResult).reason instanceof ConnectionError)
    const downMs = performance.now() - t0

    restarted = await startAgain(server)
    // The client backs off between failed attempts; once the server is back, a query gets through.
    const t1 = performance.now()
    let value: number | undefined
    while (value === undefined) {
      const o = await settleWithin(n(db, 77), HARD_LIMIT_MS, 'a query after the restart')
      if (o.status === 'fulfilled') value = o.value
      else {
        assertCleanError(o.reason, restartPasswords, 'query after restart')
        assert.ok(performance.now() - t1 < HARD_LIMIT_MS, `no reconnection: ${String(o.reason)}`)
        await new Promise((r) => setTimeout(r, 50))
      }
    }
    assert.equal(value, 77)
    assert.notEqual(db.processId, pid)
    const many = await settleAllWithin(
      Array.from({ length: 100 }, (_, i) => n(db, i)),
      HARD_LIMIT_MS,
      'queries after the restart',
    )
    many.forEach((o, i) => assert.deepEqual(o, { status: 'fulfilled', value: i }))
    const fresh = await connect({ connectionString: url })
    assert.equal(await n(fresh, 5), 5)
    await fresh.end()
    t.diagnostic(`in-flight queries failed and a query was refused ${downMs.toFixed(0)} ms after shutdown began; reconnected ${(performance.now() - t1).toFixed(0)} ms after the restart`)
  } finally {
    db.destroy()
    await restarted?.stop()
    await server.stop()
  }
})

describe('statement_timeout and lock_timeout in the middle of a pipeline', () => {
  /** Runs `before` quick queries, the slow one, `after` quick ones, all pipelined; checks each outcome. */
  async function pipeline(db: Pick<Client, 'query'>, slow: string, sqlstate: string, base: number): Promise<void> {
    const quick = (v: number) => db.query<{ n: number }>('SELECT $1::int AS n', [v]).then((r) => r.rows[0]!.n)
    const ps: Promise<unknown>[] = []
    for (let i = 0; i < 5; i++) ps.push(quick(base + i))
    ps.push(db.query(slow))
    for (let i = 5; i < 10; i++) ps.push(quick(base + i))
    const outcomes = await settleAllWithin(ps, HARD_LIMIT_MS, 'the pipeline')
    outcomes.forEach((o, i) => {
      if (i === 5) {
        assert.equal(o.status, 'rejected', 'the slow query')
        const err = (o as PromiseRejectedResult).reason
        assertCleanError(err, passwords, 'the slow query')
        assert.ok(err instanceof PgError, String(err))
        assert.equal(err.code, sqlstate)
      } else {
        const v = base + (i < 5 ? i : i - 1)
        assert.deepEqual(o, { status: 'fulfilled', value: v }, `quick query ${i}`)
      }
    })
  }

  /** Holds an ACCESS EXCLUSIVE lock on `table` until the returned release() is called. */
  async function lockTable(table: string): Promise<() => Promise<void>> {
    const holder = await openClient()
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let locked!: () => void
    const isLocked = new Promise<void>((r) => (locked = r))
    const tx = holder.begin(async (tx) => {
      await tx.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
      locked()
      await gate
    })
    await Promise.race([isLocked, tx])
    return async () => {
      release()
      await tx
      await holder.end()
    }
  }

  test('statement_timeout outside a transaction: only the slow query fails (57014), the others get their own values', async () => {
    const db = await openClient({ params: { statement_timeout: '500ms' } })
    try {
      await pipeline(db, 'SELECT pg_sleep(30)', '57014', 100)
      await pipeline(db, 'SELECT pg_sleep(30)', '57014', 200)
      assert.equal(db.cancelMisfires, 0)
      await bothWork(db, 300)
    } finally {
      await db.end()
    }
  })

  test('lock_timeout outside a transaction: only the blocked query fails (55P03)', async () => {
    const table = uniqueName('locked')
    await other.query(`CREATE TABLE ${table} (a int)`)
    const db = await openClient({ params: { lock_timeout: '300ms' } })
    const unlock = await lockTable(table)
    try {
      await pipeline(db, `SELECT count(*) FROM ${table}`, '55P03', 400)
      await unlock()
      await bothWork(db, 500)
    } finally {
      await unlock()
      await db.end()
      await other.query(`DROP TABLE IF EXISTS ${table}`)
    }
  })

  test('in a transaction, around a savepoint: only the timed-out statements fail, the transaction commits', async () => {
    const table = uniqueName('locked_tx')
    await other.query(`CREATE TABLE ${table} (a int)`)
    const db = await openClient()
    const unlock = await lockTable(table)
    try {
      const committed = await db.begin(async (tx) => {
        const ps: Promise<unknown>[] = [
          tx.query(`SET LOCAL statement_timeout = '500ms'`),
          tx.query(`SET LOCAL lock_timeout = '300ms'`),
          n(tx, 600),
          tx.query('SAVEPOINT a'),
          tx.query('SELECT pg_sleep(30)'),
          tx.query('ROLLBACK TO SAVEPOINT a'),
          n(tx, 601),
          tx.query('SAVEPOINT b'),
          tx.query(`SELECT count(*) FROM ${table}`),
          tx.query('ROLLBACK TO SAVEPOINT b'),
          n(tx, 602),
        ]
        const outcomes = await settleAllWithin(ps, HARD_LIMIT_MS, 'the pipeline in the transaction')
        const failedAt = outcomes.flatMap((o, i) => (o.status === 'rejected' ? [i] : []))
        assert.deepEqual(failedAt, [4, 8])
        for (const [i, code] of [[4, '57014'], [8, '55P03']] as const) {
          const err = (outcomes[i] as PromiseRejectedResult).reason
          assertCleanError(err, passwords, `statement ${i}`)
          assert.equal((err as PgError).code, code)
        }
        assert.deepEqual([2, 6, 10].map((i) => (outcomes[i] as PromiseFulfilledResult<number>).value), [600, 601, 602])
        return 'committed'
      })
      assert.equal(committed, 'committed')
      await bothWork(db, 700)
    } finally {
      await unlock()
      await db.end()
      await other.query(`DROP TABLE IF EXISTS ${table}`)
    }
  })

  test('in a transaction without a savepoint: the statements after the timed-out one fail with 25P02, begin() reports the rollback', async () => {
    const db = await openClient()
    try {
      let outcomes: Settled<unknown>[] = []
      const tx = db.begin(async (tx) => {
        const ps: Promise<unknown>[] = [
          tx.query(`SET LOCAL statement_timeout = '500ms'`),
          n(tx, 800),
          tx.query('SELECT pg_sleep(30)'),
          n(tx, 801),
        ]
        outcomes = await settleAllWithin(ps, HARD_LIMIT_MS, 'the pipeline in the transaction')
      })
      const result = await settleWithin(tx, HARD_LIMIT_MS, 'begin()')
      assert.equal(result.status, 'rejected')
      const err = (result as PromiseRejectedResult).reason
      assertCleanError(err, passwords, 'begin()')
      assert.ok(err instanceof TransactionError && err.code === 'PG_TRANSACTION_ROLLED_BACK', String(err))
      assert.equal(outcomes[0]!.status, 'fulfilled')
      assert.deepEqual(outcomes[1], { status: 'fulfilled', value: 800 })
      for (const [i, code] of [[2, '57014'], [3, '25P02']] as const) {
        const o = outcomes[i]!
        assert.equal(o.status, 'rejected')
        assertCleanError((o as PromiseRejectedResult).reason, passwords)
        assert.equal(((o as PromiseRejectedResult).reason as PgError).code, code)
      }
      await bothWork(db, 900)
    } finally {
      await db.end()
    }
  })
})
