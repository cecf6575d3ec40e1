// test-tags: matrix
// Connecting end to end against the managed server: host lists and each kind
// of failure reported precisely, target_session_attrs, and the protocol
// version and session state a connection starts with. How settings are
// written: config/connect-settings.test.ts.

import assert from 'node:assert/strict'
import * as net from 'node:net'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { inspect } from 'node:util'
import { ConnectionError, PgError, type ClientOptions } from '../../../src/index.js'
import { adminQuery, getTestServer } from '../../support/servers/test-server.js'
import { closedPort, connectError, isolateEnvironment, one, whereAmI, withClient } from '../../support/connect.js'

const server = await getTestServer()

await isolateEnvironment('connect-hosts')

const { trust } = server.users

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
