// resolveConfig: what each setting may hold. Values and their units,
// require_auth, malformed values and unknown settings refused by name, extra
// startup parameters, and no password in any message or printed config.
// Where settings come from: resolve.test.ts.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ConfigError } from '../../../src/errors.js'
import { type ConnectOptions, type ResolveOptions, resolveConfig } from '../../../src/config/index.js'
import type { ConnectionConfig } from '../../../src/config/types.js'
import { assertConfigError } from '../../support/assert-config.js'

const BASE: ResolveOptions = { env: {}, osUser: 'osuser', homedir: '/home/osuser' }

function resolve(input?: string | ConnectOptions, opts: ResolveOptions = {}): ConnectionConfig {
  return resolveConfig(input, { ...BASE, ...opts })
}

describe('setting values', () => {
  const pick = <K extends keyof ConnectionConfig>(input: string | ConnectOptions, key: K): ConnectionConfig[K] => resolve(input)[key]
  const cases: Array<[string | ConnectOptions, keyof ConnectionConfig, unknown]> = [
    ['connect_timeout=10', 'connectTimeout', 10_000],
    ['connect_timeout=1', 'connectTimeout', 2_000],
    ['connect_timeout=2', 'connectTimeout', 2_000],
    ['connect_timeout=0', 'connectTimeout', 0],
    ["connect_timeout=' 5 '", 'connectTimeout', 5_000],
    [{ connectTimeout: 1 }, 'connectTimeout', 1],
    [{ connectTimeout: 0 }, 'connectTimeout', 0],
    ['keepalives=0', 'keepAlive', false],
    ['keepalives=1', 'keepAlive', true],
    [{ keepAlive: false }, 'keepAlive', false],
    ['keepalives_idle=30', 'keepAliveIdle', 30_000],
    ['keepalives_idle=0', 'keepAliveIdle', 0],
    [{ keepAliveIdle: 1234 }, 'keepAliveIdle', 1234],
    ['keepalives_interval=5', 'keepAliveInterval', 5_000],
    [{ keepAliveInterval: 250 }, 'keepAliveInterval', 250],
    ['keepalives_count=4', 'keepAliveCount', 4],
    ['keepalives_count=0', 'keepAliveCount', 0],
    [{ keepAliveCount: 2 }, 'keepAliveCount', 2],
    // libpq's tcp_user_timeout is in milliseconds, unlike the other durations of a connection string.
    ['tcp_user_timeout=1500', 'tcpUserTimeout', 1500],
    [{ tcpUserTimeout: 700 }, 'tcpUserTimeout', 700],
    ['sslsni=0', 'sslsni', false],
    ['sslsni=1', 'sslsni', true],
    ['sslsni=off', 'sslsni', false],
    ['sslsni=TRUE', 'sslsni', true],
    ['prepare=false', 'prepare', false],
    ['prepare=no', 'prepare', false],
    ['prepare=1', 'prepare', true],
    [{ prepare: false }, 'prepare', false],
    ['prepare=always', 'prepare', 'always'],
    ['prepare=Always', 'prepare', 'always'],
    [{ prepare: 'always' }, 'prepare', 'always'],
    ['statement_cache_size=0', 'statementCacheSize', 0],
    ['statement_cache_size=1000', 'statementCacheSize', 1000],
    [{ statementCacheSize: 0 }, 'statementCacheSize', 0],
    [{ maxMessageSize: 1024 }, 'maxMessageSize', 1024],
    ...(['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const).map(
      (m): [string, keyof ConnectionConfig, unknown] => [`sslmode=${m}`, 'sslmode', m],
    ),
    ...(['disable', 'prefer', 'require'] as const).map((m): [string, keyof ConnectionConfig, unknown] => [`channel_binding=${m}`, 'channelBinding', m]),
    ...(['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'] as const).map(
      (m): [string, keyof ConnectionConfig, unknown] => [`target_session_attrs=${m}`, 'targetSessionAttrs', m],
    ),
    ['load_balance_hosts=random', 'loadBalanceHosts', 'random'],
    ['load_balance_hosts=disable', 'loadBalanceHosts', 'disable'],
    ['pooler=transaction', 'pooler', 'transaction'],
    ['postgres://h/db?pooler=session', 'pooler', 'session'],
    [{ pooler: 'transaction' }, 'pooler', 'transaction'],
    ['host=h', 'pooler', undefined],
    ['min_protocol_version=3.2', 'minProtocolVersion', '3.2'],
    ['min_protocol_version=latest', 'minProtocolVersion', '3.2'],
    ['max_protocol_version=3.0', 'maxProtocolVersion', '3.0'],
    ['max_protocol_version=latest', 'maxProtocolVersion', '3.2'],
    [{ maxProtocolVersion: 'latest' }, 'maxProtocolVersion', '3.2'],
    ['sslnegotiation=direct sslmode=require', 'sslnegotiation', 'direct'],
    ['sslnegotiation=direct sslmode=verify-full', 'sslnegotiation', 'direct'],
    ['sslnegotiation=postgres sslmode=disable', 'sslnegotiation', 'postgres'],
    ['sslrootcert=system', 'sslmode', 'verify-full'],
    ['sslrootcert=system sslmode=verify-full', 'sslmode', 'verify-full'],
    ['sslrootcert=/ca.pem', 'sslmode', 'prefer'],
    ['sslpassword=keypass', 'sslpassword', 'keypass'],
    ['fallback_application_name=fb', 'fallbackApplicationName', 'fb'],
    ['gssencmode=disable', 'sslmode', 'prefer'],
    ['gssencmode=prefer', 'sslmode', 'prefer'],
    ['sslcompression=0', 'sslmode', 'prefer'],
    ['client_encoding=UTF8', 'sslmode', 'prefer'],
    ['client_encoding=utf-8', 'sslmode', 'prefer'],
    ['password=', 'password', undefined],
    ['postgres://u:@h/db', 'password', undefined],
  ]
  for (const [input, key, expected] of cases) {
    test(`${JSON.stringify(input)} -> ${key}`, () => assert.deepEqual(pick(input, key), expected))
  }

  test('a password function is kept as is (called at connect time)', () => {
    const fn = (): Promise<string> => Promise.resolve('rotating')
    assert.equal(resolve({ password: fn }).password, fn)
  })

  test('tls options are passed through', () => {
    const tls = { ca: 'PEM', servername: 'x' }
    assert.deepEqual(resolve({ tls }).tls, tls)
  })

  test('the URL and key=value forms give the same config', () => {
    assert.deepEqual(
      resolve('postgresql://alice:s%20cret@db.example.com:6432/app?sslmode=verify-full&application_name=api&connect_timeout=5'),
      resolve("host=db.example.com port=6432 user=alice password='s cret' dbname=app sslmode=verify-full application_name=api connect_timeout=5"),
    )
  })

  test('a nested connection string in dbname is expanded', () => {
    const c = resolve("host=outer dbname='postgres://u@inner:6000/db' application_name=x")
    assert.deepEqual(c.hosts, [{ host: 'inner', port: 6000, hostaddr: undefined }])
    assert.equal(c.user, 'u')
    assert.equal(c.database, 'db')
    assert.equal(c.applicationName, 'x')
  })

  test('the options database is a plain name, never expanded', () => {
    assert.equal(resolve({ database: 'host=x' }).database, 'host=x')
  })
})

describe('require_auth', () => {
  const cases: Array<[string, string[], boolean]> = [
    ['scram-sha-256', ['scram-sha-256'], false],
    ['password,md5', ['password', 'md5'], false],
    ['none', ['none'], false],
    ['scram-sha-256,none', ['scram-sha-256', 'none'], false],
    ['!password', ['password'], true],
    ['!password,!md5', ['password', 'md5'], true],
    ['!none', ['none'], true],
    ['gss,sspi', ['gss', 'sspi'], false],
  ]
  for (const [value, methods, negated] of cases) {
    test(value, () => {
      const fromString = resolve(`require_auth=${value}`).requireAuth
      const fromOption = resolve({ requireAuth: value }).requireAuth
      assert.deepEqual(fromString, { methods: new Set(methods), negated })
      assert.deepEqual(fromOption, fromString)
    })
  }

  const errors: Array<[string, string[]]> = [
    ['scram-sha-256,!md5', ['negative require_auth method "!md5" cannot be mixed with non-negative methods']],
    ['!password,!none,scram-sha-256', ['require_auth method "scram-sha-256" cannot be mixed with negative methods']],
    ['password,md5,password', ['require_auth method "password" is specified more than once']],
    ['!password,!md5,!password', ['require_auth method "!password" is specified more than once']],
    ['none,md5,none', ['"none" is specified more than once']],
    ['kerberos', ['"kerberos"', 'unknown method']],
    ['password,,md5', ['unknown method ""']],
    ['oauth,oauth', ['require_auth method "oauth" is specified more than once']],
  ]
  for (const [value, includes] of errors) {
    test(`error: ${value}`, () => {
      assertConfigError(() => resolve(`require_auth=${value}`), 'require_auth', includes)
      assertConfigError(() => resolve({ requireAuth: value }), 'requireAuth', includes)
    })
  }
})

describe('malformed values', () => {
  const cases: Array<[string, string | ConnectOptions, string, string[]]> = [
    ['sslmode', 'sslmode=requir', 'sslmode', ['"requir"', 'verify-full']],
    ['sslmode is case-sensitive', 'sslmode=Require', 'sslmode', ['"Require"']],
    ['sslmode option', { sslmode: 'nope' as 'require' }, 'sslmode', ['"nope"']],
    ['sslmode option type', { sslmode: 1 as unknown as 'require' }, 'sslmode', ['must be a string', 'number']],
    ['channel_binding', 'channel_binding=maybe', 'channel_binding', ['"maybe"']],
    ['channelBinding option', { channelBinding: 'always' as 'require' }, 'channelBinding', ['"always"']],
    ['target_session_attrs', 'target_session_attrs=master', 'target_session_attrs', ['"master"']],
    ['load_balance_hosts', 'load_balance_hosts=roundrobin', 'load_balance_hosts', ['"roundrobin"']],
    ['pooler', 'pooler=statement', 'pooler', ['"statement"']],
    ['sslnegotiation', 'sslnegotiation=fast', 'sslnegotiation', ['"fast"']],
    ['sslnegotiation=direct with the default sslmode', 'sslnegotiation=direct', 'sslnegotiation', ['weak sslmode "prefer"', 'direct']],
    ['sslnegotiation=direct with allow', 'sslnegotiation=direct sslmode=allow', 'sslnegotiation', ['weak sslmode "allow"']],
    ['sslnegotiation direct option with disable', { sslnegotiation: 'direct', sslmode: 'disable' }, 'sslnegotiation', ['"disable"']],
    ['sslrootcert=system with require', 'sslrootcert=system sslmode=require', 'sslmode', ['weak sslmode "require"', 'sslrootcert=system', 'verify-full']],
    ['sslrootcert=system with verify-ca', { sslrootcert: 'system', sslmode: 'verify-ca' }, 'sslmode', ['"verify-ca"']],
    ['min_protocol_version', 'min_protocol_version=3.1', 'min_protocol_version', ['"3.1"']],
    ['max_protocol_version', 'max_protocol_version=4', 'max_protocol_version', ['"4"']],
    ['min above max', 'min_protocol_version=3.2 max_protocol_version=3.0', 'min_protocol_version', ['greater than']],
    ['min above max from options', { minProtocolVersion: 'latest', maxProtocolVersion: '3.0' }, 'minProtocolVersion', ['greater than']],
    ['connect_timeout negative', 'connect_timeout=-1', 'connect_timeout', ['"-1"']],
    ['connect_timeout not a number', 'connect_timeout=ten', 'connect_timeout', ['"ten"', 'integer']],
    ['connect_timeout fraction', 'connect_timeout=1.5', 'connect_timeout', ['"1.5"']],
    ['connect_timeout beyond Node timers', 'connect_timeout=99999999', 'connect_timeout', ['"99999999"']],
    ['connectTimeout negative', { connectTimeout: -1 }, 'connectTimeout', ['"-1"']],
    ['connectTimeout NaN', { connectTimeout: Number.NaN }, 'connectTimeout', ['"NaN"']],
    ['connectTimeout string', { connectTimeout: '5' as unknown as number }, 'connectTimeout', ['milliseconds', 'string']],
    ['keepalives', 'keepalives=2', 'keepalives', ['"2"']],
    ['keepalives_idle', 'keepalives_idle=-3', 'keepalives_idle', ['"-3"']],
    ['keepAlive type', { keepAlive: 1 as unknown as boolean }, 'keepAlive', ['boolean', 'number']],
    ['keepAliveIdle type', { keepAliveIdle: '60' as unknown as number }, 'keepAliveIdle', ['string']],
    ['keepalives_interval', 'keepalives_interval=-1', 'keepalives_interval', ['"-1"']],
    ['keepalives_count', 'keepalives_count=many', 'keepalives_count', ['"many"']],
    ['tcp_user_timeout', 'tcp_user_timeout=1.5', 'tcp_user_timeout', ['"1.5"', 'milliseconds']],
    ['tcpUserTimeout negative', { tcpUserTimeout: -5 }, 'tcpUserTimeout', ['"-5"']],
    ['sslsni', 'sslsni=maybe', 'sslsni', ['"maybe"']],
    ['sslsni type', { sslsni: 'yes' as unknown as boolean }, 'sslsni', ['boolean', 'string']],
    ['prepare', 'prepare=sometimes', 'prepare', ['"sometimes"', 'always']],
    ['prepare type', { prepare: 'never' as unknown as boolean }, 'prepare', ["a boolean or 'always'", 'string']],
    ['statement_cache_size negative', 'statement_cache_size=-1', 'statement_cache_size', ['"-1"']],
    ['statement_cache_size word', 'statement_cache_size=lots', 'statement_cache_size', ['"lots"']],
    ['statementCacheSize fraction', { statementCacheSize: 1.5 }, 'statementCacheSize', ['"1.5"']],
    ['statementCacheSize negative', { statementCacheSize: -1 }, 'statementCacheSize', ['"-1"']],
    ['statementCacheSize type', { statementCacheSize: '5' as unknown as number }, 'statementCacheSize', ['string']],
    ['maxMessageSize zero', { maxMessageSize: 0 }, 'maxMessageSize', ['"0"']],
    ['maxMessageSize too big', { maxMessageSize: 2 ** 32 }, 'maxMessageSize', ['"4294967296"']],
    ['gssencmode=require', 'gssencmode=require', 'gssencmode', ['GSSAPI', 'require']],
    ['gssencmode bogus', 'gssencmode=bogus', 'gssencmode', ['"bogus"']],
    ['sslcompression bogus', 'sslcompression=x', 'sslcompression', ['"x"']],
    ['client_encoding', 'client_encoding=LATIN1', 'client_encoding', ['"LATIN1"', 'UTF8']],
    ['user type', { user: 5 as unknown as string }, 'user', ['must be a string', 'number']],
    ['user with NUL', { user: 'a\0b' }, 'user', ['NUL']],
    ['database with NUL', 'dbname=a\\\0b', 'dbname', ['NUL']],
    ['options with NUL', { options: '-c\0x' }, 'options', ['NUL']],
    ['database type', { database: ['db'] as unknown as string }, 'database', ['must be a string', 'an array']],
    ['port object', { port: {} as unknown as number }, 'port', ['object']],
    ['sslrootcert type', { sslrootcert: 1 as unknown as string }, 'sslrootcert', ['number']],
    ['tls type', { tls: 'insecure' as unknown as object }, 'tls', ['an object', 'string']],
    ['tls array', { tls: [] as unknown as object }, 'tls', ['an object', 'an array']],
    ['connectionString type', { connectionString: 42 as unknown as string }, 'connectionString', ['must be a string', 'number']],
    ['requireAuth type', { requireAuth: ['md5'] as unknown as string }, 'requireAuth', ['must be a string', 'array']],
    ['password type', { password: 1234 as unknown as string }, 'password', ['string or a function', 'number']],
  ]
  for (const [name, input, setting, includes] of cases) {
    test(name, () => assertConfigError(() => resolve(input), setting, includes))
  }

  test('input that is neither a string nor an object', () => {
    assertConfigError(() => resolveConfig(42 as unknown as string, BASE), 'connectionString', ['number'])
    assertConfigError(() => resolveConfig([] as unknown as string, BASE), 'connectionString', ['array'])
  })
})

describe('unknown and unsupported settings', () => {
  const cases: Array<[string, string | ConnectOptions, string, string[]]> = [
    ['unknown option', { sslmod: 'require' } as ConnectOptions, 'sslmod', ['unknown connection setting "sslmod"', 'did you mean "sslmode"']],
    ['libpq keyword as an option', { dbname: 'x' } as ConnectOptions, 'dbname', ['"dbname"', 'did you mean "database"']],
    ['snake_case option', { application_name: 'x' } as ConnectOptions, 'application_name', ['did you mean "applicationName"']],
    ['connect_timeout as an option', { connect_timeout: 5 } as ConnectOptions, 'connect_timeout', ['did you mean "connectTimeout"']],
    ['node-postgres ssl option', { ssl: true } as ConnectOptions, 'ssl', ['"ssl"', 'sslmode', 'tls']],
    ['typo in an option', { hots: 'x' } as ConnectOptions, 'hots', ['did you mean "host"']],
    ['unknown keyword in the string', 'sslmod=require', 'sslmod', ['unknown connection setting "sslmod"']],
    ['unknown keyword in the string of the options', { connectionString: 'postgres://h/db?frob=1' }, 'frob', ['"frob"']],
    ['unsupported keyword', 'krbsrvname=postgres', 'krbsrvname', ['does not support', '"krbsrvname"']],
    ['unsupported keyword in a URL', 'postgres://h/db?requirepeer=postgres', 'requirepeer', ['does not support', '"requirepeer"']],
    ['replication with another word', 'postgres://h/db?replication=logical', 'replication', ['invalid replication "logical"', "'database'"]],
    ['replication as a number option', { replication: 1 } as unknown as ConnectOptions, 'replication', ['replication', 'number']],
    ['unsupported TLS version keyword', 'ssl_min_protocol_version=TLSv1.3', 'ssl_min_protocol_version', ['does not support', 'minVersion']],
  ]
  for (const [name, input, setting, includes] of cases) {
    test(name, () => assertConfigError(() => resolve(input), setting, includes))
  }

  test('ignoreKeys are not reported', () => {
    const c = resolve({ host: 'h', onNotice: () => {}, rowMode: 'array' } as ConnectOptions, { ignoreKeys: ['onNotice', 'rowMode'] })
    assert.equal(c.hosts[0]?.host, 'h')
    assertConfigError(() => resolve({ onNotice: () => {} } as ConnectOptions), 'onNotice', ['"onNotice"'])
  })
})

describe('params (extra startup parameters)', () => {
  test('are passed through', () => {
    const c = resolve({ params: { statement_timeout: '5s', search_path: 'app,public' } })
    assert.deepEqual({ ...c.runtimeParams }, { statement_timeout: '5s', search_path: 'app,public' })
  })

  test('are kept apart from the options string', () => {
    const c = resolve({ options: '-c geqo=off', params: { jit: 'off' } })
    assert.equal(c.options, '-c geqo=off')
    assert.deepEqual({ ...c.runtimeParams }, { jit: 'off' })
  })

  test('a __proto__ key stays an ordinary entry', () => {
    const params = JSON.parse('{"__proto__": "x", "a": "b"}') as Record<string, string>
    const c = resolve({ params })
    assert.equal(Object.getPrototypeOf(c.runtimeParams), null)
    assert.deepEqual(Object.keys(c.runtimeParams).sort(), ['__proto__', 'a'])
  })

  for (const key of ['user', 'database', 'application_name', 'options', 'client_encoding', 'replication', 'User', 'CLIENT_ENCODING']) {
    test(`may not set ${key}`, () => assertConfigError(() => resolve({ params: { [key]: 'x' } }), 'params', [`"${key}"`, 'sets it itself']))
  }

  const errors: Array<[string, unknown, string[]]> = [
    ['protocol extension names', { '_pq_.x': 'y' }, ['"_pq_.x"', 'protocol extension']],
    ['non-string value', { statement_timeout: 5 }, ['params.statement_timeout', 'number']],
    ['empty name', { '': 'x' }, ['empty']],
    ['NUL in a value', { a: 'b\0c' }, ['NUL']],
    ['NUL in a name', { 'a\0b': 'c' }, ['NUL']],
    ['not an object', 'statement_timeout=5', ['an object', 'string']],
    ['an array', [['a', 'b']], ['an array']],
  ]
  for (const [name, params, includes] of errors) {
    test(`error: ${name}`, () => assertConfigError(() => resolve({ params: params as Record<string, string> }), 'params', includes))
  }
})

describe('passwords never appear in messages', () => {
  const SECRET = 'Zq9Xy7Wv'
  const secretParts = [SECRET, 'Zq9', 'Xy7Wv']
  const inputs: Array<[string, string | ConnectOptions, Record<string, string>?]> = [
    ['URL, unterminated IPv6 bracket', `postgres://u:${SECRET}@[::1/db`],
    ['URL, port out of range', `postgres://u:${SECRET}@h:99999/db`],
    ['URL, bad port', `postgres://u:${SECRET}@h:abc/db`],
    ['URL, bad sslmode', `postgres://u:${SECRET}@h/db?sslmode=bogus`],
    ['URL, unknown parameter', `postgres://u:${SECRET}@h/db?bogus=1`],
    ['URL, bad percent-encoding in the password', `postgres://u:Zq9%zzXy7Wv@h/db`],
    ['URL, %00 in the password', `postgres://u:Zq9%00Xy7Wv@h/db`],
    ['URL, invalid UTF-8 in the password', `postgres://u:Zq9%C3%28Xy7Wv@h/db`],
    ['URL, unencoded slash in the password', 'postgres://u:Zq9/Xy7Wv@h/db'],
    ['URL, unencoded question mark in the password', 'postgres://u:Zq9?Xy7Wv@h/db'],
    ['URL, unencoded & in a query password', 'postgres://h/db?password=Zq9&Xy7Wv&sslmode=require'],
    ['URL, = in a query password', 'postgres://h/db?password=Zq9=Xy7Wv'],
    ['URL, query password then a bad value', `postgres://h/db?password=${SECRET}&port=x`],
    ['URL, sslpassword in the query', `postgres://h/db?sslpassword=${SECRET}&sslmode=x`],
    ['URL, nested URL with a password and a bad bracket', `postgres://h/?dbname=postgres%3A%2F%2Fu%3A${SECRET}%40%5B%3A%3A1`],
    ['other scheme', `mysql://u:${SECRET}@h/db`],
    ['key=value, unquoted password with a space', 'password=Zq9 Xy7Wv host=h'],
    ['key=value, unquoted password with a space at the end', 'password=Zq9 Xy7Wv'],
    ['key=value, unquoted password with a space and =', 'password=Zq9 Xy7Wv=1'],
    ['key=value, unterminated quoted password', `password='${SECRET}`],
    ['key=value, password then a bad port', `password=${SECRET} port=abc`],
    ['key=value, bad sslmode after the password', `host=h password='${SECRET}' sslmode=bogus`],
    ['key=value, sslpassword with a space', 'sslpassword=Zq9 Xy7Wv'],
    ['key=value, nested URL with a password', `dbname='postgres://u:${SECRET}@[::1'`],
    ['options, NUL in the password', { password: `${SECRET}\0` }],
    ['options, NUL in the sslpassword', { sslpassword: `${SECRET}\0` }],
    ['options, password and a bad port', { password: SECRET, port: 'abc' }],
    ['options, URL with a password and a bad option', { connectionString: `postgres://u:${SECRET}@h/db`, sslmode: 'bogus' as 'require' }],
    ['options, password of the wrong type', { password: [SECRET] as unknown as string }],
    ['env, password and a bad port', undefined as unknown as string, { PGPASSWORD: SECRET, PGPORT: 'x' }],
    ['env, NUL in the password', undefined as unknown as string, { PGPASSWORD: `${SECRET}\0` }],
  ]
  for (const [name, input, env] of inputs) {
    test(name, () => {
      assert.throws(
        () => resolve(input, { env: env ?? {} }),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`)
          for (const part of secretParts) {
            assert.ok(!err.message.includes(part), `message ${JSON.stringify(err.message)} leaks ${JSON.stringify(part)}`)
            assert.ok(!err.setting.includes(part), `setting ${JSON.stringify(err.setting)} leaks ${JSON.stringify(part)}`)
          }
          return true
        },
      )
    })
  }
})

test('secrets are not printed when a config or a client is logged', async () => {
  const { inspect } = await import('node:util')
  const { Client } = await import('../../../src/client.js')
  const config = resolveConfig({ host: 'h', user: 'u', password: 'SEKRIT-PW', sslpassword: 'KEY-PASS', tls: { passphrase: 'TLS-PASS' } }, { env: {} })
  assert.equal(config.password, 'SEKRIT-PW')
  assert.equal(config.sslpassword, 'KEY-PASS')
  const client = new Client({ host: 'h', user: 'u', password: 'SEKRIT-PW', sslpassword: 'KEY-PASS', tls: { passphrase: 'TLS-PASS' } })
  for (const text of [inspect(config, { depth: 10 }), JSON.stringify(config), inspect(client, { depth: 10 }), JSON.stringify(client.config), String({ ...config })]) {
    assert.ok(!/SEKRIT|KEY-PASS|TLS-PASS/.test(text), text)
  }
})
