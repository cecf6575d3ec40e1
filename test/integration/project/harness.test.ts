// Smoke test of the test harness itself: the managed server answers where
// ServerInfo says, with the users and certificates the auth and TLS tests rely on.
// Uses only the harness's bootstrap client, so it holds even when src/ is broken.

import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { test } from 'node:test'
import { runSql } from '../../support/servers/bootstrap-sql.js'
import { adminQuery, connectionUrl, getTestServer } from '../../support/servers/test-server.js'

const server = await getTestServer()

test('answers over TCP as the trust user', async () => {
  const result = await runSql({ host: server.host, port: server.port }, { user: server.users.trust.user, database: server.database }, 'SELECT version(), current_user')
  const [version, user] = result.rows[0] ?? []
  assert.match(version ?? '', new RegExp(`^PostgreSQL ${server.version}\\.`))
  assert.equal(user, server.users.trust.user)
})

test('answers over IPv6 when it says it listens there', { skip: !server.ipv6 && 'no IPv6 loopback on this machine' }, async () => {
  const result = await runSql({ host: '::1', port: server.port }, { user: server.users.trust.user, database: server.database }, 'SELECT inet_server_addr()')
  assert.equal(result.rows[0]?.[0], '::1')
})

test('answers over the unix socket as the superuser, with TLS on and every role present', async () => {
  const result = await adminQuery(`SELECT current_setting('ssl'), current_setting('server_version_num'), rolname FROM pg_roles WHERE rolname LIKE 'pipegres\\_%' ORDER BY rolname`)
  const expected = Object.values(server.users).map((u) => u.user).sort()
  assert.deepEqual(result.rows.map((r) => r[2]), expected)
  assert.equal(result.rows[0]?.[0], 'on')
  assert.equal(Number(result.rows[0]?.[1]), server.versionNum)
})

test('pg_hba.conf is in force: the scram user is asked for SCRAM, not let in by trust', async () => {
  await assert.rejects(
    runSql({ host: server.host, port: server.port }, { user: server.users.scram.user, database: server.database }, 'SELECT 1'),
    /authentication method 10/,
  )
})

test('certificate and key files exist', () => {
  for (const [name, path] of Object.entries(server.tls)) {
    if (name !== 'clientKeyPassphrase') assert.ok(existsSync(path), `${name}: ${path}`)
  }
})

test('connection URLs percent-encode the password', () => {
  const url = new URL(connectionUrl(server, server.users.scram, { params: { sslmode: 'verify-full', sslrootcert: server.tls.caFile } }))
  assert.equal(decodeURIComponent(url.password), server.users.scram.password)
  assert.equal(decodeURIComponent(url.username), server.users.scram.user)
  assert.equal(url.searchParams.get('sslrootcert'), server.tls.caFile)
})
