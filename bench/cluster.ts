// `npm run bench:cluster [-- --rounds N --queries N --max N --window N --workload point|aggregate|both]`:
// read throughput of a pool on a primary with two streaming standbys, reads
// marked readOnly so they go to the standbys, against a pool of the same size
// on the primary alone. Interleaved rounds, a fresh pool each, medians with
// their ranges, client CPU per query. Every round also checks where the reads
// ran, from each server's own transaction count, and exits non-zero when the
// routed reads did not land on the standbys.
//
// Every server runs on this machine: the ratio shows what routing costs and
// how the load spreads over processes sharing its CPUs, not a scale-out.
//
// PIPEGRES_BENCH_PGBIN=<bin dir> picks the PostgreSQL installation (default: embedded).

import { availableParallelism } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { startCluster, stopClustersOnSignals, type Cluster, type ClusterNode } from '../test/support/servers/cluster.js'
import { createPool, type HostInfo, type Pool } from '../src/index.js'
import { flag } from './lib/args.js'

const ROWS = 10_000
const AGGREGATE_SPAN = 100
// Queries on each fresh pool before the clock starts: its connections open and its statements are prepared.
const WARM_UP = 1000
// How long the servers get to publish the counts of a round's backends once they exited.
const STATS_WAIT_MS = 5000

interface Workload {
  name: 'point' | 'aggregate'
  label: string
  sql: string
  args(): unknown[]
  check(row: Record<string, unknown>, args: unknown[]): boolean
}

const WORKLOADS: Workload[] = [
  {
    name: 'point',
    label: 'SELECT * by primary key',
    sql: 'SELECT * FROM users WHERE id = $1',
    args: () => [1 + Math.floor(Math.random() * ROWS)],
    check: (row, args) => row.id === args[0],
  },
  {
    name: 'aggregate',
    label: `aggregate over ${AGGREGATE_SPAN} rows`,
    sql: `SELECT count(*)::int AS n, sum(length(email))::int AS chars, max(name) AS last FROM users WHERE id BETWEEN $1 AND $1 + ${AGGREGATE_SPAN - 1}`,
    args: () => [1 + Math.floor(Math.random() * (ROWS - AGGREGATE_SPAN + 1))],
    check: (row) => row.n === AGGREGATE_SPAN,
  },
]

interface Variant {
  label: string
  short: 'primary' | 'cluster'
  url(cluster: Cluster): string
  readOnly: boolean
}

const VARIANTS: Variant[] = [
  { label: 'primary alone', short: 'primary', url: (c) => c.url([c.primary]), readOnly: false },
  {
    label: 'primary + 2 standbys, readOnly reads',
    short: 'cluster',
    url: (c) => c.url(undefined, { target_session_attrs: 'read-write' }),
    readOnly: true,
  },
]


function workloads(): Workload[] {
  const at = process.argv.indexOf('--workload')
  const which = at < 0 ? 'both' : process.argv[at + 1]
  if (which === 'both') return WORKLOADS
  const found = WORKLOADS.filter((w) => w.name === which)
  if (found.length === 0) throw new Error('--workload needs point, aggregate or both')
  return found
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
const range = (xs: number[], digits = 0): string => `${fmt(median(xs), digits)} (${fmt(Math.min(...xs), digits)}-${fmt(Math.max(...xs), digits)})`

/** `n` queries with at most `window` in flight: enough to keep every connection's pipeline full. */
async function drive(pool: Pool, w: Workload, n: number, window: number, readOnly: boolean): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < n) {
      next++
      const args = w.args()
      const r = await pool.query<Record<string, unknown>>(w.sql, args, readOnly ? { readOnly: true } : undefined)
      if (r.rows.length !== 1 || !w.check(r.rows[0]!, args)) throw new Error(`${w.name} query got a wrong answer for ${JSON.stringify(args)}: ${JSON.stringify(r.rows)}`)
    }
  }
  await Promise.all(Array.from({ length: Math.min(window, n) }, worker))
}

/** Committed transactions per node: a standby counts the reads it served too. */
async function commits(cluster: Cluster): Promise<number[]> {
  const sql = "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'"
  return Promise.all(cluster.nodes.map(async (n) => Number((await cluster.query(n, sql)).rows[0]?.[0] ?? 0)))
}

/** What each node ran since `before`, once the exited backends' counts add up to `expected` or the wait is over. */
async function servedSince(cluster: Cluster, before: number[], expected: number): Promise<number[]> {
  const deadline = Date.now() + STATS_WAIT_MS
  for (;;) {
    const served = (await commits(cluster)).map((n, i) => n - before[i]!)
    if (served.reduce((a, b) => a + b, 0) >= expected || Date.now() > deadline) return served
    await sleep(100)
  }
}

interface Round {
  perSecond: number
  cpuUs: number
  /** Share of the round's transactions each node ran, in node order. */
  shares: number[]
  hosts: HostInfo[]
}

async function round(cluster: Cluster, v: Variant, w: Workload, max: number, queries: number, window: number): Promise<Round> {
  const before = await commits(cluster)
  const pool = createPool({ connectionString: v.url(cluster), max })
  let hosts: HostInfo[]
  let perSecond: number
  let cpuUs: number
  try {
    await pool.discover()
    await drive(pool, w, WARM_UP, window, v.readOnly)
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    await drive(pool, w, queries, window, v.readOnly)
    const ms = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    perSecond = (queries / ms) * 1000
    cpuUs = (cpu.user + cpu.system) / queries
    hosts = pool.hosts
  } finally {
    await pool.end()
  }
  const served = await servedSince(cluster, before, WARM_UP + queries)
  const total = Math.max(served.reduce((a, b) => a + b, 0), 1)
  return { perSecond, cpuUs, shares: served.map((n) => n / total), hosts }
}

/** Where the reads went, checked against where they should have: a benchmark of routing that did not route measures nothing. */
function misrouted(v: Variant, r: Round, nodes: readonly ClusterNode[]): string | null {
  const primary = nodes.findIndex((n) => n.role === 'primary')
  const onPrimary = r.shares[primary]!
  if (v.short === 'primary') return onPrimary < 0.99 ? `only ${fmt(onPrimary * 100, 1)}% of the reads ran on the primary` : null
  if (onPrimary > 0.01) return `${fmt(onPrimary * 100, 1)}% of the readOnly reads ran on the primary`
  const idle = nodes.filter((n, i) => n.role === 'standby' && r.shares[i]! < 0.1).map((n) => n.name)
  if (idle.length > 0) return `${idle.join(', ')} served under 10% of the reads`
  const standbyHosts = r.hosts.filter((h) => h.role === 'standby')
  if (standbyHosts.length !== 2) return `the pool saw ${standbyHosts.length} standbys, not 2`
  return null
}

async function main(): Promise<void> {
  const rounds = flag('rounds', 5)
  const queries = flag('queries', 50_000)
  const max = flag('max', 6)
  const window = flag('window', 256)
  const chosen = workloads()
  stopClustersOnSignals()
  const binDir = process.env.PIPEGRES_BENCH_PGBIN || undefined
  const cluster = await startCluster({ ...(binDir ? { binDir } : {}), standbys: 2, name: 'bench-cluster' })
  try {
    await cluster.query(
      cluster.primary,
      `CREATE TABLE users (id int PRIMARY KEY, name text NOT NULL, email text NOT NULL);
       INSERT INTO users SELECT g, 'user ' || g, 'user' || g || '@example.com' FROM generate_series(1, ${ROWS}) g;
       ANALYZE users`,
    )
    await Promise.all(cluster.standbys.map((s) => cluster.waitForReplay(s)))
    const version = (await cluster.query(cluster.primary, 'SHOW server_version')).rows[0]?.[0] ?? '?'

    // A round of each, not counted: the client's code is compiled hot before the first measured round.
    for (const w of chosen) for (const v of VARIANTS) await round(cluster, v, w, max, 5 * WARM_UP, window)
    const results = chosen.map(() => VARIANTS.map(() => [] as Round[]))
    const problems: string[] = []
    for (let r = 0; r < rounds; r++) {
      for (const [wi, w] of chosen.entries()) {
        // Each round starts with another variant, so no variant always runs first.
        for (let k = 0; k < VARIANTS.length; k++) {
          const vi = (r + k) % VARIANTS.length
          const v = VARIANTS[vi]!
          const m = await round(cluster, v, w, max, queries, window)
          results[wi]![vi]!.push(m)
          const wrong = misrouted(v, m, cluster.nodes)
          if (wrong) problems.push(`round ${r + 1}, ${w.name}, ${v.label}: ${wrong}`)
        }
      }
    }

    console.log(`PostgreSQL ${version}: a primary and 2 streaming standbys on 127.0.0.1, pool max ${max}, ${fmt(window)} queries in flight`)
    console.log(`${fmt(queries)} queries per round after ${fmt(WARM_UP)} for warm-up, a fresh pool each round, ${rounds} interleaved rounds, medians (min-max)`)
    console.log(`All ${cluster.nodes.length} servers and the client share this machine's ${availableParallelism()} CPUs: the ratio shows routing overhead and spreading, not a real scale-out.`)
    console.log(`On the cluster the pool keeps a connection to the primary (its writes' host) within max: the reads get the rest.\n`)
    console.log('| workload | pool on | queries/s | client CPU per query | reads served (primary / standby1 / standby2) | connections | vs primary alone |')
    console.log('|---|---|---|---|---|---|---|')
    const summary: Record<string, unknown>[] = []
    for (const [wi, w] of chosen.entries()) {
      const base = median(results[wi]![0]!.map((m) => m.perSecond))
      VARIANTS.forEach((v, vi) => {
        const ms = results[wi]![vi]!
        const rate = ms.map((m) => m.perSecond)
        const cpu = ms.map((m) => m.cpuUs)
        const shares = cluster.nodes.map((_, i) => median(ms.map((m) => m.shares[i]!)))
        const last = ms[ms.length - 1]!.hosts
        const conns = last.map((h) => `${h.role} ${h.connections}`).join(', ')
        const ratio = median(rate) / base
        console.log(
          `| ${w.label} | ${v.label} | ${range(rate)} | ${range(cpu, 2)} µs | ${shares.map((s) => `${fmt(s * 100, 1)}%`).join(' / ')} | ${conns} | ${fmt(ratio, 2)} |`,
        )
        summary.push({
          workload: w.name,
          variant: v.short,
          perSecond: { median: Math.round(median(rate)), min: Math.round(Math.min(...rate)), max: Math.round(Math.max(...rate)) },
          cpuUsPerQuery: { median: Number(median(cpu).toFixed(2)), min: Number(Math.min(...cpu).toFixed(2)), max: Number(Math.max(...cpu).toFixed(2)) },
          servedShare: Object.fromEntries(cluster.nodes.map((n, i) => [n.name, Number(shares[i]!.toFixed(4))])),
          connections: Object.fromEntries(last.map((h) => [`${h.role} ${h.address}`, h.connections])),
          ratioToPrimaryAlone: Number(ratio.toFixed(3)),
        })
      })
    }
    console.log(problems.length === 0 ? '\nOK: the readOnly reads ran on the standbys, the others on the primary' : `\nFAILED: ${problems.join('; ')}`)
    if (problems.length > 0) process.exitCode = 1
    console.log(JSON.stringify({ bench: 'cluster', server: version, cpus: availableParallelism(), max, window, queries, warmUp: WARM_UP, rounds, results: summary, problems }))
  } finally {
    await cluster.stop()
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
