// sslkeylogfile (libpq 18): the TLS secrets of each connection appended to a
// file in the NSS key log format Wireshark reads, the file created with mode
// 0600; nothing written without TLS; a path that cannot be written refused
// before connecting.

import assert from 'node:assert/strict'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { ConfigError, type Client, type ClientOptions } from '../../../src/index.js'
import { getTestServer } from '../../support/servers/test-server.js'
import { connectError, isolateEnvironment, tcpOptions, withClient } from '../../support/connect.js'

const server = await getTestServer()
const home = await isolateEnvironment('keylog')
const { scram } = server.users
let n = 0
const newLogFile = () => join(home, `keys-${++n}.log`)

function tcp(extra: ClientOptions): ClientOptions {
  return tcpOptions(server, scram, extra)
}

async function tlsVersion(client: Client): Promise<string> {
  const { rows } = await client.query<{ version: string }>('SELECT version FROM pg_stat_ssl WHERE pid = pg_backend_pid()')
  return rows[0]!.version
}

/** The key log's lines as [label, client random, secret]. */
function entries(file: string): string[][] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split(' '))
}

const TLS13_LABELS = ['CLIENT_HANDSHAKE_TRAFFIC_SECRET', 'SERVER_HANDSHAKE_TRAFFIC_SECRET', 'CLIENT_TRAFFIC_SECRET_0', 'SERVER_TRAFFIC_SECRET_0']

function assertTls13Log(file: string, connections: number): void {
  const lines = entries(file)
  for (const [label, random, secret] of lines) {
    assert.match(random ?? '', /^[0-9a-f]{64}$/, `client random of ${label}`)
    assert.match(secret ?? '', /^[0-9a-f]{64,96}$/, `secret of ${label}`)
  }
  const randoms = new Set(lines.map((l) => l[1]))
  assert.equal(randoms.size, connections, 'one client random per connection')
  for (const random of randoms) {
    const labels = lines.filter((l) => l[1] === random).map((l) => l[0])
    for (const label of TLS13_LABELS) assert.ok(labels.includes(label), `${label} for ${random}: ${labels.join(', ')}`)
  }
}

describe('sslkeylogfile', () => {
  test('TLS 1.3: the handshake and traffic secrets are appended, and the file is created with mode 0600', async () => {
    const file = newLogFile()
    await withClient(tcp({ sslmode: 'require', sslkeylogfile: file }), async (client) => {
      assert.equal(client.tls, true)
      assert.equal(await tlsVersion(client), 'TLSv1.3')
    })
    assertTls13Log(file, 1)
    if (process.platform !== 'win32') assert.equal(statSync(file).mode & 0o777, 0o600)
  })

  test('from a connection string, and each connection appends its own secrets', async () => {
    const file = newLogFile()
    const url = `postgresql://${encodeURIComponent(scram.user)}:${encodeURIComponent(scram.password ?? '')}@${server.host}:${server.port}/${server.database}?sslmode=require&sslkeylogfile=${encodeURIComponent(file)}`
    await withClient(url, async (client) => assert.equal(client.tls, true))
    await withClient(url, async (client) => assert.equal(client.tls, true))
    assertTls13Log(file, 2)
  })

  test('an existing file is appended to, and its mode left as it is', async () => {
    const file = newLogFile()
    writeFileSync(file, '# keys\n', { mode: 0o600 })
    await withClient(tcp({ sslmode: 'require', sslkeylogfile: file }), async () => {})
    const text = readFileSync(file, 'utf8')
    assert.ok(text.startsWith('# keys\n'))
    assert.ok(text.includes('CLIENT_TRAFFIC_SECRET_0 '))
  })

  // Direct TLS needs PostgreSQL 17 or later; older servers close at once.
  test('direct TLS (sslnegotiation=direct) is logged too', { skip: server.version < 17 && 'direct TLS needs PostgreSQL 17+' }, async () => {
    const file = newLogFile()
    await withClient(tcp({ sslmode: 'require', sslnegotiation: 'direct', sslkeylogfile: file }), async (client) => assert.equal(client.tls, true))
    assertTls13Log(file, 1)
  })

  test('TLS 1.2: CLIENT_RANDOM lines', async () => {
    const file = newLogFile()
    await withClient(tcp({ sslmode: 'require', sslkeylogfile: file, tls: { maxVersion: 'TLSv1.2' } }), async (client) => {
      assert.equal(await tlsVersion(client), 'TLSv1.2')
    })
    const lines = entries(file)
    assert.ok(lines.length >= 1)
    for (const [label, random, secret] of lines) {
      assert.equal(label, 'CLIENT_RANDOM')
      assert.match(random ?? '', /^[0-9a-f]{64}$/)
      assert.match(secret ?? '', /^[0-9a-f]{96}$/, 'the 48-byte master secret')
    }
  })

  test('without TLS nothing is written, and no file is created', async () => {
    const file = newLogFile()
    await withClient(tcp({ sslmode: 'disable', sslkeylogfile: file }), async (client) => assert.equal(client.tls, false))
    assert.equal(existsSync(file), false)
  })

  test('a file that cannot be created is a ConfigError naming sslkeylogfile', async () => {
    const file = join(home, 'no-such-dir', 'keys.log')
    const err = await connectError(tcp({ sslmode: 'require', sslkeylogfile: file }))
    assert.ok(err instanceof ConfigError, String(err))
    assert.equal(err.setting, 'sslkeylogfile')
    assert.match(err.message, /could not open the sslkeylogfile ".*no-such-dir.*keys\.log"/)
  })
})
