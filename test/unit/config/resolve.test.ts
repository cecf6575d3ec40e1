// resolveConfig: where each setting comes from. Defaults, the precedence of
// options over the connection string over the environment, the PG* variables,
// and host and port lists. What each setting may hold: resolve-values.test.ts.

import assert from 'node:assert/strict'
import os from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
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
