// Where pipegres/pg behaved otherwise than pg, each against a real server:
// pg.defaults read at run time, 'drain' on checkouts and after the query's own
// callback, a Query's callback without its 'error' event, the server's FATAL
// on a terminated backend (on a query, an idle checkout and an idle pool
// connection), pipeline mode (end() lets queries finish; query_timeout gives
// the connection up; the rows option refused), pg's messages and phrases for a
// query without text, a connect timeout and an invalid response, and pg's
// Promise option.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server, type Socket } from 'node:net'
import { once } from 'node:events'
import pg, { Client, Pool, Query } from '../../../../src/integrations/pg/index.js'
import { adminQuery, getTestServer, mainDatabase } from '../../../support/servers/test-server.js'

const { connectionString } = await mainDatabase()
const server = await getTestServer()

/** Settles with `p`, or fails the test after `ms`: every wait here is bounded. */
function within<T>(p: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)
  })
  return Promise.race([p, limit]).finally(() => clearTimeout(timer))
}

async function client(extra: Record<string, unknown> = {}): Promise<Client> {
  const c = new Client({ connectionString, ...extra })
  await c.connect()
  return c
}

test('pg.defaults changed at run time reach new clients, and client.user/host/port/database show them', async () => {
  const saved = { ...pg.defaults }
  const env = Object.fromEntries(['PGHOST', 'PGPORT', 'PGUSER', 'PGDATABASE', 'PGPASSWORD', 'PGSSLMODE'].map((k) => [k, process.env[k]]))
  for (const k of Object.keys(env)) delete process.env[k]
  try {
    Object.assign(pg.defaults, { host: server.host, port: server.port, user: server.superuser.user, password: server.superuser.password, database: server.database })
    const c = new Client()
    assert.deepEqual([c.user, c.host, c.port, c.database], [server.superuser.user, server.host, server.port, server.database])
    await within(c.connect(), 'connect with pg.defaults')
    const { rows } = await c.query('SELECT inet_server_port() AS port, current_user AS who')
    assert.deepEqual(rows[0], { port: server.port, who: server.superuser.user })
    await c.end()
    // A setting given wins over pg.defaults; a missing database is the user's name.
    pg.defaults.database = undefined as unknown as string
    const own = new Client({ user: 'someone', port: 1 })
    assert.deepEqual([own.user, own.port, own.database], ['someone', 1, 'someone'])
  } finally {
    Object.assign(pg.defaults, saved)
    for (const [k, v] of Object.entries(env)) if (v !== undefined) process.env[k] = v
  }
})

test("a checkout emits 'drain', so code that releases on it lets pool.end() finish", async () => {
  const pool = new Pool({ connectionString, max: 1 })
  const c = await pool.connect()
  c.on('drain', () => c.release())
  const results = await Promise.all([c.query('SELECT 1 AS n'), c.query('SELECT 2 AS n')])
  assert.deepEqual(results.map((r) => r.rows[0].n), [1, 2])
  await within(pool.end(), 'pool.end() after a release on drain')
})

test("on a Client, 'drain' comes after the failing query's callback and 'error' event", async () => {
  const c = await client()
  const seen: string[] = []
  c.on('drain', () => {
    seen.push('drain')
    void c.end()
  })
  const q = c.query(new Query('SELECT 1/0'))
  q.on('error', (err: Error) => {
    seen.push(`error ${(err as { code?: string }).code}`)
    assert.equal(c._queryable, true, 'the client is still open in the error handler')
  })
  await within(once(c, 'end'), 'end after drain')
  assert.deepEqual(seen, ['error 22012', 'drain'])
})

test("a Query with a callback gets its error there and emits no 'error'", async () => {
  const c = await client()
  try {
    let emitted = false
    const err = await within(
      new Promise<Error>((resolve) => {
        const q = c.query(new Query('SELECT 1/0', [], (e: Error | null) => resolve(e!)))
        q.on('error', () => (emitted = true))
      }),
      'the callback',
    )
    assert.equal((err as { code?: string }).code, '22012')
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(emitted, false)
  } finally {
    await c.end()
  }
})

test("a terminated backend: the query gets the server's 57P01, queries behind it pg's 'Connection terminated unexpectedly'", async () => {
  const c = await client()
  c.on('error', () => {})
  const [killed, behind] = await within(
    Promise.allSettled([c.query('SELECT pg_terminate_backend(pg_backend_pid())'), c.query('SELECT 1')]),
    'both queries',
  )
  assert.equal(killed.status, 'rejected')
  const reason = (killed as PromiseRejectedResult).reason as { code?: string; message: string }
  assert.equal(reason.code, '57P01')
  assert.equal(reason.message, 'terminating connection due to administrator command')
  assert.ok(reason instanceof pg.DatabaseError)
  assert.equal(behind.status, 'rejected')
  assert.equal(((behind as PromiseRejectedResult).reason as Error).message, 'Connection terminated unexpectedly')
  await assert.rejects(c.query('SELECT 1'), /not queryable/)
})

test("an idle checkout whose backend is terminated emits 'error', then refuses queries; an idle pool connection's loss reaches the pool's 'error'", async () => {
  const pool = new Pool({ connectionString, max: 2 })
  try {
    const c = await pool.connect()
    const lost = new Promise<Error>((resolve) => c.once('error', resolve))
    await adminQuery(`SELECT pg_terminate_backend(${c.processID})`)
    const err = await within(lost, "the checkout's error")
    assert.equal((err as { code?: string }).code, '57P01')
    await assert.rejects(c.query('SELECT 1'), /encountered a connection error and is not queryable/)
    c.release(err)
    // pool.query()'s connections: the pool hears of it.
    const { rows } = await pool.query('SELECT pg_backend_pid() AS pid')
    const poolError = new Promise<Error>((resolve) => pool.once('error', resolve))
    await adminQuery(`SELECT pg_terminate_backend(${rows[0].pid})`)
    assert.equal(((await within(poolError, "the pool's error")) as { code?: string }).code, '57P01')
    assert.deepEqual((await pool.query('SELECT 1 AS n')).rows, [{ n: 1 }])
  } finally {
    await pool.end()
  }
})

test('pipeline mode: end() lets the queries sent finish; query_timeout gives the connection up; the rows option and portals are refused', async () => {
  const c = await client({ pipeline: true })
  const p1 = c.query('SELECT 1 AS n')
  const p2 = c.query('SELECT pg_sleep(0.1), 2 AS n')
  const ended = c.end()
  assert.deepEqual((await within(Promise.all([p1, p2]), 'queries before end()')).map((r) => r.rows[0].n), [1, 2])
  await within(ended, 'end()')

  const t = await client({ pipeline: true })
  t.on('error', () => {})
  const [first, slow, behind] = await within(
    Promise.allSettled([t.query('SELECT 1'), t.query({ text: 'SELECT pg_sleep(30)', query_timeout: 100 }), t.query('SELECT 3')]),
    'a timed-out pipeline',
  )
  assert.equal(first.status, 'fulfilled')
  assert.match(((slow as PromiseRejectedResult).reason as Error).message, /timeout/)
  assert.equal(behind.status, 'rejected')

  const r = await client({ pipeline: true })
  try {
    await assert.rejects(r.query({ text: 'SELECT generate_series(1, 10)', rows: 3 } as never), /`rows` option is not supported in pipeline mode/)
    const refused = await within(
      new Promise<Error>((resolve) => {
        r.query({ submit() {}, handleError: resolve } as never)
      }),
      'the refusal',
    )
    assert.match(refused.message, /not supported in pipeline mode/)
  } finally {
    await r.end()
  }
  // Without pipeline mode the rows option is accepted, all rows coming back.
  const plain = await client()
  try {
    assert.equal((await plain.query({ text: 'SELECT generate_series(1, 10)', rows: 3 } as never)).rows.length, 10)
  } finally {
    await plain.end()
  }
})

test("query({}) fails through its callback with pg's message, and 'drain' follows", async () => {
  const c = await client()
  try {
    const seen: string[] = []
    const drained = new Promise<void>((resolve) =>
      c.query({} as never, (err: Error | null) => {
        seen.push(err!.message)
        c.once('drain', () => resolve())
      }),
    )
    await within(drained, 'drain after a refused query')
    assert.match(seen[0]!, /^A query must have either text or a name\. Supplying neither is unsupported/)
    assert.doesNotThrow(() => c.query({ text: {} } as never).catch(() => {}))
  } finally {
    await c.end()
  }
})

/** A TCP server on a free port that does `onSocket` with each connection. */
async function fakeServer(onSocket: (s: Socket) => void): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const srv: Server = createServer((s) => {
    sockets.add(s)
    onSocket(s)
  })
  srv.listen(0, '127.0.0.1')
  await once(srv, 'listening')
  return {
    port: (srv.address() as { port: number }).port,
    close: () => {
      for (const s of sockets) s.destroy()
      return new Promise((resolve) => srv.close(() => resolve()))
    },
  }
}

test("a connect timeout and a server that is not PostgreSQL: pipegres's account, with pg's 'timeout expired' and 'invalid response'", async () => {
  // What a real server cannot be made to do: never answer, or answer as MySQL does.
  const silent = await fakeServer(() => {})
  const mysql = await fakeServer((s) => s.write(Buffer.from('SgAAAAo4LjAuMjgAHwAAAB4dKyUJZ2p6AP///wIA/98VAAAA', 'base64')))
  try {
    const timedOut = await within(new Client({ host: '127.0.0.1', port: silent.port, user: 'u', connectionTimeoutMillis: 200 }).connect().catch((e: Error) => e), 'connect timeout')
    assert.match((timedOut as Error).message, /timed out after 200 ms.*timeout expired/)
    const invalid = await within(new Client({ host: '127.0.0.1', port: mysql.port, user: 'u', connectionTimeoutMillis: 2000 }).connect().catch((e: Error) => e), 'invalid response')
    assert.match((invalid as Error).message, /invalid response/)
  } finally {
    await silent.close()
    await mysql.close()
  }
})

class FakePromise<T> extends Promise<T> {}

test("pg's Promise option: connect(), query() and end() return that library's promises", async () => {
  const c = new Client({ connectionString, Promise: FakePromise })
  const connecting = c.connect()
  assert.ok(connecting instanceof FakePromise)
  await connecting
  const q = c.query('SELECT 1 AS n')
  assert.ok(q instanceof FakePromise)
  assert.deepEqual((await q).rows, [{ n: 1 }])
  const ending = c.end()
  assert.ok(ending instanceof FakePromise)
  await ending
})


test("enableChannelBinding: false turns SCRAM's channel binding off", async () => {
  const base = {
    connectionString: `postgresql://${server.host}:${server.port}/${server.database}?channel_binding=require`,
    user: server.users.scram.user,
    password: server.users.scram.password,
    ssl: false,
  }
  // channel_binding=require cannot be met without TLS: the option's false is what lets the connection through.
  await assert.rejects(new Client(base).connect(), /channel binding/i)
  const c = new Client({ ...base, enableChannelBinding: false })
  await within(c.connect(), 'connect without channel binding')
  assert.deepEqual((await c.query('SELECT current_user AS who')).rows, [{ who: server.users.scram.user }])
  await c.end()
})
