// test-tags: matrix
// Authentication against the managed server, what the client demands of it:
// SCRAM channel binding (observed by the server through a TLS
// man-in-the-middle), require_auth, and that no failure ever reveals the
// password. Each method and password source: methods.test.ts.

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import * as net from 'node:net'
import { join } from 'node:path'
import * as tls from 'node:tls'
import { after, before, describe, test } from 'node:test'
import { inspect } from 'node:util'
import { AuthError, ConfigError, ConnectionError, PgError, connect, type ClientOptions } from '../../../src/index.js'
import { getTestServer, type Credentials } from '../../support/servers/test-server.js'
import { closedPort, connectError, isolateEnvironment, session, tcpOptions, withClient } from '../../support/connect.js'
import { assertNoSecret } from '../../support/fault-checks.js'

const server = await getTestServer()

const home = await isolateEnvironment('auth-binding')

const users = server.users

function tcp(who: { user: string; password?: string }, extra: ClientOptions = {}): ClientOptions {
  return tcpOptions(server, who, extra)
}

describe('channel binding', () => {
  test('channel_binding=require over TLS logs in with SCRAM-SHA-256-PLUS', async () => {
    await withClient(tcp(users.scram, { sslmode: 'require', channelBinding: 'require' }), async (client) => {
      assert.equal(client.tls, true)
      assert.deepEqual(await session(client), { user: users.scram.user, ssl: true })
    })
  })

  test('channel_binding=require in a connection string, with verify-full', async () => {
    const cs = `host=${server.hostname} port=${server.port} dbname=${server.database} user=${users.scram.user} password='${users.scram.password}' sslmode=verify-full sslrootcert='${server.tls.caFile}' channel_binding=require`
    await withClient({ connectionString: cs }, async (client) => {
      assert.deepEqual(await session(client), { user: users.scram.user, ssl: true })
    })
  })

  test('channel_binding=require without TLS fails with an AuthError before a password is sent', async () => {
    let calls = 0
    const err = await connectError(
      tcp({ user: users.scram.user }, { password: () => (calls++, users.scram.password), sslmode: 'disable', channelBinding: 'require' }),
    )
    assert.ok(err instanceof AuthError, inspect(err))
    assert.equal(err.code, 'PG_AUTH')
    assert.equal(err.method, 'SCRAM-SHA-256-PLUS')
    assert.match(err.message, /channel_binding=require/)
    assert.match(err.message, /does not use TLS/)
    assert.equal(calls, 0)
  })

  test('channel_binding=disable over TLS logs in with plain SCRAM-SHA-256', async () => {
    await withClient(tcp(users.scram, { sslmode: 'require', channelBinding: 'disable' }), async (client) => {
      assert.deepEqual(await session(client), { user: users.scram.user, ssl: true })
    })
  })

  const nonScram = [
    { who: users.md5, method: 'md5', wording: /MD5/ },
    { who: users.password, method: 'password', wording: /cleartext password/ },
    { who: users.trust, method: 'none', wording: /no authentication|without channel binding/ },
  ]
  for (const { who, method, wording } of nonScram) {
    test(`channel_binding=require against the ${method === 'none' ? 'trust' : method} user fails, naming the method`, async () => {
      let calls = 0
      const err = await connectError(
        tcp({ user: who.user }, { password: () => (calls++, 'password' in who ? who.password : ''), sslmode: 'require', channelBinding: 'require' }),
      )
      assert.ok(err instanceof AuthError, inspect(err))
      assert.equal(err.code, 'PG_AUTH')
      assert.equal(err.method, method)
      assert.match(err.message, /channel_binding=require/)
      assert.match(err.message, wording)
      // The password is never handed to a server that did not prove itself.
      assert.equal(calls, 0)
    })
  }

  // A man in the middle that terminates TLS with its own certificate and opens
  // its own TLS connection to the server. With sslmode=require the client cannot
  // notice it; only channel binding can, and then it is the server that refuses,
  // which shows that the server really received and checked the binding.
  describe('through a TLS man-in-the-middle', () => {
    let mitm: { port: number; close(): Promise<void> }
    before(async () => {
      mitm = await startTlsMitm()
    })
    after(() => mitm.close())

    const via = (extra: ClientOptions) => ({ ...tcp(users.scram, { sslmode: 'require' as const }), port: mitm.port, ...extra })

    test('channel_binding=disable: the attack goes unnoticed (the proxy works)', async () => {
      await withClient(via({ channelBinding: 'disable' }), async (client) => {
        assert.deepEqual(await session(client), { user: users.scram.user, ssl: true })
      })
    })

    for (const channelBinding of ['require', 'prefer'] as const) {
      test(`channel_binding=${channelBinding}: the server finds the binding does not match and refuses`, async () => {
        const err = await connectError(via({ channelBinding }))
        assert.ok(err instanceof PgError, inspect(err))
        assert.equal(err.code, '28000')
        assert.match(err.message, /SCRAM channel binding check failed/)
        assertNoSecret(err, users.scram.password)
      })
    }
  })
})

/** See 'through a TLS man-in-the-middle'. Uses the client certificate as its server certificate: any certificate but the server's will do. */
async function startTlsMitm(): Promise<{ port: number; close(): Promise<void> }> {
  const key = readFileSync(server.tls.clientKeyFile)
  const cert = readFileSync(server.tls.clientCertFile)
  const sslRequest = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])
  const sockets = new Set<net.Socket>()
  const track = (s: net.Socket) => {
    sockets.add(s)
    s.on('error', () => s.destroy())
    s.on('close', () => sockets.delete(s))
    return s
  }
  const proxy = net.createServer((downstream) => {
    track(downstream)
    downstream.once('data', (first) => {
      if (!first.equals(sslRequest)) return downstream.destroy()
      downstream.write('S')
      const clientSide = track(new tls.TLSSocket(downstream, { isServer: true, key, cert }))
      const upstream = track(net.connect(server.port, server.host))
      upstream.once('connect', () => upstream.write(sslRequest))
      upstream.once('data', (answer) => {
        if (answer.length !== 1 || answer[0] !== 0x53) return downstream.destroy()
        const serverSide = track(tls.connect({ socket: upstream, rejectUnauthorized: false }))
        serverSide.once('secureConnect', () => {
          clientSide.pipe(serverSide)
          serverSide.pipe(clientSide)
        })
        const closeBoth = () => {
          clientSide.destroy()
          serverSide.destroy()
        }
        clientSide.on('close', closeBoth)
        serverSide.on('close', closeBoth)
      })
    })
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  const port = (proxy.address() as net.AddressInfo).port
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        proxy.close(() => resolve())
      }),
  }
}

describe('require_auth', () => {
  const allowed: [string, Credentials | { user: string; password?: string }, string][] = [
    ['none', users.trust, 'trust'],
    ['md5', users.md5, 'md5'],
    ['password', users.password, 'cleartext'],
    ['scram-sha-256', users.scram, 'scram'],
    ['scram-sha-256,md5', users.md5, 'md5'],
    ['!password', users.scram, 'scram'],
    ['!md5,!password', users.scram, 'scram'],
    ['!none', users.md5, 'md5'],
    ['!scram-sha-256', users.trust, 'trust'],
  ]
  for (const [requireAuth, who, label] of allowed) {
    test(`require_auth=${requireAuth} lets the ${label} user in`, async () => {
      await withClient(tcp(who, { requireAuth, sslmode: 'disable' }), async (client) => {
        assert.equal((await session(client)).user, who.user)
      })
    })
  }

  const forbidden: [string, { user: string; password?: string }, string, string][] = [
    ['scram-sha-256', users.md5, 'md5', 'md5'],
    ['!password', users.password, 'cleartext', 'password'],
    ['none', users.scram, 'scram', 'scram-sha-256'],
    ['md5', users.scram, 'scram', 'scram-sha-256'],
    ['password,md5', users.scram, 'scram', 'scram-sha-256'],
    ['!none', users.trust, 'trust', 'none'],
    ['scram-sha-256', users.trust, 'trust', 'none'],
    ['!md5,!password', users.md5, 'md5', 'md5'],
  ]
  for (const [requireAuth, who, label, method] of forbidden) {
    test(`require_auth=${requireAuth} refuses the ${label} user: AuthError naming ${method}`, async () => {
      let calls = 0
      const password = 'password' in who ? who.password : 'x'
      const err = await connectError(tcp({ user: who.user }, { password: () => (calls++, password ?? ''), requireAuth, sslmode: 'disable' }))
      assert.ok(err instanceof AuthError, inspect(err))
      assert.equal(err.code, 'PG_AUTH')
      assert.equal(err.method, method)
      assert.match(err.message, /require_auth/)
      assert.equal(calls, 0, 'the password was requested although the method is not allowed')
    })
  }

  test('require_auth from the connection string (URL), refused over TLS too', async () => {
    const url = `postgresql://${users.md5.user}:${encodeURIComponent(users.md5.password)}@${server.host}:${server.port}/${server.database}?sslmode=require&require_auth=scram-sha-256`
    const err = await connectError({ connectionString: url })
    assert.ok(err instanceof AuthError, inspect(err))
    assert.equal(err.method, 'md5')
    assertNoSecret(err, users.md5.password)
  })

  test('a malformed require_auth is a ConfigError naming the setting', async () => {
    const err = await connectError(tcp(users.scram, { requireAuth: 'md5,!password' }))
    assert.ok(err instanceof ConfigError, inspect(err))
    assert.equal(err.setting, 'requireAuth')
  })
})

describe('the password never appears in an error', () => {
  // Characters that a URL must encode, so both the raw and the encoded form are looked for.
  const secret = 'Zq9:Unique/Secret@Pw%x'
  const enc = encodeURIComponent(secret)

  const cases: [string, () => Promise<ClientOptions | string>][] = [
    ['wrong SCRAM password in a URL', async () => `postgresql://${users.scram.user}:${enc}@${server.host}:${server.port}/${server.database}`],
    ['wrong MD5 password (options)', async () => tcp({ user: users.md5.user, password: secret }, { sslmode: 'disable' })],
    ['wrong cleartext password over TLS (key=value)', async () => `host=${server.host} port=${server.port} user=${users.password.user} dbname=${server.database} password='${secret}' sslmode=require`],
    ['connection refused (URL)', async () => `postgresql://${users.scram.user}:${enc}@${server.host}:${await closedPort()}/${server.database}`],
    ['two hosts refusing (URL)', async () => `postgresql://${users.scram.user}:${enc}@${server.host}:${await closedPort()},${server.host}:${await closedPort()}/${server.database}`],
    ['unknown host name', async () => tcp({ user: users.scram.user, password: secret }, { host: 'no-such-host.invalid' })],
    ['bad port in a URL', async () => `postgresql://${users.scram.user}:${enc}@${server.host}:notaport/${server.database}`],
    ['bad sslmode in a URL', async () => `postgresql://${users.scram.user}:${enc}@${server.host}:${server.port}/${server.database}?sslmode=bogus`],
    ['unknown keyword after an unquoted password (key=value)', async () => `host=${server.host} password=${secret} bogus=1`],
    ['password with a space, unquoted (key=value)', async () => `host=${server.host} password=Zq9:Unique/Secret@Pw%x tail user=x`],
    ['unencoded "&" in a URL password query parameter', async () => `postgresql://${server.host}/db?password=${secret}&tail&user=x`],
    ['unknown option in the options object', async () => ({ ...tcp({ user: users.scram.user, password: secret }), bogus: 1 }) as ClientOptions],
    ['TLS host-name mismatch (verify-full against 127.0.0.1)', async () => tcp({ user: users.scram.user, password: secret }, { sslmode: 'verify-full', sslrootcert: server.tls.caFile })],
    ['TLS untrusted CA', async () => tcp({ user: users.scram.user, password: secret }, { sslmode: 'verify-ca', sslrootcert: server.tls.otherCaFile })],
    ['missing sslrootcert file', async () => tcp({ user: users.scram.user, password: secret }, { sslmode: 'verify-ca', sslrootcert: join(home, 'missing.crt') })],
    ['channel_binding=require without TLS', async () => tcp({ user: users.scram.user, password: secret }, { sslmode: 'disable', channelBinding: 'require' })],
    ['require_auth refusal', async () => tcp({ user: users.md5.user, password: secret }, { sslmode: 'disable', requireAuth: 'scram-sha-256' })],
    ['nonexistent database', async () => tcp({ user: users.trust.user, password: secret }, { database: 'no_such_db', sslmode: 'disable' })],
  ]
  for (const [name, make] of cases) {
    test(name, async () => {
      const input = await make()
      let err: unknown
      try {
        const client = await connect(input as ClientOptions)
        await client.end()
      } catch (e) {
        err = e
      }
      assert.ok(err instanceof Error, 'expected the connection to fail')
      assertNoSecret(err, secret)
    })
  }

  test('a ConnectionError for a refused connection names the host but not the password', async () => {
    const port = await closedPort()
    const err = await connectError({ connectionString: `postgresql://${users.scram.user}:${enc}@${server.host}:${port}/${server.database}` })
    assert.ok(err instanceof ConnectionError, inspect(err))
    assert.equal(err.code, 'PG_CONNECTION_REFUSED')
    assert.ok(err.message.includes(`${server.host}:${port}`), err.message)
    assertNoSecret(err, secret)
  })
})
