import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect, Client, ProtocolError, ConnectionError, AuthError, PgError } from '../../src/index.js'
import {
  fakeServer,
  msg,
  i32,
  i16,
  parseComplete,
  bindComplete,
  parameterDescription,
  rowDescription,
  dataRow,
  commandComplete,
  readyForQuery,
  errorResponse,
  parameterStatus,
  startupOk,
  authOk,
  backendKeyData,
  noData,
  type FakeConnection,
} from '../helpers/fake-server.js'

// What a broken or hostile server can send, and what must happen: the client
// closes the connection with a protocol error, rejects every pending query with
// it, never delivers a row it cannot account for, and never throws into the host
// process (the test runner fails a test on any uncaught exception or unhandled
// rejection).

/** Answers the first execution of a one-column statement: ParseComplete, description, BindComplete. */
function firstExecutionPrefix(columns: Parameters<typeof rowDescription>[0] = ['a']): Buffer {
  return Buffer.concat([parseComplete(), parameterDescription([]), rowDescription(columns), bindComplete()])
}

/** A server that completes startup, then answers each query (one per Sync) with `answer(i)`. */
async function serverAnswering(answer: (i: number, c: FakeConnection) => Buffer | null) {
  return fakeServer(async (c) => {
    await c.acceptStartup()
    for (let i = 0; ; i++) {
      const msgs = await c.readUntilSync()
      if (msgs.some((m) => m.type === 'X')) return
      const a = answer(i, c)
      if (a !== null) c.write(a)
    }
  })
}

const disconnects = new WeakMap<Client, Promise<Error>>()

/** Connects and starts watching for the disconnect event at once, so it cannot be missed. */
async function open(options: Parameters<typeof connect>[0]): Promise<Client> {
  const c = await connect(options)
  disconnects.set(c, new Promise((r) => c.once('disconnect', r)))
  return c
}

async function expectProtocolFailure(client: Client, pending: Promise<unknown>[], pattern: RegExp): Promise<void> {
  const closed = disconnects.get(client)!
  const settled = await Promise.allSettled(pending)
  for (const s of settled) {
    assert.equal(s.status, 'rejected', 'no query may succeed on a broken stream')
    const e = (s as PromiseRejectedResult).reason as Error
    assert.ok(e instanceof ProtocolError || e instanceof ConnectionError, `unexpected ${e}`)
  }
  const first = (settled[0] as PromiseRejectedResult).reason as Error
  assert.ok(first instanceof ProtocolError, `expected a ProtocolError, got ${first}`)
  assert.match(first.message, pattern)
  assert.ok((await closed) instanceof ProtocolError)
  // The client itself is not closed: a later query would open a new connection.
  assert.equal(client.closed, false)
  assert.equal(client.connected, false)
}

test('a DataRow with more columns than the RowDescription fails the connection', async () => {
  const s = await serverAnswering(() => Buffer.concat([firstExecutionPrefix(['a']), dataRow(['1', '2']), commandComplete('SELECT 1'), readyForQuery()]))
  const c = await open(s.options)
  try {
    await expectProtocolFailure(c, [c.query('SELECT a'), c.query('SELECT b')], /DataRow with 2 columns where the RowDescription has 1/)
  } finally {
    await c.end()
    await s.close()
  }
})

test('a DataRow with fewer columns than the RowDescription fails the connection', async () => {
  const s = await serverAnswering(() => Buffer.concat([firstExecutionPrefix(['a', 'b']), dataRow(['1']), commandComplete('SELECT 1'), readyForQuery()]))
  const c = await open(s.options)
  try {
    await expectProtocolFailure(c, [c.query('SELECT a, b')], /DataRow with 1 columns where the RowDescription has 2/)
  } finally {
    await c.end()
    await s.close()
  }
})

test('a DataRow whose field length runs past the message fails the connection', async () => {
  const bad = msg('D', i16(1), i32(100), Buffer.from('abc'))
  const s = await serverAnswering(() => Buffer.concat([firstExecutionPrefix(), bad, commandComplete('SELECT 1'), readyForQuery()]))
  const c = await open(s.options)
  try {
    await expectProtocolFailure(c, [c.query('SELECT a')], /malformed DataRow/)
  } finally {
    await c.end()
    await s.close()
  }
})

test('negative field lengths other than -1 fail the connection', async () => {
  const bad = msg('D', i16(1), i32(-2))
  const s = await serverAnswering(() => Buffer.concat([firstExecutionPrefix(), bad, commandComplete('SELECT 1'), readyForQuery()]))
  const c = await open(s.options)
  try {
    await expectProtocolFailure(c, [c.query('SELECT a')], /malformed DataRow/)
  } finally {
    await c.end()
    await s.close()
  }
})

test('an unknown message type fails the connection', async () => {
  const s = await serverAnswering(() => Buffer.concat([firstExecutionPrefix(), msg('!', 'what'), commandComplete('SELECT 0'), readyForQuery()]))
  const c = await open(s.options)
  try {
    await expectProtocolFailure(c, [c.query('SELECT a'), c.query('SELECT a')], /unknown message type '!'/)
  } finally {
    await c.end()
    await s.close()
  }
})

for (const [name, bytes, pattern] of [
  ['length below 4', Buffer.from([0x44, 0, 0, 0, 2]), /invalid length 2/],
  ['negative length', Buffer.from([0x44, 0xff, 0xff, 0xff, 0xf0]), /invalid length -16/],
  ['length near 2^31', Buffer.from([0x44, 0x7f, 0xff, 0xff, 0xfe]), /more than the limit/],
  ['ReadyForQuery of the wrong length', msg('Z', 'II'), /ReadyForQuery of length 7; it must be 5/],
  ['BindComplete with a body', msg('2', [1]), /BindComplete of length 5; it must be 4/],
] as const) {
  test(`a message with ${name} fails the connection before anything is allocated`, async () => {
    const s = await serverAnswering(() => Buffer.concat([firstExecutionPrefix(), bytes]))
    const c = await open(s.options)
    try {
      await expectProtocolFailure(c, [c.query('SELECT a'), c.query('SELECT a')], pattern)
    } finally {
      await c.end()
      await s.close()
    }
  })
}

test('a ReadyForQuery right behind the startup one fails the connection attempt', async () => {
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(startupOk(), readyForQuery())
    await c.waitClosed()
  })
  try {
    await assert.rejects(connect(s.options), (e: unknown) => e instanceof ProtocolError && /ReadyForQuery while no query was waiting/.test((e as Error).message))
  } finally {
    await s.close()
  }
})

test('a ReadyForQuery that no query is waiting for fails the connection', async () => {
  const s = await fakeServer(async (c) => {
    await c.acceptStartup()
    await new Promise((r) => setTimeout(r, 50))
    c.write(readyForQuery())
    await c.waitClosed()
  })
  const c = await connect(s.options)
  try {
    const err = await new Promise<Error | null>((r) => c.once('disconnect', r))
    assert.ok(err instanceof ProtocolError)
    assert.match(err.message, /ReadyForQuery while no query was waiting/)
    assert.equal(c.connected, false)
  } finally {
    await c.end()
    await s.close()
  }
})

test('a reply with an extra ReadyForQuery is never shifted onto the next query', async () => {
  // The first query is answered with two ReadyForQuery; the second query must
  // fail instead of taking the stray one, and then the real answers, as its own.
  const s = await serverAnswering((i) => {
    if (i === 0) return Buffer.concat([firstExecutionPrefix(['n']), dataRow(['1']), commandComplete('SELECT 1'), readyForQuery(), readyForQuery()])
    return Buffer.concat([bindComplete(), dataRow([String(i + 1)]), commandComplete('SELECT 1'), readyForQuery()])
  })
  const c = await open(s.options)
  try {
    const first = c.query('SELECT n')
    const rest = [c.query('SELECT n'), c.query('SELECT n')]
    assert.deepEqual((await first).rows, [{ n: '1' }])
    await expectProtocolFailure(c, rest, /ReadyForQuery where a reply/)
  } finally {
    await c.end()
    await s.close()
  }
})

test('rows arriving before the statement is described fail the connection', async () => {
  const s = await serverAnswering(() => Buffer.concat([parseComplete(), dataRow(['1']), readyForQuery()]))
  const c = await open(s.options)
  try {
    await expectProtocolFailure(c, [c.query('SELECT a')], /DataRow where a reply/)
  } finally {
    await c.end()
    await s.close()
  }
})

test('a result for the simple protocol arriving during an extended query fails the connection', async () => {
  const s = await serverAnswering(() => Buffer.concat([firstExecutionPrefix(), rowDescription(['x']), dataRow(['1']), commandComplete('SELECT 1'), readyForQuery()]))
  const c = await open(s.options)
  try {
    await expectProtocolFailure(c, [c.query('SELECT a')], /RowDescription where a reply/)
  } finally {
    await c.end()
    await s.close()
  }
})

test('an ErrorResponse with no fields still rejects the query with a PgError, and the stream stays in step', async () => {
  const s = await serverAnswering((i) =>
    i === 0 ? Buffer.concat([msg('E', [0]), readyForQuery()]) : Buffer.concat([firstExecutionPrefix(['n']), dataRow(['ok']), commandComplete('SELECT 1'), readyForQuery()]),
  )
  const c = await connect(s.options)
  try {
    const err = await c.query('SELECT broken').catch((e: unknown) => e)
    assert.ok(err instanceof PgError)
    assert.equal(err.code, 'XX000')
    assert.match(err.message, /without a message/)
    assert.deepEqual((await c.query('SELECT n')).rows, [{ n: 'ok' }])
  } finally {
    await c.end()
    await s.close()
  }
})

test('an ErrorResponse while no query is waiting fails the connection', async () => {
  const s = await fakeServer(async (c) => {
    await c.acceptStartup()
    await new Promise((r) => setTimeout(r, 50))
    c.write(errorResponse({ S: 'ERROR', V: 'ERROR', C: 'XX000', M: 'out of nowhere' }))
    await c.waitClosed()
  })
  const c = await connect(s.options)
  try {
    const err = await new Promise<Error | null>((r) => c.once('disconnect', r))
    assert.ok(err instanceof ProtocolError)
    assert.match(err.message, /ErrorResponse while no query was waiting/)
  } finally {
    await c.end()
    await s.close()
  }
})

test('a FATAL error rejects everything pending with a connection error carrying it', async () => {
  const s = await serverAnswering(() => errorResponse({ S: 'FATAL', V: 'FATAL', C: '57P01', M: 'terminating connection due to administrator command' }))
  const c = await connect(s.options)
  try {
    const settled = await Promise.allSettled([c.query('SELECT 1'), c.query('SELECT 2')])
    for (const r of settled) {
      const e = (r as PromiseRejectedResult).reason
      assert.ok(e instanceof ConnectionError)
      assert.equal(e.code, 'PG_CONNECTION_CLOSED')
      assert.equal((e.cause as PgError).code, '57P01')
    }
  } finally {
    await c.end()
    await s.close()
  }
})

test('column names that are JavaScript code or prototype keys come back as plain data', async () => {
  const names = ["'); process.exit(7); ('", '__proto__', 'constructor', 'toString', '${process.exit(8)}']
  const s = await serverAnswering(() =>
    Buffer.concat([firstExecutionPrefix(names), dataRow(['1', '{"polluted":true}', '3', '4', '5']), commandComplete('SELECT 1'), readyForQuery()]),
  )
  const c = await connect(s.options)
  try {
    const { rows } = await c.query('SELECT hostile')
    const row = rows[0]!
    assert.deepEqual(Object.keys(row), names)
    assert.equal(Object.getPrototypeOf(row), Object.prototype)
    assert.equal(Object.getOwnPropertyDescriptor(row, '__proto__')!.value, '{"polluted":true}')
    assert.equal(row.constructor, '3')
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  } finally {
    await c.end()
    await s.close()
  }
})

test('notices and parameter changes in the middle of a result do not disturb it', async () => {
  const s = await serverAnswering(() =>
    Buffer.concat([
      firstExecutionPrefix(['n']),
      dataRow(['1']),
      msg('N', Buffer.from('SNOTICE\0C00000\0Mhalfway\0\0')),
      parameterStatus('TimeZone', 'UTC'),
      dataRow(['2']),
      commandComplete('SELECT 2'),
      readyForQuery(),
    ]),
  )
  const c = await connect(s.options)
  const notices: string[] = []
  c.on('notice', (n) => notices.push(n.message))
  try {
    assert.deepEqual((await c.query('SELECT n')).rows, [{ n: '1' }, { n: '2' }])
    assert.deepEqual(notices, ['halfway'])
    assert.equal(c.serverParameters.TimeZone, 'UTC')
  } finally {
    await c.end()
    await s.close()
  }
})

test('a reply delivered one byte per TCP segment is read correctly', async () => {
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    await c.writeSlowly(startupOk())
    for (let i = 0; ; i++) {
      const m = await c.readUntilSync()
      if (m.some((x) => x.type === 'X')) return
      const reply = i === 0 ? firstExecutionPrefix(['n']) : bindComplete()
      await c.writeSlowly(Buffer.concat([reply, dataRow([`v${i}`]), dataRow([null]), commandComplete('SELECT 2'), readyForQuery()]))
    }
  })
  const c = await connect(s.options)
  try {
    const [a, b] = await Promise.all([c.query('SELECT n'), c.query('SELECT n')])
    assert.deepEqual(a.rows, [{ n: 'v0' }, { n: null }])
    assert.deepEqual(b.rows, [{ n: 'v1' }, { n: null }])
  } finally {
    await c.end()
    await s.close()
  }
})

test('a server that closes the connection in the middle of a message fails what is pending', async () => {
  const s = await serverAnswering((i, conn) => {
    if (i === 0) {
      conn.write(Buffer.concat([firstExecutionPrefix(), dataRow(['abc']).subarray(0, 8)]))
      setTimeout(() => conn.socket.end(), 20)
    }
    return null
  })
  const c = await connect(s.options)
  try {
    const settled = await Promise.allSettled([c.query('SELECT a'), c.query('SELECT a')])
    for (const r of settled) {
      const e = (r as PromiseRejectedResult).reason
      assert.ok(e instanceof ConnectionError, String(e))
      assert.equal(e.code, 'PG_CONNECTION_CLOSED')
    }
    assert.match((settled[0] as PromiseRejectedResult).reason.message, /while queries were in flight in the middle of a message/)
  } finally {
    await c.end()
    await s.close()
  }
})

// ---- startup ----

test('a server that never answers the startup message hits the connect timeout', async () => {
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    await c.waitClosed()
  })
  try {
    const t0 = performance.now()
    await assert.rejects(connect({ ...s.options, connectTimeout: 300 }), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECT_TIMEOUT')
    const took = performance.now() - t0
    assert.ok(took >= 290 && took < 2000, `took ${took} ms`)
  } finally {
    await s.close()
  }
})

test('a server that closes right after SSLRequest', async () => {
  const s = await fakeServer(async (c) => {
    await c.readUntyped()
    c.socket.destroy()
  })
  try {
    await assert.rejects(connect({ ...s.options, sslmode: 'require' }), (e: unknown) => e instanceof ConnectionError && /SSLRequest/.test((e as Error).message))
  } finally {
    await s.close()
  }
})

test('bytes after the SSL answer, before the TLS handshake, are refused', async () => {
  const s = await fakeServer(async (c) => {
    await c.readUntyped()
    c.socket.write(Buffer.concat([Buffer.from('S'), startupOk()]))
    await c.waitClosed()
  })
  try {
    await assert.rejects(connect({ ...s.options, sslmode: 'require' }), (e: unknown) => e instanceof ProtocolError && /unexpected bytes after its answer to SSLRequest/.test((e as Error).message))
  } finally {
    await s.close()
  }
})

test('an invalid answer to SSLRequest is a protocol error', async () => {
  const s = await fakeServer(async (c) => {
    await c.readUntyped()
    c.socket.write('X')
    await c.waitClosed()
  })
  try {
    await assert.rejects(connect({ ...s.options, sslmode: 'prefer' }), ProtocolError)
  } finally {
    await s.close()
  }
})

test('sslmode=require never falls back to plaintext when the server refuses TLS', async () => {
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(startupOk())
    await c.waitClosed()
  })
  try {
    await assert.rejects(connect({ ...s.options, sslmode: 'require' }), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_TLS' && /does not support TLS/.test((e as Error).message))
    // prefer does fall back.
    const c = await connect({ ...s.options, sslmode: 'prefer' })
    assert.equal(c.tls, false)
    await c.end()
  } finally {
    await s.close()
  }
})

test('an unknown SASL mechanism is refused with the list the server offered', async () => {
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(msg('R', i32(10), 'SCRAM-SHA-1', 'X-MAGIC', Buffer.from([0])))
    await c.waitClosed()
  })
  try {
    await assert.rejects(connect({ ...s.options, password: 'secret-pw' }), (e: unknown) => e instanceof AuthError && /SCRAM-SHA-1/.test((e as Error).message) && !/secret-pw/.test((e as Error).message))
  } finally {
    await s.close()
  }
})

test('a bad SCRAM server signature is refused', async () => {
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(msg('R', i32(10), 'SCRAM-SHA-256', Buffer.from([0])))
    const first = await c.read()
    const text = first.body.toString()
    const nonce = /r=([^,]+)/.exec(text)![1]!
    c.write(msg('R', i32(11), Buffer.from(`r=${nonce}server,s=${Buffer.from('salt').toString('base64')},i=4096`)))
    await c.read()
    c.write(msg('R', i32(12), Buffer.from(`v=${Buffer.alloc(32).toString('base64')}`)))
    c.write(authOk(), backendKeyData(1), readyForQuery())
    await c.waitClosed()
  })
  try {
    await assert.rejects(connect({ ...s.options, password: 'secret-pw' }), (e: unknown) => e instanceof AuthError && /signature/i.test((e as Error).message) && !/secret-pw/.test((e as Error).message))
  } finally {
    await s.close()
  }
})

test('AuthenticationOk in the middle of SCRAM (skipping the server proof) is refused', async () => {
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(msg('R', i32(10), 'SCRAM-SHA-256', Buffer.from([0])))
    await c.read()
    c.write(authOk(), backendKeyData(1), readyForQuery())
    await c.waitClosed()
  })
  try {
    await assert.rejects(connect({ ...s.options, password: 'pw' }), ProtocolError)
  } finally {
    await s.close()
  }
})

test('a cleartext password request is refused when channel binding is required', async () => {
  let asked = false
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(msg('R', i32(3)))
    const m = await c.read()
    asked = m.type === 'p'
  })
  try {
    await assert.rejects(connect({ ...s.options, password: 'secret-pw', channelBinding: 'require' }), (e: unknown) => e instanceof AuthError && /channel_binding=require/.test((e as Error).message))
    assert.equal(asked, false, 'the password was never sent')
  } finally {
    await s.close()
  }
})

test('a cleartext password request is refused when require_auth forbids it', async () => {
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(msg('R', i32(3)))
    await c.waitClosed()
  })
  try {
    await assert.rejects(connect({ ...s.options, password: 'pw', requireAuth: 'scram-sha-256' }), (e: unknown) => e instanceof AuthError && /require_auth/.test((e as Error).message))
  } finally {
    await s.close()
  }
})

test('NegotiateProtocolVersion is honoured downwards and refused upwards', async () => {
  for (const [version, ok] of [
    [196608, true],
    [196611, false],
    [0, false],
    [262144, false],
  ] as const) {
    const s = await fakeServer(async (c) => {
      await c.readStartup()
      c.write(msg('v', i32(version), i32(0)), startupOk())
      await c.waitClosed()
    })
    try {
      if (ok) {
        const c = await connect(s.options)
        assert.equal(c.protocolVersion, '3.0')
        await c.end()
      } else {
        await assert.rejects(connect(s.options), (e: unknown) => e instanceof ProtocolError && /offered protocol version/.test((e as Error).message))
      }
    } finally {
      await s.close()
    }
  }
})

test('the client asks for protocol 3.2 and accepts a long cancel key', async () => {
  let version = 0
  const key = Buffer.alloc(32, 9)
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    version = c.startupVersion
    c.write(authOk(), backendKeyData(77, key), readyForQuery())
    await c.waitClosed()
  })
  try {
    const c = await connect(s.options)
    assert.equal(version, 196610)
    assert.equal(c.protocolVersion, '3.2')
    assert.equal(c.processId, 77)
    await c.end()
  } finally {
    await s.close()
  }
})

test('a long cancel key under protocol 3.0 is refused', async () => {
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(msg('v', i32(196608), i32(0)), authOk(), backendKeyData(1, Buffer.alloc(8)), readyForQuery())
    await c.waitClosed()
  })
  try {
    await assert.rejects(connect(s.options), (e: unknown) => e instanceof ProtocolError && /cancel key of 8 bytes/.test((e as Error).message))
  } finally {
    await s.close()
  }
})

test('messages that cannot occur during startup are refused', async () => {
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(authOk(), dataRow(['x']))
    await c.waitClosed()
  })
  try {
    await assert.rejects(connect(s.options), (e: unknown) => e instanceof ProtocolError && /DataRow during startup/.test((e as Error).message))
  } finally {
    await s.close()
  }
})

test('a startup error from the server is reported as the PgError', async () => {
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(errorResponse({ S: 'FATAL', V: 'FATAL', C: '28P01', M: 'password authentication failed for user "u"' }))
    c.socket.end()
  })
  try {
    await assert.rejects(connect(s.options), (e: unknown) => e instanceof PgError && e.code === '28P01')
  } finally {
    await s.close()
  }
})

test('COPY FROM STDIN through query() is refused cleanly when nothing is behind it', async () => {
  const s = await fakeServer(async (c) => {
    await c.acceptStartup()
    await c.readUntilSync()
    c.write(firstExecutionPrefix([]).subarray(0, 0), parseComplete(), parameterDescription([]), noData(), bindComplete(), msg('G', [0], i16(0)))
    const fail = await c.read()
    assert.equal(fail.type, 'f')
    const sync = await c.read()
    assert.equal(sync.type, 'S')
    c.write(errorResponse({ S: 'ERROR', V: 'ERROR', C: '57014', M: 'COPY from stdin failed' }), readyForQuery())
    await c.readUntilSync()
    c.write(parseComplete(), parameterDescription([]), rowDescription(['n']), bindComplete(), dataRow(['1']), commandComplete('SELECT 1'), readyForQuery())
    await c.waitClosed()
  })
  const c = await connect(s.options)
  try {
    await assert.rejects(c.query('COPY t FROM STDIN'), (e: unknown) => e instanceof ProtocolError && /copyFrom/.test((e as Error).message))
    assert.deepEqual((await c.query('SELECT n')).rows, [{ n: '1' }])
    assert.deepEqual(s.errors, [])
  } finally {
    await c.end()
    await s.close()
  }
})
