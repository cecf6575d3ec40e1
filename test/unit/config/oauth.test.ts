// The OAuth settings (oauthBearerToken, oauthAllowInsecure, libpq's oauth_*
// keywords) and sslkeylogfile, as resolveConfig reads them.

import assert from 'node:assert/strict'
import { inspect } from 'node:util'
import { describe, test } from 'node:test'
import { type ConnectOptions, resolveConfig } from '../../../src/config/index.js'
import type { ConnectionConfig } from '../../../src/config/types.js'
import { assertConfigError } from '../../support/assert-config.js'

function resolve(input?: string | ConnectOptions, env: Record<string, string> = {}): ConnectionConfig {
  return resolveConfig(input, { env, homedir: '/nonexistent-home', osUser: 'osuser' })
}

const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhcHAifQ.c2lnbmF0dXJl'

describe('oauthBearerToken', () => {
  test('defaults: no token, no issuer, not allowed over insecure connections', () => {
    const c = resolve({ host: 'h' })
    assert.equal(c.oauthBearerToken, undefined)
    assert.equal(c.oauthIssuer, undefined)
    assert.equal(c.oauthAllowInsecure, false)
  })

  test('a string or a function, kept as given', () => {
    assert.equal(resolve({ oauthBearerToken: TOKEN }).oauthBearerToken, TOKEN)
    const fn = async () => TOKEN
    assert.equal(resolve({ oauthBearerToken: fn }).oauthBearerToken, fn)
  })

  test('anything else is a ConfigError that does not show the value', () => {
    assertConfigError(() => resolve({ oauthBearerToken: 42 } as unknown as ConnectOptions), 'oauthBearerToken', ['a string or a function', 'number'], ['42'])
    assertConfigError(() => resolve({ oauthBearerToken: [TOKEN] } as unknown as ConnectOptions), 'oauthBearerToken', ['an array'], [TOKEN])
  })

  test('the token is never printed with the config', () => {
    const c = resolve({ host: 'h', oauthBearerToken: TOKEN })
    for (const text of [inspect(c, { depth: 10 }), JSON.stringify(c), String({ ...c })]) assert.ok(!text.includes(TOKEN), text)
    assert.equal(c.oauthBearerToken, TOKEN, 'still readable by name')
  })

  test('oauthAllowInsecure is a boolean option only', () => {
    assert.equal(resolve({ oauthAllowInsecure: true }).oauthAllowInsecure, true)
    assertConfigError(() => resolve({ oauthAllowInsecure: 'yes' } as unknown as ConnectOptions), 'oauthAllowInsecure', ['a boolean'])
    assertConfigError(() => resolve('oauth_allow_insecure=1'), 'oauth_allow_insecure', ['unknown connection setting'])
  })
})

describe("libpq's oauth_* keywords", () => {
  test('accepted with a token: oauth_issuer is kept, the device-flow settings are not used', () => {
    const c = resolve({
      connectionString: 'host=h oauth_issuer=https://issuer.example.com oauth_client_id=app oauth_client_secret=shh oauth_scope=openid',
      oauthBearerToken: TOKEN,
    })
    assert.equal(c.oauthIssuer, 'https://issuer.example.com')
    assert.ok(!inspect(c, { depth: 10 }).includes('shh'))
    assert.equal(resolve({ oauthIssuer: 'https://i.example', oauthBearerToken: TOKEN }).oauthIssuer, 'https://i.example')
  })

  for (const [keyword, value] of [
    ['oauth_issuer', 'https://issuer.example.com'],
    ['oauth_client_id', 'app'],
    ['oauth_scope', 'openid'],
  ] as const) {
    test(`${keyword} without a token: pipegres runs no device flow, so the application must give the token`, () => {
      assertConfigError(() => resolve(`host=h ${keyword}=${value}`), keyword, [
        `${keyword} is set in the connection string`,
        'does not run the OAuth device flow',
        'oauthBearerToken',
      ])
      assertConfigError(() => resolve(`postgres://h/db?${keyword}=${encodeURIComponent(value)}`), keyword, ['oauthBearerToken'])
    })
  }

  test('oauth_client_secret without a token: the error does not show the secret', () => {
    assertConfigError(() => resolve("host=h oauth_client_secret='very secret'"), 'oauth_client_secret', ['oauthBearerToken'], ['very secret'])
  })

  test('the oauthIssuer option without a token', () => {
    assertConfigError(() => resolve({ oauthIssuer: 'https://i.example' }), 'oauthIssuer', ['in the options', 'oauthBearerToken'])
  })

  test('an unquoted oauth_client_secret followed by stray text is not echoed', () => {
    assertConfigError(() => resolve('host=h oauth_client_secret=abc def-tail'), 'oauth_client_secret', [], ['def-tail'])
  })
})

describe('require_auth=oauth', () => {
  test('is a method of its own', () => {
    const ra = resolve('require_auth=oauth').requireAuth
    assert.deepEqual([...(ra?.methods ?? [])], ['oauth'])
    assert.equal(ra?.negated, false)
    assert.deepEqual([...(resolve({ requireAuth: '!oauth,!password' }).requireAuth?.methods ?? [])], ['oauth', 'password'])
  })
})

describe('sslkeylogfile', () => {
  test('from the keyword, a URL or the option; no default', () => {
    assert.equal(resolve({ host: 'h' }).sslkeylogfile, undefined)
    assert.equal(resolve('host=h sslkeylogfile=/tmp/keys.log').sslkeylogfile, '/tmp/keys.log')
    assert.equal(resolve('postgres://h/db?sslkeylogfile=%2Ftmp%2Fk.log').sslkeylogfile, '/tmp/k.log')
    assert.equal(resolve({ sslkeylogfile: '/tmp/o.log' }).sslkeylogfile, '/tmp/o.log')
  })

  test('SSLKEYLOGFILE in the environment is not read (libpq 18 has no variable for it)', () => {
    assert.equal(resolve({ host: 'h' }, { SSLKEYLOGFILE: '/tmp/env.log', PGSSLKEYLOGFILE: '/tmp/pgenv.log' }).sslkeylogfile, undefined)
  })

  test('a non-string option is a ConfigError', () => {
    assertConfigError(() => resolve({ sslkeylogfile: true } as unknown as ConnectOptions), 'sslkeylogfile', ['a string'])
  })
})
