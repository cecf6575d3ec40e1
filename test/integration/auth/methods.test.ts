// test-tags: matrix
// Authentication against the managed server: every method the harness's pg_hba
// offers, with and without TLS, SCRAM channel binding (observed by the server
// through a TLS man-in-the-middle), require_auth, password sources, and that
// no failure ever reveals the password.

import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile, chmod } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import * as net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as tls from 'node:tls'
import { after, before, describe, test } from 'node:test'
import { inspect } from 'node:util'
import { AuthError, ConfigError, ConnectionError, PgError, connect, type Client, type ClientOptions } from '../../../src/index.js'
import { getTestServer, type Credentials } from '../../support/servers/test-server.js'
import { closedPort, connectError, isolateEnvironment, tcpOptions, withClient } from '../../support/connect.js'

const server = await getTestServer()

const home = await isolateEnvironment('auth')

const users = server.users

function tcp(who: { user: string; password?: string }, extra: ClientOptions = {}): ClientOptions {
  return tcpOptions(server, who, extra)
}

interface Session {
  user: string
  ssl: boolean
}

async function session(client: Client): Promise<Session> {
  const { rows } = await client.query<{ u: string; ssl: boolean }>(
    'SELECT current_user AS u, (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl',
  )
  return { user: rows[0]!.u, ssl: rows[0]!.ssl }
}

/** Every text an error exposes: messages, inspect output and stacks, down the cause chain. */
function exposedText(err: unknown): string {
  const parts: string[] = [inspect(err, { depth: null, showHidden: true })]
  const seen = new Set<unknown>()
  const walk = (e: unknown): void => {
    if (e === null || e === undefined || seen.has(e)) return
    seen.add(e)
    if (e instanceof Error) {
      parts.push(String(e), e.message, e.stack ?? '')
      for (const key of Object.keys(e)) parts.push(`${key}=${String((e as unknown as Record<string, unknown>)[key])}`)
      if (e instanceof AggregateError) for (const inner of e.errors) walk(inner)
      walk(e.cause)
    } else {
      parts.push(String(e))
    }
  }
  walk(err)
  try {
    parts.push(JSON.stringify(err))
  } catch {}
  return parts.join('\n')
}

function assertNoSecret(err: unknown, secret: string): void {
  const text = exposedText(err)
  for (const form of new Set([secret, encodeURIComponent(secret)])) {
    assert.ok(!text.includes(form), `the secret appears in the error:\n${text}`)
  }
}

const methods: { name: string; who: Credentials }[] = [
  { name: 'trust', who: users.trust },
  { name: 'cleartext password', who: users.password },
  { name: 'MD5', who: users.md5 },
  { name: 'SCRAM-SHA-256', who: users.scram },
]

describe('each password method logs in', () => {
  for (const { name, who } of methods) {
    for (const sslmode of ['disable', 'require'] as const) {
      test(`${name} with sslmode=${sslmode}`, async () => {
        await withClient(tcp(who, { sslmode }), async (client) => {
          assert.equal(client.tls, sslmode === 'require')
          assert.deepEqual(await session(client), { user: who.user, ssl: sslmode === 'require' })
        })
      })
    }
  }

  test('a password given as a URL is percent-decoded before it is used (SCRAM over TLS, verify-full)', async () => {
    const url =
      `postgresql://${encodeURIComponent(users.scram.user)}:${encodeURIComponent(users.scram.password)}` +
      `@${server.hostname}:${server.port}/${server.database}?sslmode=verify-full&sslrootcert=${encodeURIComponent(server.tls.caFile)}`
    await withClient({ connectionString: url }, async (client) => {
      assert.deepEqual(await session(client), { user: users.scram.user, ssl: true })
    })
  })
})

describe('wrong password', () => {
  const secret = 'Wr0ng:Pa$$/w0rd@Zq9-unique'
  for (const { name, who } of methods.slice(1)) {
    for (const sslmode of ['disable', 'require', 'prefer'] as const) {
      test(`${name} with sslmode=${sslmode}: PgError 28P01 that does not contain the password`, async () => {
        const err = await connectError(tcp({ user: who.user, password: secret }, { sslmode }))
        assert.ok(err instanceof PgError, `expected a PgError, got ${inspect(err)}`)
        assert.equal(err.code, '28P01')
        assert.match(err.message, new RegExp(`authentication failed for user "${who.user}"`))
        assertNoSecret(err, secret)
      })
    }
  }

  test('the right password of another user is wrong too', async () => {
    const err = await connectError(tcp({ user: users.scram.user, password: users.md5.password }, { sslmode: 'disable' }))
    assert.ok(err instanceof PgError)
    assert.equal(err.code, '28P01')
    assertNoSecret(err, users.md5.password)
  })
})

describe('no password', () => {
  const cases = [
    { name: 'cleartext', who: users.password, method: 'password', wording: /cleartext password authentication/ },
    { name: 'MD5', who: users.md5, method: 'md5', wording: /MD5 password authentication/ },
    { name: 'SCRAM', who: users.scram, method: 'SCRAM-SHA-256', wording: /SCRAM-SHA-256/ },
  ]
  for (const { name, who, method, wording } of cases) {
    test(`${name}: AuthError saying no password was provided`, async () => {
      const err = await connectError(tcp({ user: who.user }, { sslmode: 'disable' }))
      assert.ok(err instanceof AuthError, `expected an AuthError, got ${inspect(err)}`)
      assert.equal(err.code, 'PG_AUTH')
      assert.equal(err.method, method)
      assert.match(err.message, /no password was provided/)
      assert.match(err.message, wording)
      assert.ok(err.message.includes(who.user), err.message)
    })
  }

  test('SCRAM over TLS (channel binding chosen): still AuthError, naming the -PLUS mechanism', async () => {
    const err = await connectError(tcp({ user: users.scram.user }, { sslmode: 'require' }))
    assert.ok(err instanceof AuthError, inspect(err))
    assert.equal(err.method, 'SCRAM-SHA-256-PLUS')
    assert.match(err.message, /no password was provided/)
  })
})

describe('password functions', () => {
  test('a synchronous function is called once per connection attempt', async () => {
    let calls = 0
    const password = () => {
      calls++
      return users.scram.password
    }
    await withClient(tcp({ user: users.scram.user }, { password, sslmode: 'disable' }), async (client) => {
      assert.equal((await session(client)).user, users.scram.user)
    })
    assert.equal(calls, 1)
  })

  test('an async function (MD5 and cleartext)', async () => {
    for (const who of [users.md5, users.password]) {
      const password = async () => {
        await new Promise((resolve) => setTimeout(resolve, 5))
        return who.password
      }
      await withClient(tcp({ user: who.user }, { password, sslmode: 'require' }), async (client) => {
        assert.deepEqual(await session(client), { user: who.user, ssl: true })
      })
    }
  })

  test('a function is not called when the server asks for no password', async () => {
    let calls = 0
    await withClient(tcp({ user: users.trust.user }, { password: () => String(++calls), sslmode: 'disable' }), async (client) => {
      assert.equal((await session(client)).user, users.trust.user)
    })
    assert.equal(calls, 0)
  })

  test('a function that throws: AuthError with the thrown error as cause', async () => {
    const thrown = new Error('vault unreachable')
    const err = await connectError(
      tcp(
        { user: users.scram.user },
        {
          password: () => {
            throw thrown
          },
          sslmode: 'disable',
        },
      ),
    )
    assert.ok(err instanceof AuthError, inspect(err))
    assert.equal(err.code, 'PG_AUTH')
    assert.match(err.message, /password function failed/)
    assert.equal(err.cause, thrown)
  })

  test('an async function that rejects: AuthError with the rejection as cause', async () => {
    const thrown = new Error('token expired')
    const err = await connectError(tcp({ user: users.md5.user }, { password: () => Promise.reject(thrown), sslmode: 'disable' }))
    assert.ok(err instanceof AuthError, inspect(err))
    assert.equal(err.method, 'md5')
    assert.equal(err.cause, thrown)
  })

  test('a function that never settles is cut off by the connect timeout', async () => {
    const started = Date.now()
    const err = await connectError(tcp({ user: users.scram.user }, { password: () => new Promise<string>(() => {}), connectTimeout: 300, sslmode: 'disable' }))
    assert.ok(err instanceof ConnectionError, inspect(err))
    assert.equal(err.code, 'PG_CONNECT_TIMEOUT')
    assert.ok(Date.now() - started < 2000)
  })

  test('a function that returns something other than a string: AuthError', async () => {
    const err = await connectError(
      tcp({ user: users.scram.user }, { password: (() => 42) as unknown as () => string, sslmode: 'disable' }),
    )
    assert.ok(err instanceof AuthError, inspect(err))
    assert.match(err.message, /did not return a string/)
  })
})

describe('password file', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'pipegres-pgpass-'))
  })
  after(() => rm(dir, { recursive: true, force: true }))

  /** A password-file field: '\' and ':' escaped. */
  const field = (s: string) => s.replaceAll('\\', '\\\\').replaceAll(':', '\\:')

  async function passfile(name: string, lines: string[], mode: number): Promise<string> {
    const path = join(dir, name)
    await writeFile(path, lines.join('\n') + '\n')
    await chmod(path, mode)
    return path
  }

  const line = (who: Credentials, host: string = server.host) =>
    `${field(host)}:${server.port}:${server.database}:${field(who.user)}:${field(who.password)}`

  test('passfile option, 0600: the matching line (not the first) is used, for SCRAM and MD5', async () => {
    const path = await passfile(
      'pgpass-option',
      [
        '# comment',
        `otherhost:${server.port}:*:*:nope`,
        `${server.host}:1:*:*:nope`,
        line(users.scram),
        `*:*:*:${field(users.md5.user)}:${field(users.md5.password)}`,
      ],
      0o600,
    )
    for (const who of [users.scram, users.md5]) {
      await withClient(tcp({ user: who.user }, { passfile: path, sslmode: 'disable' }), async (client) => {
        assert.equal((await session(client)).user, who.user)
      })
    }
  })

  test('PGPASSFILE, 0600, matched by the host name as written (localhost), over TLS', async () => {
    const path = await passfile('pgpass-env', [line(users.password, server.hostname)], 0o600)
    process.env.PGPASSFILE = path
    try {
      const options = tcp({ user: users.password.user }, { host: server.hostname, sslmode: 'require' })
      await withClient(options, async (client) => {
        assert.deepEqual(await session(client), { user: users.password.user, ssl: true })
      })
    } finally {
      delete process.env.PGPASSFILE
    }
  })

  test('~/.pgpass is the default', async () => {
    const path = join(home, '.pgpass')
    await writeFile(path, line(users.scram) + '\n', { mode: 0o600 })
    try {
      await withClient(tcp({ user: users.scram.user }, { sslmode: 'disable' }), async (client) => {
        assert.equal((await session(client)).user, users.scram.user)
      })
    } finally {
      await rm(path, { force: true })
    }
  })

  test('a password given explicitly wins over the file', async () => {
    const path = await passfile('pgpass-wrong', [`*:*:*:*:${field('not the password')}`], 0o600)
    await withClient(tcp(users.scram, { passfile: path, sslmode: 'disable' }), async (client) => {
      assert.equal((await session(client)).user, users.scram.user)
    })
  })

  test('a file readable by others is ignored, as libpq does', async () => {
    const path = await passfile('pgpass-0644', [line(users.scram)], 0o644)
    const err = await connectError(tcp({ user: users.scram.user }, { passfile: path, sslmode: 'disable' }))
    assert.ok(err instanceof AuthError, inspect(err))
    assert.match(err.message, /no password was provided/)
  })

  test('no matching line: AuthError, no password', async () => {
    const path = await passfile('pgpass-nomatch', [`${server.host}:${server.port}:otherdb:*:x`], 0o600)
    const err = await connectError(tcp({ user: users.md5.user }, { passfile: path, sslmode: 'disable' }))
    assert.ok(err instanceof AuthError, inspect(err))
    assert.match(err.message, /no password was provided/)
  })
})

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
