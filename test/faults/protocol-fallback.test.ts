import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect, ConnectionError, PgError } from '../../src/index.js'
import { errorResponse, startupOk } from '../helpers/backend-messages.js'
import { fakeServer, type FakeConnection } from '../helpers/fake-server.js'

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
