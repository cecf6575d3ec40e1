import assert from 'node:assert/strict'
import os from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import { ConfigError } from '../../../src/errors.js'
import { type ConnectOptions, type ResolveOptions, resolveConfig } from '../../../src/config/index.js'
import type { ConnectionConfig } from '../../../src/config/types.js'
import { assertConfigError } from '../../support/assert-config.js'

const BASE: ResolveOptions = { env: {}, osUser: 'osuser', homedir: '/home/osuser' }

function resolve(input?: string | ConnectOptions, opts: ResolveOptions = {}): ConnectionConfig {
  return resolveConfig(input, { ...BASE, ...opts })
}

describe('defaults', () => {
  test('nothing given: environment (empty) and defaults only', () => {
    const c = resolve()
    assert.deepEqual(c.hosts, [{ host: 'localhost', port: 5432, hostaddr: undefined }])
    assert.equal(c.user, 'osuser')
    assert.equal(c.database, 'osuser')
    assert.equal(c.password, undefined)
    assert.equal(c.passfile, process.platform === 'win32' ? undefined : path.join('/home/osuser', '.pgpass'))
    assert.equal(c.applicationName, undefined)
    assert.equal(c.fallbackApplicationName, undefined)
    assert.equal(c.options, undefined)
    assert.deepEqual({ ...c.runtimeParams }, {})
    assert.equal(c.sslmode, 'prefer')
    assert.equal(c.sslrootcert, undefined)
    assert.equal(c.sslcert, undefined)
    assert.equal(c.sslkey, undefined)
    assert.equal(c.sslpassword, undefined)
    assert.equal(c.sslcrl, undefined)
    assert.equal(c.sslsni, true)
    assert.equal(c.sslnegotiation, 'postgres')
    assert.equal(c.tls, undefined)
    assert.equal(c.channelBinding, 'prefer')
    assert.equal(c.requireAuth, undefined)
    assert.equal(c.minProtocolVersion, '3.0')
    assert.equal(c.maxProtocolVersion, '3.2')
    assert.equal(c.connectTimeout, 30_000)
    assert.equal(c.keepAlive, true)
    assert.equal(c.keepAliveIdle, 60_000)
    assert.equal(c.keepAliveInterval, 0)
    assert.equal(c.keepAliveCount, 0)
    assert.equal(c.tcpUserTimeout, 0)
    assert.equal(c.targetSessionAttrs, 'any')
    assert.equal(c.loadBalanceHosts, 'disable')
    assert.equal(c.prepare, true)
    assert.equal(c.statementCacheSize, 256)
    assert.equal(c.maxMessageSize, 2 ** 30 + 2 ** 16)
  })

  test('same result for undefined, null, an empty string and an empty object', () => {
    const expected = resolve()
    assert.deepEqual(resolve(''), expected)
    assert.deepEqual(resolve({}), expected)
    assert.deepEqual(resolveConfig(null as unknown as undefined, BASE), expected)
  })

  test('database defaults to the resolved user, wherever it came from', () => {
    assert.equal(resolve('user=alice').database, 'alice')
    assert.equal(resolve({ user: 'bob' }).database, 'bob')
    assert.equal(resolve(undefined, { env: { PGUSER: 'carol' } }).database, 'carol')
  })

  test('the OS user is the default user', () => {
    let expected: string | undefined
    try {
      expected = os.userInfo().username
    } catch {
      // No passwd entry for this uid: resolveConfig must then say so, naming the user setting.
    }
    if (expected === undefined || expected === '') {
      assertConfigError(() => resolveConfig(undefined, { env: {}, homedir: '/h' }), 'user', ['PGUSER'])
    } else {
      assert.equal(resolveConfig(undefined, { env: {}, homedir: '/h' }).user, expected)
    }
  })

  test('password file: HOME from env when no homedir is given', { skip: process.platform === 'win32' }, () => {
    assert.equal(resolveConfig(undefined, { env: { HOME: '/home/envhome' }, osUser: 'u' }).passfile, path.join('/home/envhome', '.pgpass'))
  })
})

describe('precedence: options > connection string > environment > defaults', () => {
  interface Row {
    name: string
    field: keyof ConnectionConfig
    option: ConnectOptions
    str: string
    env: Record<string, string>
    values: [unknown, unknown, unknown, unknown]
  }
  const rows: Row[] = [
    {
      name: 'host',
      field: 'hosts',
      option: { host: 'opt' },
      str: 'host=str',
      env: { PGHOST: 'env' },
      values: ['opt', 'str', 'env', 'localhost'].map((h) => [{ host: h, port: 5432, hostaddr: undefined }]) as Row['values'],
    },
    {
      name: 'port',
      field: 'hosts',
      option: { port: 1 },
      str: 'port=2',
      env: { PGPORT: '3' },
      values: [1, 2, 3, 5432].map((p) => [{ host: 'localhost', port: p, hostaddr: undefined }]) as Row['values'],
    },
    { name: 'user', field: 'user', option: { user: 'o' }, str: 'user=s', env: { PGUSER: 'e' }, values: ['o', 's', 'e', 'osuser'] },
    { name: 'database', field: 'database', option: { database: 'o' }, str: 'dbname=s', env: { PGDATABASE: 'e' }, values: ['o', 's', 'e', 'osuser'] },
    { name: 'password', field: 'password', option: { password: 'o' }, str: 'password=s', env: { PGPASSWORD: 'e' }, values: ['o', 's', 'e', undefined] },
    {
      name: 'application name',
      field: 'applicationName',
      option: { applicationName: 'o' },
      str: 'application_name=s',
      env: { PGAPPNAME: 'e' },
      values: ['o', 's', 'e', undefined],
    },
    { name: 'options', field: 'options', option: { options: '-co' }, str: 'options=-cs', env: { PGOPTIONS: '-ce' }, values: ['-co', '-cs', '-ce', undefined] },
    { name: 'sslmode', field: 'sslmode', option: { sslmode: 'require' }, str: 'sslmode=allow', env: { PGSSLMODE: 'disable' }, values: ['require', 'allow', 'disable', 'prefer'] },
    {
      name: 'connect timeout (ms in options, seconds elsewhere)',
      field: 'connectTimeout',
      option: { connectTimeout: 1500 },
      str: 'connect_timeout=3',
      env: { PGCONNECT_TIMEOUT: '4' },
      values: [1500, 3000, 4000, 30_000],
    },
    {
      name: 'target session attrs',
      field: 'targetSessionAttrs',
      option: { targetSessionAttrs: 'primary' },
      str: 'target_session_attrs=standby',
      env: { PGTARGETSESSIONATTRS: 'read-only' },
      values: ['primary', 'standby', 'read-only', 'any'],
    },
    {
      name: 'passfile',
      field: 'passfile',
      option: { passfile: '/o' },
      str: 'passfile=/s',
      env: { PGPASSFILE: '/e' },
      values: ['/o', '/s', '/e', process.platform === 'win32' ? undefined : path.join('/home/osuser', '.pgpass')],
    },
    { name: 'sslsni', field: 'sslsni', option: { sslsni: false }, str: 'sslsni=1', env: { PGSSLSNI: '0' }, values: [false, true, false, true] },
    {
      name: 'channel binding',
      field: 'channelBinding',
      option: { channelBinding: 'require' },
      str: 'channel_binding=disable',
      env: { PGCHANNELBINDING: 'require' },
      values: ['require', 'disable', 'require', 'prefer'],
    },
  ]
  for (const row of rows) {
    test(row.name, () => {
      const [fromOption, fromString, fromEnv, fromDefault] = row.values
      assert.deepEqual(resolve({ ...row.option, connectionString: row.str }, { env: row.env })[row.field], fromOption, 'options win')
      assert.deepEqual(resolve(row.str, { env: row.env })[row.field], fromString, 'connection string beats environment')
      assert.deepEqual(resolve(undefined, { env: row.env })[row.field], fromEnv, 'environment beats defaults')
      assert.deepEqual(resolve()[row.field], fromDefault, 'defaults')
    })
  }

  test('precedence is per setting: each source fills what the higher ones leave unset', () => {
    const c = resolve({ connectionString: 'postgres://s@strhost/strdb', port: 7 }, { env: { PGHOST: 'envhost', PGUSER: 'envuser', PGAPPNAME: 'envapp' } })
    assert.deepEqual(c.hosts, [{ host: 'strhost', port: 7, hostaddr: undefined }])
    assert.equal(c.user, 's')
    assert.equal(c.database, 'strdb')
    assert.equal(c.applicationName, 'envapp')
  })

  test('empty values count as unset, so lower sources apply', () => {
    assert.equal(resolve('application_name=', { env: { PGAPPNAME: 'env' } }).applicationName, 'env')
    assert.equal(resolve({ applicationName: '' }, { env: { PGAPPNAME: 'env' } }).applicationName, 'env')
    assert.equal(resolve({ host: undefined, user: null as unknown as string }, { env: { PGHOST: 'h', PGUSER: 'u' } }).user, 'u')
    assert.equal(resolve(undefined, { env: { PGHOST: '', PGPORT: '' } }).hosts[0]?.port, 5432)
    assert.equal(resolve('postgres:///db', { env: { PGHOST: 'envhost' } }).hosts[0]?.host, 'envhost')
  })

  test('a bad value is ignored when a higher source overrides it (only the winner is parsed)', () => {
    assert.equal(resolve({ port: 6000 }, { env: { PGPORT: 'abc' } }).hosts[0]?.port, 6000)
    assert.equal(resolve('sslmode=require', { env: { PGSSLMODE: 'bogus' } }).sslmode, 'require')
    assert.equal(resolve({ connectionString: 'port=abc', port: 1 }).hosts[0]?.port, 1)
  })
})

describe('environment variables', () => {
  const cases: Array<[string, string, (c: ConnectionConfig) => unknown, unknown]> = [
    ['PGHOST', 'h1,h2', (c) => c.hosts.map((h) => h.host), ['h1', 'h2']],
    ['PGHOSTADDR', '10.0.0.1', (c) => c.hosts[0], { host: '10.0.0.1', port: 5432, hostaddr: '10.0.0.1' }],
    ['PGPORT', '6543', (c) => c.hosts[0]?.port, 6543],
    ['PGUSER', 'u', (c) => c.user, 'u'],
    ['PGPASSWORD', 'pw', (c) => c.password, 'pw'],
    ['PGDATABASE', 'd', (c) => c.database, 'd'],
    ['PGSSLMODE', 'verify-full', (c) => c.sslmode, 'verify-full'],
    ['PGSSLROOTCERT', '/ca.pem', (c) => c.sslrootcert, '/ca.pem'],
    ['PGSSLCERT', '/c.pem', (c) => c.sslcert, '/c.pem'],
    ['PGSSLKEY', '/k.pem', (c) => c.sslkey, '/k.pem'],
    ['PGSSLCRL', '/crl.pem', (c) => c.sslcrl, '/crl.pem'],
    ['PGSSLSNI', '0', (c) => c.sslsni, false],
    ['PGSSLNEGOTIATION', 'postgres', (c) => c.sslnegotiation, 'postgres'],
    ['PGAPPNAME', 'app', (c) => c.applicationName, 'app'],
    ['PGCONNECT_TIMEOUT', '10', (c) => c.connectTimeout, 10_000],
    ['PGPASSFILE', '/pgpass', (c) => c.passfile, '/pgpass'],
    ['PGCHANNELBINDING', 'disable', (c) => c.channelBinding, 'disable'],
    ['PGREQUIREAUTH', 'scram-sha-256', (c) => [...(c.requireAuth?.methods ?? [])], ['scram-sha-256']],
    ['PGTARGETSESSIONATTRS', 'prefer-standby', (c) => c.targetSessionAttrs, 'prefer-standby'],
    ['PGLOADBALANCEHOSTS', 'random', (c) => c.loadBalanceHosts, 'random'],
    ['PGOPTIONS', '-c geqo=off', (c) => c.options, '-c geqo=off'],
    ['PGMINPROTOCOLVERSION', '3.2', (c) => c.minProtocolVersion, '3.2'],
    ['PGMAXPROTOCOLVERSION', '3.0', (c) => c.maxProtocolVersion, '3.0'],
    ['PGGSSENCMODE', 'disable', (c) => c.sslmode, 'prefer'],
  ]
  for (const [name, value, get, expected] of cases) {
    test(`${name}=${value}`, () => assert.deepEqual(get(resolve(undefined, { env: { [name]: value } })), expected))
  }

  test('variables for features pipegres lacks are ignored', () => {
    assert.doesNotThrow(() => resolve(undefined, { env: { PGREQUIREPEER: 'postgres', PGKRBSRVNAME: 'k', PGGSSLIB: 'gssapi' } }))
  })

  test('the default env is process.env', () => {
    const saved = process.env.PGAPPNAME
    process.env.PGAPPNAME = 'from-process-env'
    try {
      assert.equal(resolveConfig(undefined, { osUser: 'u', homedir: '/h' }).applicationName, 'from-process-env')
    } finally {
      if (saved === undefined) delete process.env.PGAPPNAME
      else process.env.PGAPPNAME = saved
    }
  })

  const errors: Array<[string, string, string[]]> = [
    ['PGPORT', 'abc', ['PGPORT', '"abc"', 'environment']],
    ['PGSSLMODE', 'requir', ['PGSSLMODE', '"requir"', 'verify-full']],
    ['PGCONNECT_TIMEOUT', 'soon', ['PGCONNECT_TIMEOUT', '"soon"']],
    ['PGSSLSNI', 'maybe', ['PGSSLSNI', '"maybe"']],
    ['PGHOSTADDR', 'db.example.com', ['PGHOSTADDR', 'numeric']],
    ['PGGSSENCMODE', 'require', ['PGGSSENCMODE', 'GSSAPI']],
  ]
  for (const [name, value, includes] of errors) {
    test(`bad ${name} is reported under the variable's name`, () =>
      assertConfigError(() => resolve(undefined, { env: { [name]: value } }), name, includes))
  }
})

describe('hosts and ports', () => {
  const hosts = (input: string | ConnectOptions, env: Record<string, string> = {}): unknown =>
    resolve(input, { env }).hosts.map((h) => (h.hostaddr === undefined ? `${h.host}:${h.port}` : `${h.host}:${h.port}@${h.hostaddr}`))
  const cases: Array<[string, string | ConnectOptions, string[], Record<string, string>?]> = [
    ['one host', 'host=db', ['db:5432']],
    ['one port for all hosts', 'host=a,b,c port=6000', ['a:6000', 'b:6000', 'c:6000']],
    ['a port per host', 'host=a,b port=1,2', ['a:1', 'b:2']],
    ['an empty host item means localhost', 'host=,b', ['localhost:5432', 'b:5432']],
    ['an empty port item means 5432', 'host=a,b port=6000,', ['a:6000', 'b:5432']],
    ['items are trimmed', 'host=\'a, b\' port=\' 1 , 2 \'', ['a:1', 'b:2']],
    ['unix socket directory', 'host=/var/run/postgresql port=5433', ['/var/run/postgresql:5433']],
    ['abstract socket', 'host=@pg', ['@pg:5432']],
    ['IPv6 literal', 'host=::1', ['::1:5432']],
    ['URL multi-host with ports', 'postgres://h1:5432,h2:5433/db', ['h1:5432', 'h2:5433']],
    ['URL multi-host, port on one only', 'postgres://h1,h2:5433/db', ['h1:5432', 'h2:5433']],
    ['URL hosts without ports take PGPORT', 'postgres://h1,h2/db', ['h1:7000', 'h2:7000'], { PGPORT: '7000' }],
    ['URL empty hosts with ports', 'postgres://:5433,:5434/db', ['localhost:5433', 'localhost:5434']],
    ['URL IPv6', 'postgres://[::1]:5433,[2001:db8::2]/db', ['::1:5433', '2001:db8::2:5432']],
    ['URL encoded socket dir', 'postgres://%2Fvar%2Frun%2Fpostgresql/db', ['/var/run/postgresql:5432']],
    ['URL socket dir in the query', 'postgres:///db?host=/tmp&port=5433', ['/tmp:5433']],
    ['hostaddr with host', 'host=db.example.com hostaddr=10.0.0.1', ['db.example.com:5432@10.0.0.1']],
    ['hostaddr alone names the host', 'hostaddr=10.0.0.1,::1', ['10.0.0.1:5432@10.0.0.1', '::1:5432@::1']],
    ['hostaddr with an empty item', 'host=a,b hostaddr=,10.0.0.2', ['a:5432', 'b:5432@10.0.0.2']],
    ['hostaddr decides the count; one port for all', 'hostaddr=10.0.0.1,10.0.0.2 port=6000', ['10.0.0.1:6000@10.0.0.1', '10.0.0.2:6000@10.0.0.2']],
    ['options: host array and port array', { host: ['a', 'b'], port: [1, 2] }, ['a:1', 'b:2']],
    ['options: comma-separated host string', { host: 'a,b', port: '1,2' }, ['a:1', 'b:2']],
    ['options: port as a string', { host: 'a', port: '6000' }, ['a:6000']],
    ['options: port array with strings', { host: ['a', 'b'], port: [1, '2'] as unknown as number[] }, ['a:1', 'b:2']],
    ['options: hostaddr array', { hostaddr: ['127.0.0.1', '::1'], port: 6000 }, ['127.0.0.1:6000@127.0.0.1', '::1:6000@::1']],
    ['options host with string hostaddr', { host: 'db', hostaddr: '10.1.1.1' }, ['db:5432@10.1.1.1']],
    ['options port with string host', { connectionString: 'host=a,b', port: [1, 2] }, ['a:1', 'b:2']],
    ['options: empty host and port arrays count as unset', { connectionString: 'host=s port=9', host: [], port: [] }, ['s:9']],
  ]
  for (const [name, input, expected, env] of cases) {
    test(name, () => assert.deepEqual(hosts(input, env), expected))
  }

  const errors: Array<[string, string | ConnectOptions, string, string[]]> = [
    ['port count mismatch', 'host=a,b,c port=1,2', 'port', ['could not match 2 port numbers to 3 hosts']],
    ['port count mismatch from options', { host: ['a', 'b'], port: [1, 2, 3] }, 'port', ['3 port numbers to 2 hosts']],
    ['hostaddr count mismatch', 'host=a,b hostaddr=10.0.0.1', 'hostaddr', ['could not match 2 host names to 1 hostaddr values']],
    ['hostaddr not numeric', 'hostaddr=db.example.com', 'hostaddr', ['"db.example.com"', 'numeric']],
    ['port not a number', 'port=abc', 'port', ['"abc"']],
    ['port zero', 'port=0', 'port', ['"0"', '65535']],
    ['port too big', 'port=65536', 'port', ['"65536"']],
    ['port negative', 'port=-5', 'port', ['"-5"']],
    ['port fraction', 'port=54.32', 'port', ['"54.32"']],
    ['bad port in a list', 'host=a,b port=1,x', 'port', ['"x"']],
    ['URL port out of range', 'postgres://h:70000/db', 'port', ['"70000"']],
    ['options port not a number', { port: 'abc' }, 'port', ['"abc"']],
    ['options port out of range', { port: 70000 }, 'port', ['70000']],
    ['options port fraction', { port: 5432.5 }, 'port', ['5432.5']],
    ['options port wrong type', { port: true as unknown as number }, 'port', ['boolean']],
    ['options port array with a bad item', { port: [1, 'x'] as unknown as number[] }, 'port', ['"x"']],
    ['options host wrong type', { host: 5 as unknown as string }, 'host', ['host', 'number']],
    ['options host array with a bad item', { host: ['a', 5] as unknown as string[] }, 'host[1]', ['host[1]', 'number']],
    ['options hostaddr not numeric', { hostaddr: 'localhost' }, 'hostaddr', ['"localhost"']],
  ]
  for (const [name, input, setting, includes] of errors) {
    test(`error: ${name}`, () => assertConfigError(() => resolve(input), setting, includes))
  }
})

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
