// What the tests need beyond `npm install`, fetched or built by the test commands
// themselves and kept for the next run: the Node and PostgreSQL binaries of
// test/support/runtimes/ (npm), PgBouncer 1.18, pgpool-II and Chromium (Debian's
// packages), PgBouncer 1.24 (built from Debian's source package), PostgreSQL 15
// (Debian's package, for the matrix). A test file names what it needs in its
// header, `// test-needs: pgbouncer, runtimes`; the runner starts what is missing
// at once, beside the servers, and holds back only the files that need it
// (scripts/test-lanes.ts), so a first run pays for the set-up in parallel with
// the files that need none of it.
//
// Debian's packages go in with apt-get, as root or with password-less sudo; where
// neither is possible, or with PIPEGRES_TEST_INSTALL=0, nothing is installed and
// the files that need a missing component skip with their own reason (or fail,
// under the PIPEGRES_REQUIRE_* variables CI sets). What each install printed is
// kept in .tmp/setup/NAME.log.

import { spawn, spawnSync } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { findPgBouncer, findPgBouncer124, PGBOUNCER_124_SCRIPT } from '../test/support/servers/pgbouncer.js'
import { findPgpool } from '../test/support/servers/pgpool.js'
import { NODE_LINES, POSTGRES_MAJORS, missingRuntime, nodeBinary, postgresBinDir, manifestVersions, runtimePackageDir } from '../test/support/servers/matrix.js'
import { repoRoot } from '../test/support/paths.js'

export const NEEDS = ['runtimes', 'pgbouncer', 'pgbouncer-1.24', 'pgpool', 'chromium', 'postgresql-15'] as const
export type Need = (typeof NEEDS)[number]

/** Reads `// test-needs: a, b` from the first comment lines of a test's source. */
export function needsOf(source: string): Need[] {
  const needs = new Set<Need>()
  for (const line of source.split('\n', 30)) {
    const m = /^\/\/\s*test-needs:\s*(.*)$/.exec(line.trim())
    if (!m) continue
    for (const n of m[1]!.replace(/\(.*$/, '').split(/[\s,]+/)) {
      if (!n) continue
      if (!(NEEDS as readonly string[]).includes(n)) throw new Error(`unknown test need '${n}' (${NEEDS.join(', ')})`)
      needs.add(n as Need)
    }
  }
  return [...needs]
}

interface Prerequisite {
  what: string
  /** Why it is not usable yet, or undefined when it is. */
  missing(): string | undefined
  /** Debian packages that bring it. */
  apt?: string[]
}

/** The Chromium the browser test runs (test/browser/browser-table.test.ts looks at the same places). */
export const CHROMIUM_CANDIDATES = [process.env.PIPEGRES_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((p): p is string => !!p)

function runtimesMissing(): string | undefined {
  const stale = Object.entries(manifestVersions()).filter(([alias, version]) => {
    const pkg = join(runtimePackageDir(alias), 'package.json')
    return !existsSync(pkg) || (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version !== version
  })
  if (stale.length > 0) return `${stale.map(([alias]) => alias).join(', ')} not installed at the manifest's versions`
  return [...NODE_LINES.map(nodeBinary), ...POSTGRES_MAJORS.filter((m) => m !== 15 && m !== 18).map((m) => join(postgresBinDir(m), 'postgres'))]
    .map(missingRuntime)
    .find(Boolean)
}

const PREREQUISITES: Record<Need, Prerequisite> = {
  runtimes: { what: 'Node 20/22/24/26 and PostgreSQL 13/14/16/17 (npm)', missing: runtimesMissing },
  pgbouncer: { what: 'PgBouncer 1.18', missing: () => (findPgBouncer() ? undefined : 'no pgbouncer binary'), apt: ['pgbouncer'] },
  'pgbouncer-1.24': { what: "PgBouncer 1.24 (built from Debian's source)", missing: () => (findPgBouncer124() ? undefined : 'not built') },
  pgpool: { what: 'pgpool-II', missing: () => (findPgpool() ? undefined : 'no pgpool binary'), apt: ['pgpool2'] },
  chromium: { what: 'Chromium', missing: () => (CHROMIUM_CANDIDATES.some((p) => existsSync(p)) ? undefined : 'no chromium binary'), apt: ['chromium'] },
  'postgresql-15': { what: 'PostgreSQL 15 (Debian)', missing: () => missingRuntime(join(postgresBinDir(15), 'postgres')), apt: ['postgresql-15'] },
}

/** How apt-get can be run here: as root, with password-less sudo, or not at all (why). */
function aptRunner(): { prefix: string[] } | { why: string } {
  if (process.platform !== 'linux') return { why: `${process.platform} has no apt-get` }
  if (spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status !== 0) return { why: 'no apt-get on this machine' }
  if (process.getuid?.() === 0) return { prefix: [] }
  if (spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore', timeout: 10_000 }).status === 0) return { prefix: ['sudo', '-n'] }
  return { why: 'not root, and sudo asks for a password' }
}

const SETUP_DIR = join(repoRoot, '.tmp', 'setup')
/** No install may hang a test run: each step has this long. */
const STEP_TIMEOUT_MS = 10 * 60_000

/** Runs one step of an install, its output appended to `log`; rejects with the log's path on failure. */
function step(command: string[], log: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(log, { flags: 'a' })
    out.write(`$ ${command.join(' ')}\n`)
    const child = spawn(command[0]!, command.slice(1), { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.pipe(out, { end: false })
    child.stderr.pipe(out, { end: false })
    const timer = setTimeout(() => child.kill('SIGKILL'), STEP_TIMEOUT_MS)
    const done = (err?: Error) => {
      clearTimeout(timer)
      out.end(() => (err ? reject(err) : resolve()))
    }
    child.on('error', (err) => done(new Error(`${command[0]}: ${err.message}`)))
    child.on('close', (code, signal) => {
      if (code === 0) done()
      else done(new Error(`\`${command.join(' ')}\` ${signal ? `was stopped (${signal})` : `exited with ${code}`}; see ${relative(process.cwd(), log)}`))
    })
  })
}

/** Keeps Debian's PostgreSQL package from creating and starting a cluster: the tests start their own servers. */
async function noMainCluster(prefix: string[], log: string): Promise<void> {
  const conf = '/etc/postgresql-common/createcluster.conf'
  const text = existsSync(conf) ? readFileSync(conf, 'utf8') : ''
  if (!/^\s*create_main_cluster\s*=\s*false/m.test(text)) {
    await step([...prefix, 'sh', '-c', `mkdir -p /etc/postgresql-common && sed -i '/^[[:space:]]*create_main_cluster/d' ${conf} 2>/dev/null; echo 'create_main_cluster = false' >> ${conf}`], log)
  }
}

export interface Setup {
  /** Settles (never rejects) when `need` is usable, or was given up; what the runner waits on before a file that needs it. */
  ready(need: Need): Promise<void>
  /** Settles when every install has ended. */
  all: Promise<void>
}

/**
 * Starts installing whichever of `needs` is missing, and says so through `log`,
 * one line when each begins and one when it ends.
 */
export function setUp(needs: Iterable<Need>, log: (line: string) => void): Setup {
  const settled = new Map<Need, Promise<void>>()
  const missing = [...new Set(needs)].filter((n) => PREREQUISITES[n].missing() !== undefined)
  const done = Promise.resolve()
  if (missing.length === 0) return { ready: () => done, all: done }
  const names = (ns: Need[]) => ns.map((n) => PREREQUISITES[n].what).join(', ')
  if (process.env.PIPEGRES_TEST_INSTALL === '0') {
    log(`not installing ${names(missing)} (PIPEGRES_TEST_INSTALL=0): the tests that need them skip, or fail under PIPEGRES_REQUIRE_*`)
    return { ready: () => done, all: done }
  }
  mkdirSync(SETUP_DIR, { recursive: true })
  const timed = (ns: Need[], what: string, run: () => Promise<void>): Promise<void> => {
    const t0 = Date.now()
    log(`setting up ${names(ns)}: ${what}`)
    return run().then(
      () => {
        const still = ns.filter((n) => PREREQUISITES[n].missing() !== undefined)
        if (still.length === 0) log(`set up ${names(ns)} in ${((Date.now() - t0) / 1000).toFixed(0)} s`)
        else log(`could not set up ${still.map((n) => `${PREREQUISITES[n].what} (${PREREQUISITES[n].missing()})`).join(', ')}: the tests that need it skip or fail`)
      },
      (err: Error) => log(`could not set up ${names(ns)}: ${err.message}; the tests that need it skip or fail`),
    )
  }

  if (missing.includes('runtimes')) {
    const logFile = join(SETUP_DIR, 'runtimes.log')
    settled.set('runtimes', timed(['runtimes'], 'npm ci of test/support/runtimes into .tmp/runtimes', () => step([process.execPath, join(repoRoot, 'build', 'scripts', 'runtimes.js')], logFile)))
  }

  // One apt-get at a time (dpkg takes a lock): the packages together, then the build, which installs its own build dependencies.
  const aptNeeds = missing.filter((n) => PREREQUISITES[n].apt)
  const build = missing.includes('pgbouncer-1.24')
  if (aptNeeds.length > 0 || build) {
    const apt = aptRunner()
    if ('why' in apt) {
      const packages = aptNeeds.flatMap((n) => PREREQUISITES[n].apt!)
      const how = [packages.length ? `apt-get install ${packages.join(' ')}` : '', build ? PGBOUNCER_124_SCRIPT : ''].filter(Boolean).join(' and ')
      log(`not installing ${names([...aptNeeds, ...(build ? (['pgbouncer-1.24'] as Need[]) : [])])}: ${apt.why}; as root, run ${how}`)
    } else {
      const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
      const packages = aptNeeds.flatMap((n) => PREREQUISITES[n].apt!)
      const logFile = join(SETUP_DIR, 'apt.log')
      const packaged = aptNeeds.length === 0 ? done : timed(aptNeeds, `apt-get install ${packages.join(' ')}`, async () => {
        if (aptNeeds.includes('postgresql-15')) await noMainCluster(apt.prefix, logFile)
        await step([...apt.prefix, 'apt-get', 'update', '-q'], logFile, env)
        await step([...apt.prefix, 'apt-get', 'install', '-y', '-q', '--no-install-recommends', '-o', 'Dpkg::Options::=--force-confdef', '-o', 'Dpkg::Options::=--force-confold', ...packages], logFile, env)
        // Where systemd runs, the packages start services of their own that the tests do not use.
        if (spawnSync('systemctl', ['--version'], { stdio: 'ignore' }).status === 0) {
          for (const unit of ['pgbouncer', 'pgpool2']) {
            const [command, ...args] = [...apt.prefix, 'systemctl', 'disable', '--now', unit]
            spawnSync(command!, args, { stdio: 'ignore', timeout: 30_000 })
          }
        }
      })
      for (const n of aptNeeds) settled.set(n, packaged)
      if (build) {
        const buildLog = join(SETUP_DIR, 'pgbouncer-1.24.log')
        settled.set('pgbouncer-1.24', packaged.then(() => timed(['pgbouncer-1.24'], PGBOUNCER_124_SCRIPT, () => step(['bash', join(repoRoot, PGBOUNCER_124_SCRIPT)], buildLog, env))))
      }
    }
  }
  return {
    ready: (need) => settled.get(need) ?? done,
    all: Promise.all(settled.values()).then(() => {}),
  }
}
