import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect, Client, ProtocolError, ConnectionError, AuthError, PgError } from '../../../src/index.js'
import {
  message,
  int32,
  int16,
  concat,
  parseComplete,
  bindComplete,
  parameterDescription,
  rowDescription,
  dataRow,
  commandComplete,
  readyForQuery,
  errorResponse,
  noticeResponse,
  parameterStatus,
  startupOk,
  authOk,
  backendKeyData,
  noData,
  type Column,
} from '../../support/fakes/backend-messages.js'
import type { FakeConnection } from '../../support/fakes/fake-server.js'
import { expectProtocolFailure, play, rejection, afterStartup, type Scenario } from '../../support/fakes/hostile-scenario.js'

// What a broken or hostile server can send, and what must happen: the client
// closes the connection with a protocol error, rejects every pending query with
// it, never delivers a row it cannot account for, and never throws into the host
// process (the test runner fails a test on any uncaught exception or unhandled
// rejection). Each case is a scenario (test/support/fakes/hostile-scenario.ts): what the
// fake server does, and what the client must do.

/** Answers the first execution of a statement: ParseComplete, description, BindComplete. */
const firstExecutionPrefix = (columns: Column[] = ['a']): Uint8Array => concat([parseComplete(), parameterDescription([]), rowDescription(columns), bindComplete()])

/** Every query gets the same bytes. */
const always = (bytes: Uint8Array) => ({ answer: () => bytes })

/** Writes `bytes` a while after a trust startup, when no query is waiting. */
const unprompted = (bytes: Uint8Array) => ({
  script: async (c: FakeConnection) => {
    await c.acceptStartup()
    await new Promise((r) => setTimeout(r, 50))
    c.write(bytes)
    await c.waitClosed()
  },
})

const noQueryWaiting = (pattern: RegExp) => async (c: Client, disconnected: Promise<Error | null>) => {
  const err = await disconnected
  assert.ok(err instanceof ProtocolError)
  assert.match(err.message, pattern)
  assert.equal(c.connected, false)
}

/** Answers the SSLRequest with `bytes` instead of one 'S' or 'N'. */
const sslAnswer = (bytes: Uint8Array) => ({
  script: async (c: FakeConnection) => {
    await c.readUntyped()
    c.socket.write(bytes)
    await c.waitClosed()
  },
})

/** Starts SCRAM-SHA-256: offers the mechanism and reads the client's first message. */
async function scramStart(c: FakeConnection): Promise<string> {
  await c.readStartup()
  c.write(message('R', int32(10), 'SCRAM-SHA-256', Uint8Array.of(0)))
  return (await c.read()).body.toString()
}

const fatal = (code: string, text: string): Uint8Array => errorResponse({ S: 'FATAL', V: 'FATAL', C: code, M: text })

const streamScenarios: Scenario[] = [
  {
    name: 'a DataRow with more columns than the RowDescription fails the connection',
    server: always(concat([firstExecutionPrefix(['a']), dataRow(['1', '2']), commandComplete('SELECT 1'), readyForQuery()])),
    expect: { queries: ['SELECT a', 'SELECT b'], failWith: /DataRow with 2 columns where the RowDescription has 1/ },
  },
  {
    name: 'a DataRow with fewer columns than the RowDescription fails the connection',
    server: always(concat([firstExecutionPrefix(['a', 'b']), dataRow(['1']), commandComplete('SELECT 1'), readyForQuery()])),
    expect: { queries: ['SELECT a, b'], failWith: /DataRow with 1 columns where the RowDescription has 2/ },
  },
  {
    name: 'a DataRow whose field length runs past the message fails the connection',
    server: always(concat([firstExecutionPrefix(), message('D', int16(1), int32(100), Buffer.from('abc')), commandComplete('SELECT 1'), readyForQuery()])),
    expect: { queries: ['SELECT a'], failWith: /malformed DataRow/ },
  },
  {
    name: 'negative field lengths other than -1 fail the connection',
    server: always(concat([firstExecutionPrefix(), message('D', int16(1), int32(-2)), commandComplete('SELECT 1'), readyForQuery()])),
    expect: { queries: ['SELECT a'], failWith: /malformed DataRow/ },
  },
  {
    name: 'an unknown message type fails the connection',
    server: always(concat([firstExecutionPrefix(), message('!', 'what'), commandComplete('SELECT 0'), readyForQuery()])),
    expect: { queries: ['SELECT a', 'SELECT a'], failWith: /unknown message type '!'/ },
  },
  ...(
    [
      ['length below 4', Uint8Array.of(0x44, 0, 0, 0, 2), /invalid length 2/],
      ['negative length', Uint8Array.of(0x44, 0xff, 0xff, 0xff, 0xf0), /invalid length -16/],
      ['length near 2^31', Uint8Array.of(0x44, 0x7f, 0xff, 0xff, 0xfe), /more than the limit/],
      ['ReadyForQuery of the wrong length', message('Z', 'II'), /ReadyForQuery of length 7; it must be 5/],
      ['BindComplete with a body', message('2', [1]), /BindComplete of length 5; it must be 4/],
    ] as const
  ).map(([what, bytes, failWith]) => ({
    name: `a message with ${what} fails the connection before anything is allocated`,
    server: always(concat([firstExecutionPrefix(), bytes])),
    expect: { queries: ['SELECT a', 'SELECT a'], failWith },
  })),
  {
    name: 'a ReadyForQuery right behind the startup one fails the connection attempt',
    server: afterStartup(startupOk(), readyForQuery()),
    expect: { connectRejects: rejection(ProtocolError, /ReadyForQuery while no query was waiting/) },
  },
  {
    name: 'a ReadyForQuery that no query is waiting for fails the connection',
    server: unprompted(readyForQuery()),
    expect: { client: noQueryWaiting(/ReadyForQuery while no query was waiting/) },
  },
  {
    // The first query is answered with two ReadyForQuery; the second query must
    // fail instead of taking the stray one, and then the real answers, as its own.
    name: 'a reply with an extra ReadyForQuery is never shifted onto the next query',
    server: {
      answer: (i) =>
        i === 0
          ? concat([firstExecutionPrefix(['n']), dataRow(['1']), commandComplete('SELECT 1'), readyForQuery(), readyForQuery()])
          : concat([bindComplete(), dataRow([String(i + 1)]), commandComplete('SELECT 1'), readyForQuery()]),
    },
    expect: {
      client: async (c, disconnected) => {
        const first = c.query('SELECT n')
        const rest = [c.query('SELECT n'), c.query('SELECT n')]
        assert.deepEqual((await first).rows, [{ n: '1' }])
        await expectProtocolFailure(c, disconnected, rest, /ReadyForQuery where a reply/)
      },
    },
  },
  {
    name: 'rows arriving before the statement is described fail the connection',
    server: always(concat([parseComplete(), dataRow(['1']), readyForQuery()])),
    expect: { queries: ['SELECT a'], failWith: /DataRow where a reply/ },
  },
  {
    name: 'a result for the simple protocol arriving during an extended query fails the connection',
    server: always(concat([firstExecutionPrefix(), rowDescription(['x']), dataRow(['1']), commandComplete('SELECT 1'), readyForQuery()])),
    expect: { queries: ['SELECT a'], failWith: /RowDescription where a reply/ },
  },
  {
    name: 'an ErrorResponse with no fields still rejects the query with a PgError, and the stream stays in step',
    server: {
      answer: (i) =>
        i === 0 ? concat([message('E', [0]), readyForQuery()]) : concat([firstExecutionPrefix(['n']), dataRow(['ok']), commandComplete('SELECT 1'), readyForQuery()]),
    },
    expect: {
      client: async (c) => {
        const err = await c.query('SELECT broken').catch((e: unknown) => e)
        assert.ok(err instanceof PgError)
        assert.equal(err.code, 'XX000')
        assert.match(err.message, /without a message/)
        assert.deepEqual((await c.query('SELECT n')).rows, [{ n: 'ok' }])
      },
    },
  },
  {
    name: 'an ErrorResponse while no query is waiting fails the connection',
    server: unprompted(errorResponse({ S: 'ERROR', V: 'ERROR', C: 'XX000', M: 'out of nowhere' })),
    expect: { client: noQueryWaiting(/ErrorResponse while no query was waiting/) },
  },
  {
    name: 'a FATAL error rejects everything pending with a connection error carrying it',
    server: always(fatal('57P01', 'terminating connection due to administrator command')),
    expect: {
      client: async (c) => {
        const settled = await Promise.allSettled([c.query('SELECT 1'), c.query('SELECT 2')])
        for (const r of settled) {
          const e = (r as PromiseRejectedResult).reason
          assert.ok(e instanceof ConnectionError)
          assert.equal(e.code, 'PG_CONNECTION_CLOSED')
          assert.equal((e.cause as PgError).code, '57P01')
        }
      },
    },
  },
  {
    name: 'column names that are JavaScript code or prototype keys come back as plain data',
    server: always(
      concat([
        firstExecutionPrefix(["'); process.exit(7); ('", '__proto__', 'constructor', 'toString', '${process.exit(8)}']),
        dataRow(['1', '{"polluted":true}', '3', '4', '5']),
        commandComplete('SELECT 1'),
        readyForQuery(),
      ]),
    ),
    expect: {
      client: async (c) => {
        const { rows } = await c.query('SELECT hostile')
        const row = rows[0]!
        assert.deepEqual(Object.keys(row), ["'); process.exit(7); ('", '__proto__', 'constructor', 'toString', '${process.exit(8)}'])
        assert.equal(Object.getPrototypeOf(row), Object.prototype)
        assert.equal(Object.getOwnPropertyDescriptor(row, '__proto__')!.value, '{"polluted":true}')
        assert.equal(row.constructor, '3')
        assert.equal(({} as Record<string, unknown>).polluted, undefined)
      },
    },
  },
  {
    name: 'notices and parameter changes in the middle of a result do not disturb it',
    server: always(
      concat([
        firstExecutionPrefix(['n']),
        dataRow(['1']),
        noticeResponse({ S: 'NOTICE', C: '00000', M: 'halfway' }),
        parameterStatus('TimeZone', 'UTC'),
        dataRow(['2']),
        commandComplete('SELECT 2'),
        readyForQuery(),
      ]),
    ),
    expect: {
      client: async (c) => {
        const notices: string[] = []
        c.on('notice', (n) => notices.push(n.message))
        assert.deepEqual((await c.query('SELECT n')).rows, [{ n: '1' }, { n: '2' }])
        assert.deepEqual(notices, ['halfway'])
        assert.equal(c.serverParameters.TimeZone, 'UTC')
      },
    },
  },
  {
    name: 'a reply delivered one byte per TCP segment is read correctly',
    server: {
      script: async (c) => {
        await c.readStartup()
        await c.writeSlowly(startupOk())
        for (let i = 0; ; i++) {
          const m = await c.readUntilSync()
          if (m.some((x) => x.type === 'X')) return
          const reply = i === 0 ? firstExecutionPrefix(['n']) : bindComplete()
          await c.writeSlowly(concat([reply, dataRow([`v${i}`]), dataRow([null]), commandComplete('SELECT 2'), readyForQuery()]))
        }
      },
    },
    expect: {
      client: async (c) => {
        const [a, b] = await Promise.all([c.query('SELECT n'), c.query('SELECT n')])
        assert.deepEqual(a.rows, [{ n: 'v0' }, { n: null }])
        assert.deepEqual(b.rows, [{ n: 'v1' }, { n: null }])
      },
    },
  },
  {
    name: 'a server that closes the connection in the middle of a message fails what is pending',
    server: {
      answer: (i, conn) => {
        if (i === 0) {
          conn.write(firstExecutionPrefix(), dataRow(['abc']).subarray(0, 8))
          setTimeout(() => conn.socket.end(), 20)
        }
        return null
      },
    },
    expect: {
      client: async (c) => {
        const settled = await Promise.allSettled([c.query('SELECT a'), c.query('SELECT a')])
        for (const r of settled) {
          const e = (r as PromiseRejectedResult).reason
          assert.ok(e instanceof ConnectionError, String(e))
          assert.equal(e.code, 'PG_CONNECTION_CLOSED')
        }
        assert.match((settled[0] as PromiseRejectedResult).reason.message, /while queries were in flight in the middle of a message/)
      },
    },
  },
  {
    name: 'COPY FROM STDIN through query() is refused cleanly when nothing is behind it',
    server: {
      script: async (c) => {
        await c.acceptStartup()
        await c.readUntilSync()
        c.write(parseComplete(), parameterDescription([]), noData(), bindComplete(), message('G', [0], int16(0)))
        assert.equal((await c.read()).type, 'f')
        assert.equal((await c.read()).type, 'S')
        c.write(errorResponse({ S: 'ERROR', V: 'ERROR', C: '57014', M: 'COPY from stdin failed' }), readyForQuery())
        await c.readUntilSync()
        c.write(parseComplete(), parameterDescription([]), rowDescription(['n']), bindComplete(), dataRow(['1']), commandComplete('SELECT 1'), readyForQuery())
        await c.waitClosed()
      },
    },
    expect: {
      client: async (c, _disconnected, s) => {
        await assert.rejects(c.query('COPY t FROM STDIN'), rejection(ProtocolError, /copyFrom/))
        assert.deepEqual((await c.query('SELECT n')).rows, [{ n: '1' }])
        assert.deepEqual(s.errors, [])
      },
    },
  },
]

const startupScenarios: Scenario[] = [
  {
    name: 'a server that never answers the startup message hits the connect timeout',
    server: afterStartup(),
    expect: {
      run: async (s) => {
        const t0 = performance.now()
        await assert.rejects(connect({ ...s.options, connectTimeout: 300 }), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECT_TIMEOUT')
        const took = performance.now() - t0
        assert.ok(took >= 290 && took < 2000, `took ${took} ms`)
      },
    },
  },
  {
    name: 'a server that closes right after SSLRequest',
    server: {
      script: async (c) => {
        await c.readUntyped()
        c.socket.destroy()
      },
    },
    options: { sslmode: 'require' },
    expect: { connectRejects: rejection(ConnectionError, /SSLRequest/) },
  },
  {
    name: 'bytes after the SSL answer, before the TLS handshake, are refused',
    server: sslAnswer(concat([Buffer.from('S'), startupOk()])),
    options: { sslmode: 'require' },
    expect: { connectRejects: rejection(ProtocolError, /unexpected bytes after its answer to SSLRequest/) },
  },
  {
    name: 'an invalid answer to SSLRequest is a protocol error',
    server: sslAnswer(Buffer.from('X')),
    options: { sslmode: 'prefer' },
    expect: { connectRejects: ProtocolError },
  },
  {
    name: 'sslmode=require never falls back to plaintext when the server refuses TLS',
    server: afterStartup(startupOk()),
    expect: {
      run: async (s) => {
        await assert.rejects(connect({ ...s.options, sslmode: 'require' }), rejection(ConnectionError, /does not support TLS/, (e) => (e as ConnectionError).code === 'PG_TLS'))
        // prefer does fall back.
        const c = await connect({ ...s.options, sslmode: 'prefer' })
        assert.equal(c.tls, false)
        await c.end()
      },
    },
  },
  {
    name: 'an unknown SASL mechanism is refused with the list the server offered',
    server: afterStartup(message('R', int32(10), 'SCRAM-SHA-1', 'X-MAGIC', [0])),
    options: { password: 'secret-pw' },
    expect: { connectRejects: rejection(AuthError, /SCRAM-SHA-1/, (e) => !/secret-pw/.test(e.message)) },
  },
  {
    name: 'a bad SCRAM server signature is refused',
    server: {
      script: async (c) => {
        const nonce = /r=([^,]+)/.exec(await scramStart(c))![1]!
        c.write(message('R', int32(11), Buffer.from(`r=${nonce}server,s=${Buffer.from('salt').toString('base64')},i=4096`)))
        await c.read()
        c.write(message('R', int32(12), Buffer.from(`v=${Buffer.alloc(32).toString('base64')}`)))
        c.write(authOk(), backendKeyData(1), readyForQuery())
        await c.waitClosed()
      },
    },
    options: { password: 'secret-pw' },
    expect: { connectRejects: rejection(AuthError, /signature/i, (e) => !/secret-pw/.test(e.message)) },
  },
  {
    name: 'AuthenticationOk in the middle of SCRAM (skipping the server proof) is refused',
    server: {
      script: async (c) => {
        await scramStart(c)
        c.write(authOk(), backendKeyData(1), readyForQuery())
        await c.waitClosed()
      },
    },
    options: { password: 'pw' },
    expect: { connectRejects: ProtocolError },
  },
  {
    name: 'a cleartext password request is refused when channel binding is required',
    server: {
      script: async (c) => {
        await c.readStartup()
        c.write(message('R', int32(3)))
        await c.read()
      },
    },
    options: { password: 'secret-pw', channelBinding: 'require' },
    expect: {
      connectRejects: rejection(AuthError, /channel_binding=require/),
      after: (s) => assert.equal(s.connections[0]!.received.some((m) => m.type === 'p'), false, 'the password was never sent'),
    },
  },
  {
    name: 'a cleartext password request is refused when require_auth forbids it',
    server: afterStartup(message('R', int32(3))),
    options: { password: 'pw', requireAuth: 'scram-sha-256' },
    expect: { connectRejects: rejection(AuthError, /require_auth/) },
  },
  ...(
    [
      [196608, true],
      [196611, false],
      [0, false],
      [262144, false],
    ] as const
  ).map(
    ([version, ok]): Scenario => ({
      name: `NegotiateProtocolVersion is honoured downwards and refused upwards: ${version} is ${ok ? 'honoured' : 'refused'}`,
      server: afterStartup(message('v', int32(version), int32(0)), startupOk()),
      expect: ok
        ? { client: async (c) => assert.equal(c.protocolVersion, '3.0') }
        : { connectRejects: rejection(ProtocolError, /offered protocol version/) },
    }),
  ),
  {
    name: 'the client asks for protocol 3.2 and accepts a long cancel key',
    server: afterStartup(authOk(), backendKeyData(77, new Uint8Array(32).fill(9)), readyForQuery()),
    expect: {
      client: async (c, _disconnected, s) => {
        assert.equal(s.connections[0]!.startupVersion, 196610)
        assert.equal(c.protocolVersion, '3.2')
        assert.equal(c.processId, 77)
      },
    },
  },
  {
    name: 'a long cancel key under protocol 3.0 is refused',
    server: afterStartup(message('v', int32(196608), int32(0)), authOk(), backendKeyData(1, new Uint8Array(8)), readyForQuery()),
    expect: { connectRejects: rejection(ProtocolError, /cancel key of 8 bytes/) },
  },
  {
    name: 'messages that cannot occur during startup are refused',
    server: afterStartup(authOk(), dataRow(['x'])),
    expect: { connectRejects: rejection(ProtocolError, /DataRow during startup/) },
  },
  {
    name: 'a startup error from the server is reported as the PgError',
    server: {
      script: async (c) => {
        await c.readStartup()
        c.write(fatal('28P01', 'password authentication failed for user "u"'))
        c.socket.end()
      },
    },
    expect: { connectRejects: (e: unknown) => e instanceof PgError && e.code === '28P01' },
  },
]

for (const scenario of [...streamScenarios, ...startupScenarios]) test(scenario.name, () => play(scenario))
