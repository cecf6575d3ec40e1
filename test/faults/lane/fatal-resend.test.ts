// A FATAL from the server ends the connection while it works on one query;
// the queries pipelined behind that one never started. They are sent again on
// another connection instead of failing, unless they belonged to a transaction
// that died with the connection. A connection lost without a FATAL proves
// nothing: every query in flight fails, saying it may have run.

import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { ConnectionError, createPool, type Client } from '../../../src/index.js'
import { openClient, uniqueName } from '../../support/client.js'
import { outcome, settleAllWithin, settleWithin, type Settled } from '../../support/fault-checks.js'
import { startFaultProxy } from '../../support/proxies/fault-proxy.js'
import { getTestServer, mainDatabase } from '../../support/servers/test-server.js'

const LIMIT_MS = 30_000

let admin: Client
before(async () => {
  admin = await openClient()
})
after(() => admin.end())

async function waitForSleepers(app: string, count: number): Promise<number[]> {
  const deadline = performance.now() + LIMIT_MS
  for (;;) {
    const r = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'SELECT pg_sleep%' AND state = 'active'", [app])
    if (r.rows.length >= count) return r.rows.map((x) => x.pid)
    if (performance.now() > deadline) throw new Error(`${count} sleeping queries of ${app} not seen`)
    await new Promise((res) => setTimeout(res, 10))
  }
}

async function tableCounts(table: string): Promise<Map<number, number>> {
  const rows = (await admin.query<{ v: number; c: string }>(`SELECT v, count(*)::text AS c FROM ${table} GROUP BY v`)).rows
  return new Map(rows.map((r) => [r.v, Number(r.c)]))
}

function rejection(s: Settled<unknown>, what: string): ConnectionError {
  assert.equal(s.status, 'rejected', `${what} resolved`)
  const err = (s as PromiseRejectedResult).reason
  assert.ok(err instanceof ConnectionError, `${what}: ${String(err)}`)
  return err
}

test('a pool: the queries behind each terminated backend go to new connections, only the queries the FATAL hit fail', async () => {
  const table = uniqueName('fatal_pool')
  await admin.query(`CREATE TABLE ${table} (v int NOT NULL)`)
  const app = uniqueName('fatal_pool')
  const { connectionString } = await mainDatabase()
  const pool = createPool({ ...(connectionString === undefined ? {} : { connectionString }), max: 2, applicationName: app })
  try {
    // One sleep per connection: the second finds the first busy and opens another.
    const sleeps = [outcome(pool.query('SELECT pg_sleep(30)')), outcome(pool.query('SELECT pg_sleep(30)'))]
    const inserts = Array.from({ length: 400 }, (_, i) => outcome(pool.query(`INSERT INTO ${table} (v) VALUES ($1) RETURNING v`, [i]).then((r) => r.rows[0]!.v)))
    const pids = await waitForSleepers(app, 2)
    await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids])
    for (const [i, s] of (await settleAllWithin(sleeps, LIMIT_MS, 'sleeps')).entries()) {
      const err = rejection((s as PromiseFulfilledResult<Settled<unknown>>).value, `sleep ${i}`)
      assert.equal(err.mayHaveRun, true)
      assert.match(err.message, /57P01/)
    }
    const done = await settleAllWithin(inserts, LIMIT_MS, 'inserts')
    done.forEach((s, i) => assert.deepEqual((s as PromiseFulfilledResult<Settled<number>>).value, { status: 'fulfilled', value: i }, `insert ${i}`))
    const counts = await tableCounts(table)
    assert.equal(counts.size, 400)
    for (const [v, c] of counts) assert.equal(c, 1, `value ${v} is in the table ${c} times`)
  } finally {
    await pool.end()
    await admin.query(`DROP TABLE IF EXISTS ${table}`)
  }
})

test('inside begin(): the statements behind the one the FATAL hit fail as never run, and none is sent again', async () => {
  const table = uniqueName('fatal_tx')
  await admin.query(`CREATE TABLE ${table} (v int NOT NULL)`)
  const app = uniqueName('fatal_tx')
  const db = await openClient({ applicationName: app })
  try {
    let inner: Settled<unknown>[] = []
    const tx = outcome(
      db.begin(async (tx) => {
        const ps = [outcome(tx.query('SELECT pg_sleep(30)')), ...Array.from({ length: 50 }, (_, i) => outcome(tx.query(`INSERT INTO ${table} (v) VALUES ($1)`, [i])))]
        const [pid] = await waitForSleepers(app, 1)
        await admin.query('SELECT pg_terminate_backend($1)', [pid])
        inner = await Promise.all(ps)
      }),
    )
    const txOutcome = await settleWithin(tx, LIMIT_MS, 'the transaction')
    assert.equal((txOutcome as PromiseFulfilledResult<Settled<void>>).value.status, 'rejected')
    assert.equal(rejection(inner[0]!, 'the sleep').mayHaveRun, true)
    for (let i = 1; i < inner.length; i++) assert.equal(rejection(inner[i]!, `insert ${i}`).mayHaveRun, false)
    assert.equal((await tableCounts(table)).size, 0)
    // The client goes on, on a new connection.
    assert.equal((await db.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n, 1)
  } finally {
    await db.end()
    await admin.query(`DROP TABLE IF EXISTS ${table}`)
  }
})

test('a session inside a transaction block it opened by hand: the queries behind fail as never run, none is sent again', async () => {
  const table = uniqueName('fatal_block')
  await admin.query(`CREATE TABLE ${table} (v int NOT NULL)`)
  const app = uniqueName('fatal_block')
  const db = await openClient({ applicationName: app })
  try {
    await db.query('BEGIN')
    const sleep = outcome(db.query('SELECT pg_sleep(30)'))
    const inserts = Array.from({ length: 50 }, (_, i) => outcome(db.query(`INSERT INTO ${table} (v) VALUES ($1)`, [i])))
    const commit = outcome(db.query('COMMIT'))
    const [pid] = await waitForSleepers(app, 1)
    await admin.query('SELECT pg_terminate_backend($1)', [pid])
    assert.equal(rejection(await sleep, 'the sleep').mayHaveRun, true)
    for (const [i, p] of inserts.entries()) assert.equal(rejection(await p, `insert ${i}`).mayHaveRun, false)
    // Sent again on a new connection, a COMMIT would succeed and say the inserts were committed.
    assert.equal(rejection(await commit, 'the COMMIT').mayHaveRun, false)
    assert.equal((await tableCounts(table)).size, 0)
  } finally {
    await db.end()
    await admin.query(`DROP TABLE IF EXISTS ${table}`)
  }
})

test('a connection reset without a FATAL proves nothing: every query in flight fails, saying it may have run, and none is sent again', async () => {
  const server = await getTestServer()
  const proxy = await startFaultProxy({ host: server.host, port: server.port })
  const table = uniqueName('reset_inflight')
  await admin.query(`CREATE TABLE ${table} (v int NOT NULL)`)
  const db = await openClient({ host: proxy.host, port: proxy.port, user: server.superuser.user, password: server.superuser.password, database: server.database, connectionString: undefined })
  try {
    const sleep = outcome(db.query('SELECT pg_sleep(30)'))
    const inserts = Array.from({ length: 50 }, (_, i) => outcome(db.query(`INSERT INTO ${table} (v) VALUES ($1)`, [i])))
    await new Promise((r) => setTimeout(r, 200))
    proxy.resetAll()
    for (const [i, p] of [sleep, ...inserts].entries()) assert.equal(rejection(await p, `query ${i}`).mayHaveRun, true)
    assert.equal((await tableCounts(table)).size, 0)
  } finally {
    db.destroy()
    await proxy.close()
    await admin.query(`DROP TABLE IF EXISTS ${table}`)
  }
})
