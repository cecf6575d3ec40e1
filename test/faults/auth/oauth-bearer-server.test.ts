// SASL OAUTHBEARER (PostgreSQL 18) against a scripted server over verified TLS:
// the exact client message, the server's error document surfaced and answered
// as RFC 7628 requires, the token function called once per attempt, and the
// token never in an error. What the client refuses to send, and when it picks
// OAUTHBEARER at all, is in oauth-refusals.test.ts.

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { AuthError, PgError, ProtocolError, connect } from '../../../src/index.js'
import { authOk, errorResponse, message, int32 } from '../../support/fakes/backend-messages.js'
import type { FakeServer } from '../../support/fakes/fake-server.js'
import { assertCleanError } from '../../support/fault-checks.js'
import {
  PG18_ERROR_DOCUMENT,
  TOKEN,
  type Certificates,
  drain,
  makeCertificates,
  oauthServerScript,
  sasl,
  saslContinue,
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

async function withServer(script: Parameters<typeof tlsFakeServer>[1], fn: (s: FakeServer) => Promise<void>): Promise<void> {
  const s = await tlsFakeServer(certs.context, script)
  try {
    await fn(s)
  } finally {
    await s.close()
  }
}

/** The rejection of connecting with `options`; fails the test if it connects. */
async function refused(options: Parameters<typeof connect>[0]): Promise<unknown> {
  return connect(options).then(
    async (c) => {
      await c.end()
      assert.fail('connected, but the connection should have failed')
    },
    (e: unknown) => e,
  )
}

describe('a token the server accepts', () => {
  test('the client sends n,,\\x01auth=Bearer <token>\\x01\\x01 as mechanism OAUTHBEARER, and the server\'s AuthenticationOk completes the startup', async () => {
    await withServer(oauthServerScript(), async (s) => {
      const client = await connect({ ...verifyFull(s, certs.caFile), oauthBearerToken: TOKEN })
      try {
        assert.equal(client.tls, true)
      } finally {
        await client.end()
      }
      const sent = saslMessages(s)
      assert.equal(sent.length, 1)
      assert.deepEqual(saslInitial(sent[0]!), { mechanism: 'OAUTHBEARER', data: `n,,\x01auth=Bearer ${TOKEN}\x01\x01` })
      assert.deepEqual(s.errors, [])
    })
  })

  test('a token function is called once per connection attempt, and an async one is awaited', async () => {
    let calls = 0
    const token = async () => {
      calls++
      await new Promise((r) => setTimeout(r, 5))
      return `${TOKEN}${calls}`
    }
    await withServer(oauthServerScript(), async (s) => {
      for (let i = 1; i <= 3; i++) {
        const client = await connect({ ...verifyFull(s, certs.caFile), oauthBearerToken: token })
        await client.end()
        assert.equal(calls, i)
      }
      // Each attempt sent the token of its own call.
      assert.deepEqual(
        saslMessages(s).map((m) => saslInitial(m).data),
        [1, 2, 3].map((n) => `n,,\x01auth=Bearer ${TOKEN}${n}\x01\x01`),
      )
    })
  })

  test('a synchronous token function works too', async () => {
    await withServer(oauthServerScript(), async (s) => {
      const client = await connect({ ...verifyFull(s, certs.caFile), oauthBearerToken: () => TOKEN })
      await client.end()
      assert.equal(saslInitial(saslMessages(s)[0]!).data, `n,,\x01auth=Bearer ${TOKEN}\x01\x01`)
    })
  })
})

describe('a token the server rejects', () => {
  test('the error document is answered with a single \\x01, and the AuthError gives status, scope and discovery URL, with the server\'s error as cause', async () => {
    await withServer(oauthServerScript({ errorDocument: PG18_ERROR_DOCUMENT }), async (s) => {
      const err = await refused({ ...verifyFull(s, certs.caFile), oauthBearerToken: TOKEN })
      assertCleanError(err, [TOKEN])
      assert.ok(err instanceof AuthError, String(err))
      assert.equal(err.method, 'oauth')
      assert.equal(
        err.message,
        'server rejected the OAuth bearer token (status "invalid_token", scope "openid postgres", ' +
          'discovery document "https://issuer.example.com/.well-known/openid-configuration"); ' +
          'the server then ended the authentication: OAuth bearer authentication failed for user "u"',
      )
      assert.ok(err.cause instanceof PgError && err.cause.code === '28000')
      const sent = saslMessages(s)
      assert.equal(sent.length, 2, 'the token, then the acknowledgement')
      assert.deepEqual([...sent[1]!.body], [0x01])
      assert.deepEqual(s.errors, [])
    })
  })

  test('a discovery URL of another issuer than oauth_issuer is pointed out', async () => {
    await withServer(oauthServerScript({ errorDocument: PG18_ERROR_DOCUMENT }), async (s) => {
      const err = await refused({
        ...verifyFull(s, certs.caFile),
        connectionString: 'oauth_issuer=https://login.other.example',
        oauthBearerToken: TOKEN,
      })
      assertCleanError(err, [TOKEN])
      assert.match((err as Error).message, /not the one of oauth_issuer "https:\/\/login\.other\.example", so the token may be from the wrong issuer/)
    })
  })

  test('an error document with the status only', async () => {
    await withServer(oauthServerScript({ errorDocument: '{"status":"invalid_token"}' }), async (s) => {
      const err = await refused({ ...verifyFull(s, certs.caFile), oauthBearerToken: TOKEN })
      assertCleanError(err, [TOKEN])
      assert.match((err as Error).message, /^server rejected the OAuth bearer token \(status "invalid_token"\); the server then ended/)
    })
  })

  const malformed: Array<[string, string, RegExp]> = [
    ['not JSON', 'invalid_token', /not a JSON document/],
    ['no status', '{"scope":"openid"}', /without a "status" field/],
    ['a status that is a number', '{"status":401}', /"status" field is not a string/],
  ]
  for (const [what, doc, pattern] of malformed) {
    test(`an error document with ${what} is a ProtocolError, and nothing more is sent`, async () => {
      await withServer(oauthServerScript({ errorDocument: doc }), async (s) => {
        const err = await refused({ ...verifyFull(s, certs.caFile), oauthBearerToken: TOKEN })
        assertCleanError(err, [TOKEN])
        assert.ok(err instanceof ProtocolError && pattern.test(err.message), String(err))
        assert.equal(saslMessages(s).length, 1)
      })
    })
  }

  test('an ErrorResponse straight after the token stays the server\'s PgError', async () => {
    const script = async (c: Parameters<Parameters<typeof tlsFakeServer>[1]>[0]) => {
      await c.readStartup()
      c.write(sasl('OAUTHBEARER'))
      await c.read()
      c.write(errorResponse({ S: 'FATAL', V: 'FATAL', C: '08P01', M: 'malformed OAUTHBEARER message' }))
      c.socket.end()
    }
    await withServer(script, async (s) => {
      const err = await refused({ ...verifyFull(s, certs.caFile), oauthBearerToken: TOKEN })
      assertCleanError(err, [TOKEN])
      assert.ok(err instanceof PgError && err.code === '08P01', String(err))
    })
  })
})

describe('a server that breaks the exchange', () => {
  // 'ack': read the client's acknowledgement of the error document.
  const cases: Array<[string, Array<Uint8Array | 'ack'>, RegExp]> = [
    ['AuthenticationSASLFinal after the token (OAUTHBEARER has no final message)', [message('R', int32(12), Uint8Array.of(1))], /SASLFinal after the OAuth bearer token/],
    ['AuthenticationOk after the error document was acknowledged', [saslContinue(PG18_ERROR_DOCUMENT), 'ack', authOk()], /in phase "oauth-error"/],
    ['a second error document', [saslContinue(PG18_ERROR_DOCUMENT), 'ack', saslContinue(PG18_ERROR_DOCUMENT)], /in phase "oauth-error"/],
  ]
  for (const [what, replies, pattern] of cases) {
    test(`${what}: a ProtocolError`, async () => {
      const script = async (c: Parameters<Parameters<typeof tlsFakeServer>[1]>[0]) => {
        await c.readStartup()
        c.write(sasl('OAUTHBEARER'))
        await c.read()
        for (const reply of replies) {
          if (reply === 'ack') await c.read()
          else c.write(reply)
        }
        await drain(c)
      }
      await withServer(script, async (s) => {
        const err = await refused({ ...verifyFull(s, certs.caFile), oauthBearerToken: TOKEN })
        assertCleanError(err, [TOKEN])
        assert.ok(err instanceof ProtocolError && pattern.test(err.message), String(err))
      })
    })
  }
})

describe('token functions that fail', () => {
  const cases: Array<[string, () => unknown, RegExp, boolean]> = [
    ['throws', () => {
      throw new Error('issuer unreachable')
    }, /^the oauthBearerToken function failed$/, true],
    ['rejects', () => Promise.reject(new Error('issuer unreachable')), /^the oauthBearerToken function failed$/, true],
    ['returns a number', () => 42, /did not return a string \(got number\)/, false],
    ['resolves to undefined', async () => undefined, /did not return a string \(got undefined\)/, false],
    ['returns null', () => null, /did not return a string \(got null\)/, false],
    ['returns an empty string', () => '', /the OAuth bearer token is empty/, false],
    ['returns "Bearer <token>"', () => `Bearer ${TOKEN}`, /may not contain.*without "Bearer " before it/, false],
  ]
  for (const [what, fn, pattern, hasCause] of cases) {
    test(`a token function that ${what}: an AuthError, and no token is sent`, async () => {
      await withServer(oauthServerScript(), async (s) => {
        let calls = 0
        const token = () => {
          calls++
          return fn()
        }
        const err = await refused({ ...verifyFull(s, certs.caFile), oauthBearerToken: token as () => string })
        assertCleanError(err, [TOKEN])
        assert.ok(err instanceof AuthError && err.method === 'oauth' && pattern.test(err.message), String(err))
        if (hasCause) assert.match(String((err.cause as Error).message), /issuer unreachable/)
        assert.equal(calls, 1)
        assert.equal(saslMessages(s).length, 0)
      })
    })
  }

  test('a string token with a character a bearer token cannot have is refused without being shown', async () => {
    await withServer(oauthServerScript(), async (s) => {
      const bad = `${TOKEN}\x01host=elsewhere`
      const err = await refused({ ...verifyFull(s, certs.caFile), oauthBearerToken: bad })
      assertCleanError(err, [TOKEN, bad])
      assert.ok(err instanceof AuthError && /may not contain/.test(err.message))
      assert.equal(saslMessages(s).length, 0)
    })
  })
})
