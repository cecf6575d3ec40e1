// Security checks of the client's own defences: time limits, what it answers
// during authentication and when it refuses, what it writes, prints and shows,
// and how it quotes names.
// Checks already made elsewhere are not repeated here:
//
//   connect timeout against a silent server ..... faults/hostile-server ("never answers the startup message")
//   only an unknown SASL mechanism offered ....... faults/hostile-server ("an unknown SASL mechanism is refused")
//   iteration count cap, exact limit ............. unit/auth-scram ("the default iteration limit", "maxIterations")
//   bytes between 'S' and the TLS handshake ...... faults/hostile-server ("bytes after the SSL answer")
//   cleartext under channel_binding=require ...... faults/hostile-server (no PasswordMessage sent)
//   require_auth against the real server ......... integration/auth ("require_auth=... refuses", password never fetched)
//   sslmode=require against 'N' ................... faults/hostile-server ("never falls back to plaintext")
//   verify-full: wrong host name, untrusted CA .... integration/tls ("against 127.0.0.1 fails", "unrelated CA fails")
//   channel_binding=require enforced .............. integration/auth, faults/hostile-server
//   the password in errors ........................ integration/auth ("the password never appears in an error")
//   config and unconnected Client, inspect/JSON ... unit/config-resolve ("secrets are not printed")
//   a message over 1 GiB, through query() ......... integration/big-values (zero-filled 1 GiB parameter), unit/writer
//   listen/notify channel names ................... integration/listen ("channel names with any characters")
//   copyFromRows table name with ';' ............. integration/copy ("bad arguments are ArgumentErrors")

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createHmac, pbkdf2Sync } from 'node:crypto'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { inspect } from 'node:util'
import { AuthError, ConnectionError, ArgumentError, Client, connect, createPool, identifier } from '../../../src/index.js'
import { resolveConfig } from '../../../src/config/index.js'
import { MAX_FRONTEND_MESSAGE } from '../../../src/protocol/writer.js'
import { DEFAULT_MAX_ITERATIONS } from '../../../src/auth/index.js'
import {
  message,
  int32,
  int16,
  authOk,
  backendKeyData,
  readyForQuery,
  rowDescription,
  dataRow,
  commandComplete,
  errorResponse,
  parameterStatus,
  startupOk,
} from '../../support/fakes/backend-messages.js'
import { fakeServer, type FakeConnection, type FrontendMessage } from '../../support/fakes/fake-server.js'
import { closedPort, tcpOptions } from '../../support/connect.js'
import { openClient, uniqueName } from '../../support/client.js'
import { getTestServer } from '../../support/servers/test-server.js'

// ---- helpers ----

/** Every message the client sends until it closes the connection. */
async function drain(c: FakeConnection, into: FrontendMessage[]): Promise<void> {
  try {
    for (;;) into.push(await c.read())
  } catch {
    // The client closed: that is the end of what it sent.
  }
}

/** The SASLInitialResponse body: mechanism name, then the client-first-message. */
function saslInitial(m: FrontendMessage): { mechanism: string; clientFirst: string } {
  const nul = m.body.indexOf(0)
  return { mechanism: m.body.subarray(0, nul).toString(), clientFirst: m.body.subarray(nul + 5).toString() }
}

const sasl = (...mechanisms: string[]): Uint8Array => message('R', int32(10), ...mechanisms, Buffer.from([0]))

/**
 * Answers what a client sends the way a server would, for the statements of these
 * tests: every Parse is described with one text column and $n parameters of
 * `paramType`, every Execute gives one row. A text containing "fail" gets an
 * ErrorResponse; "notice" gets a NoticeResponse, a ParameterStatus and a
 * NotificationResponse with its row; "broken" gets a message the protocol does not have.
 */
async function answerQueries(c: FakeConnection, seen: FrontendMessage[] = [], paramType = 25): Promise<void> {
  let text = ''
  let failed = false
  for (;;) {
    const m = await c.read()
    seen.push(m)
    if (failed && m.type !== 'S') continue
    switch (m.type) {
      case 'P': {
        const nameEnd = m.body.indexOf(0)
        text = m.body.subarray(nameEnd + 1, m.body.indexOf(0, nameEnd + 1)).toString()
        if (text.includes('fail')) {
          c.write(errorResponse({ S: 'ERROR', V: 'ERROR', C: '42P01', M: 'relation "fail" does not exist' }))
          failed = true
        } else c.write(message('1'))
        break
      }
      case 'D': {
        const params = Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((x) => Number(x[1])))
        if (m.body[0] === 0x53) c.write(message('t', int16(params), ...Array.from({ length: params }, () => int32(paramType))))
        c.write(rowDescription(['n']))
        break
      }
      case 'B':
        c.write(message('2'))
        break
      case 'E':
        if (text.includes('notice')) {
          c.write(message('N', Buffer.from('SNOTICE\0VNOTICE\0C00000\0Mnothing to see\0\0')), parameterStatus('TimeZone', 'UTC'), message('A', int32(1), 'chan', 'payload'))
        }
        if (text.includes('broken')) c.write(message('!', 'what'))
        c.write(dataRow(['ok']), commandComplete('SELECT 1'))
        break
      case 'C':
        c.write(message('3'))
        break
      case 'S':
        c.write(readyForQuery())
        failed = false
        break
      case 'X':
        return
    }
  }
}

// ---- time limits ----

test(
  'connect timeout: a setting that is not given still has a limit, of at most 30 s (a server that never answers must not hang the caller forever)',
  () => {
    for (const config of [resolveConfig({ host: 'h', user: 'u' }, { env: {} }), resolveConfig('postgresql://u@h/db', { env: {} }), new Client({ host: 'h', user: 'u' }).config]) {
      assert.ok(config.connectTimeout > 0 && config.connectTimeout <= 30_000, `the default connectTimeout is ${config.connectTimeout} ms`)
    }
  },
)

// ---- SCRAM ----

test('SASL: the client answers with a mechanism the server offered, and refuses an iteration count over its cap before deriving anything', async () => {
  let answered = ''
  const after: FrontendMessage[] = []
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(sasl('X-UNKNOWN-MECH', 'SCRAM-SHA-256'))
    const first = saslInitial(await c.read())
    answered = first.mechanism
    const nonce = /r=([^,]+)/.exec(first.clientFirst)![1]!
    // About half an hour of PBKDF2 on one core: a client that started would stall for that long.
    c.write(message('R', int32(11), Buffer.from(`r=${nonce}srv,s=${Buffer.from('salt').toString('base64')},i=100000000`)))
    await drain(c, after)
  })
  try {
    const t0 = performance.now()
    const err = await connect({ ...s.options, password: 'secret-pw' }).then(
      (c) => c.end().then(() => assert.fail('connected')),
      (e: unknown) => e,
    )
    const took = performance.now() - t0
    assert.ok(err instanceof AuthError, String(err))
    assert.equal(err.method, 'SCRAM-SHA-256')
    assert.match(err.message, new RegExp(`100000000 PBKDF2 iterations, more than this client's limit of ${DEFAULT_MAX_ITERATIONS}`))
    assert.ok(took < 2000, `refusing took ${took} ms`)
    assert.equal(answered, 'SCRAM-SHA-256')
    assert.deepEqual(after, [], 'nothing is sent after the refused server-first-message (no client-final, no proof)')
    assert.deepEqual(s.errors, [])
  } finally {
    await s.close()
  }
})

test('SASL: deriving the key for the largest allowed iteration count does not block the event loop', async () => {
  let derivedIn = 0
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(sasl('SCRAM-SHA-256'))
    const { clientFirst } = saslInitial(await c.read())
    const nonce = /r=([^,]+)/.exec(clientFirst)![1]!
    c.write(message('R', int32(11), Buffer.from(`r=${nonce}srv,s=${Buffer.from('salt').toString('base64')},i=${DEFAULT_MAX_ITERATIONS}`)))
    const t0 = performance.now()
    await c.read()
    derivedIn = performance.now() - t0
    c.socket.destroy()
  })
  const delay = monitorEventLoopDelay({ resolution: 5 })
  try {
    delay.enable()
    await connect({ ...s.options, password: 'secret-pw' }).then(
      (c) => c.end(),
      () => undefined,
    )
    delay.disable()
    const worst = delay.max / 1e6
    // Done on the event loop, the whole derivation would show as one delay; on the thread pool the loop keeps turning.
    assert.ok(derivedIn > 0, 'the client answered the server-first-message')
    assert.ok(worst < Math.max(50, derivedIn / 2), `the event loop stalled for ${worst.toFixed(0)} ms while the key took ${derivedIn.toFixed(0)} ms`)
  } finally {
    delay.disable()
    await s.close()
  }
})

test('SASL: a server signature that does not verify fails with an AuthError, and the client closes without another word', async () => {
  const after: FrontendMessage[] = []
  let closed = false
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(sasl('SCRAM-SHA-256'))
    const { clientFirst } = saslInitial(await c.read())
    const nonce = /r=([^,]+)/.exec(clientFirst)![1]!
    const salt = Buffer.from('saltsalt')
    c.write(message('R', int32(11), Buffer.from(`r=${nonce}srv,s=${salt.toString('base64')},i=4096`)))
    await c.read()
    // A signature made with the wrong password: a server that does not know it (or a man in the middle).
    const wrong = createHmac('sha256', pbkdf2Sync('not-the-password', salt, 4096, 32, 'sha256')).update('Server Key').digest()
    c.write(message('R', int32(12), Buffer.from(`v=${wrong.toString('base64')}`)), authOk(), backendKeyData(1), readyForQuery())
    await drain(c, after)
    closed = c.closed
  })
  try {
    await assert.rejects(connect({ ...s.options, password: 'secret-pw' }), (e: unknown) => e instanceof AuthError && /server signature is wrong/.test(e.message))
    await new Promise((r) => setTimeout(r, 20))
    assert.ok(closed, 'the connection is closed')
    assert.deepEqual(after, [], 'nothing is sent after the bad signature')
  } finally {
    await s.close()
  }
})

// ---- passwords the settings forbid ----

for (const [request, requireAuth, method] of [
  ['cleartext', 'scram-sha-256', 'password'],
  ['cleartext', '!password', 'password'],
  ['MD5', 'scram-sha-256', 'md5'],
  ['MD5', '!md5', 'md5'],
  ['MD5', 'password', 'md5'],
] as const) {
  test(`a ${request} password request refused by require_auth=${requireAuth}: no PasswordMessage reaches the server`, async () => {
    const sent: FrontendMessage[] = []
    let fetched = 0
    const s = await fakeServer(async (c) => {
      await c.readStartup()
      c.write(request === 'cleartext' ? message('R', int32(3)) : message('R', int32(5), Buffer.from([1, 2, 3, 4])))
      await drain(c, sent)
    })
    try {
      const err = await connect({ ...s.options, password: () => (fetched++, 'secret-pw'), requireAuth }).then(
        (c) => c.end().then(() => assert.fail('connected')),
        (e: unknown) => e,
      )
      assert.ok(err instanceof AuthError, String(err))
      assert.equal(err.method, method)
      assert.match(err.message, /require_auth/)
      await new Promise((r) => setTimeout(r, 20))
      assert.deepEqual(sent.map((m) => m.type), [], 'the client sent nothing after the request')
      assert.equal(fetched, 0, 'the password was not even fetched')
    } finally {
      await s.close()
    }
  })
}

// ---- TLS ----

test('sslmode=verify-ca and verify-full never continue in plaintext when the server answers N', async () => {
  const server = await getTestServer()
  const s = await fakeServer(async (c) => {
    await c.readStartup()
    c.write(startupOk())
    await c.waitClosed()
  })
  try {
    for (const sslmode of ['verify-ca', 'verify-full'] as const) {
      await assert.rejects(
        connect({ ...s.options, host: 'localhost', sslmode, sslrootcert: server.tls.caFile }),
        (e: unknown) => e instanceof ConnectionError && e.code === 'PG_TLS' && /does not support TLS/.test(e.message),
        sslmode,
      )
    }
  } finally {
    await s.close()
  }
})

// ---- what the client writes ----

test('a parameter over the 1 GiB a message can hold is refused before any byte of its message is written', async () => {
  const seen: FrontendMessage[] = []
  const s = await fakeServer(async (c) => {
    await c.acceptStartup()
    await answerQueries(c, seen, 17)
  })
  const c = await connect(s.options)
  try {
    const text = 'SELECT $1::bytea AS n'
    await c.query(text, [Buffer.from([1])])
    const before = seen.length
    // Zero-filled and never touched (the check comes before any copy), so this takes address space, not memory.
    const huge = Buffer.alloc(MAX_FRONTEND_MESSAGE + 1)
    await assert.rejects(c.query(text, [huge]), (e: unknown) => e instanceof ArgumentError && /more than a PostgreSQL message can hold/.test(e.message))
    assert.deepEqual((await c.query(text, [Buffer.from([2])])).rows, [{ n: 'ok' }])
    // Between the two good queries: exactly the second one's Bind, Execute and Sync.
    assert.deepEqual(seen.slice(before).map((m) => m.type), ['B', 'E', 'S'])
    assert.ok(seen.every((m) => m.body.length < 1024), 'no big message was written')
  } finally {
    await c.end()
    await s.close()
  }
})

// ---- what the client prints ----

test('nothing is printed: connect, rows, errors, notices, notifications, a protocol violation, a refused connection, a pool', async () => {
  const s = await fakeServer(async (c) => {
    await c.acceptStartup()
    await answerQueries(c)
  })
  const refused = await closedPort()
  const lib = new URL('../../../src/index.js', import.meta.url).href
  // In a process of its own, so that anything at all written to its stdout or stderr (console, warnings) is seen.
  const program = `
    import { connect, createPool } from ${JSON.stringify(lib)}
    const options = JSON.parse(process.env.SECURITY_OPTIONS)
    const db = await connect({ ...options, password: 'secret-pw' })
    await db.query('SELECT notice')
    await db.query('SELECT $1::text AS fail', ['x']).catch(() => {})
    await db.query('SELECT broken').catch(() => {})
    await db.query('SELECT again')
    await db.end()
    await db.query('SELECT after end').catch(() => {})
    await connect({ ...options, port: ${refused} }).catch(() => {})
    const pool = createPool({ ...options, max: 2 })
    await Promise.all([pool.query('SELECT 1'), pool.query('SELECT notice'), pool.query('SELECT fail').catch(() => {})])
    await pool.end()
  `
  try {
    const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', program], {
        env: { ...process.env, NODE_OPTIONS: '', SECURITY_OPTIONS: JSON.stringify(s.options) },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
      child.on('close', (code) => resolve({ code, stdout, stderr }))
    })
    assert.equal(out.code, 0, out.stderr)
    assert.equal(out.stdout, '')
    assert.equal(out.stderr, '')
  } finally {
    await s.close()
  }
})

// ---- what the client shows ----

/** Fails if `secret` occurs in `text`, quoting only where, so that a leak does not flood the output. */
function assertHidden(text: string, secret: string, what: string): void {
  const at = text.indexOf(secret)
  if (at >= 0) assert.fail(`a secret shows in ${what}: …${text.slice(Math.max(0, at - 300), at + secret.length + 100)}…`)
}

/** Everything util.inspect and JSON.stringify show of a value (cycles and bigints included). */
function shown(value: unknown): string {
  const seen = new WeakSet<object>()
  const json = JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v === 'bigint') return String(v)
    if (typeof v === 'object' && v !== null) {
      if (seen.has(v)) return '[cycle]'
      seen.add(v)
    }
    return v
  })
  return `${inspect(value, { depth: Infinity })}\n${json}`
}

test(
  'secrets do not show in util.inspect or JSON.stringify of a Pool',
  async () => {
    const secret = 'Pool-Secret-Pw-5521'
    for (const options of [{ host: 'h', user: 'u', password: secret, sslpassword: secret }, `postgresql://u:${secret}@h/db`]) {
      const pool = createPool(options)
      try {
        assertHidden(shown(pool), secret, 'a Pool')
      } finally {
        await pool.end()
      }
    }
  },
)

test('passwords do not show in util.inspect or JSON.stringify of a connected Client, after SCRAM with channel binding or a cleartext login', async () => {
  const server = await getTestServer()
  const clients: Client[] = []
  try {
    clients.push(await connect(tcpOptions(server, server.users.scram, { sslmode: 'require', channelBinding: 'require' })))
    clients.push(await connect(tcpOptions(server, server.users.password, { sslmode: 'disable' })))
    clients.push(await connect(tcpOptions(server, server.users.md5, { sslmode: 'require', password: () => server.users.md5.password })))
    for (const c of clients) await c.query('SELECT 1')
    for (const [i, c] of clients.entries()) {
      const text = shown(c)
      for (const who of [server.users.scram, server.users.password, server.users.md5]) assertHidden(text, who.password!, `client ${i}`)
    }
  } finally {
    for (const c of clients) await c.end()
  }
})

test(
  'the client key passphrase (sslpassword) does not show in util.inspect or JSON.stringify of a connected Client',
  async () => {
    const server = await getTestServer()
    const c = await connect(
      tcpOptions(server, server.users.cert, {
        sslmode: 'require',
        sslcert: server.tls.clientCertFile,
        sslkey: server.tls.clientKeyEncryptedFile,
        sslpassword: server.tls.clientKeyPassphrase,
      }),
    )
    try {
      await c.query('SELECT 1')
      assertHidden(shown(c), server.tls.clientKeyPassphrase, 'the Client')
    } finally {
      await c.end()
    }
  },
)

// ---- names that go into SQL ----

test('hostile names given to identifier(), listen()/notify() and copyFromRows() are quoted, never executed', async () => {
  const db = await openClient()
  const canary = uniqueName('canary')
  const hostile = `x"); DROP TABLE ${canary}; --`
  const table = uniqueName('hostile "t"; DROP TABLE x')
  const quotedTable = `"${table.replaceAll('"', '""')}"`
  const canaryAlive = async () => (await db.query('SELECT to_regclass($1) IS NOT NULL AS alive', [canary])).rows[0]!.alive
  try {
    await db.query(`CREATE TABLE ${canary} (a int)`)
    await db.query(`CREATE TABLE ${quotedTable} (id int, "${hostile.replaceAll('"', '""')}" text)`)

    const { rows } = await db.sql`SELECT ${'v'}::text AS ${identifier(hostile)} FROM ${identifier(table)}`
    assert.deepEqual(rows, [])
    const one = await db.sql`SELECT 1 AS ${identifier(hostile)}`
    assert.deepEqual(Object.keys(one.rows[0]!), [hostile])

    const got: string[] = []
    const l = await db.listen(hostile, (payload) => got.push(payload))
    await db.notify(hostile, `'); DROP TABLE ${canary}; --`)
    await db.query('SELECT 1')
    await l.unlisten()
    assert.deepEqual(got, [`'); DROP TABLE ${canary}; --`])

    assert.equal((await db.copyFromRows(quotedTable, [[1, 'a']], { columns: ['id', hostile] })).rowCount, 1)
    assert.equal((await db.copyFromRows(quotedTable, [{ id: 2, [hostile]: 'b' }], { format: 'text' })).rowCount, 1)
    assert.equal((await db.copyFromRows(quotedTable, [[3, 'c']], { format: 'csv' })).rowCount, 1)
    assert.deepEqual((await db.query(`SELECT * FROM ${quotedTable} ORDER BY id`, [], { rowMode: 'array' })).rows, [
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ])
    await assert.rejects(db.copyFromRows(`${quotedTable}; DROP TABLE ${canary}`, [[4, 'd']]), ArgumentError)
    assert.equal(await canaryAlive(), true)
  } finally {
    await db.query(`DROP TABLE IF EXISTS ${quotedTable}`).catch(() => {})
    await db.query(`DROP TABLE IF EXISTS ${canary}`).catch(() => {})
    await db.end()
  }
})
