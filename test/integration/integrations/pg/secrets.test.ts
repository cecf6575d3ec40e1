// No secret (password, TLS private key, its passphrase, OAuth token) shows in
// util.inspect (any depth), JSON.stringify, String(), an error's message or
// stack, or a tracing event, for any object pipegres or pipegres/pg hands out,
// connected to a real server where an object needs a connection.

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import dc from 'node:diagnostics_channel'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import util from 'node:util'
import { Client as CoreClient, Pool as CorePool } from '../../../../src/index.js'
import pg from '../../../../src/integrations/pg/index.js'
import { getTestServer } from '../../../support/servers/test-server.js'

const require = createRequire(import.meta.url)
const Cursor = require('pg-cursor') as new (text: string, values?: unknown[]) => { read(n: number): Promise<unknown[]>; close(): Promise<void> }

const server = await getTestServer()
const password = server.users.scram.password
const keyPem = readFileSync(server.tls.clientKeyEncryptedFile, 'utf8')
const cert = readFileSync(server.tls.clientCertFile, 'utf8')
const ca = readFileSync(server.tls.caFile, 'utf8')
const passphrase = server.tls.clientKeyPassphrase
const token = 'oauth-token-that-must-not-show-3f9c1'
// A line of the key's base64 body: what any printing of the key would contain.
const keyLine = keyPem.split('\n').find((l) => l.length > 40)!

const secrets: [string, string][] = [
  ['password', password],
  ['TLS key', keyLine],
  ['passphrase', passphrase],
  ['OAuth token', token],
]

/** JSON of everything enumerable, cycles skipped. */
function json(value: unknown): string {
  const seen = new WeakSet<object>()
  try {
    return JSON.stringify(value, (_k, v: unknown) => {
      if (typeof v === 'bigint') return String(v)
      if (v !== null && typeof v === 'object') {
        if (seen.has(v)) return '[seen]'
        seen.add(v)
      }
      return v
    }) ?? ''
  } catch (err) {
    return (err as Error).message
  }
}

function plainJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? ''
  } catch (err) {
    return (err as Error).message
  }
}

function assertHidden(name: string, value: unknown): void {
  const views: [string, string][] = [
    ['util.inspect', util.inspect(value, { depth: 20 })],
    ['util.inspect (getters)', util.inspect(value, { depth: 20, getters: true })],
    ['JSON.stringify', plainJson(value)],
    ['JSON of every enumerable property', json(value)],
    ['String()', (() => { try { return String(value) } catch (err) { return (err as Error).message } })()],
  ]
  if (value instanceof Error) views.push(['message', value.message], ['stack', value.stack ?? ''])
  for (const [view, text] of views) {
    for (const [what, secret] of secrets) assert.ok(!text.includes(secret), `${name}: ${view} shows the ${what}`)
  }
}

// Every tracing event's context, for the same checks.
const traced: unknown[] = []
const keep = (ctx: object): void => {
  traced.push(ctx)
}
const handlers = { start: keep, end: keep, asyncStart: keep, asyncEnd: keep, error: keep }
for (const channel of ['pipegres:query', 'pipegres:connect', 'pipegres:pool:acquire']) dc.tracingChannel(channel).subscribe(handlers)
after(() => {
  for (const channel of ['pipegres:query', 'pipegres:connect', 'pipegres:pool:acquire']) dc.tracingChannel(channel).unsubscribe(handlers)
})

const base = { host: server.host, port: server.port, user: server.users.scram.user, database: server.database }
const tls = { key: keyPem, passphrase, cert, ca }

test('pipegres: Client, Pool, a reservation, results and errors hide every secret', async () => {
  const client = new CoreClient({ ...base, password, sslmode: 'verify-ca', tls, oauthBearerToken: token, oauthAllowInsecure: true, traceParameters: true })
  await client.connect()
  const pool = new CorePool({ ...base, password, sslmode: 'verify-ca', tls, oauthBearerToken: token, oauthAllowInsecure: true, max: 2 })
  try {
    assert.equal((await client.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')).rows[0]!.ssl, true)
    const result = await client.query('SELECT $1::text AS t', ['x'])
    const failure = await client.query('SELECT 1/0').catch((err: unknown) => err)
    const reserved = await pool.reserve()
    await reserved.query('SELECT 1')
    for (const [name, value] of Object.entries({ client, pool, reserved, result, failure, config: client.config })) assertHidden(`pipegres ${name}`, value)
    await reserved.release()
    const refused = await new CoreClient({ ...base, password: password + 'x', sslmode: 'verify-ca', tls }).connect().catch((err: unknown) => err)
    assert.ok(refused instanceof Error)
    assertHidden('pipegres authentication failure', refused)
    const badKey = await new CoreClient({ ...base, password, sslmode: 'verify-ca', tls: { ...tls, passphrase: passphrase + 'x' } }).connect().catch((err: unknown) => err)
    assert.ok(badKey instanceof Error)
    assertHidden('pipegres TLS key failure', badKey)
  } finally {
    await client.end()
    await pool.end()
  }
})

test('pipegres/pg: Client, Pool, checkout, Query, results, cursors and errors hide every secret', async () => {
  const ssl = { ...tls, rejectUnauthorized: true, checkServerIdentity: () => undefined }
  const config = { ...base, password, ssl }
  const client = new pg.Client(config)
  await client.connect()
  const pool = new pg.Pool({ ...config, max: 2 })
  try {
    const result = await client.query('SELECT $1::text AS t', ['x'])
    const query = client.query(new pg.Query('SELECT 1 AS n'))
    await new Promise((resolve) => query.on('end', resolve))
    const failure = await client.query('SELECT 1/0').catch((err: unknown) => err)
    assert.ok(failure instanceof pg.DatabaseError)
    const cursor = client.query(new Cursor('SELECT generate_series(1, 3) AS n'))
    assert.equal((await cursor.read(2)).length, 2)
    assertHidden('pg cursor while open', cursor)
    await cursor.close()
    const checkout = await pool.connect()
    await checkout.query('SELECT 1')
    for (const [name, value] of Object.entries({ client, pool, checkout, query, result, failure, cursor, options: pool.options, parameters: client.connectionParameters })) {
      assertHidden(`pipegres/pg ${name}`, value)
    }
    checkout.release()
    // Still readable by name, as pg's are.
    assert.equal(pool.options.ssl && (pool.options.ssl as { key?: string }).key, keyPem)
    assert.equal(pool.options.password, password)
    assert.equal((client.connectionParameters.ssl as { passphrase?: string }).passphrase, passphrase)
    const refused = await new pg.Client({ ...config, password: password + 'x' }).connect().catch((err: unknown) => err)
    assert.ok(refused instanceof Error)
    assertHidden('pipegres/pg authentication failure', refused)
    const fromPool = await new pg.Pool({ ...config, password: password + 'x' }).query('SELECT 1').catch((err: unknown) => err)
    assert.ok(fromPool instanceof Error)
    assertHidden('pipegres/pg pool authentication failure', fromPool)
  } finally {
    await client.end()
    await pool.end()
  }
})

test('pipegres/pg: objects never connected hide every secret, and a key hidden by the caller still reaches TLS', async () => {
  const config = { ...base, password, ssl: { ...tls, rejectUnauthorized: false } }
  for (const [name, value] of Object.entries({ client: new pg.Client(config), pool: new pg.Pool(config), clientFromString: new pg.Client({ connectionString: `postgresql://u:${encodeURIComponent(password)}@h/db`, ssl: config.ssl }) })) {
    assertHidden(`unconnected pipegres/pg ${name}`, value)
  }
  // pg lets a caller hide the key itself: it must still be used.
  const hidden = { ...config.ssl }
  Object.defineProperty(hidden, 'key', { value: keyPem, enumerable: false })
  const client = new pg.Client({ ...config, ssl: hidden })
  await client.connect()
  try {
    assert.equal((client.connectionParameters.ssl as { key?: string }).key, keyPem)
    const { rows } = await client.query('SELECT client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()')
    assert.match(String(rows[0].client_dn), new RegExp(server.users.cert.user))
  } finally {
    await client.end()
  }
})

test('tracing events carry no secret', () => {
  assert.ok(traced.length > 0, 'events were published')
  traced.forEach((ctx, i) => assertHidden(`tracing event ${i}`, ctx))
})
