// test-tags: matrix
// Connection settings end to end against the managed server: every way of
// writing them (URL, key=value, options object, PG* variables, startup
// parameters) reaches the server as intended, and a malformed one is refused
// by name. Host lists, failures and target_session_attrs: connection/connect-hosts.test.ts.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { inspect } from 'node:util'
import { Client, ConfigError, PgError, type ClientOptions } from '../../../src/index.js'
import { getTestServer } from '../../support/servers/test-server.js'
import { connectError, isolateEnvironment, one, whereAmI, withClient } from '../../support/connect.js'

const server = await getTestServer()

await isolateEnvironment('settings')

const { trust, scram, md5, password } = server.users
const enc = encodeURIComponent

describe('connection URLs', () => {
  test('postgresql:// with a percent-encoded user and password (SCRAM)', async () => {
    // The harness passwords contain '@', ':', '/', ' ' and 'é'.
    assert.match(scram.password, /[@:/ ]/)
    const url = `postgresql://${enc(scram.user)}:${enc(scram.password)}@${server.host}:${server.port}/${server.database}?sslmode=disable`
    await withClient(url, async (client) => {
      assert.deepEqual(await whereAmI(client), { user: scram.user, db: server.database, addr: server.host, ssl: false })
    })
  })

  test('postgres:// scheme, MD5 and cleartext users', async () => {
    for (const who of [md5, password]) {
      const url = `postgres://${enc(who.user)}:${enc(who.password)}@${server.host}:${server.port}/${server.database}`
      await withClient(url, async (client) => {
        assert.equal((await whereAmI(client)).user, who.user)
      })
    }
  })

  test('?host=<socket directory>: a unix socket', async () => {
    const url = `postgresql://${trust.user}@/${server.database}?host=${enc(server.socketDir)}&port=${server.port}`
    await withClient(url, async (client) => {
      assert.equal(client.tls, false)
      assert.deepEqual(await whereAmI(client), { user: trust.user, db: server.database, addr: null, ssl: false })
    })
  })

  test('a socket directory percent-encoded in the authority', async () => {
    const url = `postgresql://${trust.user}@${enc(server.socketDir)}:${server.port}/${server.database}`
    await withClient(url, async (client) => {
      assert.equal((await whereAmI(client)).addr, null)
    })
  })

  test('IPv6 [::1]', async () => {
    const url = `postgresql://${enc(scram.user)}:${enc(scram.password)}@[::1]:${server.port}/${server.database}?sslmode=disable`
    if (server.ipv6) {
      await withClient(url, async (client) => {
        assert.equal((await whereAmI(client)).addr, '::1')
      })
    } else {
      // No IPv6 loopback here: at least the address must be parsed as one host, not split at its colons.
      const client = new Client(url)
      assert.deepEqual(client.config.hosts, [{ host: '::1', port: server.port, hostaddr: undefined }])
    }
  })

  test('database name percent-encoded in the path, and a nonexistent one: PgError 3D000', async () => {
    const err = await connectError(`postgresql://${trust.user}@${server.host}:${server.port}/${enc('no such/db')}`)
    assert.ok(err instanceof PgError, inspect(err))
    assert.equal(err.code, '3D000')
    assert.match(err.message, /"no such\/db" does not exist/)
  })

  test('connection parameters in the query string (application_name, options)', async () => {
    const url = `postgresql://${trust.user}@${server.host}:${server.port}/${server.database}?application_name=${enc('from url')}&options=${enc('-c search_path=url_schema')}`
    await withClient(url, async (client) => {
      const row = await one(client, `SELECT current_setting('application_name') AS app, current_setting('search_path') AS path`)
      assert.deepEqual(row, { app: 'from url', path: 'url_schema' })
    })
  })
})

describe('key=value strings', () => {
  test('a single-quoted password with spaces and specials', async () => {
    const cs = `host=${server.host} port=${server.port} dbname=${server.database} user=${scram.user} password='${scram.password}' sslmode=disable`
    await withClient(cs, async (client) => {
      assert.equal((await whereAmI(client)).user, scram.user)
    })
  })

  test('a quote inside a quoted value is escaped with a backslash (the value reaches the server intact)', async () => {
    const cs = `host=${server.host} port=${server.port} dbname=${server.database} user=${trust.user} application_name='it\\'s  ok'`
    await withClient(cs, async (client) => {
      assert.equal((await one<{ app: string }>(client, `SELECT current_setting('application_name') AS app`)).app, "it's  ok")
    })
  })

  test('host=<socket directory>', async () => {
    await withClient(`host=${server.socketDir} port=${server.port} dbname=${server.database} user=${trust.user} sslmode=require`, async (client) => {
      assert.equal(client.tls, false)
      assert.equal((await whereAmI(client)).addr, null)
    })
  })
})

describe('options object', () => {
  test('connectionString plus overrides: the options win', async () => {
    const connectionString = `postgresql://${trust.user}@${server.host}:${server.port}/nonexistent?application_name=from_string&sslmode=disable`
    await withClient(
      { connectionString, user: scram.user, password: scram.password, database: server.database, applicationName: 'from_options' },
      async (client) => {
        assert.deepEqual(await whereAmI(client), { user: scram.user, db: server.database, addr: server.host, ssl: false })
        assert.equal(client.serverParameters.application_name, 'from_options')
      },
    )
  })

  test('settings the options leave out come from the connection string', async () => {
    const connectionString = `host=${server.host} port=${server.port} dbname=${server.database} sslmode=require application_name=from_string`
    await withClient({ connectionString, user: md5.user, password: md5.password }, async (client) => {
      assert.equal(client.tls, true)
      assert.equal((await whereAmI(client)).user, md5.user)
      assert.equal(client.serverParameters.application_name, 'from_string')
    })
  })
})

describe('PG* environment variables', () => {
  async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
    const saved = new Map(Object.keys(vars).map((k) => [k, process.env[k]]))
    Object.assign(process.env, vars)
    try {
      return await fn()
    } finally {
      for (const [k, v] of saved) {
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      }
    }
  }

  test('PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGAPPNAME, PGOPTIONS, PGSSLMODE', async () => {
    await withEnv(
      {
        PGHOST: server.host,
        PGPORT: String(server.port),
        PGUSER: scram.user,
        PGPASSWORD: scram.password,
        PGDATABASE: server.database,
        PGAPPNAME: 'from env',
        PGOPTIONS: '-c search_path=env_schema',
        PGSSLMODE: 'require',
      },
      async () => {
        await withClient({}, async (client) => {
          assert.equal(client.tls, true)
          assert.deepEqual(await whereAmI(client), { user: scram.user, db: server.database, addr: server.host, ssl: true })
          const row = await one(client, `SELECT current_setting('application_name') AS app, current_setting('search_path') AS path`)
          assert.deepEqual(row, { app: 'from env', path: 'env_schema' })
        })
        // A connection string and options override the environment, setting by setting.
        await withClient(`sslmode=disable application_name=from_string`, async (client) => {
          assert.equal(client.tls, false)
          assert.equal(client.serverParameters.application_name, 'from_string')
          assert.equal((await whereAmI(client)).user, scram.user)
        })
      },
    )
    assert.equal(process.env.PGHOST, undefined)
  })

  test('PGHOST as a socket directory; the environment is read at each new Client', async () => {
    await withEnv({ PGHOST: server.socketDir, PGPORT: String(server.port), PGUSER: trust.user, PGDATABASE: server.database, PGSSLMODE: 'require' }, async () => {
      await withClient({}, async (client) => {
        assert.equal(client.tls, false)
        assert.equal((await whereAmI(client)).addr, null)
      })
    })
  })

  test('a malformed PGPORT is a ConfigError naming the variable', async () => {
    await withEnv({ PGPORT: 'fifty' }, async () => {
      assert.throws(
        () => new Client({ host: server.host, user: trust.user }),
        (err: unknown) => err instanceof ConfigError && err.setting === 'PGPORT' && /fifty/.test(err.message),
      )
    })
  })

  test('PGCONNECT_TIMEOUT (seconds) applies', async () => {
    await withEnv({ PGCONNECT_TIMEOUT: '7' }, async () => {
      assert.equal(new Client({ host: server.host }).config.connectTimeout, 7000)
    })
  })
})

describe('startup parameters', () => {
  const base = { host: server.host, port: server.port, database: server.database, user: trust.user, sslmode: 'disable' as const }

  test('application_name reaches the server and client.serverParameters', async () => {
    await withClient({ ...base, applicationName: 'pipegres-settings-test' }, async (client) => {
      const row = await one<{ app: string; seen: string }>(
        client,
        `SELECT current_setting('application_name') AS app, (SELECT application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()) AS seen`,
      )
      assert.deepEqual(row, { app: 'pipegres-settings-test', seen: 'pipegres-settings-test' })
      assert.equal(client.serverParameters.application_name, 'pipegres-settings-test')
    })
  })

  test('fallback_application_name is used only without application_name', async () => {
    await withClient({ ...base, fallbackApplicationName: 'fallback' }, async (client) => {
      assert.equal(client.serverParameters.application_name, 'fallback')
    })
    await withClient({ ...base, fallbackApplicationName: 'fallback', applicationName: 'explicit' }, async (client) => {
      assert.equal(client.serverParameters.application_name, 'explicit')
    })
  })

  test('options=-c search_path=... and params { statement_timeout }', async () => {
    await withClient({ ...base, options: '-c search_path=my_schema,public -c work_mem=5MB', params: { statement_timeout: '1234' } }, async (client) => {
      const row = await one(
        client,
        `SELECT current_setting('search_path') AS path, current_setting('work_mem') AS mem, current_setting('statement_timeout') AS timeout`,
      )
      assert.deepEqual(row, { path: 'my_schema,public', mem: '5MB', timeout: '1234ms' })
    })
  })

  test('an invalid value in params is the server\'s error (22023), not a silent default', async () => {
    const err = await connectError({ ...base, params: { statement_timeout: 'soon' } })
    assert.ok(err instanceof PgError, inspect(err))
    assert.equal(err.code, '22023')
  })

  test('an unknown server setting in options is the server\'s error (42704)', async () => {
    const err = await connectError({ ...base, options: '-c no_such_setting=1' })
    assert.ok(err instanceof PgError, inspect(err))
    assert.equal(err.code, '42704')
  })
})

describe('malformed settings: ConfigError naming the setting', () => {
  const cases: [string, ClientOptions | string, string][] = [
    ['unknown URL parameter', `postgresql://${server.host}/db?sslmod=require`, 'sslmod'],
    ['unknown key=value keyword', `host=${server.host} bogus=1`, 'bogus'],
    ['unknown option field', { host: server.host, ssl: true } as unknown as ClientOptions, 'ssl'],
    ['unsupported libpq keyword', `host=${server.host} requirepeer=x`, 'requirepeer'],
    ['bad port in a URL', `postgresql://${server.host}:99999/db`, 'port'],
    ['bad port option', { host: server.host, port: 'abc' }, 'port'],
    ['bad sslmode in a URL', `postgresql://${server.host}/db?sslmode=always`, 'sslmode'],
    ['bad sslmode option', { sslmode: 'always' as 'require' }, 'sslmode'],
    ['bad connect_timeout', `host=${server.host} connect_timeout=soon`, 'connect_timeout'],
    ['bad channel_binding', { channelBinding: 'maybe' as 'prefer' }, 'channelBinding'],
    ['bad max_protocol_version', `host=${server.host} max_protocol_version=3.1`, 'max_protocol_version'],
    ['min above max protocol version', `host=${server.host} min_protocol_version=3.2 max_protocol_version=3.0`, 'min_protocol_version'],
    ['reserved startup parameter in params', { params: { user: 'x' } }, 'params'],
    ['unterminated quote', `host=${server.host} application_name='abc`, 'application_name'],
  ]
  for (const [name, input, setting] of cases) {
    test(name, async () => {
      let thrown: unknown
      try {
        new Client(input)
      } catch (err) {
        thrown = err
      }
      assert.ok(thrown instanceof ConfigError, `new Client: ${inspect(thrown)}`)
      assert.equal(thrown.code, 'PG_CONFIG')
      assert.equal(thrown.setting, setting, thrown.message)
      // connect() reports the same error as a rejection rather than throwing.
      const err = await connectError(input)
      assert.ok(err instanceof ConfigError)
      assert.equal(err.setting, setting)
    })
  }
})
