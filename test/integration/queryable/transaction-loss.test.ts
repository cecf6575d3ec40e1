// Transactions with begin() against timeouts and a lost connection: BEGIN and
// COMMIT never timed out, nothing of a transaction sent on another connection,
// and an outcome reported unknown when it is.

import assert from 'node:assert/strict'
import * as net from 'node:net'
import { describe, test } from 'node:test'
import { Client, ConnectionError, TimeoutError, TransactionError } from '../../../src/index.js'
import { openClient, uniqueName } from '../../support/client.js'
import { txTable } from '../../support/tx-table.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'

const { committed, insert } = await txTable('tx_loss_rows')

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

async function pidGone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    const r = await adminQuery(`SELECT count(*) FROM pg_stat_activity WHERE pid = ${pid}`)
    if (r.rows[0]![0] === '0') return true
    await sleep(20)
  }
  return false
}

/**
 * A TCP relay to the test server that can refuse connections (accepting and
 * closing them at once) and drop the ones it carries.
 */
async function startGate(): Promise<{ port: number; open: boolean; attempts: number; dropAll(): void; close(): Promise<void> }> {
  const { connectionString } = await mainDatabase()
  const url = new URL(connectionString!)
  const sockets = new Set<net.Socket>()
  const gate = {
    port: 0,
    open: true,
    attempts: 0,
    dropAll() {
      for (const s of sockets) s.destroy()
    },
    close: async () => {
      gate.dropAll()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
  const server = net.createServer((client) => {
    gate.attempts++
    if (!gate.open) {
      client.destroy()
      return
    }
    const upstream = net.connect(Number(url.port), url.hostname)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => undefined)
    }
    client.pipe(upstream)
    upstream.pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  gate.port = (server.address() as net.AddressInfo).port
  return gate
}

async function clientThrough(port: number, extra: object = {}): Promise<Client> {
  const { connectionString } = await mainDatabase()
  return new Client({ connectionString: connectionString!, host: '127.0.0.1', port, sslmode: 'disable', ...extra })
}

describe('timeouts inside transactions', () => {
  test("the client's queryTimeout does not apply to BEGIN and COMMIT", async () => {
    // COMMIT runs a deferred trigger that sleeps past the timeout; BEGIN waits
    // behind an outside query. The transaction's first statement, pipelined
    // with BEGIN, waits behind that query too, under the timeout: it has 1.2 s
    // of the 1.5 s left, which a loaded machine needs (with 50 ms it timed out).
    const c = await openClient({ queryTimeout: 1500 })
    const fn = uniqueName('slow_commit_fn')
    const u = uniqueName('slow_commit')
    await c.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(2); RETURN NULL; END $$`)
    await c.query(`CREATE TABLE ${u} (id int)`)
    await c.query(`CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON ${u} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ${fn}()`)
    try {
      const tag = uniqueName('slow_commit_tag')
      const ahead = c.query('SELECT pg_sleep(0.3)')
      const tx = c.begin(async (tx) => {
        await tx.query(`INSERT INTO ${u} VALUES (1)`)
        await insert(tx, tag)
        return 'committed'
      })
      await ahead
      assert.equal(await tx, 'committed')
      assert.equal(await committed(tag), 1)
      assert.equal(c.transactionStatus, 'I')
      // The timeout still applies to the transaction's own queries.
      const e = await c.begin(async (tx) => tx.query('SELECT pg_sleep(5)')).catch((x: unknown) => x)
      assert.ok(e instanceof TimeoutError, String(e))
      assert.equal(c.transactionStatus, 'I')
    } finally {
      await c.query(`DROP TABLE ${u}`)
      await c.query(`DROP FUNCTION ${fn}()`)
      await c.end()
    }
  })

  test('BEGIN never leaves the session inside a transaction when begin() fails', async () => {
    const c = await openClient()
    try {
      const tag = uniqueName('stuck')
      const ac = new AbortController()
      const tx = c.begin(async (tx) => {
        await insert(tx, tag)
        ac.abort()
        // A query of the transaction aborted by the caller: begin() fails with it.
        await tx.query('SELECT pg_sleep(5)', [], { signal: ac.signal })
      })
      await assert.rejects(tx, (e: unknown) => e instanceof Error && (e as { code?: string }).code === 'PG_ABORTED')
      assert.equal(c.transactionStatus, 'I')
      const { rows } = await c.query<{ x: string | null }>('SELECT pg_current_xact_id_if_assigned()::text AS x')
      assert.equal(rows[0]!.x, null)
      assert.equal(await committed(tag), 0)
    } finally {
      await c.end()
    }
  })
})

describe('connection loss', () => {
  test('backend killed during the transaction: begin() rejects with a ConnectionError, nothing committed, the client works again', async () => {
    const c = await openClient()
    try {
      const tag = uniqueName('killed')
      const pid = c.processId
      let afterLoss: unknown
      const tx = c
        .begin(async (tx) => {
          await insert(tx, tag)
          await tx.query('SELECT pg_sleep(5)').catch(async (e: unknown) => {
            // The function carries on after the loss: its queries must not run
            // on the new connection, outside any transaction.
            afterLoss = await insert(tx, `${tag}_after`).catch((x: unknown) => x)
            throw e
          })
        })
        .catch((x: unknown) => x)
      const outside = (async () => {
        await sleep(20)
        return c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
      })()
      await sleep(100)
      await adminQuery(`SELECT pg_terminate_backend(${pid})`)
      const e = await tx
      assert.ok(e instanceof ConnectionError, String(e))
      assert.ok(afterLoss instanceof ConnectionError, `the query after the loss was refused: ${String(afterLoss)}`)
      // The outside query waited for the transaction, then ran on a new connection.
      const newPid = (await outside).rows[0]!.pid
      assert.notEqual(newPid, pid)
      assert.equal(await committed(tag), 0)
      assert.equal(await committed(`${tag}_after`), 0)
      assert.equal(await pidGone(pid), true)
      assert.deepEqual(await c.begin(async (tx) => (await tx.query('SELECT 1 AS one')).rows[0]), { one: 1 })
    } finally {
      await c.end()
    }
  })

  test('backend killed while COMMIT is in flight: TransactionError says the outcome is unknown', async () => {
    const c = await openClient()
    const fn = uniqueName('commit_sleep_fn')
    const u = uniqueName('commit_sleep')
    await c.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(5); RETURN NULL; END $$`)
    await c.query(`CREATE TABLE ${u} (id int)`)
    await c.query(`CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON ${u} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ${fn}()`)
    try {
      const pid = c.processId
      const tx = c
        .begin(async (tx) => {
          await tx.query(`INSERT INTO ${u} VALUES (1)`)
        })
        .catch((x: unknown) => x)
      await sleep(150)
      await adminQuery(`SELECT pg_terminate_backend(${pid})`)
      const e = await tx
      assert.ok(e instanceof TransactionError, String(e))
      assert.equal(e.code, 'PG_CONNECTION_CLOSED')
      assert.ok(e.cause instanceof ConnectionError)
      assert.deepEqual((await c.query(`SELECT count(*)::int AS n FROM ${u}`)).rows, [{ n: 0 }])
    } finally {
      await c.query(`DROP TABLE ${u}`)
      await c.query(`DROP FUNCTION ${fn}()`)
      await c.end()
    }
  })

  test('BEGIN that never reached a server: the function\'s later queries are refused, never sent on the next connection', async () => {
    const gate = await startGate()
    gate.open = false
    const c = await clientThrough(gate.port, { reconnectMaxDelay: 50 })
    try {
      const tag = uniqueName('never_began')
      let first: unknown
      let later: unknown
      const tx = c.begin(async (tx) => {
        first = await insert(tx, `${tag}_first`).catch((e: unknown) => e)
        // The server is back, and the client's backoff is over.
        gate.open = true
        await sleep(150)
        later = await insert(tx, `${tag}_later`).catch((e: unknown) => e)
      })
      const e = await tx.catch((x: unknown) => x)
      assert.ok(first instanceof ConnectionError, String(first))
      assert.ok(e instanceof ConnectionError, String(e))
      assert.ok(later instanceof Error, `the query after the failed BEGIN was refused, not run: ${String(later)}`)
      assert.equal(await committed(`${tag}_later`), 0)
      assert.equal(await committed(`${tag}_first`), 0)
      // The client itself is fine.
      assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    } finally {
      c.destroy()
      await gate.close()
    }
  })

  test('after its connection is lost, the transaction fails at once: ROLLBACK is not held up by reconnecting', async () => {
    const gate = await startGate()
    const c = await clientThrough(gate.port, { reconnectMaxDelay: 5000 })
    try {
      await c.connect()
      // The server goes away and stays away (refused connections): the
      // client's backoff grows with each failed attempt.
      gate.open = false
      gate.dropAll()
      for (let i = 0; i < 3; i++) await c.query('SELECT 1').catch(() => undefined)
      const attempts = gate.attempts
      gate.open = true
      // (The next attempt is now several hundred ms away.)
      await sleep(1000)
      await c.query('SELECT 1')
      const tag = uniqueName('lost_fast')
      const tx = c
        .begin(async (tx) => {
          await insert(tx, tag)
          await tx.query('SELECT pg_sleep(5)')
        })
        .catch((e: unknown) => e)
      await sleep(50)
      const connections = gate.attempts
      const pid = c.processId
      gate.dropAll()
      const t0 = performance.now()
      const e = await tx
      const took = performance.now() - t0
      // (The backend notices its client is gone only when its sleep ends.)
      await adminQuery(`SELECT pg_terminate_backend(${pid})`)
      assert.ok(e instanceof ConnectionError, String(e))
      assert.ok(took < 500, `begin() rejected ${took.toFixed(0)} ms after the loss`)
      await sleep(50)
      assert.equal(gate.attempts, connections, 'no connection was opened just to send ROLLBACK')
      assert.ok(connections > attempts)
      assert.equal(await committed(tag), 0)
    } finally {
      c.destroy()
      await gate.close()
    }
  })

  test('connection dropped by the network mid-transaction: every query of it fails, the next begin() works', async () => {
    const gate = await startGate()
    const c = await clientThrough(gate.port)
    try {
      await c.connect()
      const tag = uniqueName('dropped')
      const tx = c.begin(async (tx) => {
        const ps = [insert(tx, tag), tx.query('SELECT pg_sleep(5)'), insert(tx, tag), insert(tx, tag)]
        const settled = await Promise.allSettled(ps)
        assert.equal(settled[0]!.status, 'fulfilled')
        for (const s of settled.slice(1)) {
          assert.equal(s.status, 'rejected')
          assert.ok((s as PromiseRejectedResult).reason instanceof ConnectionError)
        }
        throw (settled[1] as PromiseRejectedResult).reason
      })
      await sleep(80)
      const pid = c.processId
      gate.dropAll()
      await assert.rejects(tx, ConnectionError)
      // (The backend notices its client is gone only when its sleep ends.)
      await adminQuery(`SELECT pg_terminate_backend(${pid})`)
      assert.equal(await committed(tag), 0)
      assert.equal(await c.begin(async (tx) => (await insert(tx, `${tag}_next`)).rowCount), 1)
      assert.equal(await committed(`${tag}_next`), 1)
    } finally {
      await c.end()
      await gate.close()
    }
  })
})
