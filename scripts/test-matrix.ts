// `npm run test:matrix`: runs the test suite on several Node × PostgreSQL
// combinations (test/support/servers/matrix.ts), one after another, each through
// scripts/run-tests.ts, then prints what ran where. The binaries it lacks (the
// runtimes of test/support/runtimes, Debian's PostgreSQL 15) it installs first,
// as `npm test` does (scripts/prerequisites.ts).
//
//   node build/scripts/test-matrix.js            CI's plan: the whole suite on the two full
//                                                combinations, the matrix subset on every other
//   node build/scripts/test-matrix.js --matrix   the matrix subset on every combination,
//                                                nothing left out (known failures included)
//   ... --only=22/15,26/13                       only these combinations (Node/PostgreSQL)
//   ... --dry-run                                print the plan, run nothing
//   ... --table=FILE                             also write the closing table as Markdown
//   ... --readme                                 rewrite the README's "Tested where" table from the plan
//   ... -- <arguments>                           passed on to every run-tests.js (filters, node --test flags)
//
// The exit code is 1 when any combination failed (or could not start).

import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  NODE_LINES,
  POSTGRES_MAJORS,
  POSTGRES_SOURCES,
  ciPlan,
  missingRuntime,
  nodeBinary,
  postgresBinDir,
  README_MARKERS,
  testedWhereBlock,
  type NodeLine,
  type PlannedRun,
  type PostgresMajor,
} from '../test/support/servers/matrix.js'
import type { RunResults } from './run-tests.js'
import { setUp, type Need } from './prerequisites.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

interface Outcome {
  run: PlannedRun
  results: RunResults | undefined
  /** Why there are no results, or the run's exit code when it failed. */
  problem: string | undefined
  ms: number
}

const label = (r: PlannedRun) => `Node ${r.node} × PostgreSQL ${r.postgres}`
const describeRun = (r: PlannedRun) =>
  `${r.suite === 'full' ? 'full suite' : 'matrix subset'}, ${r.sslmode === 'disable' ? 'plain TCP' : 'TLS'}${r.exclude.length ? `, without ${r.exclude.join(', ')}` : ''}`

function matrixEverywhere(): PlannedRun[] {
  return NODE_LINES.flatMap((node) => POSTGRES_MAJORS.map((postgres): PlannedRun => ({ node, postgres, suite: 'matrix', exclude: [], excluded: [] })))
}

function parseOnly(value: string): { node: NodeLine; postgres: PostgresMajor }[] {
  return value.split(',').map((pair) => {
    const m = /^(\d+)\/(\d+)$/.exec(pair.trim())
    const node = Number(m?.[1]) as NodeLine
    const postgres = Number(m?.[2]) as PostgresMajor
    if (!m || !NODE_LINES.includes(node) || !POSTGRES_MAJORS.includes(postgres)) {
      throw new Error(`--only takes NODE/POSTGRES pairs from ${NODE_LINES.join(', ')} and ${POSTGRES_MAJORS.join(', ')}, such as 22/15: not ${JSON.stringify(pair)}`)
    }
    return { node, postgres }
  })
}

function runOne(run: PlannedRun, passThrough: string[], resultsFile: string): Promise<number> {
  const env: NodeJS.ProcessEnv = { ...process.env, PIPEGRES_TEST_NODE: nodeBinary(run.node), PIPEGRES_TEST_RESULTS: resultsFile }
  // The embedded 18 is the runner's default server: left unset, it is named as such.
  if (POSTGRES_SOURCES[run.postgres].from === 'embedded') delete env.PIPEGRES_TEST_PGBIN
  else env.PIPEGRES_TEST_PGBIN = postgresBinDir(run.postgres)
  if (run.sslmode) env.PIPEGRES_TEST_SSLMODE = run.sslmode
  else delete env.PIPEGRES_TEST_SSLMODE
  // The PGlite runs depend on the Node line only, not on the server: the full runs have them.
  const filters = [...(run.suite === 'matrix' ? ['--tag=matrix', '--target=server'] : ['--target=all']), ...run.exclude.map((x) => `--exclude=${x}`), ...passThrough]
  // A full suite is `npm test` itself, the command the README gives (it builds, then runs run-tests.js
  // with these arguments), so that CI runs what a user runs; the matrix subsets run the runner directly.
  const [command, args] = run.suite === 'full' ? ['npm', ['test', '--', ...filters]] : [process.execPath, [join(root, 'build', 'scripts', 'run-tests.js'), ...filters]]
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, env, stdio: 'inherit' })
    child.on('error', () => resolve(1))
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)))
  })
}

const seconds = (ms: number) => (ms / 1000).toFixed(0)

/** The closing table: one line per combination, then each failed test with the first line of its error. */
export function table(outcomes: Outcome[]): { text: string; markdown: string } {
  const head = ['combination', 'suite', 'files', 'tests', 'pass', 'fail', 'skipped', 'seconds']
  const rows = outcomes.map((o) => {
    const c = o.results?.counts ?? {}
    return [
      `Node ${o.results?.node.replace(/^v/, '') ?? o.run.node} × PostgreSQL ${o.results?.postgres?.replace(/ \(.*\)$/, '') ?? o.run.postgres}`,
      describeRun(o.run).replace(/, without .*/, o.run.exclude.length ? ' (some left out)' : ''),
      String(o.results?.files ?? '–'),
      String(c.tests ?? '–'),
      String(c.pass ?? '–'),
      o.results ? String((c.fail ?? 0) + (c.cancelled ?? 0) + (o.results.code !== 0 && !c.fail && !c.cancelled ? 1 : 0)) : (o.problem ?? 'did not run'),
      String(c.skipped ?? '–'),
      seconds(o.ms),
    ]
  })
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const fmt = (cells: string[]) => cells.map((c, i) => (i >= 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ')
  const lines = [fmt(head), ...rows.map(fmt)]
  const md = [`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i >= 2 ? '---:' : '---')).join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)]
  const failures: string[] = []
  for (const o of outcomes) {
    for (const f of o.results?.failed ?? []) {
      failures.push(`${label(o.run)}: ${f.path} (${f.why})`)
      for (const t of f.failures) failures.push(`    ${t.test}: ${t.error}`)
    }
    if (!o.results) failures.push(`${label(o.run)}: ${o.problem ?? 'no results'}`)
  }
  const excluded = outcomes.filter((o) => o.run.excluded.length > 0)
  const notes = excluded.length
    ? ['', 'left out (known failures, test/support/servers/matrix.ts MATRIX_EXCLUSIONS):', ...[...new Set(excluded.flatMap((o) => o.run.excluded.map((e) => `  ${e.files.join(', ')} on PostgreSQL ${e.postgres.join(', ')}: ${e.reason}`)))]]
    : []
  const failText = failures.length ? ['', 'failures (first line of each error):', ...failures.map((f) => `  ${f}`)] : []
  return { text: [...lines, ...notes, ...failText].join('\n'), markdown: [...md, ...notes, ...failText].join('\n') }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2)
  const dash = argv.indexOf('--')
  const own = dash === -1 ? argv : argv.slice(0, dash)
  const passThrough = dash === -1 ? [] : argv.slice(dash + 1)
  let plan = own.includes('--matrix') ? matrixEverywhere() : ciPlan()
  const only = own.find((a) => a.startsWith('--only='))
  if (only) {
    const wanted = parseOnly(only.slice('--only='.length))
    plan = plan.filter((r) => wanted.some((w) => w.node === r.node && w.postgres === r.postgres))
  }
  const tableFile = own.find((a) => a.startsWith('--table='))?.slice('--table='.length)
  for (const a of own) {
    if (!['--matrix', '--dry-run', '--readme'].includes(a) && !a.startsWith('--only=') && !a.startsWith('--table=')) throw new Error(`unknown option ${a} (arguments for the runs go after --)`)
  }
  if (own.includes('--readme')) {
    const readme = join(root, 'README.md')
    const { start, end } = README_MARKERS
    const text = readFileSync(readme, 'utf8')
    const from = text.indexOf(start)
    const to = text.indexOf(end)
    if (from === -1 || to < from) throw new Error(`README.md has no ${start} ... ${end} block`)
    writeFileSync(readme, `${text.slice(0, from + start.length)}\n${testedWhereBlock()}\n${text.slice(to)}`)
    console.log('README.md: the tested-where table is rewritten from test/support/servers/matrix.ts')
    return 0
  }
  for (const r of plan) console.log(`${label(r)}: ${describeRun(r)}`)
  if (own.includes('--dry-run')) return 0

  // The binaries every combination runs on, before the first: each run's own files set up the rest.
  const needs: Need[] = ['runtimes', ...(plan.some((r) => POSTGRES_SOURCES[r.postgres].from === 'system') ? (['postgresql-15'] as Need[]) : [])]
  await setUp(needs, (line) => console.log(`=== ${line}`)).all
  const dir = mkdtempSync(join(tmpdir(), 'pipegres-matrix-'))
  const outcomes: Outcome[] = []
  try {
    for (const [i, run] of plan.entries()) {
      console.log(`\n=== ${i + 1}/${plan.length} ${label(run)}: ${describeRun(run)}`)
      for (const e of run.excluded) console.log(`=== left out on PostgreSQL ${run.postgres}: ${e.files.join(', ')}: ${e.reason}`)
      const missing = [nodeBinary(run.node), join(postgresBinDir(run.postgres), 'postgres')].map(missingRuntime).find(Boolean)
      if (missing) {
        console.error(`=== ${label(run)}: ${missing}`)
        outcomes.push({ run, results: undefined, problem: 'binary missing', ms: 0 })
        continue
      }
      const resultsFile = join(dir, `${i}.json`)
      const started = Date.now()
      const code = await runOne(run, passThrough, resultsFile)
      let results: RunResults | undefined
      try {
        results = JSON.parse(readFileSync(resultsFile, 'utf8')) as RunResults
      } catch {}
      outcomes.push({ run, results, problem: code === 0 ? undefined : results ? `exit ${code}` : `exit ${code}, no results`, ms: Date.now() - started })
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const { text, markdown } = table(outcomes)
  console.log(`\n=== what ran where\n${text}`)
  if (tableFile) writeFileSync(tableFile, markdown + '\n')
  const sum = (k: string) => outcomes.reduce((n, o) => n + (o.results?.counts[k] ?? 0), 0)
  const failedRuns = outcomes.filter((o) => o.problem !== undefined)
  const total = outcomes.reduce((n, o) => n + o.ms, 0)
  console.log(`\n${outcomes.length} combinations in ${(total / 60_000).toFixed(1)} min; ${failedRuns.length ? `FAILED: ${failedRuns.map((o) => label(o.run)).join(', ')}` : 'all passed'}`)
  // The plain closing line, over every combination.
  console.log(`summary: ${sum('pass')} passed, ${sum('fail') + sum('cancelled') + (failedRuns.length && !sum('fail') ? 1 : 0)} failed, ${sum('skipped')} skipped`)
  return failedRuns.length ? 1 : 0
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err)
      process.exit(1)
    },
  )
}
