// `npm run test:peers [labels]`: each integration's tests against the oldest
// and the newest release its range allows (test/support/peers/plan.ts), not
// only the dev dependency the lock file pins. Both ends are asked of the
// registry at run time (`npm view`), so a release is tested the day it ships.
//
// Each set of releases (the swapped packages, and the companions the tests
// load with them) is installed into .tmp/peers/<name@version,...>/node_modules,
// kept for the next run; the project's node_modules, package.json and lock are
// never touched. The test files then run through scripts/run-tests.ts with
// module hooks in every process (test/support/peers/loader.ts) that resolve
// the swapped packages there and log what they loaded; a run counts only if
// the log shows the release under test loaded, and nothing of those packages
// from anywhere else. A release whose engines exclude this Node runs on the
// first Node line of the matrix that it accepts (test/support/runtimes).
//
//   node build/scripts/test-peers.js                 every integration, oldest and newest
//   node build/scripts/test-peers.js kysely otel     only these (the labels of plan.ts)
//
// The table at the end has one line per run; the last line is the total,
// `summary: N passed, M failed, K skipped`, as CI reads it.

import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { PEER_GROUPS, type Companion, type PeerGroup } from '../test/support/peers/plan.js'
import { compareReleases, parseRelease, satisfies } from '../test/support/peers/semver.js'
import { PEERS_ENV, type LoadRecord, type PeerSwap } from '../test/support/peers/swap.js'
import { NODE_LINES, manifestVersions, nodeBinary, nodeAlias } from '../test/support/servers/matrix.js'
import { setUp } from './prerequisites.js'
import type { RunResults } from './run-tests.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const peersDir = join(root, '.tmp', 'peers')
const loaderUrl = pathToFileURL(join(root, 'build', 'test', 'support', 'peers', 'loader.js')).href

/** One run: a group's packages at one end of their ranges. */
interface Planned {
  group: PeerGroup
  end: 'oldest' | 'newest' | 'oldest = newest'
  /** The swapped packages and the companions, name → version. */
  versions: Map<string, string>
}

interface Outcome {
  run: Planned
  node: string
  results: RunResults | undefined
  /** What was loaded, as the processes logged it: name → versions. */
  loaded: Map<string, Set<string>>
  /** Why the run failed besides its tests, if it did. */
  problem: string | undefined
  ms: number
}

function npmView(spec: string, fields: string[]): unknown {
  const r = spawnSync('npm', ['view', spec, ...fields, '--json'], { encoding: 'utf8', timeout: 120_000 })
  if (r.status !== 0) throw new Error(`npm view ${spec} failed: ${(r.stderr || r.error?.message || `exit ${r.status}`).trim().split('\n').slice(-3).join(' ')}`)
  return r.stdout.trim() === '' ? [] : JSON.parse(r.stdout)
}

/** The releases of `name` in `range`, oldest first. */
function releasesIn(name: string, range: string): string[] {
  const found = npmView(`${name}@${range}`, ['version'])
  const list = (Array.isArray(found) ? found : [found]).filter((v): v is string => typeof v === 'string' && parseRelease(v) !== undefined)
  return list.sort(compareReleases)
}

/** The release of a companion that goes with `peer` at `version` (see Companion). */
function companionVersion(companion: Companion, peer: string, version: string): string {
  if (companion.pick === 'same-minor') {
    const [major, minor] = parseRelease(version)!
    const all = releasesIn(companion.name, `~${major}.${minor}.0`)
    if (all.length === 0) throw new Error(`${companion.name} has no ${major}.${minor} release to go with ${peer} ${version}`)
    return all[all.length - 1]!
  }
  const found = npmView(`${companion.name}@>=0.0.0`, ['version', 'peerDependencies'])
  // A release without peer dependencies comes as its version alone.
  const list = (Array.isArray(found) ? found : [found]).map((r) => (typeof r === 'string' ? { version: r } : r)) as { version: string; peerDependencies?: Record<string, string> }[]
  const fits = list.filter((r) => parseRelease(r.version) !== undefined && (r.peerDependencies?.[peer] === undefined || satisfies(version, r.peerDependencies[peer]!)))
  if (fits.length === 0) throw new Error(`no release of ${companion.name} accepts ${peer} ${version}`)
  return fits.map((r) => r.version).sort(compareReleases).at(-1)!
}

/** The runs of a group: its packages at the oldest and at the newest release of their ranges. */
function plan(group: PeerGroup, ranges: Record<string, string>): Planned[] {
  const ends = group.packages.map((name) => {
    const range = ranges[name]
    if (range === undefined) throw new Error(`package.json has no ${group.rangesFrom} entry for ${name}`)
    const all = releasesIn(name, range)
    if (all.length === 0) throw new Error(`no release of ${name} satisfies ${range}`)
    return { name, oldest: all[0]!, newest: all[all.length - 1]! }
  })
  const at = (end: 'oldest' | 'newest') => {
    const versions = new Map(ends.map((e) => [e.name, e[end]]))
    const lead = ends[0]!
    for (const c of group.companions) versions.set(c.name, companionVersion(c, lead.name, lead[end]))
    return versions
  }
  const oldest = at('oldest')
  const newest = at('newest')
  const same = [...oldest].every(([name, v]) => newest.get(name) === v)
  return same ? [{ group, end: 'oldest = newest', versions: oldest }] : [{ group, end: 'oldest', versions: oldest }, { group, end: 'newest', versions: newest }]
}

const describeVersions = (versions: Map<string, string>) => [...versions].map(([name, v]) => `${name}@${v}`).join(', ')

/** Installs the run's releases into a directory of their own (kept: an install that matches is reused). */
function install(run: Planned): string {
  const key = [...run.versions].map(([name, v]) => `${name.replace('/', '+')}@${v}`).join(',')
  const dir = join(peersDir, key)
  const wanted = Object.fromEntries(run.versions)
  const marker = join(dir, 'installed.json')
  const installedVersion = (name: string) => {
    const file = join(dir, 'node_modules', name, 'package.json')
    return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : undefined
  }
  const intact = () => [...run.versions].every(([name, v]) => installedVersion(name) === v)
  if (existsSync(marker) && readFileSync(marker, 'utf8') === JSON.stringify(wanted) && intact()) return realpathSync(dir)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'pipegres-peer-test', private: true, dependencies: wanted }, null, 2) + '\n')
  console.log(`=== installing ${describeVersions(run.versions)} into ${relative(root, dir)}`)
  // No scripts: nothing here needs a build step, and a package's install script may download.
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock', '--loglevel=error'], { cwd: dir, encoding: 'utf8', timeout: 600_000 })
  if (r.status !== 0) throw new Error(`npm install in ${relative(root, dir)} failed: ${(r.stderr || r.error?.message || `exit ${r.status}`).trim().split('\n').slice(-5).join(' ')}`)
  const off = [...run.versions].filter(([name, v]) => installedVersion(name) !== v)
  if (off.length > 0) throw new Error(`npm installed ${off.map(([name]) => `${name}@${installedVersion(name) ?? 'nothing'}`).join(', ')} in ${relative(root, dir)}, not what was asked`)
  writeFileSync(marker, JSON.stringify(wanted))
  return realpathSync(dir)
}

/**
 * The Node to run on: this one, unless an installed package's engines.node
 * excludes it; then the first line of the matrix they all accept.
 */
async function nodeFor(dir: string, run: Planned): Promise<{ binary: string | undefined; version: string; why: string }> {
  const engines: string[] = []
  for (const name of run.versions.keys()) {
    const manifest = JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as { engines?: { node?: string } }
    if (manifest.engines?.node) engines.push(`${name} ${manifest.engines.node}`)
  }
  const accepts = (v: string) => engines.every((e) => satisfies(v, e.slice(e.indexOf(' ') + 1)))
  const here = process.versions.node
  if (accepts(here)) return { binary: undefined, version: here, why: '' }
  const versions = manifestVersions()
  const line = NODE_LINES.find((l) => versions[nodeAlias(l)] !== undefined && accepts(versions[nodeAlias(l)]!))
  if (line === undefined) throw new Error(`no Node of the matrix satisfies ${engines.join(', ')}`)
  await setUp(['runtimes'], (l) => console.log(`=== ${l}`)).all
  return { binary: nodeBinary(line), version: versions[nodeAlias(line)]!, why: ` (${engines.filter((e) => !satisfies(here, e.slice(e.indexOf(' ') + 1))).join(', ')})` }
}

/** The version of the package `name` that holds the file at `url`. */
function versionAt(url: string, name: string): string | undefined {
  let dir = dirname(fileURLToPath(url))
  for (;;) {
    const file = join(dir, 'package.json')
    if (existsSync(file)) {
      const m = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string }
      if (m.name === name) return m.version
    }
    if (dirname(dir) === dir) return undefined
    dir = dirname(dir)
  }
}

/** What the run's processes loaded, checked against what it was meant to test. */
function checkLoaded(run: Planned, dir: string, logFile: string): { loaded: Map<string, Set<string>>; problem: string | undefined } {
  const records = existsSync(logFile)
    ? readFileSync(logFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as LoadRecord)
    : []
  const problems: string[] = []
  const seen = new Map<string, Set<string>>()
  for (const r of records) {
    if ('stray' in r) {
      problems.push(`process ${r.pid} loaded ${relative(root, r.stray)} from outside ${relative(root, dir)}`)
      continue
    }
    const version = versionAt(r.url, r.package) ?? '?'
    if (!seen.has(r.package)) seen.set(r.package, new Set())
    seen.get(r.package)!.add(version)
    if (version !== run.versions.get(r.package)) problems.push(`process ${r.pid} loaded ${r.package} ${version}, not ${run.versions.get(r.package)}`)
  }
  for (const name of run.group.packages) if (!seen.has(name)) problems.push(`no process loaded ${name}: the tests did not run against it`)
  return { loaded: seen, problem: problems.length > 0 ? [...new Set(problems)].slice(0, 5).join('; ') : undefined }
}

async function runOne(run: Planned, index: number, total: number): Promise<Outcome> {
  const started = Date.now()
  const title = `${run.group.label}, ${run.end}: ${describeVersions(run.versions)}`
  console.log(`\n=== ${index}/${total} ${title}`)
  let node = process.versions.node
  try {
    const dir = install(run)
    const picked = await nodeFor(dir, run)
    node = picked.version
    const work = join(peersDir, 'runs')
    mkdirSync(work, { recursive: true })
    const logFile = join(work, `${process.pid}-${index}.jsonl`)
    const resultsFile = join(work, `${process.pid}-${index}.json`)
    rmSync(logFile, { force: true })
    rmSync(resultsFile, { force: true })
    const swap: PeerSwap = { dir, packages: [...run.versions.keys()], log: logFile }
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${loaderUrl}`.trim(),
      [PEERS_ENV]: JSON.stringify(swap),
      PIPEGRES_TEST_RESULTS: resultsFile,
    }
    if (picked.binary) env.PIPEGRES_TEST_NODE = picked.binary
    else delete env.PIPEGRES_TEST_NODE
    console.log(`=== on Node ${picked.version}${picked.why}: ${run.group.tests.join(', ')}`)
    const code = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, [join(root, 'build', 'scripts', 'run-tests.js'), ...run.group.tests], { cwd: root, env, stdio: 'inherit' })
      child.on('error', () => resolve(1))
      child.on('close', (c, signal) => resolve(c ?? (signal ? 1 : 0)))
    })
    let results: RunResults | undefined
    try {
      results = JSON.parse(readFileSync(resultsFile, 'utf8')) as RunResults
    } catch {}
    const { loaded, problem } = checkLoaded(run, dir, logFile)
    rmSync(logFile, { force: true })
    rmSync(resultsFile, { force: true })
    const said = [...loaded].map(([name, versions]) => `${name} ${[...versions].join('/')}`).join(', ')
    console.log(`=== ${title}: loaded ${said || 'nothing of it'}${problem ? `; ${problem}` : ''}`)
    return { run, node, results, loaded, problem: problem ?? (code === 0 ? undefined : results ? `exit ${code}` : `exit ${code}, no results`), ms: Date.now() - started }
  } catch (err) {
    console.error(`=== ${title}: ${(err as Error).message}`)
    return { run, node, results: undefined, loaded: new Map(), problem: (err as Error).message, ms: Date.now() - started }
  }
}

function table(outcomes: Outcome[]): string {
  const head = ['integration', 'end', 'releases', 'node', 'result', 'tests', 'pass', 'fail', 'skipped', 'seconds']
  const rows = outcomes.map((o) => {
    const c = o.results?.counts ?? {}
    const failed = (c.fail ?? 0) + (c.cancelled ?? 0)
    return [
      o.run.group.label,
      o.run.end,
      // ✓: a process of the run loaded that very release (the hooks' log); a companion without it was not imported (Prisma's CLI runs as a file).
      [...o.run.versions].map(([name, v]) => `${name}@${v}${o.loaded.get(name)?.size === 1 && o.loaded.get(name)!.has(v) ? ' ✓' : ''}`).join(', '),
      o.node,
      o.problem === undefined ? 'passed' : 'FAILED',
      String(c.tests ?? '–'),
      String(c.pass ?? '–'),
      String(failed),
      String(c.skipped ?? '–'),
      (o.ms / 1000).toFixed(0),
    ]
  })
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const fmt = (cells: string[]) => cells.map((c, i) => (i >= 5 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ')
  const failures = outcomes.flatMap((o) =>
    o.problem === undefined
      ? []
      : [`  ${o.run.group.label} ${o.run.end}: ${o.problem}`, ...(o.results?.failed ?? []).flatMap((f) => [`    ${f.path} (${f.why})`, ...f.failures.map((t) => `      ${t.test}: ${t.error}`)])],
  )
  const legend = '✓: loaded by the run\'s processes, as the module hooks logged it (test/support/peers/loader.ts); nothing of these packages came from elsewhere in a passed run'
  return [fmt(head), ...rows.map(fmt), legend, ...(failures.length > 0 ? ['', 'failures:', ...failures] : [])].join('\n')
}

async function main(): Promise<number> {
  const wanted = process.argv.slice(2)
  const known = PEER_GROUPS.map((g) => g.label)
  const unknown = wanted.filter((w) => !known.includes(w))
  if (unknown.length > 0) {
    console.error(`test:peers: no integration ${unknown.map((u) => JSON.stringify(u)).join(', ')}; the labels are ${known.join(', ')}`)
    return 2
  }
  if (!existsSync(fileURLToPath(loaderUrl))) {
    console.error('test:peers: build/ has no compiled loader: run `npm run build:all` first (npm run test:peers does)')
    return 2
  }
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<'peerDependencies' | 'devDependencies', Record<string, string>>
  const groups = PEER_GROUPS.filter((g) => wanted.length === 0 || wanted.includes(g.label))
  const runs: Planned[] = []
  const outcomes: Outcome[] = []
  for (const group of groups) {
    try {
      const planned = plan(group, manifest[group.rangesFrom])
      for (const r of planned) console.log(`${group.label}: ${group.packages.map((p) => `${p} ${manifest[group.rangesFrom][p]}`).join(', ')}: ${r.end} ${describeVersions(r.versions)}`)
      runs.push(...planned)
    } catch (err) {
      console.error(`${group.label}: ${(err as Error).message}`)
      outcomes.push({ run: { group, end: 'oldest', versions: new Map() }, node: process.versions.node, results: undefined, loaded: new Map(), problem: (err as Error).message, ms: 0 })
    }
  }
  for (const [i, run] of runs.entries()) outcomes.push(await runOne(run, i + 1, runs.length))
  console.log(`\n=== peers: what ran against which release\n${table(outcomes)}`)
  const sum = (k: string) => outcomes.reduce((n, o) => n + (o.results?.counts[k] ?? 0), 0)
  const failedRuns = outcomes.filter((o) => o.problem !== undefined)
  const failedTests = sum('fail') + sum('cancelled')
  console.log(`\n${outcomes.length} runs in ${(outcomes.reduce((n, o) => n + o.ms, 0) / 60_000).toFixed(1)} min; ${failedRuns.length > 0 ? `FAILED: ${failedRuns.map((o) => `${o.run.group.label} ${o.run.end}`).join(', ')}` : 'all passed'}`)
  // The plain closing line; a run that failed without a failed test (an install, a check of what it loaded) counts one.
  const extra = failedRuns.filter((o) => (o.results?.counts.fail ?? 0) + (o.results?.counts.cancelled ?? 0) === 0).length
  console.log(`summary: ${sum('pass')} passed, ${failedTests + extra} failed, ${sum('skipped')} skipped`)
  return failedRuns.length > 0 ? 1 : 0
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err)
    process.exit(1)
  },
)
