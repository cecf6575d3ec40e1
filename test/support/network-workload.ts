// The workload of the network fault tests (test/faults/connection/network-*.test.ts)
// and what every query of it must satisfy, whatever the fault: it settles
// within a deadline; a rejection is a pipegres error with a code, a message
// naming the cause, and no password in it; a result is its own query's
// (distinct values, pipelined); and a query that may have run is never sent
// again (an INSERT is applied at most once). Also the bytes of a clean
// session, recorded through the proxy, to pick cut points and lengths from.

import assert from 'node:assert/strict'
import { after } from 'node:test'
import { Client, ConnectionError, PipegresError, TimeoutError, type ClientOptions, type QueryOptions, type Result } from '../../src/index.js'
import { uniqueName } from './client.js'
import { joined, startFaultProxy, type FaultProxy, type ProxiedConnection } from './proxies/fault-proxy.js'
import { adminQuery, getTestServer, type Credentials } from './servers/test-server.js'

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Every message in an error, its causes and aggregated errors. */
function messagesOf(err: unknown, seen = new Set<unknown>()): string[] {
  if (err === null || err === undefined || seen.has(err)) return []
  seen.add(err)
  if (!(err instanceof Error)) return [String(err)]
  const out = [err.message, String(err)]
  if (err instanceof AggregateError) for (const e of err.errors) out.push(...messagesOf(e, seen))
  out.push(...messagesOf(err.cause, seen))
  return out
}

/** Waits for every promise to settle; fails naming the ones still pending after `ms`. */
export async function settleWithin<T>(labelled: { label: string; promise: Promise<T> }[], ms: number): Promise<PromiseSettledResult<T>[]> {
  const pending = new Set(labelled.map((l) => l.label))
  for (const l of labelled) l.promise.then(() => pending.delete(l.label), () => pending.delete(l.label))
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${pending.size} of ${labelled.length} queries did not settle within ${ms} ms: ${[...pending].slice(0, 5).join(', ')}`)), ms)
  })
  try {
    return await Promise.race([Promise.allSettled(labelled.map((l) => l.promise)), deadline])
  } finally {
    clearTimeout(timer)
  }
}

export interface Issued {
  label: string
  promise: Promise<Result<Record<string, unknown>>>
  check(r: Result<Record<string, unknown>>): void
  insert?: true
}

export interface Queries {
  query(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<Result<Record<string, unknown>>>
}

export interface Checked {
  rejected: number
  insert: 'resolved' | 'rejected'
}

export interface Recording {
  fromServer: Buffer
  fromClient: Buffer
}

/**
 * The test server, the users the workload connects as, and a table of its own
 * (dropped after the file's tests) with the workload and its checks bound to them.
 */
export async function networkWorkload() {
  const server = await getTestServer()
  const target = { host: server.host, port: server.port }
  /** SCRAM over TCP (SCRAM-SHA-256-PLUS over TLS). */
  const scramUser = server.users.scram
  /** Cleartext password: the password itself crosses the wire, inside the stream the proxy cuts. */
  const cleartextUser = server.users.password

  const table = uniqueName('net_faults')
  await adminQuery(`CREATE TABLE ${table} (tag text NOT NULL, n int NOT NULL)`)
  await adminQuery(`GRANT SELECT, INSERT ON ${table} TO ${scramUser.user}, ${cleartextUser.user}`)
  after(() => adminQuery(`DROP TABLE IF EXISTS ${table}`))

  const secrets = [server.superuser.password, ...Object.values(server.users).flatMap((u) => ('password' in u ? [u.password as string] : []))]

  function assertNoSecret(err: unknown): void {
    for (const text of messagesOf(err)) {
      for (const secret of secrets) {
        for (const form of [secret, encodeURIComponent(secret)]) {
          assert.ok(!text.includes(form), `an error message contains a password: ${text}`)
        }
      }
    }
  }

  // What a message says when it names the cause of a lost or failed connection.
  const CAUSE = /clos|reset|refused|timed out|ECONN|EPIPE|socket|TLS|cancel/i

  /**
   * A rejection: a pipegres error class with a code; a connection error names the
   * address and the cause; a timeout carries a connection error or the server's
   * query_canceled as its cause; no password anywhere.
   */
  function assertRejection(err: unknown, proxy: FaultProxy, label: string): void {
    assert.ok(err instanceof PipegresError, `${label}: rejected with ${err instanceof Error ? `${err.constructor.name}: ${err.message}` : String(err)}, not a pipegres error`)
    assert.match(err.code, /^PG_[A-Z_]+$/, label)
    assertNoSecret(err)
    if (err instanceof ConnectionError) {
      assert.ok(err.message.includes(`${proxy.host}:${proxy.port}`), `${label}: "${err.message}" does not name the address`)
      assert.match(err.message, CAUSE, `${label}: "${err.message}" does not name the cause`)
    } else if (err instanceof TimeoutError) {
      const cause = err.cause
      assert.ok(cause instanceof Error, `${label}: a TimeoutError without a cause`)
      if (cause instanceof ConnectionError) assertRejection(cause, proxy, `${label} (cause)`)
      else assert.equal((cause as { code?: string }).code, '57014', `${label}: cause ${cause.message}`)
    } else {
      assert.fail(`${label}: unexpected ${err.constructor.name} ${err.code}: ${err.message}`)
    }
  }

  let nextBase = 1000
  const PAD = 'x'.repeat(3000)

  /**
   * Forty-two queries pipelined in one tick: twenty `SELECT $1::int`, an INSERT,
   * one with a 3 kB DataRow, twenty more; every SELECT with a value of its own.
   */
  function issueWorkload(db: Queries, tag: string, options?: QueryOptions): Issued[] {
    const base = (nextBase += 100)
    const out: Issued[] = []
    const select = (v: number): void => {
      out.push({ label: `SELECT ${v}`, promise: db.query('SELECT $1::int AS n', [v], options), check: (r) => assert.deepEqual(r.rows, [{ n: v }]) })
    }
    for (let i = 0; i < 20; i++) select(base + i)
    out.push({
      label: 'INSERT',
      promise: db.query(`INSERT INTO ${table} (tag, n) VALUES ($1, $2)`, [tag, base], options),
      check: (r) => {
        assert.equal(r.command, 'INSERT')
        assert.equal(r.rowCount, 1)
      },
      insert: true,
    })
    out.push({
      label: 'big row',
      promise: db.query(`SELECT $1::int AS n, repeat('x', 3000) AS pad`, [base + 20], options),
      check: (r) => assert.deepEqual(r.rows, [{ n: base + 20, pad: PAD }]),
    })
    for (let i = 21; i < 41; i++) select(base + i)
    return out
  }

  let tagCounter = 0
  const newTag = () => `t${process.pid}_${++tagCounter}`

  /**
   * Waits until the server has finished with a connection the proxy relayed: a
   * backend goes on executing what it received after its client is gone, so
   * only then is the count of rows final.
   */
  async function serverSideGone(conn: ProxiedConnection): Promise<void> {
    const port = conn.serverSidePort
    if (port === undefined) return
    for (let i = 0; i < 400; i++) {
      const r = await adminQuery(`SELECT count(*) FROM pg_stat_activity WHERE client_port = ${port} AND client_addr = '127.0.0.1'`)
      if (Number(r.rows[0]![0]) === 0) return
      await sleep(25)
    }
    assert.fail(`the server still runs the backend of the connection from port ${port}`)
  }

  async function countTag(tag: string): Promise<number> {
    const r = await adminQuery(`SELECT count(*) FROM ${table} WHERE tag = '${tag}'`)
    return Number(r.rows[0]![0])
  }

  /** Checks every outcome: a result is its own query's, a rejection a proper pipegres error. */
  function checkOutcomes(issued: Issued[], settled: PromiseSettledResult<Result<Record<string, unknown>>>[], proxy: FaultProxy): Checked {
    let rejected = 0
    let insert: Checked['insert'] = 'rejected'
    settled.forEach((s, i) => {
      const q = issued[i]!
      if (s.status === 'fulfilled') {
        q.check(s.value)
        if (q.insert) insert = 'resolved'
      } else {
        rejected++
        assertRejection(s.reason, proxy, q.label)
      }
    })
    return { rejected, insert }
  }

  /** Runs the workload and expects every query to succeed with its own result. */
  async function workloadSucceeds(db: Queries, proxy: FaultProxy, what: string): Promise<void> {
    const tag = newTag()
    const issued = issueWorkload(db, tag)
    const settled = await settleWithin(issued, 15_000)
    for (const [i, s] of settled.entries()) {
      if (s.status === 'rejected') assert.fail(`${what}: ${issued[i]!.label} failed: ${(s.reason as Error).message}`)
    }
    checkOutcomes(issued, settled, proxy)
    assert.equal(await countTag(tag), 1, `${what}: the INSERT applied once`)
  }

  function clientOptions(proxy: FaultProxy, who: Credentials, extra: ClientOptions = {}): ClientOptions {
    return {
      host: proxy.host,
      port: proxy.port,
      database: server.database,
      user: who.user,
      password: who.password,
      sslmode: 'disable',
      reconnectMaxDelay: 1000,
      ...extra,
    }
  }

  /** The bytes of a clean session running the workload once, each way. */
  async function record(who: Credentials, sslmode: 'disable' | 'require'): Promise<Recording> {
    const proxy = await startFaultProxy(target)
    const c = new Client(clientOptions(proxy, who, { sslmode }))
    try {
      const issued = issueWorkload(c, newTag())
      await Promise.all(issued.map((i) => i.promise))
      const conn = proxy.connections[0]!
      // Taken before the client goes, so without a Terminate.
      return { fromServer: joined(conn.toClient), fromClient: joined(conn.toServer) }
    } finally {
      c.destroy()
      await proxy.close()
    }
  }

  return { server, target, scramUser, cleartextUser, table, assertRejection, issueWorkload, newTag, serverSideGone, countTag, checkOutcomes, workloadSucceeds, clientOptions, record }
}
