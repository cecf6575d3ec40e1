// test-tags: slow
// What the network does to a connection, through a fault-injecting proxy in
// front of the real server: connections cut after N bytes either way (RST or
// FIN), at points read from a recorded clean session (inside startup and
// authentication, inside a DataRow, between messages), in plaintext and over
// TLS. Delays, a black hole, refusals and flapping: network-faults.test.ts.
//
// For every query issued (test/support/network-workload.ts): it settles
// within a deadline; a rejection is a pipegres error with a code, a message
// naming the cause, and no password in it; a result is its own query's
// (distinct values, pipelined); a query that may have run is never sent again
// (an INSERT is applied at most once); and afterwards the same client (its
// next query reconnects) and a fresh client both work. node:test fails a test
// on any uncaught exception or unhandled rejection.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Client } from '../../../src/index.js'
import { isolateEnvironment } from '../../support/connect.js'
import { networkWorkload, settleWithin, type Recording } from '../../support/network-workload.js'
import { splitBackend, splitFrontend, splitTls, startFaultProxy, type FaultPlan, type WireMessage } from '../../support/proxies/fault-proxy.js'
import type { Credentials } from '../../support/servers/test-server.js'

await isolateEnvironment('faults-network-cuts')
const { target, scramUser, cleartextUser, issueWorkload, newTag, serverSideGone, countTag, checkOutcomes, workloadSucceeds, clientOptions, record } = await networkWorkload()

// --- clean sessions, recorded to pick the cut points ----------------------------

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
