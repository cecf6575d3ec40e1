// `npm run runtimes`: installs the Node.js and PostgreSQL binaries of the test
// matrix (test/support/runtimes/package.json, pinned with its lock) into
// .tmp/runtimes/ (PIPEGRES_RUNTIMES_DIR moves it), then checks that each one runs.
// `npm test` and `npm run test:matrix` run it when a test needs what is missing
// (scripts/prerequisites.ts).
//
//   node build/scripts/runtimes.js                 install what is missing or outdated, check each binary
//   node build/scripts/runtimes.js --check         only check (exit 1 if any is missing or broken)
//   node build/scripts/runtimes.js node 22         print the path of Node 22's binary
//   node build/scripts/runtimes.js postgres 13     print PostgreSQL 13's bin directory
//
//   PIPEGRES_TEST_NODE=$(node build/scripts/runtimes.js node 24) \
//   PIPEGRES_TEST_PGBIN=$(node build/scripts/runtimes.js postgres 14) npm test -- --tag=matrix

import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  NODE_LINES,
  POSTGRES_MAJORS,
  POSTGRES_SOURCES,
  RUNTIMES_MANIFEST_DIR,
  manifestVersions,
  missingRuntime,
  nodeBinary,
  postgresBinDir,
  runtimePackageDir,
  runtimesDir,
  type NodeLine,
  type PostgresMajor,
} from '../test/support/servers/matrix.js'

/** The aliases whose installed version is not the manifest's. */
function outdated(): string[] {
  return Object.entries(manifestVersions()).filter(([alias, version]) => {
    const pkg = join(runtimePackageDir(alias), 'package.json')
    if (!existsSync(pkg)) return true
    return (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version !== version
  }).map(([alias]) => alias)
}

/**
 * `npm ci` of the manifest in the runtimes directory. Install scripts are not left
 * to npm (its allowScripts policy is the runtimes directory's, not the project's,
 * and strict-allow-scripts would refuse them): the one the PostgreSQL packages
 * have, hydrate-symlinks.js (it recreates the shared libraries' symlinks, which
 * the tarballs cannot hold), is run here for each of them. No bin links: four
 * packages provide `node`.
 */
function install(): void {
  const dir = runtimesDir()
  mkdirSync(dir, { recursive: true })
  for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(RUNTIMES_MANIFEST_DIR, file), join(dir, file))
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  console.log(`installing ${outdated().join(', ')} into ${dir}`)
  execFileSync(npm, ['ci', '--ignore-scripts', '--no-bin-links', '--no-audit', '--no-fund', '--prefix', dir], { stdio: 'inherit' })
  for (const major of POSTGRES_MAJORS) {
    const source = POSTGRES_SOURCES[major]
    if (source.from !== 'runtimes') continue
    const pkg = runtimePackageDir(source.alias)
    // The script resolves native/pg-symlinks.json against its working directory.
    execFileSync(process.execPath, [join(pkg, 'scripts', 'hydrate-symlinks.js')], { cwd: pkg, stdio: 'inherit' })
  }
}

interface Check {
  what: string
  path: string
  /** The first line of `--version`, or why there is none. */
  version: string
  ok: boolean
}

function run(path: string, args: string[]): { ok: boolean; out: string } {
  const r = spawnSync(path, args, { encoding: 'utf8', timeout: 30_000 })
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n')[0] ?? ''
  return { ok: r.status === 0, out: r.error ? r.error.message : out }
}

function checkNode(line: NodeLine): Check {
  const path = nodeBinary(line)
  const missing = missingRuntime(path)
  if (missing) return { what: `Node ${line}`, path, version: missing, ok: false }
  const r = run(path, ['--version'])
  return { what: `Node ${line}`, path, version: r.out, ok: r.ok && r.out.startsWith(`v${line}.`) }
}

function checkPostgres(major: PostgresMajor): Check {
  const dir = postgresBinDir(major)
  const missing = ['postgres', 'initdb'].map((b) => missingRuntime(join(dir, b))).find(Boolean)
  if (missing) return { what: `PostgreSQL ${major}`, path: dir, version: missing, ok: false }
  // initdb too: it loads the same libraries, and a broken symlink shows there first.
  const versions = ['postgres', 'initdb'].map((b) => run(join(dir, b), ['--version']))
  const bad = versions.find((v) => !v.ok)
  const version = bad?.out ?? versions[0]!.out
  return { what: `PostgreSQL ${major}`, path: dir, version, ok: !bad && new RegExp(`\\(PostgreSQL\\) ${major}[.\\s]`).test(`${version} `) }
}

export function checkAll(): Check[] {
  return [...NODE_LINES.map(checkNode), ...POSTGRES_MAJORS.map(checkPostgres)]
}

function main(): number {
  const args = process.argv.slice(2)
  if (args[0] === 'node' || args[0] === 'postgres') {
    const n = Number(args[1])
    if (args[0] === 'node') {
      if (!NODE_LINES.includes(n as NodeLine)) throw new Error(`Node lines: ${NODE_LINES.join(', ')}`)
      console.log(nodeBinary(n as NodeLine))
    } else {
      if (!POSTGRES_MAJORS.includes(n as PostgresMajor)) throw new Error(`PostgreSQL majors: ${POSTGRES_MAJORS.join(', ')}`)
      console.log(postgresBinDir(n as PostgresMajor))
    }
    return 0
  }
  if (!args.includes('--check')) {
    if (outdated().length > 0) install()
    else console.log(`runtimes in ${runtimesDir()} are up to date`)
  }
  const checks = checkAll()
  for (const c of checks) console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.what.padEnd(14)} ${c.version.padEnd(48)} ${c.path}`)
  const failed = checks.filter((c) => !c.ok)
  if (failed.length > 0) console.error(`${failed.length} runtime${failed.length === 1 ? '' : 's'} missing or not running: ${failed.map((c) => c.what).join(', ')}`)
  return failed.length > 0 ? 1 : 0
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main()
