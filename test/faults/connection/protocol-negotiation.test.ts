import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConfigError, connect, ConnectionError, ProtocolError, TimeoutError } from '../../../src/index.js'
import { authOk, backendKeyData, concat, cstr, errorResponse, int32, message, readyForQuery, startupOk } from '../../support/fakes/backend-messages.js'
import { fakeServer, type FakeConnection, type FakeServer } from '../../support/fakes/fake-server.js'

// NegotiateProtocolVersion ('v': Int32 version, Int32 count, that many option
// names) as servers and poolers may send it, right or wrong. PostgreSQL 19's
// libpq greases the handshake with 3.9999 and unknown `_pq_.` options during
// its beta, to find software that mishandles this message; these tests play
// the mishandling server to pipegres. pipegres asks for 3.2 (or 3.0), sends no
// `_pq_.` option, accepts 3.0 in answer to 3.2, and closes the connection with
// an error naming the cause for anything else.

const V30 = 196608
const V32 = 196610
const CANCEL_REQUEST_CODE = 80877102

const version = (major: number, minor: number): number => (major << 16) | minor
const negotiate = (v: number, ...options: string[]): Uint8Array => message('v', int32(v), int32(options.length), ...options)

/** A server that answers the startup with `answer`, then keeps the connection open until the client closes it. */
async function answeringStartup(answer: (c: FakeConnection) => Promise<void> | void): Promise<FakeServer> {
  return fakeServer(async (c) => {
    await c.readStartup()
    await answer(c)
    await c.waitClosed()
  })
}

/** Resolves when the client closed the connection, fails the test if it has not within a few seconds. */
async function closedByClient(c: FakeConnection): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('the client left the connection open')), 5000)))
  try {
    await Promise.race([c.waitClosed(), late])
  } finally {
    clearTimeout(timer)
  }
}

/** Connects to a server answering the startup with `answer`, expects a rejection of `kind` matching `pattern`, one attempt only, and the connection closed. */
async function refused(
  answer: Uint8Array | ((c: FakeConnection) => Promise<void> | void),
  kind: typeof ProtocolError | typeof ConnectionError,
  pattern: RegExp,
  options: Record<string, unknown> = {},
): Promise<Error> {
  const s = await answeringStartup(typeof answer === 'function' ? answer : (c) => c.write(answer))
  try {
    let caught: unknown
    await assert.rejects(connect({ ...s.options, connectTimeout: 5000, ...options }), (e: unknown) => {
      caught = e
      return true
    })
    assert.ok(caught instanceof kind, `expected a ${kind.name}, got ${String(caught)}`)
    assert.match(caught.message, pattern)
    assert.equal(s.connections.length, 1, 'no second attempt')
    await closedByClient(s.connections[0]!)
    assert.deepEqual(s.errors, [])
    return caught
  } finally {
    await s.close()
  }
}

/** refused() as a test body. */
const refuses =
  (...args: Parameters<typeof refused>) =>
  async (): Promise<void> => {
    await refused(...args)
  }

// ---- the StartupMessage ----

/** The StartupMessage pipegres sends to a server, with its length word, and the connection's negotiated version. */
async function startupBytes(connection: string | Record<string, unknown>): Promise<{ bytes: Buffer; protocolVersion: string }> {
  let bytes: Buffer | undefined
  const s = await fakeServer(async (c) => {
    const body = await c.readUntyped()
    const length = Buffer.alloc(4)
    length.writeInt32BE(body.length + 4)
    bytes = Buffer.concat([length, body])
    c.write(startupOk())
    await c.waitClosed()
  })
  try {
    const client = await connect(typeof connection === 'string' ? connection.replace('PORT', String(s.port)) : { ...s.options, ...connection })
    const protocolVersion = client.protocolVersion
    await client.end()
    assert.deepEqual(s.errors, [])
    assert.ok(bytes !== undefined)
    return { bytes, protocolVersion }
  } finally {
    await s.close()
  }
}

/** Splits a StartupMessage into its version and its parameters, checking the framing on the way. */
function parseStartup(bytes: Buffer): { version: number; params: [string, string][] } {
  assert.equal(bytes.readInt32BE(0), bytes.length, 'the length word counts the whole message')
  assert.equal(bytes[bytes.length - 1], 0, 'the parameters end with an empty name')
  const version = bytes.readInt32BE(4)
  const strings = bytes.subarray(8, bytes.length - 1).toString('utf8').split('\0')
  assert.equal(strings.pop(), '', 'every string is NUL-terminated')
  assert.equal(strings.length % 2, 0, 'names and values come in pairs')
  const params: [string, string][] = []
  for (let i = 0; i < strings.length; i += 2) params.push([strings[i]!, strings[i + 1]!])
  return { version, params }
}

/** The parameters every startup begins with, byte for byte (the rest depends on settings and environment). */
const fixedStart = (v: number): Buffer =>
  Buffer.from(concat([int32(0), int32(v), cstr('user'), cstr('u'), cstr('database'), cstr('d'), cstr('client_encoding'), cstr('UTF8'), cstr('DateStyle'), cstr('ISO, MDY')])).subarray(4)

for (const [name, connection, expected] of [
  ['by default, protocol 3.2', {}, V32],
  ['with maxProtocolVersion 3.0, protocol 3.0', { maxProtocolVersion: '3.0' }, V30],
  ['with max_protocol_version=3.0 in a URL, protocol 3.0', 'postgres://u@127.0.0.1:PORT/d?sslmode=disable&max_protocol_version=3.0', V30],
  ['with max_protocol_version=latest, protocol 3.2', 'host=127.0.0.1 port=PORT user=u dbname=d sslmode=disable max_protocol_version=latest', V32],
] as const) {
  test(`the StartupMessage asks ${name}, and carries no _pq_. option`, async () => {
    const { bytes, protocolVersion } = await startupBytes(connection)
    const start = fixedStart(expected)
    assert.deepEqual(bytes.subarray(4, 4 + start.length), start, 'version and the first parameters, exactly')
    const { version, params } = parseStartup(bytes)
    assert.equal(version, expected)
    assert.deepEqual(
      params.filter(([k]) => k.startsWith('_pq_.')),
      [],
      'no protocol option is sent',
    )
    assert.equal(protocolVersion, expected === V32 ? '3.2' : '3.0', 'no NegotiateProtocolVersion: the version asked for is used')
  })
}

test('a _pq_. name is refused as a setting, before any connection is made', async () => {
  // A `_pq_.` name is a protocol option, not a run-time parameter: it must never reach the server.
  const s = await fakeServer(async (c) => {
    await c.acceptStartup()
    await c.waitClosed()
  })
  try {
    await assert.rejects(connect({ ...s.options, params: { '_pq_.x': 'y' } }), (e: unknown) => e instanceof ConfigError && e.setting === 'params' && /_pq_\.x/.test(e.message))
    await assert.rejects(connect(`postgres://u@127.0.0.1:${s.port}/d?sslmode=disable&_pq_.x=y`), (e: unknown) => e instanceof ConfigError && /_pq_\.x/.test(e.message))
    assert.equal(s.connections.length, 0)
  } finally {
    await s.close()
  }
})

// ---- versions offered ----

test('3.0 offered to a 3.2 request: the connection works at 3.0, with a 4-byte cancel key sent back as is', async () => {
  const key = Uint8Array.of(0xde, 0xad, 0xbe, 0xef)
  const cancels: Buffer[] = []
  let cancelled: () => void = () => {}
  const cancelArrived = new Promise<void>((r) => (cancelled = r))
  const s = await fakeServer(async (c) => {
    const first = await c.readUntyped()
    if (first.readInt32BE(0) === CANCEL_REQUEST_CODE) {
      cancels.push(first)
      cancelled()
      c.socket.end()
      return
    }
    assert.equal(first.readInt32BE(0), V32)
    c.write(negotiate(V30), authOk(), backendKeyData(77, key), readyForQuery())
    for (;;) {
      const msgs = await c.readUntilSync()
      if (msgs.some((m) => m.type === 'X')) return
      // The query is stuck until its cancel arrives.
      await cancelArrived
      c.write(errorResponse({ S: 'ERROR', V: 'ERROR', C: '57014', M: 'canceling statement due to user request' }), readyForQuery())
    }
  })
  try {
    const client = await connect({ ...s.options, connectTimeout: 5000 })
    try {
      assert.equal(client.protocolVersion, '3.0')
      assert.equal(client.processId, 77)
      const err = await client.query('SELECT pg_sleep(10)', [], { timeout: 100 }).then(
        () => assert.fail('the query resolved despite its timeout'),
        (e: unknown) => e,
      )
      assert.ok(err instanceof TimeoutError, `got ${String(err)}`)
      assert.ok(cancels.length >= 1)
      for (const body of cancels) {
        // Length 16 in all: code, pid, and the 4-byte key of protocol 3.0.
        assert.equal(body.length + 4, 16)
        assert.equal(body.readInt32BE(4), 77)
        assert.deepEqual([...body.subarray(8)], [...key])
      }
    } finally {
      await client.end()
    }
    assert.deepEqual(s.errors, [])
  } finally {
    await s.close()
  }
})

test('3.0 offered to a 3.2 request: a cancel key longer than 3.0 allows is refused', refuses(concat([negotiate(V30), authOk(), backendKeyData(1, new Uint8Array(5)), readyForQuery()]), ProtocolError, /cancel key of 5 bytes, not allowed in protocol 3\.0/))

test('3.0 offered with min_protocol_version=3.2: the error names both versions and the setting', async () => {
  const err = await refused(negotiate(V30), ConnectionError, /supports protocol 3\.0 at most, but min_protocol_version is 3\.2/, { minProtocolVersion: '3.2' })
  assert.equal((err as ConnectionError).code, 'PG_UNSUPPORTED')
})

test('3.1 offered to a 3.2 request: refused, 3.1 is reserved and was never a protocol version', refuses(negotiate(version(3, 1)), ProtocolError, /offered protocol version 3\.1 in answer to a request for 3\.2: 3\.1 is reserved/))

for (const [major, minor] of [
  [3, 3],
  [3, 9999],
  [3, 0xffff],
] as const) {
  test(`${major}.${minor} offered to a 3.2 request: refused, a server may only offer a lower version`, refuses(negotiate(version(major, minor)), ProtocolError, new RegExp(`offered protocol version ${major}\\.${minor} in answer to a request for 3\\.2: a server may only offer a version lower`)))
}

test('3.2 offered to a 3.0 request (max_protocol_version=3.0): refused as higher than requested', refuses(negotiate(V32), ProtocolError, /offered protocol version 3\.2 in answer to a request for 3\.0: a server may only offer a version lower/, { maxProtocolVersion: '3.0' }))

test('3.1 offered to a 3.0 request: refused as higher than requested', refuses(negotiate(version(3, 1)), ProtocolError, /offered protocol version 3\.1 in answer to a request for 3\.0/, { maxProtocolVersion: '3.0' }))

for (const [requested, v] of [
  ['3.2', V32],
  ['3.0', V30],
] as const) {
  test(`${requested} offered to a ${requested} request with no option refused: nothing to negotiate, refused`, refuses(negotiate(v), ProtocolError, new RegExp(`offered protocol version ${requested.replace('.', '\\.')} in answer to a request for ${requested.replace('.', '\\.')}, the version requested, and refused no option`), {
      maxProtocolVersion: requested,
    }))
}

for (const [major, minor] of [
  [4, 0],
  [2, 0],
  [0, 0],
  [0xffff, 0xffff],
] as const) {
  test(`${major}.${minor} offered: refused, pipegres speaks only protocol 3`, refuses(negotiate(version(major, minor)), ProtocolError, new RegExp(`offered protocol version ${major}\\.${minor} in answer to a request for 3\\.2: pipegres speaks only protocol 3`)))
}

// ---- options listed ----

test('3.0 offered with a _pq_. option the client never sent: refused, naming the option', refuses(negotiate(V30, '_pq_.something_unknown'), ProtocolError, /unsupported protocol options that the client never sent: "_pq_\.something_unknown"; pipegres sends no protocol options/))

test('3.2 offered with the option PostgreSQL 19 greases with: refused, the client never sent it', refuses(negotiate(V32, '_pq_.test_protocol_negotiation'), ProtocolError, /never sent: "_pq_\.test_protocol_negotiation"/))

test('an option name without the _pq_. prefix: refused, saying what protocol options look like', refuses(negotiate(V30, 'search_path'), ProtocolError, /never sent: "search_path" \(protocol options start with "_pq_\."\)/))

test('many options listed: the error names a few and counts the rest', async () => {
  const names = Array.from({ length: 40 }, (_, i) => `_pq_.option_${i}_${'x'.repeat(100)}`)
  const err = await refused(negotiate(V30, ...names), ProtocolError, /"_pq_\.option_0_x+\.\.\.", .* and 35 more;/)
  assert.ok(err.message.length < 700, `a short message, not ${err.message.length} characters`)
})

// ---- malformed messages ----

for (const [name, body, pattern] of [
  ['counts two options but holds one', [int32(V30), int32(2), cstr('_pq_.a')], /counts 2 unsupported options, but its body ends inside option 2/],
  ['counts one option but holds two', [int32(V30), int32(1), cstr('_pq_.a'), cstr('_pq_.b')], /7 bytes follow the 1 unsupported options it counts/],
  ['counts no option but holds one', [int32(V30), int32(0), cstr('_pq_.a')], /7 bytes follow the 0 unsupported options/],
  ['counts a negative number of options', [int32(V30), int32(-1)], /counts -1 unsupported options/],
  ['counts more options than it has bytes', [int32(V30), int32(0x7fffffff), cstr('_pq_.a')], /counts 2147483647 unsupported options, but only 7 bytes follow/],
  ['ends its last name without a NUL', [int32(V30), int32(1), Buffer.from('_pq_.a')], /body ends inside option 1/],
  ['has no option count', [int32(V30)], /malformed NegotiateProtocolVersion message from server/],
  ['is empty', [], /malformed NegotiateProtocolVersion message from server/],
] as const) {
  test(`a NegotiateProtocolVersion that ${name}: ProtocolError, no hang`, async () => {
    // A NUL right after the message: a decoder reading past its end would find a name there.
    const err = await refused(concat([message('v', ...body), Uint8Array.of(0)]), ProtocolError, pattern)
    assert.match(err.message, /^malformed NegotiateProtocolVersion message from server/)
  })
}

// ---- out of turn ----

test('NegotiateProtocolVersion twice: refused', refuses(concat([negotiate(V30), negotiate(V30), authOk(), backendKeyData(1), readyForQuery()]), ProtocolError, /NegotiateProtocolVersion a second time/))

test('NegotiateProtocolVersion after AuthenticationOk: refused', refuses(concat([authOk(), negotiate(V30), backendKeyData(1), readyForQuery()]), ProtocolError, /NegotiateProtocolVersion after authentication succeeded/))

test('NegotiateProtocolVersion after an MD5 password exchange began: refused', refuses(
    async (c) => {
      c.write(message('R', int32(5), Uint8Array.of(1, 2, 3, 4)))
      const m = await c.read()
      assert.equal(m.type, 'p')
      c.write(negotiate(V30), authOk(), backendKeyData(1), readyForQuery())
    },
    ProtocolError,
    /NegotiateProtocolVersion after authentication began/,
    { password: 'pw' },
  ))

test('NegotiateProtocolVersion once the session is ready: refused, the connection closes', async () => {
  const s = await fakeServer(async (c) => {
    await c.acceptStartup()
    await c.readUntilSync()
    c.write(negotiate(V30))
    await c.waitClosed()
  })
  try {
    const client = await connect({ ...s.options, connectTimeout: 5000 })
    try {
      await assert.rejects(client.query('SELECT 1', []), (e: unknown) => e instanceof ProtocolError && /NegotiateProtocolVersion/.test(e.message))
      await closedByClient(s.connections[0]!)
    } finally {
      await client.end()
    }
    assert.deepEqual(s.errors, [])
  } finally {
    await s.close()
  }
})
