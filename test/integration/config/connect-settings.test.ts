// test-tags: matrix
// Connection settings end to end against the managed server: every way of
// writing them (URL, key=value, options object, PG* variables) reaches the
// server as intended, and each kind of failure is reported precisely.

import assert from 'node:assert/strict'
import * as net from 'node:net'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { inspect } from 'node:util'
import { Client, ConfigError, ConnectionError, PgError, type ClientOptions } from '../../../src/index.js'
import { adminQuery, getTestServer } from '../../support/servers/test-server.js'
import { closedPort, connectError, isolateEnvironment, withClient } from '../../support/connect.js'

const server = await getTestServer()

await isolateEnvironment('settings')

const { trust, scram, md5, password } = server.users
const enc = encodeURIComponent

async function one<T = Record<string, unknown>>(client: Client, sql: string): Promise<T> {
  const { rows } = await client.query<T>(sql)
  assert.equal(rows.length, 1)
  return rows[0]!
}

/** Who we are and how we got here, as the server sees it. */
async function whereAmI(client: Client): Promise<{ user: string; db: string; addr: string | null; ssl: boolean }> {
  return one(
    client,
    `SELECT current_user AS user, current_database() AS db, host(inet_server_addr()) AS addr,
            (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl`,
  )
}

/** A server that accepts TCP connections and never says a word. */
async function silentServer(): Promise<{ port: number; accepted: () => number; dropped: () => number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>()
  let accepted = 0
  let dropped = 0
  const s = net.createServer((socket) => {
    accepted++
    sockets.add(socket)
    socket.on('error', () => {})
    // Reads (and drops) what comes, or the client's close would never be seen.
    socket.resume()
    socket.on('close', () => {
      // Closed by the client (the server closes none before close()).
      if (sockets.delete(socket)) dropped++
    })
  })
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  return {
    port: (s.address() as net.AddressInfo).port,
    accepted: () => accepted,
    dropped: () => dropped,
    close: () =>
      new Promise<void>((resolve) => {
        const open = [...sockets]
        sockets.clear()
        for (const socket of open) socket.destroy()
        s.close(() => resolve())
      }),
  }
}

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

describe('hosts and failures', () => {
  test('several hosts: the first refuses, the second works', async () => {
    const dead = await closedPort()
    await withClient({ host: [server.host, server.host], port: [dead, server.port], user: trust.user, database: server.database }, async (client) => {
      assert.equal((await whereAmI(client)).user, trust.user)
    })
    // The same in a URL.
    const url = `postgresql://${trust.user}@${server.host}:${dead},${server.hostname}:${server.port}/${server.database}`
    await withClient(url, async (client) => {
      assert.equal((await whereAmI(client)).user, trust.user)
    })
  })

  test('several hosts, all refusing: one ConnectionError naming every host', async () => {
    const [a, b] = [await closedPort(), await closedPort()]
    const err = await connectError(`host=${server.host},${server.host} port=${a},${b} user=${trust.user}`)
    assert.ok(err instanceof ConnectionError, inspect(err))
    assert.equal(err.code, 'PG_CONNECTION_REFUSED')
    assert.ok(err.message.includes(`${server.host}:${a}`) && err.message.includes(`${server.host}:${b}`), err.message)
  })

  test('connection refused: PG_CONNECTION_REFUSED naming host:port', async () => {
    const port = await closedPort()
    const err = await connectError({ host: server.host, port, user: trust.user })
    assert.ok(err instanceof ConnectionError, inspect(err))
    assert.equal(err.code, 'PG_CONNECTION_REFUSED')
    assert.ok(err.message.includes(`${server.host}:${port}`), err.message)
  })

  test('a missing unix socket: PG_CONNECTION_REFUSED naming the socket path', async () => {
    const port = await closedPort()
    const err = await connectError({ host: server.socketDir, port, user: trust.user })
    assert.ok(err instanceof ConnectionError, inspect(err))
    assert.equal(err.code, 'PG_CONNECTION_REFUSED')
    assert.ok(err.message.includes(join(server.socketDir, `.s.PGSQL.${port}`)), err.message)
  })

  test('connect timeout against a server that accepts and stays silent: PG_CONNECT_TIMEOUT in time', async () => {
    const silent = await silentServer()
    try {
      for (const sslmode of ['prefer', 'disable'] as const) {
        const started = Date.now()
        const err = await connectError({ host: '127.0.0.1', port: silent.port, user: trust.user, connectTimeout: 300, sslmode })
        const elapsed = Date.now() - started
        assert.ok(err instanceof ConnectionError, inspect(err))
        assert.equal(err.code, 'PG_CONNECT_TIMEOUT')
        assert.ok(err.message.includes(`127.0.0.1:${silent.port}`), err.message)
        assert.ok(elapsed >= 250 && elapsed < 2000, `${sslmode}: failed after ${elapsed} ms`)
      }
      assert.equal(silent.accepted(), 2, 'one connection per attempt, no retry after a timeout')
    } finally {
      await silent.close()
    }
  })

  test('the connect timeout is per host: a silent first host, then a working one', async () => {
    // Were the timeout shared by the hosts, the first one would use it all up
    // and the second would fail at once. The second host is the real server,
    // which must open a connection within its own timeout however loaded the
    // machine is: hence a timeout of seconds, and no upper bound on the time
    // taken, but evidence of what happened at each host.
    const timeout = 1500
    const silent = await silentServer()
    try {
      const started = performance.now()
      await withClient(
        { host: ['127.0.0.1', server.host], port: [silent.port, server.port], user: trust.user, database: server.database, connectTimeout: timeout, sslmode: 'disable' },
        async (client) => {
          assert.equal((await whereAmI(client)).user, trust.user)
          // The first host was given up (its socket closed by the client), not left waiting beside the second.
          for (const deadline = performance.now() + 10_000; silent.dropped() === 0; ) {
            assert.ok(performance.now() < deadline, 'the silent host was not given up')
            await new Promise((r) => setTimeout(r, 10))
          }
        },
      )
      // Half: a timer may fire early by as long as the event loop's cached time is stale.
      assert.ok(performance.now() - started >= timeout / 2, 'the first host had its timeout')
      assert.equal(silent.accepted(), 1, 'the silent host was tried once')
      assert.equal(silent.dropped(), 1)
    } finally {
      await silent.close()
    }
  })

  test('nonexistent database: PgError 3D000', async () => {
    const err = await connectError({ host: server.host, port: server.port, user: trust.user, database: 'pipegres_no_such_db' })
    assert.ok(err instanceof PgError, inspect(err))
    assert.equal(err.code, '3D000')
  })

  test('nonexistent user: PgError 28P01 (the server does not reveal that the user is missing)', async () => {
    const err = await connectError({ host: server.host, port: server.port, user: 'pipegres_nobody', password: 'x', database: server.database, sslmode: 'disable' })
    assert.ok(err instanceof PgError, inspect(err))
    assert.equal(err.code, '28P01')
  })
})

describe('target_session_attrs (the harness server is a primary)', () => {
  const base = { host: server.host, port: server.port, database: server.database, user: trust.user }
  // The client decides from the in_hot_standby and default_transaction_read_only reports, which servers
  // send from PostgreSQL 14 on; before it every target but any is refused (prefer-standby then takes any host).
  const reports = server.version >= 14
  const refusedBefore14 = async (options: ClientOptions, target: string) => {
    const err = await connectError(options)
    assert.ok(err instanceof ConnectionError, inspect(err))
    assert.equal(err.code, 'PG_UNSUPPORTED')
    assert.match(err.message, new RegExp(`target_session_attrs=${target} needs PostgreSQL 14 or later`))
    assert.ok(err.message.includes(`${server.host}:${server.port}`), err.message)
  }

  for (const target of ['any', 'read-write', 'primary', 'prefer-standby'] as const) {
    test(`${target} connects to the primary`, async () => {
      if (!reports && (target === 'read-write' || target === 'primary')) return refusedBefore14({ ...base, targetSessionAttrs: target }, target)
      await withClient({ ...base, targetSessionAttrs: target }, async (client) => {
        assert.equal((await one<{ r: boolean }>(client, 'SELECT pg_is_in_recovery() AS r')).r, false)
      })
    })
  }

  for (const [target, why] of [
    ['standby', /not in hot standby mode/],
    ['read-only', /session is not read-only/],
  ] as const) {
    test(`${target} refuses the primary: ConnectionError naming the host and the reason`, async () => {
      if (!reports) return refusedBefore14({ ...base, targetSessionAttrs: target }, target)
      const err = await connectError({ ...base, targetSessionAttrs: target })
      assert.ok(err instanceof ConnectionError, inspect(err))
      assert.equal(err.code, 'PG_CONNECTION_REFUSED')
      assert.match(err.message, why)
      assert.match(err.message, new RegExp(`target_session_attrs=${target}`))
      assert.ok(err.message.includes(`${server.host}:${server.port}`), err.message)
    })
  }

  test('a session with default_transaction_read_only=on is read-only, not read-write', async () => {
    const readOnly = { ...base, options: '-c default_transaction_read_only=on' }
    if (!reports) {
      for (const target of ['read-only', 'read-write', 'primary'] as const) await refusedBefore14({ ...readOnly, targetSessionAttrs: target }, target)
      return
    }
    await withClient({ ...readOnly, targetSessionAttrs: 'read-only' }, async (client) => {
      assert.equal((await one<{ ro: string }>(client, `SELECT current_setting('transaction_read_only') AS ro`)).ro, 'on')
    })
    const err = await connectError({ ...readOnly, targetSessionAttrs: 'read-write' })
    assert.ok(err instanceof ConnectionError, inspect(err))
    assert.match(err.message, /session is read-only/)
    // primary looks at hot standby only, as in libpq.
    await withClient({ ...readOnly, targetSessionAttrs: 'primary' }, async (client) => {
      assert.equal(client.serverParameters.default_transaction_read_only, 'on')
    })
  })

  test('standby against two primaries: fails naming both, and closes each unsuitable session', async () => {
    const app = `pipegres-target-${process.pid}`
    const cs = `host=${server.host},${server.hostname} port=${server.port} dbname=${server.database} user=${trust.user} application_name=${app} target_session_attrs=standby`
    const err = await connectError(cs)
    assert.ok(err instanceof ConnectionError, inspect(err))
    assert.match(err.message, new RegExp(`${server.host}:${server.port}.*${server.hostname}:${server.port}`))
    // The sessions were ended with Terminate; the server notices within moments.
    let left = -1
    for (let i = 0; i < 50 && left !== 0; i++) {
      const { rows } = await adminQuery(`SELECT count(*) FROM pg_stat_activity WHERE application_name = '${app}'`)
      left = Number(rows[0]?.[0])
      if (left !== 0) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal(left, 0)
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

describe('protocol version and session state', () => {
  const base = { host: server.host, port: server.port, database: server.database, user: trust.user }
  const latest = server.version >= 18 ? '3.2' : '3.0'

  test(`default: protocol ${latest} on PostgreSQL ${server.version}`, async () => {
    await withClient(base, async (client) => {
      assert.equal(client.protocolVersion, latest)
      assert.equal((await one<{ n: number }>(client, 'SELECT 1 AS n')).n, 1)
    })
  })

  test('max_protocol_version=3.0: protocol 3.0', async () => {
    await withClient({ ...base, maxProtocolVersion: '3.0' }, async (client) => {
      assert.equal(client.protocolVersion, '3.0')
      assert.equal((await one<{ n: number }>(client, 'SELECT 1 AS n')).n, 1)
    })
    await withClient(`host=${server.host} port=${server.port} dbname=${server.database} user=${trust.user} max_protocol_version=3.0`, async (client) => {
      assert.equal(client.protocolVersion, '3.0')
    })
  })

  test('max_protocol_version=latest', async () => {
    await withClient({ ...base, maxProtocolVersion: 'latest' }, async (client) => {
      assert.equal(client.protocolVersion, latest)
    })
  })

  if (server.version >= 18) {
    test('min_protocol_version=3.2 is satisfied by PostgreSQL 18', async () => {
      await withClient({ ...base, minProtocolVersion: '3.2' }, async (client) => {
        assert.equal(client.protocolVersion, '3.2')
      })
    })
  } else {
    test(`min_protocol_version=3.2 fails against PostgreSQL ${server.version}, saying why`, async () => {
      const err = await connectError({ ...base, minProtocolVersion: '3.2' })
      assert.ok(err instanceof ConnectionError, inspect(err))
      assert.equal(err.code, 'PG_UNSUPPORTED')
      assert.match(err.message, /protocol 3\.0/)
      assert.match(err.message, /min_protocol_version/)
    })
  }

  test('BackendKeyData: client.processId is the backend pid', async () => {
    for (const maxProtocolVersion of ['3.0', '3.2'] as const) {
      await withClient({ ...base, maxProtocolVersion }, async (client) => {
        const { pid } = await one<{ pid: number }>(client, 'SELECT pg_backend_pid() AS pid')
        assert.ok(pid > 0)
        assert.equal(client.processId, pid)
      })
    }
  })

  test('serverParameters: server_version, client_encoding, and updates from ParameterStatus', async () => {
    await withClient({ ...base, applicationName: 'before' }, async (client) => {
      const params = client.serverParameters
      assert.match(params.server_version ?? '', new RegExp(`^${server.version}\\.`))
      assert.equal(params.client_encoding, 'UTF8')
      assert.equal(params.server_encoding, 'UTF8')
      assert.equal(params.DateStyle, 'ISO, MDY')
      assert.equal(params.application_name, 'before')
      const seen: [string, string][] = []
      client.on('parameter', (name, value) => seen.push([name, value]))
      await client.query(`SET application_name = 'x'`)
      assert.equal(client.serverParameters.application_name, 'x')
      assert.deepEqual(seen, [['application_name', 'x']])
    })
  })
})
