// test-tags: slow
// What the network does to a connection, through a fault-injecting proxy in
// front of the real server: connections cut after N bytes either way (RST or
// FIN), at points read from a recorded clean session (inside startup and
// authentication, inside a DataRow, between messages), in plaintext and over
// TLS; every chunk delayed; every byte delivered alone; a black hole that
// swallows everything, cancel requests included; refused connections; and a
// server that keeps dropping connections as soon as they are up.
//
// For every query issued: it settles within a deadline; a rejection is a
// pipegres error with a code, a message naming the cause, and no password in
// it; a result is its own query's (distinct values, pipelined); a query that
// may have run is never sent again (an INSERT is applied at most once); and
// afterwards the same client (its next query reconnects) and a fresh client
// both work. node:test fails a test on any uncaught exception or unhandled
// rejection.

import assert from 'node:assert/strict'
import { after, describe, test, type TestContext } from 'node:test'
import {
  Client,
  ConnectionError,
  createPool,
  PgError,
  PipegresError,
  TimeoutError,
  type ClientOptions,
  type QueryOptions,
  type Result,
} from '../../../src/index.js'
import { uniqueName } from '../../support/client.js'
import { isolateEnvironment } from '../../support/connect.js'
import {
  joined,
  splitBackend,
  splitFrontend,
  splitTls,
  startFaultProxy,
  type FaultPlan,
  type FaultProxy,
  type ProxiedConnection,
  type WireMessage,
} from '../../support/proxies/fault-proxy.js'
import { adminQuery, getTestServer, type Credentials } from '../../support/servers/test-server.js'

await isolateEnvironment('faults-network')
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

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

// --- what every query must satisfy -------------------------------------------

const secrets = [server.superuser.password, ...Object.values(server.users).flatMap((u) => ('password' in u ? [u.password as string] : []))]

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

/** Waits for every promise to settle; fails naming the ones still pending after `ms`. */
async function settleWithin<T>(labelled: { label: string; promise: Promise<T> }[], ms: number): Promise<PromiseSettledResult<T>[]> {
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

// --- the workload -------------------------------------------------------------

interface Issued {
  label: string
  promise: Promise<Result<Record<string, unknown>>>
  check(r: Result<Record<string, unknown>>): void
  insert?: true
}

interface Queries {
  query(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<Result<Record<string, unknown>>>
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

interface Checked {
  rejected: number
  insert: 'resolved' | 'rejected'
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

// --- clean sessions, recorded to pick the cut points ----------------------------

interface Recording {
  fromServer: Buffer
  fromClient: Buffer
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

interface CutPoint {
  at: number
  where: string
  /** The cut comes before the connection is ready: nothing of the workload was sent. */
  startup: boolean
}

const mid = (m: { start: number; end: number }) => m.start + Math.floor((m.end - m.start) / 2)

function nth(messages: WireMessage[], type: string, n: number, from = 0): WireMessage {
  let seen = 0
  for (let i = from; i < messages.length; i++) if (messages[i]!.type === type && seen++ === n) return messages[i]!
  throw new Error(`no ${type} #${n} in the recorded stream`)
}

/** Cut points in the server's stream of a plaintext SCRAM session. */
function serverCutPoints(rec: Recording): CutPoint[] {
  const s = rec.fromServer
  const ms = splitBackend(s)
  // Authentication requests by their code: PostgreSQL before 18 sends NegotiateProtocolVersion first.
  const auth = (code: number) => ms.find((m) => m.type === 'R' && s.readInt32BE(m.start + 5) === code)!
  const negotiate = ms.find((m) => m.type === 'v')
  const ready = nth(ms, 'Z', 0)
  const readyIndex = ms.indexOf(ready)
  const firstRow = nth(ms, 'D', 0)
  const insertTag = ms.find((m) => m.type === 'C' && s.subarray(m.start + 5, m.end).toString().startsWith('INSERT'))!
  const bigRow = ms.find((m) => m.type === 'D' && m.end - m.start > 3000)!
  const tenthReady = nth(ms, 'Z', 10, readyIndex + 1)
  const points: CutPoint[] = [
    { at: 0, where: 'before the first byte', startup: true },
    ...(negotiate ? [{ at: mid(negotiate), where: 'inside NegotiateProtocolVersion', startup: true }] : []),
    { at: auth(10).start + 3, where: 'inside the header of AuthenticationSASL', startup: true },
    { at: mid(auth(11)), where: 'inside AuthenticationSASLContinue', startup: true },
    { at: auth(12).end, where: 'between AuthenticationSASLFinal and AuthenticationOk', startup: true },
    { at: mid(nth(ms, 'S', 0)), where: 'inside a ParameterStatus', startup: true },
    { at: mid(nth(ms, 'K', 0)), where: 'inside BackendKeyData', startup: true },
    { at: ready.start, where: "just before the startup's ReadyForQuery", startup: true },
    { at: ready.end, where: 'between startup and the first reply', startup: false },
    { at: mid(nth(ms, 'T', 0)), where: 'inside the first RowDescription', startup: false },
    { at: firstRow.start + 3, where: "inside a DataRow's header", startup: false },
    { at: firstRow.end - 2, where: "inside a DataRow's value", startup: false },
    { at: firstRow.end, where: 'between a DataRow and its CommandComplete', startup: false },
    { at: tenthReady.end, where: "between two queries' replies, mid-pipeline", startup: false },
    { at: insertTag.end, where: "between the INSERT's CommandComplete and its ReadyForQuery", startup: false },
    { at: mid(bigRow), where: 'inside a 3 kB DataRow', startup: false },
    { at: s.length - 1, where: 'one byte short of the end', startup: false },
  ]
  for (const p of points) assert.equal(p.startup, p.at <= ready.start, `${p.where}: ${p.at}`)
  return points
}

/** Cut points in the client's stream of a plaintext SCRAM session. */
function clientCutPoints(rec: Recording): CutPoint[] {
  const f = rec.fromClient
  const ms = splitFrontend(f)
  const startup = ms[0]!
  const saslInitial = ms[1]!
  const saslFinal = ms[2]!
  const firstParse = nth(ms, 'P', 0)
  const firstExecute = nth(ms, 'E', 0)
  const insertParse = ms.find((m) => m.type === 'P' && f.subarray(m.start, m.end).includes('INSERT'))!
  const insertExecute = nth(ms, 'E', 0, ms.indexOf(insertParse))
  const insertSync = nth(ms, 'S', 0, ms.indexOf(insertExecute))
  const tenthBind = nth(ms, 'B', 10)
  const lastParse = ms.filter((m) => m.type === 'P').at(-1)!
  const terminate = ms.find((m) => m.type === 'X')
  const end = terminate?.start ?? f.length
  return [
    { at: 0, where: 'before the StartupMessage', startup: true },
    { at: mid(startup), where: 'inside the StartupMessage', startup: true },
    { at: startup.end, where: 'right after the StartupMessage', startup: true },
    { at: mid(saslInitial), where: 'inside SASLInitialResponse', startup: true },
    { at: mid(saslFinal), where: 'inside the final SASLResponse', startup: true },
    { at: saslFinal.end, where: 'after authentication, before any query', startup: false },
    { at: mid(firstParse), where: 'inside the first Parse', startup: false },
    { at: firstExecute.end, where: "between the first query's Execute and its Sync", startup: false },
    { at: mid(tenthBind), where: 'inside a Bind, mid-pipeline', startup: false },
    { at: insertExecute.end, where: "between the INSERT's Execute and its Sync", startup: false },
    { at: insertSync.end, where: "right after the INSERT's Sync", startup: false },
    { at: mid(lastParse), where: 'inside the last Parse', startup: false },
    { at: end, where: 'after the last Sync', startup: false },
  ]
}

const plainRecording = await record(scramUser, 'disable')
const tlsRecording = await record(scramUser, 'require')
const cleartextRecording = await record(cleartextUser, 'disable')

// --- one cut ----------------------------------------------------------------------

interface CutOptions {
  who?: Credentials
  sslmode?: 'disable' | 'require'
  /** The cut comes before the connection is ready. */
  startup?: boolean
  /**
   * A plaintext startup the server closes without a word: to the client that
   * may be a server or pooler refusing protocol 3.2, so it connects once more
   * asking for 3.0, and the workload succeeds on that second connection.
   */
  fallsBack?: boolean
}

/**
 * The first connection through the proxy is cut as `plan` says, while the
 * workload is in flight (issued before the connection was even open); later
 * connections are left alone.
 */
async function cutScenario(plan: FaultPlan, o: CutOptions = {}): Promise<void> {
  const proxy = await startFaultProxy(target, (i) => (i === 0 ? plan : {}))
  const opts = clientOptions(proxy, o.who ?? scramUser, { sslmode: o.sslmode ?? 'disable' })
  const client = new Client(opts)
  const fresh = new Client(opts)
  try {
    const tag = newTag()
    const issued = issueWorkload(client, tag)
    const settled = await settleWithin(issued, 15_000)
    const { rejected, insert } = checkOutcomes(issued, settled, proxy)
    if (o.fallsBack === true) {
      assert.equal(rejected, 0, 'the client asked again for protocol 3.0')
      assert.ok(proxy.connections.length >= 2, 'on a second connection')
      assert.equal(await countTag(tag), 1)
      await client.end()
      await fresh.end()
      return
    }
    assert.ok(rejected > 0, 'the cut fell after the workload: it tested nothing')
    await serverSideGone(proxy.connections[0]!)
    const inserted = await countTag(tag)
    if (insert === 'resolved') assert.equal(inserted, 1)
    else assert.ok(inserted <= 1, `the INSERT was applied ${inserted} times`)
    if (o.startup === true) {
      assert.equal(rejected, issued.length, 'a query succeeded although the connection never became ready')
      assert.equal(inserted, 0, 'the INSERT ran although the connection never became ready')
    }

    await workloadSucceeds(client, proxy, 'the same client afterwards')
    assert.equal(await countTag(tag), inserted, 'the INSERT of the cut connection was sent again')
    await workloadSucceeds(fresh, proxy, 'a fresh client')
    await client.end()
    await fresh.end()
  } finally {
    client.destroy()
    fresh.destroy()
    await proxy.close()
  }
}

const CUT_TEST = { timeout: 45_000 }

describe('a connection reset after N bytes from the server (plaintext, SCRAM)', () => {
  for (const p of serverCutPoints(plainRecording)) {
    test(`at ${p.at} bytes: ${p.where}`, CUT_TEST, () => cutScenario({ serverCutAt: p.at }, { startup: p.startup }))
  }
})

describe('a connection reset after N bytes from the client (plaintext, SCRAM)', () => {
  for (const p of clientCutPoints(plainRecording)) {
    test(`at ${p.at} bytes: ${p.where}`, CUT_TEST, () => cutScenario({ clientCutAt: p.at }, { startup: p.startup }))
  }
})

describe('a connection closed with a FIN after a truncated stream', () => {
  const server = serverCutPoints(plainRecording).filter((_, i) => i % 3 === 1)
  for (const p of server) {
    test(`server stream cut at ${p.at} bytes: ${p.where}`, CUT_TEST, () => cutScenario({ serverCutAt: p.at, cut: 'fin' }, { startup: p.startup }))
  }
  const client = clientCutPoints(plainRecording).filter((_, i) => i % 3 === 2)
  // Cut no later than the StartupMessage's end, the server never answers the startup.
  const startupEnd = splitFrontend(plainRecording.fromClient)[0]!.end
  for (const p of client) {
    test(`client stream cut at ${p.at} bytes: ${p.where}`, CUT_TEST, () =>
      cutScenario({ clientCutAt: p.at, cut: 'fin' }, { startup: p.startup, fallsBack: p.at <= startupEnd }))
  }
})

describe('a cleartext password exchange cut short', () => {
  const ms = splitFrontend(cleartextRecording.fromClient)
  const passwordMessage = ms[1]!
  assert.equal(passwordMessage.type, 'p')
  const serverStream = cleartextRecording.fromServer
  const askPassword = splitBackend(serverStream).find((m) => m.type === 'R' && serverStream.readInt32BE(m.start + 5) === 3)!
  test(`client stream cut inside the PasswordMessage (at ${mid(passwordMessage)} bytes)`, CUT_TEST, () =>
    cutScenario({ clientCutAt: mid(passwordMessage) }, { who: cleartextUser, startup: true }))
  test(`client stream cut with a FIN one byte before the end of the PasswordMessage`, CUT_TEST, () =>
    cutScenario({ clientCutAt: passwordMessage.end - 1, cut: 'fin' }, { who: cleartextUser, startup: true }))
  test(`server stream cut right after AuthenticationCleartextPassword (at ${askPassword.end} bytes)`, CUT_TEST, () =>
    cutScenario({ serverCutAt: askPassword.end }, { who: cleartextUser, startup: true }))
})

describe('a TLS connection (sslmode=require) cut after N bytes', () => {
  const serverRecords = splitTls(tlsRecording.fromServer, 1)
  const clientRecords = splitTls(tlsRecording.fromClient, 8)
  const appServer = serverRecords.filter((r) => r.contentType === 23)
  const appClient = clientRecords.filter((r) => r.contentType === 23)
  const points: { plan: FaultPlan; where: string; startup: boolean }[] = [
    { plan: { serverCutAt: 1 }, where: "server stream: right after the 'S' answer to SSLRequest", startup: true },
    { plan: { serverCutAt: mid(serverRecords[1]!) }, where: "server stream: inside the server's first handshake record", startup: true },
    { plan: { serverCutAt: mid(appServer[Math.floor(appServer.length / 2)]!) }, where: 'server stream: inside an application-data record, mid-session', startup: false },
    { plan: { serverCutAt: tlsRecording.fromServer.length - 1, cut: 'fin' }, where: 'server stream: one byte short of the end, then FIN', startup: false },
    { plan: { clientCutAt: 8 }, where: 'client stream: right after SSLRequest', startup: true },
    { plan: { clientCutAt: mid(clientRecords[1]!) }, where: 'client stream: inside the ClientHello', startup: true },
    // The workload goes out in one write, hence one record: the last of the recording.
    { plan: { clientCutAt: mid(appClient.at(-1)!) }, where: 'client stream: inside the record carrying the queries', startup: false },
  ]
  for (const p of points) {
    test(p.where, CUT_TEST, () => cutScenario(p.plan, { sslmode: 'require', startup: p.startup }))
  }
})

// --- slow and fragmented ----------------------------------------------------------

describe('a slow or fragmenting network', () => {
  test('every chunk delayed by 20 ms: results intact; a timeout is still cancelled on the server', { timeout: 45_000 }, async () => {
    const proxy = await startFaultProxy(target, { delayMs: 20 })
    const client = new Client(clientOptions(proxy, scramUser))
    try {
      await workloadSucceeds(client, proxy, 'through a 20 ms delay')
      const slow = client.query('SELECT pg_sleep(10)', [], { timeout: 200 })
      const behind = issueWorkload(client, newTag())
      const behindSettled = settleWithin(behind, 15_000)
      const t0 = performance.now()
      const err = await slow.then(
        () => assert.fail('pg_sleep(10) resolved despite its timeout'),
        (e: unknown) => e,
      )
      assert.ok(err instanceof TimeoutError, `got ${String(err)}`)
      assertRejection(err, proxy, 'pg_sleep')
      assert.equal((err.cause as { code?: string }).code, '57014', 'cancelled on the server')
      assert.ok(performance.now() - t0 < 8000)
      const settled = await behindSettled
      // Before PostgreSQL 18 the cancel's second signal may hit a query behind (see cancel-misfires.ts).
      const hit = settled.filter((s) => s.status === 'rejected')
      if (server.version < 18 && hit.length > 0 && hit.every((s) => s.reason instanceof PgError && s.reason.code === '57014')) {
        settled.forEach((s, i) => {
          if (s.status === 'fulfilled') behind[i]!.check(s.value)
        })
        assert.equal(client.cancelMisfires, hit.length, 'every follower hit is counted as a misfire')
      } else {
        checkOutcomes(behind, settled, proxy)
        assert.ok(settled.every((s) => s.status === 'fulfilled'), 'queries behind a cancelled one complete')
      }
      await client.end()
    } finally {
      client.destroy()
      await proxy.close()
    }
  })

  for (const sslmode of ['disable', 'require'] as const) {
    test(`every byte delivered alone, both ways (sslmode=${sslmode})`, { timeout: 60_000 }, async () => {
      const proxy = await startFaultProxy(target, { bytewise: true })
      const client = new Client(clientOptions(proxy, scramUser, { sslmode }))
      try {
        await workloadSucceeds(client, proxy, 'one byte at a time')
        assert.equal(client.tls, sslmode === 'require')
        const conn = proxy.connections[0]!
        assert.ok(conn.toClient.length > 3000 && conn.toClient.every((b) => b.length === 1), 'the server stream went over in 1-byte pieces')
        assert.ok(conn.toServer.length > 500 && conn.toServer.every((b) => b.length === 1), 'the client stream went over in 1-byte pieces')
        await client.end()
      } finally {
        client.destroy()
        await proxy.close()
      }
    })
  }
})

// --- a black hole -----------------------------------------------------------------

interface BlackHoleOptions {
  sslmode?: 'disable' | 'require'
  /** What a new connection (the CancelRequest's) meets: the black hole, a refusal, or the server. */
  newConnections: 'blackhole' | 'refused' | 'relayed'
  /** Client setting; bounds the cancel connection too. */
  connectTimeout?: number
  /** How long the rejections may take after the timeout, generously. */
  within: number
}

const QUERY_TIMEOUT = 300

/**
 * The connection goes silent both ways while the workload is in flight, each
 * query with a timeout. Every query must reject with a TimeoutError, whether
 * or not its CancelRequest can reach the server; queries issued after them
 * must not hang either. Then the network heals and the client works again.
 */
async function blackHoleScenario(t: TestContext, o: BlackHoleOptions): Promise<void> {
  const proxy = await startFaultProxy(target)
  const opts = clientOptions(proxy, scramUser, { sslmode: o.sslmode ?? 'disable', connectTimeout: o.connectTimeout })
  const client = new Client(opts)
  const fresh = new Client(opts)
  try {
    await client.connect()
    assert.equal(client.tls, o.sslmode === 'require')
    proxy.stallAll()
    if (o.newConnections === 'blackhole') proxy.plan = () => ({ blackhole: true })
    if (o.newConnections === 'refused') await proxy.refuse()
    const tag = newTag()
    const t0 = performance.now()
    const issued = issueWorkload(client, tag, { timeout: QUERY_TIMEOUT })
    const settling = settleWithin(issued, QUERY_TIMEOUT + o.within)
    await sleep(QUERY_TIMEOUT + 50)
    // Issued once the others have timed out, while their cancel is pending: it must not wait forever.
    // Without connectTimeout it would: it goes to a new connection, and one opened into a black
    // hole waits for as long as the operating system lets a connection attempt wait (as in libpq).
    const late =
      o.connectTimeout === undefined && o.newConnections === 'blackhole'
        ? null
        : { label: 'a query without timeout, issued later', promise: client.query('SELECT $1::int AS n', [-1]) }
    late?.promise.catch(() => undefined)
    const settled = await settling
    const elapsed = performance.now() - t0
    for (const [i, s] of settled.entries()) {
      assert.equal(s.status, 'rejected', `${issued[i]!.label} resolved through a black hole`)
      const err = (s as PromiseRejectedResult).reason as unknown
      assert.ok(err instanceof TimeoutError, `${issued[i]!.label}: ${String(err)}`)
      assertRejection(err, proxy, issued[i]!.label)
    }
    assert.ok(elapsed < QUERY_TIMEOUT + o.within, `took ${elapsed} ms`)
    t.diagnostic(`every query rejected ${elapsed.toFixed(0)} ms after it was issued (timeout ${QUERY_TIMEOUT} ms)`)
    if (late !== null) {
      const [lateOutcome] = await settleWithin([late], 15_000)
      if (lateOutcome!.status === 'rejected') assertRejection(lateOutcome!.reason, proxy, late.label)
      else assert.deepEqual(lateOutcome!.value.rows, [{ n: -1 }])
    }
    await serverSideGone(proxy.connections[0]!)
    assert.ok((await countTag(tag)) <= 1)

    // The network heals.
    proxy.plan = () => ({})
    await proxy.accept()
    await workloadSucceeds(client, proxy, 'the same client afterwards')
    await workloadSucceeds(fresh, proxy, 'a fresh client')
    await client.end()
    await fresh.end()
  } finally {
    client.destroy()
    fresh.destroy()
    await proxy.close()
  }
}

describe('a black hole (nothing gets through either way)', () => {
  test('cancel connections are black-holed too: every query rejects with a TimeoutError, bounded by connectTimeout', { timeout: 45_000 }, (t) =>
    blackHoleScenario(t, { newConnections: 'blackhole', connectTimeout: 1500, within: 1500 + 6000 }))

  test('cancel connections are refused: every query rejects with a TimeoutError at once', { timeout: 45_000 }, (t) =>
    blackHoleScenario(t, { newConnections: 'refused', within: 4000 }))

  test('over TLS, the cancel connection never gets past SSLRequest: TimeoutError, bounded by connectTimeout', { timeout: 45_000 }, (t) =>
    blackHoleScenario(t, { sslmode: 'require', newConnections: 'blackhole', connectTimeout: 1500, within: 1500 + 6000 }))

  test('only the connection is black-holed: the cancel reaches the server, its answer never comes back', { timeout: 45_000 }, (t) =>
    blackHoleScenario(t, { newConnections: 'relayed', connectTimeout: 1500, within: 1500 + 6000 }))

  test('with default settings the wait is bounded too (the cancel connection times out after 10 s)', { timeout: 60_000 }, (t) =>
    blackHoleScenario(t, { newConnections: 'blackhole', within: 10_000 + 8000 }))

  test('keepalive settings are accepted', { timeout: 30_000 }, async () => {
    const proxy = await startFaultProxy(target)
    try {
      const url = `postgresql://${encodeURIComponent(scramUser.user)}:${encodeURIComponent(scramUser.password)}@${proxy.host}:${proxy.port}/${server.database}?sslmode=disable&keepalives=1&keepalives_idle=1`
      const settings: (ClientOptions | string)[] = [
        clientOptions(proxy, scramUser, { keepAlive: true, keepAliveIdle: 1000 }),
        clientOptions(proxy, scramUser, { keepAlive: false }),
        url,
      ]
      for (const s of settings) {
        const c = new Client(s)
        try {
          await workloadSucceeds(c, proxy, `keepalive ${typeof s === 'string' ? 'in the URL' : String(s.keepAlive)}`)
          await c.end()
        } finally {
          c.destroy()
        }
      }
    } finally {
      await proxy.close()
    }
  })
})

// --- refused and flapping ---------------------------------------------------------

describe('a server that refuses or keeps dropping connections', () => {
  test('refused: connect() rejects with a ConnectionError naming the address; queries too; then it works', { timeout: 30_000 }, async () => {
    const proxy = await startFaultProxy(target)
    await proxy.refuse()
    const client = new Client(clientOptions(proxy, scramUser))
    try {
      const err = await client.connect().then(
        () => assert.fail('connected to a closed port'),
        (e: unknown) => e,
      )
      assert.ok(err instanceof ConnectionError, String(err))
      assert.equal(err.code, 'PG_CONNECTION_REFUSED')
      assertRejection(err, proxy, 'connect()')
      const issued = issueWorkload(client, newTag())
      const settled = await settleWithin(issued, 15_000)
      for (const s of settled) {
        assert.equal(s.status, 'rejected')
        assert.equal(((s as PromiseRejectedResult).reason as ConnectionError).code, 'PG_CONNECTION_REFUSED')
      }
      checkOutcomes(issued, settled, proxy)
      await proxy.accept()
      await workloadSucceeds(client, proxy, 'the same client once the port is open')
      await client.end()
    } finally {
      client.destroy()
      await proxy.close()
    }
  })

  /**
   * Connection attempts over a window while every connection is dropped as
   * soon as it is up (or, with `duringStartup`, before it is): returns when
   * each attempt came, relative to the start of the window.
   */
  async function attemptsWhileFlapping(proxy: FaultProxy, plan: FaultPlan, windowMs: number): Promise<number[]> {
    const first = proxy.connections.length
    const t0 = performance.now()
    proxy.plan = () => plan
    proxy.resetAll()
    await sleep(windowMs)
    proxy.plan = () => ({})
    return proxy.connections.slice(first).map((c) => c.acceptedAt - t0)
  }

  const readyLength = splitBackend(plainRecording.fromServer).find((m) => m.type === 'Z')!.end
  const flaps: { what: string; plan: FaultPlan }[] = [
    { what: 'dropped as soon as it is ready', plan: { serverCutAt: readyLength } },
    { what: 'dropped during authentication', plan: { serverCutAt: 30 } },
    { what: 'dropped 30 ms after it was accepted', plan: { resetAfterMs: 30 } },
  ]

  for (const f of flaps) {
    for (const kind of ['client', 'pool'] as const) {
      test(`a listening ${kind}, every connection ${f.what}: attempts back off (no storm), bounded; it listens again once the network heals`, { timeout: 45_000 }, async (t) => {
        const proxy = await startFaultProxy(target)
        const maxDelay = 800
        const options = clientOptions(proxy, scramUser, { reconnectMaxDelay: maxDelay })
        const listener = kind === 'client' ? new Client(options) : createPool(options)
        const notifier = new Client(clientOptions(proxy, scramUser))
        const channel = uniqueName('net_flap')
        const received: string[] = []
        const disconnects: Error[] = []
        if (listener instanceof Client) listener.on('disconnect', (e) => disconnects.push(e))
        try {
          await listener.listen(channel, (p) => received.push(p ?? ''))
          const windowMs = 3000
          const attempts = await attemptsWhileFlapping(proxy, f.plan, windowMs)
          t.diagnostic(`${attempts.length} connection attempts in ${windowMs} ms, at ${attempts.map((a) => a.toFixed(0)).join(', ')} ms`)
          for (const e of disconnects) assertRejection(e, proxy, 'disconnect')
          // Backoff from 100 ms doubling to 800 ms gives about 7 attempts in 3 s; a storm gives hundreds.
          assert.ok(attempts.length >= 2, `only ${attempts.length} attempts: the ${kind} stopped trying`)
          assert.ok(
            attempts.length <= 14,
            `${attempts.length} connection attempts in ${windowMs} ms: a reconnect storm (${attempts.map((a) => a.toFixed(0)).join(', ')})`,
          )
          const gaps = attempts.slice(1).map((a, i) => a - attempts[i]!)
          assert.ok(Math.max(...gaps) < maxDelay + 1500, `a gap of ${Math.max(...gaps)} ms exceeds reconnectMaxDelay`)
          // Healed: it reconnects within the bounded backoff and listens again.
          const healedAt = performance.now()
          let delivered = false
          while (!delivered && performance.now() - healedAt < 10_000) {
            await notifier.notify(channel, 'back').catch(() => undefined)
            await sleep(100)
            delivered = received.includes('back')
          }
          assert.ok(delivered, `the listening ${kind} did not listen again after the network healed`)
          assert.ok(performance.now() - healedAt < maxDelay + 5000)
          await workloadSucceeds(listener, proxy, `the listening ${kind} afterwards`)
          await listener.end()
          await notifier.end()
        } finally {
          listener.destroy()
          notifier.destroy()
          await proxy.close()
        }
      })
    }
  }

  test('a pool whose every connection is dropped as soon as it is ready: queries settle, attempts back off, and it recovers', { timeout: 45_000 }, async (t) => {
    const proxy = await startFaultProxy(target)
    const pool = createPool({ ...clientOptions(proxy, scramUser), max: 4 })
    const windowMs = 3000
    try {
      await workloadSucceeds(pool, proxy, 'the pool before')
      const first = proxy.connections.length
      const t0 = performance.now()
      proxy.plan = () => ({ serverCutAt: readyLength })
      proxy.resetAll()
      // Four callers issuing queries back to back, as a busy application would.
      let issued = 0
      const outcomes: Promise<void>[] = []
      const callers = Array.from({ length: 4 }, async () => {
        while (performance.now() - t0 < windowMs) {
          const v = issued++
          const p = pool.query('SELECT $1::int AS n', [v]).then(
            (r) => assert.deepEqual(r.rows, [{ n: v }]),
            (e: unknown) => assertRejection(e, proxy, `pool query ${v}`),
          )
          outcomes.push(p)
          await settleWithin([{ label: `pool query ${v}`, promise: p }], 15_000)
        }
      })
      await Promise.all(callers)
      await Promise.all(outcomes)
      const attempts = proxy.connections.slice(first).map((c) => c.acceptedAt - t0)
      proxy.plan = () => ({})
      t.diagnostic(`${attempts.length} connection attempts in ${windowMs} ms for ${issued} queries`)
      assert.ok(attempts.length <= 40, `${attempts.length} connection attempts in ${windowMs} ms for ${issued} queries: a reconnect storm`)
      await workloadSucceeds(pool, proxy, 'the pool afterwards')
      await pool.end()
    } finally {
      pool.destroy()
      await proxy.close()
    }
  })
})

// --- INSERTs with a backlog -------------------------------------------------------

describe('no query that may have run is sent again', () => {
  test('2,000 pipelined INSERTs, the connection reset mid-stream: each applied at most once, those that resolved exactly once', { timeout: 60_000 }, async () => {
    const proxy = await startFaultProxy(target, (i) => (i === 0 ? { serverCutAt: 20_000 } : {}))
    const client = new Client(clientOptions(proxy, scramUser))
    const tag = newTag()
    const payload = 'y'.repeat(1000)
    try {
      await client.connect()
      const inserts = Array.from({ length: 2000 }, (_, n) => ({
        label: `INSERT ${n}`,
        promise: client.query(`INSERT INTO ${table} (tag, n) SELECT $1, $2 WHERE length($3) = 1000`, [tag, n, payload]),
      }))
      const settled = await settleWithin(inserts, 30_000)
      await serverSideGone(proxy.connections[0]!)
      const counts = new Map<number, number>()
      for (const row of (await adminQuery(`SELECT n, count(*) FROM ${table} WHERE tag = '${tag}' GROUP BY n`)).rows) counts.set(Number(row[0]), Number(row[1]))
      let resolved = 0
      let rejected = 0
      settled.forEach((s, n) => {
        const count = counts.get(n) ?? 0
        assert.ok(count <= 1, `INSERT ${n} applied ${count} times`)
        if (s.status === 'fulfilled') {
          resolved++
          assert.equal(s.value.rowCount, 1)
          assert.equal(count, 1, `INSERT ${n} resolved but is not there`)
        } else {
          rejected++
          assertRejection(s.reason, proxy, `INSERT ${n}`)
        }
      })
      assert.ok(rejected > 0, 'the reset hit nothing')
      assert.ok(resolved > 0, 'nothing resolved: the cut came too early to test a backlog')
      await workloadSucceeds(client, proxy, 'the same client afterwards')
      await client.end()
    } finally {
      client.destroy()
      await proxy.close()
    }
  })
})
