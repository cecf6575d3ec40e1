import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import * as net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as tls from 'node:tls'
import { createCertificates } from '../../support/servers/certs.js'
import { connect, ConnectionError, PgError } from '../../../src/index.js'
import { errorResponse, startupOk } from '../../support/fakes/backend-messages.js'
import { fakeServer, FakeConnection } from '../../support/fakes/fake-server.js'

// Servers and poolers that do not implement NegotiateProtocolVersion refuse a
// 3.2 startup outright (PgBouncer 1.18 answers 08P01 "bad packet header",
// some proxies close the connection). The client asks for 3.0 once, and goes
// straight to 3.0 for that host afterwards.

const V30 = 196608
const V32 = 196610

/** A server that refuses 3.2 the way `refuse` does and accepts 3.0; records the version of every startup. */
async function fallbackServer(refuse: (c: FakeConnection) => void) {
  const seen: number[] = []
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    seen.push(c.startupVersion)
    if (c.startupVersion === V32) return refuse(c)
    c.write(startupOk())
    await c.waitClosed()
  })
  return { s, seen }
}

for (const [name, refuse] of [
  ['closes the connection without a word', (c: FakeConnection) => c.socket.destroy()],
  ['answers 08P01 like PgBouncer 1.18', (c: FakeConnection) => {
    c.write(errorResponse({ S: 'FATAL', V: 'FATAL', C: '08P01', M: "bad packet header: '0000004e00030002'" }))
    c.socket.end()
  }],
  ['answers 0A000 like servers from before 9.3', (c: FakeConnection) => {
    c.write(errorResponse({ S: 'FATAL', V: 'FATAL', C: '0A000', M: 'unsupported frontend protocol 3.2: server supports 3.0 to 3.0' }))
    c.socket.end()
  }],
] as const) {
  test(`a server that ${name} on a 3.2 startup is asked again for 3.0, and the host is remembered`, async () => {
    const { s, seen } = await fallbackServer(refuse)
    try {
      const c = await connect(s.options)
      assert.equal(c.protocolVersion, '3.0')
      await c.end()
      const again = await connect(s.options)
      assert.equal(again.protocolVersion, '3.0')
      await again.end()
      assert.deepEqual(seen, [V32, V30, V30], 'one 3.2 startup, then 3.0 only')
      assert.deepEqual(s.errors, [])
    } finally {
      await s.close()
    }
  })
}

test('min_protocol_version=3.2 never falls back: the refusal is the error', async () => {
  const { s, seen } = await fallbackServer((c) => {
    c.write(errorResponse({ S: 'FATAL', V: 'FATAL', C: '08P01', M: 'bad packet header' }))
    c.socket.end()
  })
  try {
    await assert.rejects(connect({ ...s.options, minProtocolVersion: '3.2' }), (e: unknown) => e instanceof PgError && e.code === '08P01')
    assert.deepEqual(seen, [V32])
  } finally {
    await s.close()
  }
})

test('a server that closes every startup is asked once more at 3.0, then the error names the closed connection, and the host is not remembered as 3.0', async () => {
  const seen: number[] = []
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    seen.push(c.startupVersion)
    c.socket.destroy()
  })
  try {
    const closed = (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_CLOSED' && /during startup/.test(e.message)
    await assert.rejects(connect({ ...s.options, connectTimeout: 5000 }), closed)
    assert.deepEqual(seen, [V32, V30])
    // Its closes say nothing about the version: later attempts do not connect twice, nor fall back to 3.0.
    await assert.rejects(connect({ ...s.options, connectTimeout: 5000 }), closed)
    assert.deepEqual(seen, [V32, V30, V32])
  } finally {
    await s.close()
  }
})

test('an error after the server answered (authentication failed) is not a protocol refusal', async () => {
  const seen: number[] = []
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    seen.push(c.startupVersion)
    c.write(errorResponse({ S: 'FATAL', V: 'FATAL', C: '28P01', M: 'password authentication failed for user "u"' }))
    c.socket.end()
  })
  try {
    await assert.rejects(connect(s.options), (e: unknown) => e instanceof PgError && e.code === '28P01')
    assert.deepEqual(seen, [V32])
  } finally {
    await s.close()
  }
})

// ---- a 3.2 startup closed unanswered where no fallback follows ----

// Over TLS a close without a word is not taken as a refusal of 3.2 (someone on
// the path could cut the connection to force the shorter 3.0 cancel key), and
// min_protocol_version=3.2 forbids 3.0: the error then says that some poolers
// and proxies close a 3.2 startup, and how to connect to such a server.

/** A server that accepts TLS after an SSLRequest, reads the StartupMessage, and closes the connection without a word; records the version of every startup. */
async function tlsClosingServer(context: tls.SecureContext) {
  const seen: number[] = []
  const sockets = new Set<net.Socket>()
  const errors: unknown[] = []
  const server = net.createServer((raw) => {
    sockets.add(raw)
    raw.on('close', () => sockets.delete(raw))
    raw.on('error', () => {})
    raw.once('data', (first) => {
      // The client waits for the answer to its 8-byte SSLRequest before its TLS hello.
      if (first.length !== 8 || first.readInt32BE(4) !== 80877103) {
        errors.push(new Error(`expected an SSLRequest, got ${first.length} bytes`))
        raw.destroy()
        return
      }
      raw.pause()
      raw.write('S')
      const secure = new tls.TLSSocket(raw, { isServer: true, secureContext: context })
      const c = new FakeConnection(secure)
      c.readStartup().then(
        () => {
          seen.push(c.startupVersion)
          secure.destroy()
        },
        (err: unknown) => {
          if (!c.closed) errors.push(err)
          secure.destroy()
        },
      )
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as net.AddressInfo).port
  return {
    seen,
    errors,
    options: { host: '127.0.0.1', port, user: 'u', database: 'd', sslmode: 'require' as const, connectTimeout: 5000 },
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}

describe('a 3.2 startup closed without an answer, with no fallback', () => {
  let dir = ''
  let context: tls.SecureContext
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'pipegres-tls-close-'))
    const certs = await createCertificates(dir, 'u')
    context = tls.createSecureContext({ cert: await readFile(certs.serverCertFile), key: await readFile(certs.serverKeyFile) })
  })
  after(() => rm(dir, { recursive: true, force: true }))

  const closedWith = (pattern: RegExp, not?: RegExp) => (e: unknown) =>
    e instanceof ConnectionError && e.code === 'PG_CONNECTION_CLOSED' && pattern.test(e.message) && (not === undefined || !not.test(e.message))

  test('over TLS, asking for 3.2: the error says poolers and proxies may close a 3.2 startup and names max_protocol_version=3.0', async () => {
    const s = await tlsClosingServer(context)
    try {
      const err = await connect(s.options).then(
        () => assert.fail('connected to a server that closes every startup'),
        (e: unknown) => e,
      )
      assert.ok(
        closedWith(/^server at 127\.0\.0\.1:\d+ closed the connection during startup: some poolers and proxies close a startup that asks for protocol 3\.2; .*set max_protocol_version=3\.0$/)(err),
        `got ${String(err)}`,
      )
      assert.match((err as Error).message, /does not retry with 3\.0 over TLS/)
      assert.ok((err as Error).cause instanceof ConnectionError, 'the plain close is the cause')
      assert.deepEqual(s.seen, [V32], 'no fallback to 3.0 over TLS')
      assert.deepEqual(s.errors, [])
    } finally {
      await s.close()
    }
  })

  test('over TLS, asking for 3.0 (max_protocol_version=3.0): the plain message', async () => {
    const s = await tlsClosingServer(context)
    try {
      await assert.rejects(
        connect({ ...s.options, maxProtocolVersion: '3.0' }),
        closedWith(/^server at 127\.0\.0\.1:\d+ closed the connection during startup$/),
      )
      assert.deepEqual(s.seen, [V30])
      assert.deepEqual(s.errors, [])
    } finally {
      await s.close()
    }
  })

  test('over TLS with min_protocol_version=3.2: the error says that setting demands 3.2', async () => {
    const s = await tlsClosingServer(context)
    try {
      await assert.rejects(
        connect({ ...s.options, minProtocolVersion: '3.2' }),
        closedWith(/some poolers and proxies close a startup that asks for protocol 3\.2; min_protocol_version=3\.2 demands that version/, /does not retry/),
      )
      assert.deepEqual(s.seen, [V32])
    } finally {
      await s.close()
    }
  })

  test('without TLS, with min_protocol_version=3.2: no fallback, and the same hint', async () => {
    const seen: number[] = []
    const s = await fakeServer(async (c) => {
      await c.readStartup()
      seen.push(c.startupVersion)
      c.socket.destroy()
    })
    try {
      await assert.rejects(
        connect({ ...s.options, minProtocolVersion: '3.2', connectTimeout: 5000 }),
        closedWith(/closed the connection during startup: some poolers and proxies close a startup that asks for protocol 3\.2; min_protocol_version=3\.2 demands/),
      )
      assert.deepEqual(seen, [V32])
    } finally {
      await s.close()
    }
  })
})
