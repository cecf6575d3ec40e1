// Runs compiled test files side by side in lanes, each lane with its own
// PostgreSQL server, so that files never share a server's state (its
// connections, slots, settings, load) and a file that waits on a timer leaves
// the CPU to the others. Each file is its own process under a time limit: a
// file that does not finish is killed and reported, never waited for.
//
// A file runs as `node file.js`, its tests in that process, not under
// `node --test`, which would start a second process to run it in: that one
// cost 0.27 s of CPU per file, 56 s of a whole run, for nothing the lanes do
// not already give (a process per file, a time limit, the reporters).

import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

/** What a test file's header says of it: `// test-tags: slow, exclusive (why it must run alone)`. */
export interface FileTags {
  /** Started first: its length decides the suite's. */
  slow: boolean
  /** Runs with no other file beside it (it measures time or loads the whole machine). */
  exclusive: boolean
  /** Part of the short suite run on every runtime and server version. */
  matrix: boolean
  /** Runs a second time against PGlite in process (test/support/target.ts), with no server. */
  pglite: boolean
  /**
   * Has sizes of its own in the stress tier (`npm run test:stress`, test/support/tier.ts):
   * `npm test` runs it smaller, still through every path.
   */
  stress: boolean
}

export const TAGS = ['slow', 'exclusive', 'matrix', 'pglite', 'stress'] as const

/** Reads the tags from the first comment lines of a test's TypeScript source. */
export function tagsOf(source: string): FileTags {
  const tags = new Set<string>()
  for (const line of source.split('\n', 30)) {
    const m = /^\/\/\s*test-tags:\s*(.*)$/.exec(line.trim())
    // A reason may follow in parentheses.
    if (m) for (const t of m[1]!.replace(/\(.*$/, '').split(/[\s,]+/)) if (t) tags.add(t)
  }
  for (const t of tags) if (!(TAGS as readonly string[]).includes(t)) throw new Error(`unknown test tag '${t}' (${TAGS.join(', ')})`)
  return { slow: tags.has('slow'), exclusive: tags.has('exclusive'), matrix: tags.has('matrix'), pglite: tags.has('pglite'), stress: tags.has('stress') }
}

export interface TestFile {
  /** Relative to build/: `test/unit/pool/routing.test.js`. */
  path: string
  tags: FileTags
  /** Size of the source, the order's tie-breaker: longer files tend to run longer. */
  size: number
  /** 'pglite' for the run against PGlite of a file tagged so; the server otherwise. */
  target?: 'pglite'
  /** Variables this run sets (a value) or removes (undefined) in its lane's environment. */
  env?: Record<string, string | undefined>
  /** What it needs beyond `npm install` (`// test-needs:`, scripts/prerequisites.ts). */
  needs?: readonly string[]
  /** A batch's files (paths as `path`'s), run in one process by test/support/batch.ts; `path` then names the batch. */
  batch?: readonly string[]
}

/** How a run is named in the report: the path, and which target when it is not the server. */
export const runName = (file: TestFile) => (file.target === 'pglite' ? `${file.path} (PGlite)` : file.path)

/**
 * The runs of the selected files: each against the server, and the files tagged
 * pglite once more against PGlite, with `pgliteEnv` applied to their lane's
 * environment; `only` keeps the runs of one target.
 */
export function plannedRuns(files: TestFile[], only: 'server' | 'pglite' | undefined, pgliteEnv: Record<string, string | undefined>): TestFile[] {
  const onServer = only === 'pglite' ? [] : files
  const onPGlite = only === 'server' ? [] : files.filter((f) => f.tags.pglite).map((f): TestFile => ({ ...f, target: 'pglite', env: pgliteEnv }))
  return [...onServer, ...onPGlite]
}

/** The file paths a run covers: a batch's, or its own. */
export const runPaths = (file: TestFile): readonly string[] => file.batch ?? [file.path]

/**
 * The unit files that may share a process, grouped into at most `count`
 * batches of about equal source size (a file's size stands for its length, as
 * in order()); every other run stays a process of its own. A unit file that
 * is slow or exclusive, needs something installed, or runs against PGlite is
 * left alone: the first two must start when order() puts them, the others wait
 * or change the environment.
 */
export function batchUnitFiles(files: TestFile[], count: number): TestFile[] {
  const batchable = (f: TestFile) =>
    f.path.startsWith('test/unit/') && f.target === undefined && f.env === undefined && (f.needs ?? []).length === 0 && !f.tags.slow && !f.tags.exclusive
  const unit = files.filter(batchable)
  const rest = files.filter((f) => !batchable(f))
  // A batch of one file would only rename it.
  if (unit.length < 2 || count < 1) return files
  const n = Math.min(count, Math.floor(unit.length / 2))
  const bins = Array.from({ length: n }, () => ({ files: [] as TestFile[], size: 0 }))
  // Largest first, each into the lightest batch so far.
  for (const f of [...unit].sort((a, b) => b.size - a.size || (a.path < b.path ? -1 : 1))) {
    const bin = bins.reduce((a, b) => (b.size < a.size ? b : a))
    bin.files.push(f)
    bin.size += f.size
  }
  const none: FileTags = { slow: false, exclusive: false, matrix: false, pglite: false, stress: false }
  const batches = bins.map((bin, i): TestFile => {
    const paths = bin.files.map((f) => f.path).sort()
    return { path: `test/unit (batch ${i + 1} of ${n}, ${paths.length} files)`, tags: none, size: bin.size, batch: paths }
  })
  return [...batches, ...rest]
}

/** A run's environment: its lane's, with the run's own variables set or removed. */
export function runEnv(laneEnv: NodeJS.ProcessEnv, file: TestFile): NodeJS.ProcessEnv {
  const env = { ...laneEnv }
  for (const [name, value] of Object.entries(file.env ?? {})) {
    if (value === undefined) delete env[name]
    else env[name] = value
  }
  return env
}

export interface FileResult {
  file: TestFile
  lane: number
  /** Wall time in ms. */
  ms: number
  /** The exit code, or undefined when the file was killed at its time limit. */
  code: number | undefined
  counts: Record<string, number> | undefined
  /** The tests that failed, each with the first line of its error. */
  failures: TapFailure[]
}

export interface LaneRun {
  root: string
  /** The Node binary each file runs on (PIPEGRES_TEST_NODE); default: the runner's own. */
  nodeBinary?: string
  /** Node's test runner flags besides the file (name patterns and such). */
  nodeFlags: string[]
  /** The environment of each lane's files (its server's description in it). */
  laneEnv: NodeJS.ProcessEnv[]
  /** A file's wall-time limit. */
  fileLimitMs: number
  /** Where each file's TAP report is kept. */
  resultsDir: string
  /** Called when a file ends, with its whole output, so that outputs never interleave. */
  onFile: (result: FileResult, output: string) => void
  /**
   * What a file still waits for before it may start (something it needs being
   * installed), or undefined when it may start now. The lanes run the files that
   * wait for nothing meanwhile.
   */
  blockedBy?: (file: TestFile) => Promise<unknown> | undefined
}

/** Slow files first, then the larger ones: the longest jobs start earliest. */
export function order(files: TestFile[]): TestFile[] {
  const rank = (f: TestFile) => (f.tags.slow ? 0 : 1)
  return [...files].sort((a, b) => rank(a) - rank(b) || b.size - a.size || (a.path < b.path ? -1 : 1))
}

/** Runs every file; resolves with their results in the order they ended. */
export async function runLanes(files: TestFile[], run: LaneRun): Promise<FileResult[]> {
  const results: FileResult[] = []
  const shared = order(files.filter((f) => !f.tags.exclusive))
  const alone = order(files.filter((f) => f.tags.exclusive))
  const blockedBy = run.blockedBy ?? (() => undefined)
  const worker = async (lane: number) => {
    while (shared.length > 0) {
      // The first file in the order that may start now; when every file left waits, wait for the first wait to end.
      const i = shared.findIndex((f) => blockedBy(f) === undefined)
      if (i < 0) {
        await Promise.race(shared.map(blockedBy))
        continue
      }
      const file = shared.splice(i, 1)[0]!
      results.push(await runFile(file, lane, run))
    }
  }
  await Promise.all(run.laneEnv.map((_, lane) => worker(lane)))
  // After the others, one at a time, on lane 0's server: nothing else runs beside them.
  for (const file of alone) {
    await blockedBy(file)
    results.push(await runFile(file, 0, run))
  }
  return results
}

function runFile(file: TestFile, lane: number, run: LaneRun): Promise<FileResult> {
  const tapName = file.batch ? `test/unit/batch-${file.path.replace(/\D+/g, '-')}.tap` : file.path.replace(/\.js$/, file.target === 'pglite' ? '.pglite.tap' : '.tap')
  const tapFile = join(run.resultsDir, tapName)
  mkdirSync(dirname(tapFile), { recursive: true })
  const args = [
    ...run.nodeFlags,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tapFile}`,
    ...(file.batch ? [join('build', 'test', 'support', 'batch.js'), ...file.batch] : [join('build', file.path)]),
  ]
  const started = Date.now()
  return new Promise((resolve) => {
    // Its own process group, so that a file past its limit is ended with everything it started.
    const child = spawn(run.nodeBinary ?? process.execPath, args, { cwd: run.root, env: runEnv(run.laneEnv[lane]!, file), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    const out: Buffer[] = []
    child.stdout.on('data', (b: Buffer) => out.push(b))
    child.stderr.on('data', (b: Buffer) => out.push(b))
    let killedAt: number | undefined
    const signalGroup = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal)
      } catch {}
    }
    const limit = setTimeout(() => {
      killedAt = Date.now()
      // SIGTERM first: the harness stops the servers a test started; what is left goes after 10 s.
      signalGroup('SIGTERM')
      setTimeout(() => signalGroup('SIGKILL'), 10_000).unref()
    }, run.fileLimitMs)
    activeGroups.add(signalGroup)
    const finish = (code: number | undefined) => {
      clearTimeout(limit)
      activeGroups.delete(signalGroup)
      let output = Buffer.concat(out).toString('utf8')
      if (killedAt !== undefined) output += `\n${runName(file)} did not finish within ${run.fileLimitMs / 1000} s: killed (PIPEGRES_TEST_FILE_TIMEOUT sets the limit in seconds)\n`
      const result: FileResult = { file, lane, ms: Date.now() - started, code: killedAt === undefined ? code : undefined, counts: tapSummary(tapFile), failures: tapFailures(tapFile) }
      run.onFile(result, output)
      resolve(result)
    }
    child.on('error', (err) => {
      out.push(Buffer.from(`could not run ${file.path}: ${err.message}\n`))
      finish(1)
    })
    child.on('close', (code, signal) => finish(code ?? (signal ? 1 : 0)))
  })
}

const activeGroups = new Set<(signal: NodeJS.Signals) => void>()

/** Passes a signal on to every running file's process group. */
export function signalRunning(signal: NodeJS.Signals): void {
  for (const send of activeGroups) send(signal)
}

/** The final counts of a TAP stream written by Node's test runner. */
export function tapSummary(tapFile: string): Record<string, number> | undefined {
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

export interface TapFailure {
  /** The test's name under its suites: `suite › test`. */
  test: string
  /** The first non-empty line of its error. */
  error: string
}

/** The tests that failed in a TAP stream written by Node's test runner (not the suites that failed because of them). */
export function tapFailures(tapFile: string): TapFailure[] {
  let text: string
  try {
    text = readFileSync(tapFile, 'utf8')
  } catch {
    return []
  }
  return parseTapFailures(text)
}

export function parseTapFailures(text: string): TapFailure[] {
  const lines = text.split('\n')
  const failures: TapFailure[] = []
  // The names of the subtests open at each depth (4 spaces per level).
  const open: string[] = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const subtest = /^( *)# Subtest: (.*)$/.exec(line)
    if (subtest) {
      const depth = subtest[1]!.length / 4
      open.length = depth
      open[depth] = subtest[2]!
      continue
    }
    const notOk = /^( *)not ok \d+ - (.*?)(?: # (?:SKIP|TODO).*)?$/.exec(line)
    if (!notOk) continue
    const indent = notOk[1]!
    const depth = indent.length / 4
    let failureType = ''
    let error = ''
    if (lines[i + 1]?.trim() === '---') {
      for (i += 2; i < lines.length && lines[i] !== `${indent}  ...`; i++) {
        const field = /^ *(failureType|error): ?(.*)$/.exec(lines[i]!)
        if (!field || lines[i]!.length - lines[i]!.trimStart().length !== indent.length + 2) continue
        if (field[1] === 'failureType') failureType = unquote(field[2]!)
        else if (field[2] === '|-' || field[2] === '|' || field[2] === '>-') {
          // A block: its lines are indented deeper than the key.
          for (let j = i + 1; j < lines.length && (lines[j]!.startsWith(`${indent}    `) || lines[j]!.trim() === ''); j++) {
            if (lines[j]!.trim() !== '') {
              error = lines[j]!.trim()
              break
            }
          }
        } else error = unquote(field[2]!).split('\n')[0]!.trim()
      }
    }
    if (failureType === 'subtestsFailed') continue
    failures.push({ test: [...open.slice(0, depth), notOk[2]!].filter(Boolean).join(' › '), error })
  }
  return failures
}

function unquote(value: string): string {
  if (value.startsWith("'") && value.endsWith("'")) return value.slice(1, -1).replaceAll("''", "'")
  if (value.startsWith('"') && value.endsWith('"')) {
    try {
      return JSON.parse(value) as string
    } catch {
      return value.slice(1, -1)
    }
  }
  return value
}
