// `npm run test:pg-suite [RUN_SUITE]`: node-postgres's own integration tests
// against pipegres/pg. It starts a PostgreSQL 15 of its own, set up as pg's CI
// sets one up (a ci_db_test database, two roles that log in by SCRAM only, TLS
// on), runs the suite's run-suite.sh against the built pipegres/pg
// (dist/integrations/pg/index.js, from `npm run build`), prints its count and
// fails below MIN_PASSING files.
//
// RUN_SUITE: the path of run-suite.sh, from the argument, else PIPEGRES_PG_SUITE,
// else ../shared/peers/pg/run-suite.sh beside the repository. PIPEGRES_PG15_BIN
// overrides the server's bin directory; without it, Debian's PostgreSQL 15 is
// installed when missing (scripts/prerequisites.ts), as `npm test` would.
//
// The last line, `summary: P passed, F failed, K skipped`, counts files: K are
// the files the README names as failing for a reason (KNOWN_FAILING), F any
// other failing file.

import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BootstrapConnection, sqlLiteral } from '../test/support/servers/bootstrap-sql.js'
import { startServer, stopAll, stopAllOnSignals } from '../test/support/servers/postgres.js'
import { requireSuite, runSuite } from './peer-suite.js'
import { setUp } from './prerequisites.js'

const MIN_PASSING = 75
/** The files that fail for the reasons the README's "Switching from pg" gives: pg's private fields, or a deliberate difference. */
const KNOWN_FAILING = new Set([
  'test/integration/client/sasl-scram-tests.js',
  'test/integration/connection-pool/error-tests.js',
  'test/integration/client/huge-numeric-tests.js',
  'test/integration/gh-issues/675-tests.js',
])
/** The whole run: 79 files, each bounded by run-suite.sh itself (90 s by default), rarely more than a few seconds. */
const SUITE_TIMEOUT_MS = 30 * 60_000

// build/scripts/pg-suite.js → the repository root.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const suite = resolve(root, process.argv[2] ?? process.env.PIPEGRES_PG_SUITE ?? join('..', 'shared', 'peers', 'pg', 'run-suite.sh'))
const moduleFile = join(root, 'dist', 'integrations', 'pg', 'index.js')
const binDir = process.env.PIPEGRES_PG15_BIN || '/usr/lib/postgresql/15/bin'

function fail(message: string): never {
  console.error(`pg-suite: ${message}`)
  process.exit(2)
}

requireSuite('pg-suite', suite, Boolean(process.argv[2] ?? process.env.PIPEGRES_PG_SUITE), "node-postgres's tests", 'PIPEGRES_PG_SUITE')
if (!existsSync(moduleFile)) fail(`no ${moduleFile}: run \`npm run build\` first`)
if (!process.env.PIPEGRES_PG15_BIN) await setUp(['postgresql-15'], (line) => console.log(`pg-suite: ${line}`)).all
if (!existsSync(join(binDir, 'postgres'))) fail(`no PostgreSQL at ${binDir}: install PostgreSQL 15 or set PIPEGRES_PG15_BIN`)

stopAllOnSignals()
const server = await startServer({ binDir, name: 'pg-suite' })
let code = 1
try {
  const conn = await BootstrapConnection.open({ path: join(server.socketDir, `.s.PGSQL.${server.port}`) }, { user: 'postgres' })
  try {
    // The roles' passwords are the ones run-suite.sh exports; the harness's last pg_hba.conf line admits them by SCRAM alone.
    await conn.query('CREATE DATABASE ci_db_test')
    await conn.query(`CREATE ROLE scram_test LOGIN PASSWORD ${sqlLiteral('test4scram')}`)
    await conn.query(`CREATE ROLE scram_unicode_test LOGIN PASSWORD ${sqlLiteral('IX-\u2168')}`)
  } finally {
    await conn.close()
  }
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PGHOST: server.host,
    PGPORT: String(server.port),
    PGUSER: server.superuser.user,
    PGPASSWORD: server.superuser.password,
    PGDATABASE: 'ci_db_test',
  }
  for (const k of ['PGSSLMODE', 'PGSERVICE', 'PGPASSFILE', 'PGOPTIONS', 'DATABASE_URL']) delete env[k]
  console.log(`pg-suite: PostgreSQL ${server.versionString.replace(/^\D*/, '')} on port ${server.port}; running ${suite}`)
  const output = await runSuite(suite, moduleFile, env, SUITE_TIMEOUT_MS)
  const m = /pg suite: (\d+) of (\d+) integration files pass/.exec(output)
  if (m === null) {
    console.error('pg-suite: run-suite.sh printed no count')
    console.log('summary: 0 passed, 1 failed, 0 skipped')
  } else {
    const passed = Number(m[1])
    const failing = [...output.matchAll(/^failed: (\S+?):/gm)].map((f) => f[1]!)
    const unexpected = failing.filter((f) => !KNOWN_FAILING.has(f))
    console.log(`pg-suite: ${passed} of ${m[2]} files pass (at least ${MIN_PASSING} needed)`)
    if (unexpected.length > 0) console.log(`pg-suite: failing beyond the README's list: ${unexpected.join(', ')}`)
    code = passed >= MIN_PASSING ? 0 : 1
    console.log(`summary: ${passed} passed, ${Math.max(unexpected.length, code)} failed, ${failing.length - unexpected.length} skipped`)
  }
} catch (err) {
  console.error(`pg-suite: ${(err as Error).message}`)
} finally {
  await stopAll()
}
process.exit(code)
