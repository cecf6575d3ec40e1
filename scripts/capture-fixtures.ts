// Records what real PostgreSQL servers send for a fixed session, as fixtures for
// the protocol unit tests: node build/scripts/capture-fixtures.js [bin dir ...]
// (default: the embedded server). Writes test/support/fixtures/session-pg<major>.hex.

import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startServer } from '../test/support/servers/postgres.js'
import { connect } from '../src/index.js'
import { startProxy } from '../test/support/proxies/proxy.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The session every fixture records; test/unit/protocol/recorded-sessions.test.ts knows its shape. */
export const FIXTURE_QUERIES = {
  extended: "SELECT $1::int AS a, 'é'::text AS b, NULL::int AS c, '{\"k\":1}'::jsonb AS d FROM generate_series(1, 3)",
  simple: "SELECT 1 AS one; SELECT 'two' AS two",
  failing: 'SELECT 1/0',
}

async function capture(binDir: string | undefined): Promise<void> {
  const server = await startServer(binDir ? { binDir } : {})
  const chunks: Buffer[] = []
  const proxy = await startProxy({ host: server.host, port: server.port }, { onServerData: (c) => chunks.push(c) })
  try {
    const db = await connect({ host: proxy.host, port: proxy.port, user: server.users.trust.user, database: server.database, sslmode: 'disable', applicationName: 'fixture' })
    await db.query(FIXTURE_QUERIES.extended, [7])
    await db.query(FIXTURE_QUERIES.extended, [8])
    await db.simpleQuery(FIXTURE_QUERIES.simple)
    await db.query(FIXTURE_QUERIES.failing).catch(() => undefined)
    await db.end()
    const file = join(root, 'test', 'support', 'fixtures', `session-pg${server.version}.hex`)
    writeFileSync(file, Buffer.concat(chunks).toString('hex').replace(/(.{128})/g, '$1\n') + '\n')
    console.log(`wrote ${file}`)
  } finally {
    await proxy.close()
    await server.stop()
  }
}

const dirs = process.argv.slice(2)
for (const dir of dirs.length > 0 ? dirs : [undefined]) await capture(dir)
