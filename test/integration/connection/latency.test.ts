import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { connect, type Client } from '../../../src/index.js'
import { getTestServer } from '../../support/servers/test-server.js'
import { startRoundTripProxy, type RoundTripProxy } from '../../support/proxies/round-trips.js'

// Round trips counted, not timed: the proxy holds the server's replies until
// everything the client sent is answered, so each release is one trip the
// client had to wait for. Pipelining must make many queries cost one, and the
// first execution of a new statement must not pay a second one.

let proxy: RoundTripProxy
let db: Client

before(async () => {
  const server = await getTestServer()
  proxy = await startRoundTripProxy({ host: server.host, port: server.port })
  db = await connect({ host: proxy.host, port: proxy.port, user: server.users.trust.user, database: server.database, sslmode: 'disable' })
})
after(async () => {
  await db.end()
  await proxy.close()
})

test('the counter counts: two queries, each awaited, are two round trips', async () => {
  const trips = await proxy.count(async () => {
    await db.query('SELECT 1')
    await db.query('SELECT 2')
  })
  assert.equal(trips, 2)
})

test('the first execution of a parameterized statement takes one round trip', async () => {
  let rows: unknown[] = []
  const trips = await proxy.count(async () => {
    rows = (await db.query('SELECT $1::int + $2::int AS s, $3::text AS t', [1, 2, 'x'])).rows
  })
  assert.deepEqual(rows, [{ s: 3, t: 'x' }])
  assert.equal(trips, 1)
})

test('a parameter whose type the statement leaves open also takes one round trip', async () => {
  const trips = await proxy.count(() => db.query('SELECT $1 AS v, $2::int AS n', ['text', 4]))
  assert.equal(trips, 1)
})

test('prepare: false also takes one round trip', async () => {
  const trips = await proxy.count(() => db.query('SELECT $1::int * 3 AS s', [5], { prepare: false }))
  assert.equal(trips, 1)
})

test('two hundred queries issued together cost one round trip, not two hundred', async () => {
  let results: { rows: { n: number }[] }[] = []
  const trips = await proxy.count(async () => {
    results = await Promise.all(Array.from({ length: 200 }, (_, i) => db.query<{ n: number }>('SELECT $1::int AS n, $2::text AS t', [i, 'y'])))
  })
  assert.deepEqual(results.map((r) => r.rows[0]!.n), Array.from({ length: 200 }, (_, i) => i))
  assert.equal(trips, 1)
})
