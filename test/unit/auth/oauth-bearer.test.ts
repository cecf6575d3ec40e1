// SASL OAUTHBEARER's pure parts: the client's message byte for byte, the
// tokens refused before anything is sent, and the server's error document.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  OAUTH_ERROR_ACK,
  describeOAuthServerError,
  issuerOf,
  oauthBearerClientFirst,
  parseOAuthServerError,
} from '../../../src/auth/index.js'
import { AuthError, ProtocolError } from '../../../src/errors.js'

const enc = (s: string) => new TextEncoder().encode(s)

describe('the client message', () => {
  test('n,, then \\x01auth=Bearer <token>\\x01\\x01 (RFC 7628 section 3.1, as PostgreSQL 18 expects it)', () => {
    assert.deepEqual(Buffer.from(oauthBearerClientFirst('abc.DEF-123_~+/==')), Buffer.from('n,,\x01auth=Bearer abc.DEF-123_~+/==\x01\x01'))
  })

  test('the dummy answer to an error is a single \\x01 (RFC 7628 section 3.2.3)', () => {
    assert.deepEqual([...OAUTH_ERROR_ACK], [1])
  })

  const bad: Array<[string, string]> = [
    ['empty', ''],
    ['with the scheme', 'Bearer abc'],
    ['a space', 'abc def'],
    ['a \\x01 that would end the auth value', 'abc\x01host=evil'],
    ['a NUL', 'abc\0'],
    ['"=" before the end', 'ab=c'],
    ['non-ASCII', 'tökén'],
    ['a comma', 'a,b'],
  ]
  for (const [what, token] of bad) {
    test(`a token with ${what} is refused with an AuthError that does not show it`, () => {
      assert.throws(
        () => oauthBearerClientFirst(token),
        (e: unknown) => e instanceof AuthError && e.code === 'PG_AUTH' && e.method === 'oauth' && (token === '' || !e.message.includes(token)),
      )
    })
  }
})

describe("the server's error document", () => {
  const PG18 = '{ "status": "invalid_token", "openid-configuration": "https://issuer.example.com/.well-known/openid-configuration", "scope": "openid postgres" }'

  test('PostgreSQL 18\'s document: status, scope and discovery URL', () => {
    assert.deepEqual(parseOAuthServerError(enc(PG18)), {
      status: 'invalid_token',
      scope: 'openid postgres',
      discoveryUrl: 'https://issuer.example.com/.well-known/openid-configuration',
    })
  })

  test('only status is required; unknown fields are ignored', () => {
    assert.deepEqual(parseOAuthServerError(enc('{"status":"invalid_request","extra":[1]}')), { status: 'invalid_request', scope: undefined, discoveryUrl: undefined })
  })

  const malformed: Array<[string, string | Uint8Array, RegExp]> = [
    ['not JSON', 'status=invalid_token', /not a JSON document/],
    ['not UTF-8', Uint8Array.of(0x7b, 0xff, 0x7d), /not a JSON document/],
    ['an array', '["invalid_token"]', /not a JSON object/],
    ['null', 'null', /not a JSON object/],
    ['no status', '{"scope":"openid"}', /without a "status"/],
    ['a status that is not a string', '{"status":401}', /"status" field is not a string/],
    ['a scope that is not a string', '{"status":"invalid_token","scope":["a"]}', /"scope" field is not a string/],
    ['a status inherited, not own', '{"__proto__":{"status":"x"}}', /without a "status"/],
  ]
  for (const [what, body, pattern] of malformed) {
    test(`${what}: a ProtocolError`, () => {
      const data = typeof body === 'string' ? enc(body) : body
      assert.throws(() => parseOAuthServerError(data), (e: unknown) => e instanceof ProtocolError && pattern.test(e.message))
    })
  }

  test('described: status, scope and discovery document, quoted', () => {
    const text = describeOAuthServerError(parseOAuthServerError(enc(PG18)), undefined)
    assert.equal(
      text,
      'server rejected the OAuth bearer token (status "invalid_token", scope "openid postgres", discovery document "https://issuer.example.com/.well-known/openid-configuration")',
    )
  })

  test('server text is escaped and shortened', () => {
    const text = describeOAuthServerError({ status: 'bad\nline\u001b[31m' + 'x'.repeat(500), scope: undefined, discoveryUrl: undefined }, undefined)
    assert.ok(!text.includes('\n') && !text.includes('\u001b'), text)
    assert.ok(text.length < 300, text)
  })

  test('oauth_issuer: said when the discovery document belongs to another issuer', () => {
    const e = parseOAuthServerError(enc(PG18))
    assert.doesNotMatch(describeOAuthServerError(e, 'https://issuer.example.com'), /wrong issuer/)
    assert.doesNotMatch(describeOAuthServerError(e, 'https://issuer.example.com/'), /wrong issuer/)
    assert.doesNotMatch(describeOAuthServerError(e, 'https://issuer.example.com/.well-known/openid-configuration'), /wrong issuer/)
    assert.match(describeOAuthServerError(e, 'https://other.example.com'), /not the one of oauth_issuer "https:\/\/other\.example\.com", so the token may be from the wrong issuer/)
  })

  test('the issuer of a discovery URL', () => {
    assert.equal(issuerOf('https://i.example/.well-known/openid-configuration'), 'https://i.example')
    assert.equal(issuerOf('https://i.example/tenant/.well-known/openid-configuration'), 'https://i.example/tenant')
    assert.equal(issuerOf('https://i.example/.well-known/oauth-authorization-server'), 'https://i.example')
    assert.equal(issuerOf('https://i.example/.well-known/oauth-authorization-server/tenant'), 'https://i.example/tenant')
    assert.equal(issuerOf('https://i.example/config'), 'https://i.example/config')
  })
})
