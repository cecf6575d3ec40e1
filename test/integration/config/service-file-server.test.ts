// Connecting through libpq's connection service file to the managed server:
// ~/.pg_service.conf found through HOME, PGSERVICE, PGSERVICEFILE, and the
// settings of the connection string winning over those of the section, which
// win over the PG* variables.

import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, test } from 'node:test'
import { ConfigError, type Client } from '../../../src/index.js'
import { getTestServer } from '../../support/servers/test-server.js'
import { connectError, isolateEnvironment, withClient } from '../../support/connect.js'
import { assertCleanError, passwordsOf } from '../../support/fault-checks.js'

const server = await getTestServer()
const home = await isolateEnvironment('service')
const { scram, trust } = server.users

/** A section for the scram user; `first` lines come first, and so win over the defaults after them (the first line for a keyword counts). */
const section = (name: string, first: string[] = []) => [
  `[${name}]`,
  ...first,
  `host=${server.host}`,
  `port=${server.port}`,
  `dbname=${server.database}`,
  `user=${scram.user}`,
  `password=${scram.password}`,
  'application_name=from-service-file',
  'sslmode=disable',
]

await writeFile(join(home, '.pg_service.conf'), ['# written by the test', ...section('app'), '', ...section('tls', ['sslmode=require'])].join('\n'))

afterEach(() => {
  for (const name of Object.keys(process.env)) if (name.startsWith('PG')) delete process.env[name]
})

async function seen(client: Client): Promise<{ user: string; app: string; ssl: boolean }> {
  const { rows } = await client.query<{ user: string; app: string; ssl: boolean }>(
    `SELECT current_user AS user, current_setting('application_name') AS app,
            (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl`,
  )
  return rows[0]!
}

describe('connecting through a service', () => {
  test('service=app reads ~/.pg_service.conf: host, port, database, user, password and application_name', async () => {
    await withClient('service=app', async (client) => {
      assert.deepEqual(await seen(client), { user: scram.user, app: 'from-service-file', ssl: false })
      assert.deepEqual(client.config.service, { name: 'app', file: join(home, '.pg_service.conf') })
    })
  })

  test('a URL with ?service=, and the service option', async () => {
    await withClient('postgresql:///?service=tls', async (client) => {
      assert.equal((await seen(client)).ssl, true)
    })
    await withClient({ service: 'app' }, async (client) => {
      assert.equal((await seen(client)).user, scram.user)
    })
  })

  test('PGSERVICE names the service when nothing else gives settings', async () => {
    process.env.PGSERVICE = 'app'
    await withClient({}, async (client) => {
      assert.equal((await seen(client)).app, 'from-service-file')
    })
  })

  test('the connection string wins over the section, the section over PG* variables', async () => {
    process.env.PGAPPNAME = 'from-environment'
    process.env.PGUSER = trust.user
    process.env.PGSSLMODE = 'require'
    await withClient('service=app application_name=from-string', async (client) => {
      // application_name from the string; user and sslmode from the section, not PGUSER or PGSSLMODE.
      assert.deepEqual(await seen(client), { user: scram.user, app: 'from-string', ssl: false })
    })
  })

  test('PGSERVICEFILE names another file', async () => {
    const file = join(home, 'other-service.conf')
    await writeFile(file, section('elsewhere', ['application_name=from-other-file']).join('\n'))
    process.env.PGSERVICEFILE = file
    await withClient('service=elsewhere', async (client) => {
      assert.equal((await seen(client)).app, 'from-other-file')
    })
  })

  test('an unknown service fails before connecting, naming the file searched', async () => {
    const err = await connectError('service=nope')
    assertCleanError(err, passwordsOf(server))
    assert.ok(err instanceof ConfigError)
    assert.equal(err.setting, 'service')
    assert.match(err.message, /definition of service "nope" not found: searched ".*\.pg_service\.conf"/)
  })

  test('a wrong password from the section: the server refuses, and no error shows a password', async () => {
    const file = join(home, 'wrong.conf')
    await writeFile(file, section('wrong', ['password=not-the-password-xyz']).join('\n'))
    process.env.PGSERVICEFILE = file
    const err = await connectError('service=wrong')
    assertCleanError(err, [...passwordsOf(server), 'not-the-password-xyz'])
  })
})
