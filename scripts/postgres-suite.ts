// `npm run test:postgres-suite [RUN_SUITE] [--floor=N] [--module=M]`:
// postgres.js's own test suite against pipegres/postgres. It starts a
// PostgreSQL 15 of its own (on port 5432 when that is free: a few tests
// hard-code it), set up as the suite's header asks (its pg_hba.conf lines
// first, TLS on, wal_level logical, synchronous commits, prepared transactions allowed, psql,
// createdb and dropdb on PATH), runs the suite's run-suite.sh against the
// built pipegres/postgres (dist/integrations/postgres/index.js, from `npm run
// build`), prints its count and fails below the floor.
//
// RUN_SUITE: the path of run-suite.sh, from the argument, else
// PIPEGRES_POSTGRES_SUITE, else ../shared/peers/postgres.js/run-suite.sh
// beside the repository. --module runs another module instead (`postgres`
// itself, to compare). PIPEGRES_PG15_BIN overrides the server's bin directory;
// without it, Debian's PostgreSQL 15 is installed when missing
// (scripts/prerequisites.ts), as `npm test` would.
//
// The last line, `summary: P passed, F failed, K skipped`, counts tests: at or
// above the floor the failures the README explains are K, below it they are F.

import { existsSync, readFileSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BootstrapConnection } from '../test/support/servers/bootstrap-sql.js'
import { startServer, stopAll, stopAllOnSignals } from '../test/support/servers/postgres.js'
import { requireSuite, runSuite } from './peer-suite.js'
import { setUp } from './prerequisites.js'

/** A little under what pipegres/postgres reliably reaches (see the README's "Switching from postgres.js"). */
const DEFAULT_FLOOR = 240
/** The whole run: run-suite.sh bounds the suite itself (300 s by default). */
const SUITE_TIMEOUT_MS = 10 * 60_000

// build/scripts/postgres-suite.js → the repository root.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const args = process.argv.slice(2)
const flag = (name: string): string | undefined => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
const positional = args.filter((a) => !a.startsWith('--'))
const suite = resolve(root, positional[0] ?? process.env.PIPEGRES_POSTGRES_SUITE ?? join('..', 'shared', 'peers', 'postgres.js', 'run-suite.sh'))
const moduleSpec = flag('module') ?? join(root, 'dist', 'integrations', 'postgres', 'index.js')
const floor = Number(flag('floor') ?? DEFAULT_FLOOR)
const binDir = process.env.PIPEGRES_PG15_BIN || '/usr/lib/postgresql/15/bin'

function fail(message: string): never {
  console.error(`postgres-suite: ${message}`)
  process.exit(2)
}

if (!Number.isInteger(floor) || floor < 0) fail(`--floor must be a non-negative integer, not ${JSON.stringify(flag('floor'))}`)
requireSuite('postgres-suite', suite, Boolean(positional[0] ?? process.env.PIPEGRES_POSTGRES_SUITE), "postgres.js's tests", 'PIPEGRES_POSTGRES_SUITE')
if (flag('module') === undefined && !existsSync(moduleSpec)) fail(`no ${moduleSpec}: run \`npm run build\` first`)
if (!process.env.PIPEGRES_PG15_BIN) await setUp(['postgresql-15'], (line) => console.log(`postgres-suite: ${line}`)).all
for (const tool of ['postgres', 'psql', 'createdb', 'dropdb']) {
  if (!existsSync(join(binDir, tool))) fail(`no ${tool} in ${binDir}: install PostgreSQL 15 with its client tools or set PIPEGRES_PG15_BIN`)
}

stopAllOnSignals()
// Commits flushed at once, as on a server left at its defaults: the harness's servers commit
// asynchronously for speed, and a walsender decodes WAL only once it is flushed (up to
// wal_writer_delay, 200 ms, later), while the suite's subscribe tests give a change 10 ms to arrive.
const server = await startServer({ binDir, name: 'postgres-suite', port: 5432, settings: { synchronous_commit: 'on' } })
let code = 1
try {
  // The suite's own pg_hba.conf lines go first: trust for its plain user and postgres over TCP, md5 and SCRAM for the others.
  const hbaFile = join(server.dataDir, 'pg_hba.conf')
  const suiteHba = readFileSync(join(dirname(suite), 'tests', 'pg_hba.conf'), 'utf8')
  await writeFile(hbaFile, `${suiteHba.trim()}\n${await readFile(hbaFile, 'utf8')}`)
  const conn = await BootstrapConnection.open({ path: join(server.socketDir, `.s.PGSQL.${server.port}`) }, { user: 'postgres' })
  try {
    await conn.query('SELECT pg_reload_conf()')
  } finally {
    await conn.close()
  }
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${binDir}:${process.env.PATH ?? ''}`,
    PGHOST: server.host,
    PGPORT: String(server.port),
    PGUSER: server.superuser.user,
    // The 'Unix socket' test connects to the socket directory it names.
    PGSOCKET: server.socketDir,
  }
  for (const k of ['PGPASSWORD', 'PGDATABASE', 'PGSSLMODE', 'PGSERVICE', 'PGPASSFILE', 'PGOPTIONS', 'DATABASE_URL']) delete env[k]
  if (server.port !== 5432) console.log(`postgres-suite: port 5432 is taken; the tests that hard-code it will fail`)
  console.log(`postgres-suite: PostgreSQL ${server.versionString.replace(/^\D*/, '')} on port ${server.port}; running ${suite} on ${moduleSpec}`)
  const output = await runSuite(suite, moduleSpec, env, SUITE_TIMEOUT_MS, root)
  const m = /postgres\.js suite: (\d+) of (\d+) tests pass/.exec(output)
  if (m === null) {
    console.error('postgres-suite: run-suite.sh printed no count')
    console.log('summary: 0 passed, 1 failed, 0 skipped')
  } else {
    const passed = Number(m[1])
    const total = Number(m[2])
    console.log(`postgres-suite: ${passed} of ${total} tests pass (at least ${floor} needed)`)
    code = passed >= floor ? 0 : 1
    console.log(`summary: ${passed} passed, ${code === 0 ? 0 : total - passed} failed, ${code === 0 ? total - passed : 0} skipped`)
  }
} catch (err) {
  console.error(`postgres-suite: ${(err as Error).message}`)
} finally {
  await stopAll()
}
process.exit(code)
