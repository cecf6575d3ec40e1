import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { connect, type Client } from '../../../src/index.js'
import { getTestServer } from '../../support/servers/test-server.js'
import { startProxy, type Proxy } from '../../support/proxies/proxy.js'

// Round trips counted on a link with 40 ms of latency each way (80 ms round
// trip): pipelining must make many queries cost about one round trip, and the
// first execution of a new statement must not pay a second one.

const ONE_WAY = 40
const RTT = 2 * ONE_WAY
let proxy: Proxy
let db: Client

before(async () => {
  const server = await getTestServer()
  proxy = await startProxy({ host: server.host, port: server.port }, { delayMs: ONE_WAY })
  db = await connect({ host: proxy.host, port: proxy.port, user: server.users.trust.user, database: server.database, sslmode: 'disable' })
})
after(async () => {
  await db.end()
  await proxy.close()
})

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

test('the first execution of a parameterized statement takes one round trip', async () => {
  const ms = await timed(() => db.query('SELECT $1::int + $2::int AS s, $3::text AS t', [1, 2, 'x']))
  assert.ok(ms >= RTT * 0.9 && ms < RTT * 1.75, `took ${ms.toFixed(0)} ms for a ${RTT} ms round trip`)
})

test('prepare: false also takes one round trip', async () => {
  const ms = await timed(() => db.query('SELECT $1::int * 3 AS s', [5], { prepare: false }))
  assert.ok(ms < RTT * 1.75, `took ${ms.toFixed(0)} ms`)
})

test('two hundred queries issued together cost about one round trip, not two hundred', async () => {
  const ms = await timed(() => Promise.all(Array.from({ length: 200 }, (_, i) => db.query('SELECT $1::int AS n, $2::text AS t', [i, 'y']))))
  assert.ok(ms < RTT * 2.5, `took ${ms.toFixed(0)} ms for 200 queries over a ${RTT} ms round trip`)
})
