// test-tags: matrix
// TLS against the managed server with libpq's sslmode semantics: which modes
// encrypt, which fall back and which never may, certificate verification,
// client certificates, direct TLS negotiation, and unix sockets.
// The server certificate names DNS:localhost only, so verify-full against
// 127.0.0.1 must fail while verify-ca against it succeeds.

import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { inspect } from 'node:util'
import { ConfigError, ConnectionError, PgError, type ClientOptions } from '../../../src/index.js'
import { getTestServer, type Credentials } from '../../support/servers/test-server.js'
import { connectError, isolateEnvironment, session, tcpOptions, withClient } from '../../support/connect.js'

const server = await getTestServer()

const home = await isolateEnvironment('tls')

const users = server.users
const { caFile, otherCaFile, clientCertFile, clientKeyFile, clientKeyEncryptedFile, clientKeyPassphrase } = server.tls

function tcp(who: { user: string; password?: string }, extra: ClientOptions = {}): ClientOptions {
  return tcpOptions(server, who, extra)
}

/** Connects, and checks that client and server agree on the user and on encryption. */
async function expectSession(options: ClientOptions, expected: { user: string; tls: boolean }): Promise<void> {
  await withClient(options, async (client) => {
    assert.equal(client.tls, expected.tls, 'client.tls')
    assert.deepEqual(await session(client), { user: expected.user, ssl: expected.tls })
  })
}

function assertTlsError(err: Error, pattern: RegExp): void {
  assert.ok(err instanceof ConnectionError, `expected a ConnectionError, got ${inspect(err)}`)
  assert.equal(err.code, 'PG_TLS', inspect(err))
  assert.match(err.message, pattern)
}

describe('sslmode', () => {
  test('disable: plaintext', async () => {
    await expectSession(tcp(users.scram, { sslmode: 'disable' }), { user: users.scram.user, tls: false })
  })

  test('disable: the sslOnly user is refused (hostssl), with no TLS retry', async () => {
    const err = await connectError(tcp(users.sslOnly, { sslmode: 'disable' }))
    assert.ok(err instanceof PgError, inspect(err))
    assert.equal(err.code, '28000')
  })

  test('allow: plaintext first', async () => {
    await expectSession(tcp(users.scram, { sslmode: 'allow' }), { user: users.scram.user, tls: false })
  })

  test('allow: the sslOnly user is refused in plaintext, so it retries with TLS and succeeds', async () => {
    await expectSession(tcp(users.sslOnly, { sslmode: 'allow' }), { user: users.sslOnly.user, tls: true })
  })

  test('allow: the noSsl user stays in plaintext', async () => {
    await expectSession(tcp(users.noSsl, { sslmode: 'allow' }), { user: users.noSsl.user, tls: false })
  })

  test('prefer (the default): TLS when the server has it', async () => {
    await expectSession(tcp(users.scram), { user: users.scram.user, tls: true })
    await expectSession(tcp(users.scram, { sslmode: 'prefer' }), { user: users.scram.user, tls: true })
  })

  test('prefer: the noSsl user is refused over TLS, so it retries in plaintext and succeeds', async () => {
    await expectSession(tcp(users.noSsl, { sslmode: 'prefer' }), { user: users.noSsl.user, tls: false })
  })

  test('prefer: a TLS verification failure (root certificate given) falls back to plaintext, as in libpq', async () => {
    await expectSession(tcp(users.scram, { sslmode: 'prefer', sslrootcert: otherCaFile }), { user: users.scram.user, tls: false })
  })

  test('require: TLS without verification (no root certificate anywhere)', async () => {
    await expectSession(tcp(users.scram, { sslmode: 'require' }), { user: users.scram.user, tls: true })
  })

  test('require: the noSsl user fails rather than falling back to plaintext', async () => {
    const err = await connectError(tcp(users.noSsl, { sslmode: 'require' }))
    assert.ok(err instanceof PgError, inspect(err))
    assert.equal(err.code, '28000')
    assert.match(err.message, /pg_hba\.conf rejects connection/)
    // PostgreSQL 14 says "SSL encryption"; 13 said "SSL on".
    assert.match(err.message, server.version >= 14 ? /SSL encryption/ : /SSL on/)
  })

  test('require with a root certificate verifies the chain, as libpq does: the unrelated CA fails', async () => {
    const err = await connectError(tcp(users.scram, { sslmode: 'require', sslrootcert: otherCaFile }))
    assertTlsError(err, /certificate/i)
  })

  test('require with the right root certificate, against 127.0.0.1 (no host name check)', async () => {
    await expectSession(tcp(users.scram, { sslmode: 'require', sslrootcert: caFile }), { user: users.scram.user, tls: true })
  })

  test('verify-ca with the right CA succeeds against 127.0.0.1 (the name is not checked)', async () => {
    await expectSession(tcp(users.scram, { sslmode: 'verify-ca', sslrootcert: caFile }), { user: users.scram.user, tls: true })
  })

  test('verify-ca with the unrelated CA fails with PG_TLS', async () => {
    const err = await connectError(tcp(users.scram, { sslmode: 'verify-ca', sslrootcert: otherCaFile }))
    assertTlsError(err, /certificate/i)
    assert.ok(err.message.includes(`${server.host}:${server.port}`), err.message)
  })

  test('verify-full against localhost succeeds', async () => {
    await expectSession(tcp(users.scram, { host: server.hostname, sslmode: 'verify-full', sslrootcert: caFile }), {
      user: users.scram.user,
      tls: true,
    })
  })

  test('verify-full against 127.0.0.1 fails: the certificate names only localhost', async () => {
    const err = await connectError(tcp(users.scram, { sslmode: 'verify-full', sslrootcert: caFile }))
    assertTlsError(err, /127\.0\.0\.1/)
    assert.match(err.message, /does not match|altname/i)
  })

  test('verify-full checks host, not hostaddr: host=localhost hostaddr=127.0.0.1 succeeds', async () => {
    await expectSession(
      tcp(users.scram, { host: server.hostname, hostaddr: server.host, sslmode: 'verify-full', sslrootcert: caFile }),
      { user: users.scram.user, tls: true },
    )
  })

  test('sslsni=0 still checks the host name under verify-full', async () => {
    await expectSession(tcp(users.scram, { host: server.hostname, sslsni: false, sslmode: 'verify-full', sslrootcert: caFile }), {
      user: users.scram.user,
      tls: true,
    })
    await expectSession(
      tcp(users.scram, { host: server.hostname, hostaddr: server.host, sslsni: false, sslmode: 'verify-full', sslrootcert: caFile }),
      { user: users.scram.user, tls: true },
    )
    assertTlsError(await connectError(tcp(users.scram, { sslsni: false, sslmode: 'verify-full', sslrootcert: caFile })), /127\.0\.0\.1/)
  })

  test('verify-full with the unrelated CA fails even against localhost', async () => {
    const err = await connectError(tcp(users.scram, { host: server.hostname, sslmode: 'verify-full', sslrootcert: otherCaFile }))
    assertTlsError(err, /certificate/i)
  })

  test('a CA given as a PEM string in the tls option is used for verification', async () => {
    const ca = readFileSync(caFile, 'utf8')
    await expectSession(tcp(users.scram, { host: server.hostname, sslmode: 'verify-full', tls: { ca } }), { user: users.scram.user, tls: true })
    const other = readFileSync(otherCaFile, 'utf8')
    assertTlsError(await connectError(tcp(users.scram, { host: server.hostname, sslmode: 'verify-full', tls: { ca: other } })), /certificate/i)
  })

  test('verify-full via a URL with sslrootcert in the query', async () => {
    const url = `postgresql://${users.scram.user}:${encodeURIComponent(users.scram.password)}@${server.hostname}:${server.port}/${server.database}?sslmode=verify-full&sslrootcert=${encodeURIComponent(caFile)}`
    await expectSession({ connectionString: url }, { user: users.scram.user, tls: true })
  })

  test('sslrootcert naming a missing file: ConfigError naming sslrootcert', async () => {
    const missing = join(home, 'no-such-ca.crt')
    for (const sslmode of ['verify-ca', 'require', 'prefer'] as const) {
      const err = await connectError(tcp(users.scram, { sslmode, sslrootcert: missing }))
      assert.ok(err instanceof ConfigError, `${sslmode}: ${inspect(err)}`)
      assert.equal(err.setting, 'sslrootcert')
      assert.ok(err.message.includes(missing), err.message)
    }
  })

  for (const sslmode of ['verify-ca', 'verify-full'] as const) {
    test(`${sslmode} with no root certificate at all: ConfigError naming sslrootcert`, async () => {
      const err = await connectError(tcp(users.scram, { host: server.hostname, sslmode }))
      assert.ok(err instanceof ConfigError, inspect(err))
      assert.equal(err.setting, 'sslrootcert')
      assert.match(err.message, /root certificate/)
      assert.ok(err.message.includes(join(home, '.postgresql', 'root.crt')), err.message)
    })
  }

  test('~/.postgresql/root.crt is the default root certificate', async () => {
    const dir = join(home, '.postgresql')
    await mkdir(dir, { recursive: true })
    await copyFile(caFile, join(dir, 'root.crt'))
    try {
      await expectSession(tcp(users.scram, { host: server.hostname, sslmode: 'verify-full' }), { user: users.scram.user, tls: true })
      // And it makes require verify the chain too: the wrong CA there fails.
      await copyFile(otherCaFile, join(dir, 'root.crt'))
      assertTlsError(await connectError(tcp(users.scram, { sslmode: 'require' })), /certificate/i)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  test('sslrootcert=system with verify-full: the test CA is not in the system store, so it fails with PG_TLS', async () => {
    const err = await connectError(tcp(users.scram, { host: server.hostname, sslrootcert: 'system' }))
    assertTlsError(err, /certificate/i)
  })

  test('sslrootcert=system with a weaker sslmode: ConfigError', async () => {
    const err = await connectError(tcp(users.scram, { sslmode: 'require', sslrootcert: 'system' }))
    assert.ok(err instanceof ConfigError, inspect(err))
    assert.equal(err.setting, 'sslmode')
  })
})

describe('client certificates', () => {
  const cert: { user: string } = users.cert

  test('the cert user logs in with sslcert/sslkey and no password', async () => {
    await expectSession(tcp(cert, { sslmode: 'require', sslcert: clientCertFile, sslkey: clientKeyFile }), { user: cert.user, tls: true })
  })

  test('with verify-full at the same time', async () => {
    await expectSession(
      tcp(cert, { host: server.hostname, sslmode: 'verify-full', sslrootcert: caFile, sslcert: clientCertFile, sslkey: clientKeyFile }),
      { user: cert.user, tls: true },
    )
  })

  test('with the encrypted key and sslpassword (connection string)', async () => {
    const cs = `host=${server.host} port=${server.port} dbname=${server.database} user=${cert.user} sslmode=require sslcert='${clientCertFile}' sslkey='${clientKeyEncryptedFile}' sslpassword='${clientKeyPassphrase}'`
    await expectSession({ connectionString: cs }, { user: cert.user, tls: true })
  })

  test('with the encrypted key and a wrong sslpassword: ConfigError naming sslpassword, without the passphrase', async () => {
    const wrong = 'Wrong-Passphrase-Zq9'
    const err = await connectError(tcp(cert, { sslmode: 'require', sslcert: clientCertFile, sslkey: clientKeyEncryptedFile, sslpassword: wrong }))
    assert.ok(err instanceof ConfigError, inspect(err))
    assert.equal(err.setting, 'sslpassword')
    assert.match(err.message, /could not decrypt|passphrase|sslpassword/)
    assert.ok(!inspect(err, { depth: null }).includes(wrong))
  })

  test('with the encrypted key and no sslpassword: ConfigError naming sslpassword', async () => {
    const err = await connectError(tcp(cert, { sslmode: 'require', sslcert: clientCertFile, sslkey: clientKeyEncryptedFile }))
    assert.ok(err instanceof ConfigError, inspect(err))
    assert.equal(err.setting, 'sslpassword')
  })

  test('a key that does not belong to the certificate: ConfigError naming sslkey', async () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const other = join(home, 'other.key')
    await writeFile(other, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
    const err = await connectError(tcp(cert, { sslmode: 'require', sslcert: clientCertFile, sslkey: other }))
    assert.ok(err instanceof ConfigError, inspect(err))
    assert.equal(err.setting, 'sslkey')
    assert.match(err.message, /does not match/)
  })

  test('an sslkey file that holds no key: ConfigError naming sslkey', async () => {
    const err = await connectError(tcp(cert, { sslmode: 'require', sslcert: clientCertFile, sslkey: clientCertFile }))
    assert.ok(err instanceof ConfigError, inspect(err))
    assert.equal(err.setting, 'sslkey')
  })

  test('the cert user without a certificate is refused by the server', async () => {
    const err = await connectError(tcp(cert, { sslmode: 'require' }))
    assert.ok(err instanceof PgError, inspect(err))
    assert.equal(err.code, '28000')
  })

  test('sslcert naming a missing file: ConfigError naming sslcert', async () => {
    const missing = join(home, 'no-such.crt')
    const err = await connectError(tcp(cert, { sslmode: 'require', sslcert: missing, sslkey: clientKeyFile }))
    assert.ok(err instanceof ConfigError, inspect(err))
    assert.equal(err.setting, 'sslcert')
    assert.ok(err.message.includes(missing))
  })

  test('~/.postgresql/postgresql.crt and postgresql.key are the defaults', async () => {
    const dir = join(home, '.postgresql')
    await mkdir(dir, { recursive: true })
    await copyFile(clientCertFile, join(dir, 'postgresql.crt'))
    await copyFile(clientKeyFile, join(dir, 'postgresql.key'))
    try {
      await expectSession(tcp(cert, { sslmode: 'require' }), { user: cert.user, tls: true })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  test('a client certificate does not replace the password of a password user', async () => {
    await expectSession(
      tcp(users.scram, { sslmode: 'require', sslcert: clientCertFile, sslkey: clientKeyFile }),
      { user: users.scram.user, tls: true },
    )
  })
})

describe('sslnegotiation=direct', () => {
  if (server.version >= 17) {
    test(`works on PostgreSQL ${server.version}`, async () => {
      await expectSession(tcp(users.scram, { sslmode: 'require', sslnegotiation: 'direct' }), { user: users.scram.user, tls: true })
    })

    test('with verify-full, channel binding and a client certificate', async () => {
      await expectSession(
        tcp(users.scram, { host: server.hostname, sslmode: 'verify-full', sslrootcert: caFile, sslnegotiation: 'direct', channelBinding: 'require' }),
        { user: users.scram.user, tls: true },
      )
      await expectSession(
        tcp(users.cert, { sslmode: 'require', sslnegotiation: 'direct', sslcert: clientCertFile, sslkey: clientKeyFile }),
        { user: users.cert.user, tls: true },
      )
    })

    test('direct with verify-full checks host, not hostaddr, with or without SNI', async () => {
      for (const sslsni of [true, false]) {
        await expectSession(
          tcp(users.scram, { host: server.hostname, hostaddr: server.host, sslsni, sslmode: 'verify-full', sslrootcert: caFile, sslnegotiation: 'direct' }),
          { user: users.scram.user, tls: true },
        )
      }
    })

    test('direct with verify-full still checks the host name', async () => {
      const err = await connectError(tcp(users.scram, { sslmode: 'verify-full', sslrootcert: caFile, sslnegotiation: 'direct' }))
      assertTlsError(err, /127\.0\.0\.1/)
    })
  } else {
    test(`gives a clear error on PostgreSQL ${server.version}, which has no direct TLS`, async () => {
      const started = Date.now()
      const err = await connectError(tcp(users.scram, { sslmode: 'require', sslnegotiation: 'direct', connectTimeout: 10_000 }))
      assert.ok(Date.now() - started < 5000, 'took too long to fail')
      assertTlsError(err, /direct/)
      assert.ok(err.message.includes(`${server.host}:${server.port}`), err.message)
    })
  }

  test('direct with a weak sslmode is a ConfigError (libpq 17 rule)', async () => {
    const err = await connectError(tcp(users.scram, { sslmode: 'prefer', sslnegotiation: 'direct' }))
    assert.ok(err instanceof ConfigError, inspect(err))
    assert.equal(err.setting, 'sslnegotiation')
  })
})

describe('unix sockets never use TLS', () => {
  const local: Credentials = server.users.trust
  for (const sslmode of ['require', 'prefer', 'verify-full'] as const) {
    test(`sslmode=${sslmode} over the socket connects in plaintext`, async () => {
      await expectSession({ host: server.socketDir, port: server.port, database: server.database, user: local.user, sslmode, sslrootcert: caFile }, {
        user: local.user,
        tls: false,
      })
    })
  }

  test('sslnegotiation=direct over the socket connects in plaintext too', async () => {
    await expectSession(
      { host: server.socketDir, port: server.port, database: server.database, user: local.user, sslmode: 'require', sslnegotiation: 'direct' },
      { user: local.user, tls: false },
    )
  })
})
