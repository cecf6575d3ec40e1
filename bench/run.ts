// The benchmark runner: `npm run bench -- [options]`.
//
// Starts its own PostgreSQL (fsync, synchronous_commit and full_page_writes off:
// this measures clients, not disks), creates the benchmark tables, then runs
// every client on every workload in its own child process, interleaving the
// clients round by round (A B C A B C ...), and prints medians with min–max,
// client and server CPU per row or query, peak RSS, and every client's ratio
// to pipegres. pgbench in pipeline mode gives the query workloads' ceiling:
// what the server answers when the client costs next to nothing.
//
//   --workloads pipelined,users-read     which workloads (default: all)
//   --rounds 5                           interleaved rounds (default 5)
//   --repeat 3                           measured repetitions per child (after one warm-up)
//   --quick                              smaller sizes, 3 rounds (for npm start)
//   --size 4000000                       rows or queries per workload instead of its own (e.g. to see
//                                        whether a streaming client's peak RSS grows with the data)
//   --no-pin                             do not pin the server to CPU 0 and the clients to CPU 1
//   --clients pipegres,pg                only these clients (default: all that are installed)
//   --first-variants                     only each client's first variant in each workload (its
//                                        headline way of running it: npm start's short table)
//   --json <file>                        also write the raw results
//   --markdown <file>                    also write the report as Markdown (the README's table)
//   --node <node binary>                 run the Node clients on this Node (default: the one running this
//                                        script); `node build/scripts/runtimes.js node 26` prints one
//   --baseline <tree>                    also run every variant on pipegres (its own API and the drop-ins) from another checkout's build
//                                        (e.g. a worktree of an earlier commit, built), marked [baseline],
//                                        interleaved with this tree's: a before/after comparison in one run
//   --busy-ok                            run even when other processes keep the machine busy; every
//                                        figure taken while they did is marked (see below)
//
// Before it starts and before each child, the runner waits (up to a minute at
// the start, 20 s later) for half a second in which other processes use less
// than a tenth of the machine (bench/lib/quiet.ts). If the start never gets
// one it refuses, naming the busiest processes; with --busy-ok, or when a
// later wait runs out, it measures anyway and marks those figures with †.
// PIPEGRES_BENCH_PGBIN=<bin dir> picks the PostgreSQL installation (default: embedded);
// PIPEGRES_BENCH_NODE=<node binary> is --node's default. The report names the clients' Node version.

import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startServer, stopAllOnSignals } from '../test/support/servers/postgres.js'
import { connect } from '../src/index.js'
import { captureCodecFixture } from './lib/codec-capture.js'
import { childrenOf, serverCpuUs } from './lib/measure.js'
import { busiest, BUSY_LIMIT, describeBusy, waitForQuiet } from './lib/quiet.js'
import { report, type Row } from './lib/report.js'
import type { Measurement, Task, Target } from './lib/protocol.js'
import { copySetupSql, insertUserSql, KEYS, setupSql, USERS_TABLE, userKeys } from './lib/workloads.js'
import { WORKLOADS, type Variant, type Workload } from './lib/workload-table.js'
import { HOT_ROWS } from './lib/hot-keys.js'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..', '..')

/** Workloads that read the users table: it holds as many rows as the largest of them reads (and W5 reads them all). */
const USERS_READERS = ['users-read', 'stream', 'copy-to']

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? undefined : process.argv[i + 1]
}
const flag = (name: string): boolean => process.argv.includes(`--${name}`)

const quick = flag('quick')
const busyOk = flag('busy-ok')
const pin = !flag('no-pin') && cpus().length >= 2
const rounds = Number(arg('rounds') ?? (quick ? 3 : 5))
const repeat = Number(arg('repeat') ?? 3)
const selected = arg('workloads')?.split(',') ?? WORKLOADS.map((w) => w.name)
const clientsWanted = arg('clients')?.split(',')
const firstVariants = flag('first-variants')
const baseline = arg('baseline')
const sizeOverride = arg('size') === undefined ? undefined : Number(arg('size'))
const sizeOf = (w: Workload): number => sizeOverride ?? (quick ? w.quickSize : w.size)
for (const name of selected) if (!WORKLOADS.some((w) => w.name === name)) throw new Error(`unknown workload ${name}; known: ${WORKLOADS.map((w) => w.name).join(', ')}`)

const bunBinary = join(root, 'node_modules', '.bin', 'bun')
/** The Node that runs the Node clients' child processes. */
const nodeBinary = arg('node') ?? (process.env.PIPEGRES_BENCH_NODE || process.execPath)
/** Its version, e.g. 26.12.1: asked of the binary itself, which also shows that it runs. */
const nodeVersion = nodeBinary === process.execPath ? process.versions.node : execFileSync(nodeBinary, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '')
// Variants of the temporal type option run where the clients' Node has the global Temporal.
if (Number(nodeVersion.split('.')[0]) < 26) for (const w of WORKLOADS) w.variants = w.variants.filter((v) => v.needsTemporal !== true)
/** Clients whose child process the Bun runtime runs. */
const onBun = (client: string): boolean => client === 'bun' || client === 'app-bun' || client === 'hot-bun'

/** Why a client cannot run here, or undefined if it can. */
function unavailable(v: Variant, pgbench: string | undefined, pgNative: boolean): string | undefined {
  if (clientsWanted && !clientsWanted.includes(v.client) && !(v.variant === 'native' && clientsWanted.includes('pg-native'))) return 'not selected'
  if (onBun(v.client) && !existsSync(bunBinary)) return 'the bun package is not installed'
  if (v.client === 'pgbench' && !pgbench) return 'no pgbench (14 or later) found'
  if (v.variant === 'native' && !pgNative) return 'pg-native is not installed (it needs libpq and a C++ toolchain to build)'
  // Its addon is compiled for the Node that installed it; another major cannot load it.
  if (v.variant === 'native' && nodeVersion.split('.')[0] !== process.versions.node.split('.')[0]) return `pg-native's addon is built for Node ${process.versions.node.split('.')[0]}, not ${nodeVersion.split('.')[0]}`
  return undefined
}

/** Whether pg-native was built (a name in a variable: it has no type declarations). */
async function hasPgNative(): Promise<boolean> {
  const name = 'pg-native'
  return import(name).then(
    () => true,
    () => false,
  )
}

/** A pgbench with pipeline mode (14+): the chosen installation's, else one on PATH, else Debian's. */
function findPgbench(binDir: string | undefined): string | undefined {
  const candidates = [...(binDir ? [join(binDir, 'pgbench')] : []), 'pgbench', '/usr/lib/postgresql/18/bin/pgbench', '/usr/lib/postgresql/17/bin/pgbench', '/usr/lib/postgresql/16/bin/pgbench', '/usr/lib/postgresql/15/bin/pgbench']
  for (const c of candidates) {
    try {
      const out = execFileSync(c, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      const major = Number(/(\d+)/.exec(out)?.[1])
      if (major >= 14) return c
    } catch {
      // Not there: try the next.
    }
  }
  return undefined
}

function runChild(v: Variant, task: Task, cpu: string | undefined): Promise<Measurement> {
  const script = join(v.benchDir ?? here, 'clients', `${v.client}.js`)
  const runtime = onBun(v.client) ? bunBinary : nodeBinary
  const [cmd, args] = cpu === undefined ? [runtime, [script]] : ['taskset', ['-c', cpu, runtime, script]]
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, [...args, JSON.stringify(task)], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d))
    child.stderr.on('data', (d: Buffer) => (err += d))
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      if (code !== 0) reject(new Error(`${v.label} failed on ${task.workload} (${signal ?? `exit ${code}`}): ${err.trim().split('\n').slice(0, 3).join(' / ')}`))
      else {
        try {
          resolve(JSON.parse(out) as Measurement)
        } catch {
          reject(new Error(`${v.label} printed no measurement on ${task.workload}: ${out.slice(0, 200)}`))
        }
      }
    })
  })
}

/**
 * pgbench over 1 or 4 connections, each sending pipelines of 100 prepared
 * single-row SELECTs of the same lookups the clients make (as literals: pgbench
 * variables are numbers, the keys are uuids; each of the 100 is prepared once
 * per connection). Longer pipelines make it slower, not faster: it reads no
 * result before the pipeline's end. Its CPU comes from the shell's
 * `times`, the server's from /proc, as for the clients.
 */
async function runPgbench(pgbench: string, target: Target, connections: number, size: number, serverPid: number, cpu: string | undefined, script: string): Promise<Measurement> {
  const perPipeline = 100
  const transactions = Math.max(1, Math.round(size / perPipeline / connections))
  const args = ['-n', '-M', 'prepared', '-f', script, '-c', String(connections), '-j', String(Math.min(connections, 2)), '-t', String(transactions), '-h', target.host, '-p', String(target.port), '-U', target.user, target.database]
  const once = (): Promise<{ wall: number; cpu: number; server: number | undefined; tps: number }> =>
    new Promise((resolve, reject) => {
      const children = childrenOf(serverPid).length
      const s0 = serverCpuUs(serverPid)
      const t0 = performance.now()
      const shell = `"$0" "$@" > "$PIPEGRES_PGBENCH_OUT" 2>&1; rc=$?; times; exit $rc`
      const out = join(dirname(script), 'pgbench.out')
      const cmd = cpu === undefined ? ['bash', ['-c', shell, pgbench, ...args]] : ['taskset', ['-c', cpu, 'bash', '-c', shell, pgbench, ...args]]
      const child = spawn(cmd[0] as string, cmd[1] as string[], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, PGPASSWORD: target.password, PIPEGRES_PGBENCH_OUT: out } })
      let times = ''
      child.stdout.on('data', (d: Buffer) => (times += d))
      child.on('exit', async (code) => {
        const wall = performance.now() - t0
        const s1 = await settledServerCpu(serverPid, children)
        const report = existsSync(out) ? readFileSync(out, 'utf8') : ''
        if (code !== 0) return reject(new Error(`pgbench failed (exit ${code}): ${report.trim().split('\n').slice(-3).join(' / ')}`))
        // `times` prints the shell's own user/system time, then its children's: "0m0.120s 0m0.030s".
        const child = times.trim().split('\n')[1] ?? ''
        const secs = [...child.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, m) => sum + Number(m[1]) * 60 + Number(m[2]), 0)
        const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(report)?.[1])
        resolve({ wall, cpu: secs * 1e6, server: s0 === undefined || s1 === undefined ? undefined : s1 - s0, tps })
      })
    })
  await once()
  const units = transactions * connections * perPipeline
  const m: Measurement = { units, wallMs: [], cpuUs: [], serverCpuUs: [], serverWallMs: [], peakRss: 0, check: 'pgbench' }
  for (let i = 0; i < repeat; i++) {
    const r = await once()
    // Its own figure leaves out connecting, as the clients' timings do.
    m.wallMs.push(Number.isFinite(r.tps) && r.tps > 0 ? (units / (r.tps * perPipeline)) * 1000 : r.wall)
    m.serverWallMs!.push(r.wall)
    m.cpuUs.push(r.cpu)
    if (r.server !== undefined) m.serverCpuUs!.push(r.server)
  }
  if (m.serverCpuUs!.length !== m.wallMs.length) delete m.serverCpuUs
  return m
}

/**
 * The server's CPU once the postmaster is back to `children` processes: the
 * time of a backend that exited but is not reaped yet is neither a live
 * child's nor counted as reaped.
 */
async function settledServerCpu(pid: number, children: number): Promise<number | undefined> {
  for (let i = 0; i < 40 && childrenOf(pid).length > children; i++) await new Promise((r) => setTimeout(r, 25))
  return serverCpuUs(pid)
}


/** Sets the CPU affinity of a process, all its threads and all its descendants. */
function pinTree(pid: number, cpu: string): void {
  const walk = (p: number): void => {
    try {
      execFileSync('taskset', ['-a', '-p', '-c', cpu, String(p)], { stdio: 'ignore' })
    } catch {
      return // gone
    }
    let kids = ''
    try {
      kids = execFileSync('sh', ['-c', `cat /proc/${p}/task/*/children 2>/dev/null`], { encoding: 'utf8' })
    } catch {
      // None.
    }
    for (const k of kids.split(/\s+/).filter(Boolean)) walk(Number(k))
  }
  walk(pid)
}

function machine(): string {
  const model = cpus()[0]?.model.trim() ?? 'unknown CPU'
  const runner = nodeVersion === process.versions.node ? '' : ` (the runner on Node ${process.versions.node})`
  return `${model}, ${cpus().length} CPUs, Linux ${execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim()}, clients on Node ${nodeVersion}${runner}`
}

async function main(): Promise<void> {
  stopAllOnSignals()
  const binDir = process.env.PIPEGRES_BENCH_PGBIN
  const server = await startServer({
    name: 'bench',
    ...(binDir ? { binDir } : {}),
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', shared_buffers: '512MB', max_connections: '50' },
  })
  const scratch = mkdtempSync(join(tmpdir(), 'pipegres-bench-'))
  try {
    const start = await waitForQuiet(busyOk ? 5_000 : 60_000)
    if (!start.quiet) {
      const who = await busiest(1000, new Set([process.pid, server.pid, ...childrenOf(server.pid)]))
      const msg = `the machine is busy: other processes used ${describeBusy(start.busy!)} (the limit is ${describeBusy(BUSY_LIMIT)})${who.length > 0 ? `, most of all ${who.join(', ')}` : ''}`
      if (!busyOk) throw new Error(`${msg}. Benchmarks beside a test suite, a build or another benchmark measure the neighbour too: wait until it ends, or pass --busy-ok to measure anyway with every disturbed figure marked.`)
      console.warn(`warning: ${msg}; figures taken while it lasts are marked †.`)
    }
    const serverCpus = pin ? '0' : undefined
    const clientCpus = pin ? '1' : undefined
    if (serverCpus) pinTree(server.pid, serverCpus)
    const target: Target = { host: server.host, port: server.port, user: server.superuser.user, password: server.superuser.password, database: server.database }
    const workloads = WORKLOADS.filter((w) => selected.includes(w.name))
    if (firstVariants) for (const w of workloads) w.variants = w.variants.filter((v, i) => w.variants.findIndex((o) => o.client === v.client) === i)
    if (baseline !== undefined) {
      const dir = join(baseline, 'build', 'bench')
      if (!existsSync(join(dir, 'clients', 'pipegres.js'))) throw new Error(`--baseline ${baseline}: no build/bench/clients/pipegres.js there (run npm run build:all in that tree first)`)
      // pipegres's own clients and the drop-ins on it (postgres-pipegres, app-...-pipegres): the code a before/after compares.
      const ours = (client: string): boolean => client === 'pipegres' || client.endsWith('-pipegres')
      for (const w of workloads) w.variants = w.variants.flatMap((v) => (ours(v.client) && existsSync(join(dir, 'clients', `${v.client}.js`)) ? [v, { ...v, label: `${v.label} [baseline]`, benchDir: dir }] : [v]))
    }
    const setup = await connect({ ...target, sslmode: 'disable' })
    // The tables have their full sizes whichever workloads run, so that a partial run measures what a full one does.
    const byName = (name: string): Workload => WORKLOADS.find((w) => w.name === name)!
    const typedRows = Math.max(...workloads.map((w) => (w.name === 'typed-read' || w.name === 'codec-decode' ? sizeOf(w) : 0)), sizeOf(byName('typed-read')))
    const users = Math.max(...workloads.map((w) => (USERS_READERS.includes(w.name) ? sizeOf(w) : 0)), sizeOf(byName('stream')), KEYS, HOT_ROWS)
    const t0 = performance.now()
    for (const sql of [...setupSql(typedRows, users), ...copySetupSql()]) await setup.query(sql)
    await setup.end()
    const codec = workloads.find((w) => w.name === 'codec-decode')
    const fixture = join(scratch, 'typed.fixture')
    if (workloads.some((w) => w.serverless)) await captureCodecFixture(target, codec ? sizeOf(codec) : 1000, fixture)
    const pgbench = findPgbench(binDir ?? server.binDir)
    const pgNative = await hasPgNative()
    const pgbenchScript = join(scratch, 'lookups.sql')
    const keys = userKeys()
    const lookups = Array.from({ length: 100 }, (_, i) => `SELECT id, name, email FROM ${USERS_TABLE} WHERE id = '${keys[i]}';`)
    writeFileSync(pgbenchScript, ['\\startpipeline', ...lookups, '\\endpipeline', ''].join('\n'))
    // W7's INSERTs as literals; pgbench has no uuid variables, so the server makes the ids.
    const inserts = Array.from({ length: 100 }, (_, i) => `${insertUserSql.replace(/\(\$1.*/, '')}(gen_random_uuid(), 'new user ${i}', 'new${i}@example.com', 'pw-hash-${i}');`)
    writeFileSync(pgbenchScript.replace('lookups', 'inserts'), ['\\startpipeline', ...inserts, '\\endpipeline', ''].join('\n'))

    const header = [
      `PostgreSQL ${server.versionString.replace(/^postgres \(PostgreSQL\)\s*/, '')} (fsync, synchronous_commit, full_page_writes off), ${users.toLocaleString('en-US')} users, ${typedRows.toLocaleString('en-US')} typed rows`,
      machine(),
      `${new Date().toISOString().slice(0, 10)}; ${rounds} interleaved rounds of ${repeat} measured repetitions per client; ${pin ? 'server on CPU 0, clients on CPU 1' : 'no CPU pinning'}; tables set up in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
      start.busy === undefined ? 'machine load not checked (no /proc/stat)' : `before each child, other processes used less than ${describeBusy(BUSY_LIMIT)}, or its figures are marked †`,
    ]
    console.log(header.join('\n') + '\n')
    const sections: string[] = []
    const results: Record<string, Row[]> = {}
    for (const w of workloads) {
      const size = sizeOf(w)
      const rows: Row[] = w.variants.map((v) => {
        const skipped = unavailable(v, pgbench, pgNative)
        return { label: v.label, client: v.client, perSecond: [], cpuPerUnit: [], serverPerUnit: [], serverBusy: [], p50: [], p99: [], peakRss: [], checks: [], busy: [], failures: [], ...(skipped ? { skipped } : {}) }
      })
      const oneCore = w.name === 'sequential-one-core' && pin
      if (oneCore) pinTree(server.pid, '1')
      try {
        for (let round = 0; round < rounds; round++) {
          // Rotate the order every round so that no client always runs first.
          for (let k = 0; k < w.variants.length; k++) {
            const i = (k + round) % w.variants.length
            const variant = w.variants[i]!
            const row = rows[i]!
            if (row.skipped) continue
            let m: Measurement
            const before = await waitForQuiet(busyOk ? 5_000 : 20_000)
            if (!before.quiet) row.busy.push(before.busy!)
            try {
              m =
                variant.client === 'pgbench'
                  ? await runPgbench(pgbench!, target, Number(variant.variant), size, server.pid, clientCpus, w.name === 'inserts' ? pgbenchScript.replace('lookups', 'inserts') : pgbenchScript)
                  : await runChild(variant, { target, workload: w.name, size, variant: variant.variant, repeat, ...(w.serverless ? { fixture } : { serverPid: server.pid }) }, clientCpus)
            } catch (err) {
              row.failures.push((err as Error).message)
              console.warn(`warning: ${(err as Error).message}`)
              continue
            }
            if (m.check.startsWith('inconsistent')) console.warn(`warning: ${variant.label} on ${w.name}: ${m.check}`)
            for (let r = 0; r < m.wallMs.length; r++) {
              row.perSecond.push((m.units / m.wallMs[r]!) * 1000)
              row.cpuPerUnit.push(m.cpuUs[r]! / m.units)
              if (m.serverCpuUs) {
                row.serverPerUnit.push(m.serverCpuUs[r]! / m.units)
                row.serverBusy.push(m.serverCpuUs[r]! / ((m.serverWallMs ?? m.wallMs)[r]! * 1000))
              }
            }
            if (m.p50Us) row.p50.push(...m.p50Us)
            if (m.p99Us) row.p99.push(...m.p99Us)
            row.peakRss.push(m.peakRss)
            row.checks.push(m.check)
          }
        }
      } finally {
        if (oneCore) pinTree(server.pid, serverCpus ?? `0-${cpus().length - 1}`)
      }
      // Every client must have read or written the same thing (pgbench checks nothing).
      const distinct = new Set(rows.filter((r) => r.client !== 'pgbench').flatMap((r) => r.checks.map((c) => c.replace(/^.* reported, /, ''))))
      // (Except where the variants do different work: COPY TO's bytes and rows, the codec's messages.)
      if (distinct.size > 1 && w.name !== 'copy-to' && !w.serverless) console.warn(`warning: the clients disagree on ${w.name}: ${[...distinct].join(' | ')}`)
      results[w.name] = rows
      const section = report(w, rows, rounds)
      sections.push(section)
      console.log(section + '\n')
    }
    const json = arg('json')
    if (json) writeFileSync(json, JSON.stringify({ header, results }, null, 2))
    const markdown = arg('markdown')
    if (markdown) writeFileSync(markdown, [...header.map((h) => `${h}  `), '', ...sections.map((s) => s + '\n')].join('\n'))
  } finally {
    rmSync(scratch, { recursive: true, force: true })
    await server.stop()
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
