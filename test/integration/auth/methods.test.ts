// test-tags: matrix
// Authentication against the managed server: every method the harness's pg_hba
// offers, with and without TLS, wrong and missing passwords, and the password
// sources (functions, the password file). Channel binding, require_auth and
// secrets in errors: channel-binding-server.test.ts.

import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile, chmod } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { inspect } from 'node:util'
import { AuthError, ConnectionError, PgError, type ClientOptions } from '../../../src/index.js'
import { getTestServer, type Credentials } from '../../support/servers/test-server.js'
import { connectError, isolateEnvironment, session, tcpOptions, withClient } from '../../support/connect.js'
import { assertNoSecret } from '../../support/fault-checks.js'

const server = await getTestServer()

const home = await isolateEnvironment('auth')

const users = server.users

function tcp(who: { user: string; password?: string }, extra: ClientOptions = {}): ClientOptions {
  return tcpOptions(server, who, extra)
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
