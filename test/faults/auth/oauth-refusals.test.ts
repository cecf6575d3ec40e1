// When the client sends an OAuth bearer token and when it refuses to: only over
// TLS with sslmode=verify-full unless oauthAllowInsecure is set (a bearer token
// is a password), never without a token configured, never against
// channel_binding=require or require_auth; and which SASL mechanism it picks
// when the server offers OAUTHBEARER beside SCRAM.

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { AuthError, connect } from '../../../src/index.js'
import { fakeServer, type FakeServer } from '../../support/fakes/fake-server.js'
import { assertCleanError } from '../../support/fault-checks.js'
import {
  TOKEN,
  type Certificates,
  makeCertificates,
  oauthServerScript,
  saslInitial,
  saslMessages,
  tlsFakeServer,
  verifyFull,
} from '../../support/fakes/oauth-server.js'

let certs: Certificates
before(async () => {
  certs = await makeCertificates()
})
after(() => certs.remove())

/** Connects to a server made by `make`, returning the rejection; fails the test if it connects. */
async function refusedBy(s: FakeServer, options: Parameters<typeof connect>[0]): Promise<unknown> {
  try {
    return await connect(options).then(
      async (c) => {
        await c.end()
        assert.fail('connected, but the connection should have failed')
      },
      (e: unknown) => e,
    )
  } finally {
    await s.close()
  }
}

/** A token function that counts its calls. */
function countingToken(): { fn: () => string; calls: () => number } {
  let n = 0
  return {
    fn: () => {
      n++
      return TOKEN
    },
    calls: () => n,
  }
}

function assertRefused(err: unknown, pattern: RegExp): void {
  assertCleanError(err, [TOKEN])
  assert.ok(err instanceof AuthError, String(err))
  assert.equal(err.method, 'oauth')
  assert.match(err.message, pattern)
}

describe('the token is only sent over TLS with sslmode=verify-full', () => {
  test('plaintext: refused before the token function is called', async () => {
    const s = await fakeServer(oauthServerScript())
    const token = countingToken()
    const err = await refusedBy(s, { ...s.options, oauthBearerToken: token.fn })
    assertRefused(err, /^refusing to send the OAuth bearer token over a connection without TLS: a bearer token works like a password .* set oauthAllowInsecure: true to send it anyway$/)
    assert.equal(token.calls(), 0)
    assert.equal(saslMessages(s).length, 0)
  })

  for (const sslmode of ['require', 'verify-ca'] as const) {
    test(`TLS with sslmode=${sslmode}: refused, naming the mode`, async () => {
      const s = await tlsFakeServer(certs.context, oauthServerScript())
      const token = countingToken()
      // 127.0.0.1 is not the name in the certificate: verify-ca accepts the chain anyway, verify-full would not.
      const err = await refusedBy(s, { ...s.options, sslmode, sslrootcert: certs.caFile, oauthBearerToken: token.fn })
      assertRefused(err, new RegExp(`over TLS with sslmode=${sslmode}, which does not check that the server certificate names the host`))
      assert.equal(token.calls(), 0)
      assert.equal(saslMessages(s).length, 0)
    })
  }

  test('sslmode=prefer that got TLS: refused too', async () => {
    const s = await tlsFakeServer(certs.context, oauthServerScript())
    const err = await refusedBy(s, { ...s.options, sslmode: 'prefer', oauthBearerToken: TOKEN })
    assertRefused(err, /sslmode=prefer/)
    assert.equal(saslMessages(s).length, 0)
  })

  test('verify-full with certificate checks turned off through the tls option: refused', async () => {
    const s = await tlsFakeServer(certs.context, oauthServerScript())
    // The CA given did not sign the server's certificate, and the tls option lets that pass.
    const err = await refusedBy(s, { ...verifyFull(s, certs.otherCaFile), tls: { rejectUnauthorized: false }, oauthBearerToken: TOKEN })
    assertRefused(err, /certificate was not verified/)
  })

  test('oauthAllowInsecure: true sends it over plaintext and over verify-ca', async () => {
    const plain = await fakeServer(oauthServerScript())
    try {
      const c = await connect({ ...plain.options, oauthBearerToken: TOKEN, oauthAllowInsecure: true })
      await c.end()
      assert.equal(saslInitial(saslMessages(plain)[0]!).data, `n,,\x01auth=Bearer ${TOKEN}\x01\x01`)
    } finally {
      await plain.close()
    }
    const s = await tlsFakeServer(certs.context, oauthServerScript())
    try {
      const c = await connect({ ...s.options, sslmode: 'verify-ca', sslrootcert: certs.caFile, oauthBearerToken: TOKEN, oauthAllowInsecure: true })
      assert.equal(c.tls, true)
      await c.end()
    } finally {
      await s.close()
    }
  })
})

describe('no token, or a token that may not be used', () => {
  test('OAUTHBEARER is the only mechanism and no token is configured: the error says the application must supply one', async () => {
    const s = await tlsFakeServer(certs.context, oauthServerScript())
    const err = await refusedBy(s, { ...verifyFull(s, certs.caFile), password: 'not used' })
    assertRefused(err, /server requested OAuth bearer token authentication \(SASL OAUTHBEARER\) for user "u", but no oauthBearerToken was given; pipegres does not run the OAuth device flow/)
    assert.equal(saslMessages(s).length, 0)
  })

  test('channel_binding=require: OAUTHBEARER has no channel binding', async () => {
    const s = await tlsFakeServer(certs.context, oauthServerScript())
    const err = await refusedBy(s, { ...verifyFull(s, certs.caFile), channelBinding: 'require', oauthBearerToken: TOKEN })
    assertRefused(err, /channel_binding=require needs SCRAM-SHA-256-PLUS/)
  })

  test('require_auth without oauth refuses it; require_auth=oauth refuses SCRAM', async () => {
    let s = await tlsFakeServer(certs.context, oauthServerScript())
    const token = countingToken()
    let err = await refusedBy(s, { ...verifyFull(s, certs.caFile), requireAuth: 'scram-sha-256', oauthBearerToken: token.fn })
    assertRefused(err, /which require_auth does not allow/)
    assert.equal(token.calls(), 0)

    s = await tlsFakeServer(certs.context, oauthServerScript({ mechanisms: ['SCRAM-SHA-256'] }))
    err = await refusedBy(s, { ...verifyFull(s, certs.caFile), requireAuth: 'oauth', oauthBearerToken: TOKEN, password: 'pw' })
    assert.ok(err instanceof AuthError && /require_auth does not allow/.test(err.message), String(err))
    assert.equal(saslMessages(s).length, 0)
  })

  test('require_auth=oauth allows it', async () => {
    const s = await tlsFakeServer(certs.context, oauthServerScript())
    try {
      const c = await connect({ ...verifyFull(s, certs.caFile), requireAuth: 'oauth', oauthBearerToken: TOKEN })
      await c.end()
    } finally {
      await s.close()
    }
  })
})

describe('choosing the mechanism when the server offers SCRAM too', () => {
  /** The mechanism of the first SASLInitialResponse the server gets. */
  async function chosen(options: Record<string, unknown>): Promise<string> {
    const s = await tlsFakeServer(certs.context, oauthServerScript({ mechanisms: ['SCRAM-SHA-256', 'OAUTHBEARER'] }))
    try {
      // A SCRAM exchange never completes against this script; only the choice matters.
      await connect({ ...verifyFull(s, certs.caFile), connectTimeout: 3000, ...options }).then((c) => c.end(), () => undefined)
      return saslInitial(saslMessages(s)[0]!).mechanism
    } finally {
      await s.close()
    }
  }

  test('with a token: OAUTHBEARER', async () => {
    assert.equal(await chosen({ oauthBearerToken: TOKEN, password: 'pw' }), 'OAUTHBEARER')
  })

  test('without a token: SCRAM with the password', async () => {
    assert.equal(await chosen({ password: 'pw' }), 'SCRAM-SHA-256')
  })

  test('with a token but require_auth=scram-sha-256: SCRAM', async () => {
    assert.equal(await chosen({ oauthBearerToken: TOKEN, password: 'pw', requireAuth: 'scram-sha-256' }), 'SCRAM-SHA-256')
  })
})
