// `npm run bench:pooler [-- --rounds N --queries N]`: pipelined queries through a
// real PgBouncer in transaction mode, with default settings and with
// prepare: false, and straight to the server for reference; interleaved rounds,
// medians with their ranges, client CPU per query.
//
// PIPEGRES_BENCH_PGBIN=<bin dir> picks the PostgreSQL installation (default: embedded).

import { startPgBouncer } from '../harness/pgbouncer.js'
import { startServer, stopAllOnSignals } from '../harness/server.js'
import { connect, type ClientOptions } from '../src/index.js'
import { flag } from './lib/args.js'

interface Variant {
  label: string
  through: 'pgbouncer' | 'server'
  options: ClientOptions
}

const VARIANTS: Variant[] = [
  { label: 'PgBouncer, default settings', through: 'pgbouncer', options: {} },
  { label: 'PgBouncer, prepare: false', through: 'pgbouncer', options: { prepare: false } },
  { label: 'server directly, default settings', through: 'server', options: {} },
]


const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })

/** One repetition on a fresh connection: the first burst after connecting is part of what a pooler changes. */
async function run(url: string, options: ClientOptions, queries: number): Promise<{ perSecond: number; cpuUs: number }> {
  const c = await connect({ connectionString: url, ...options })
  try {
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    const pending: Promise<void>[] = []
    for (let i = 0; i < queries; i++) {
      pending.push(
        c.query<{ n: number; s: string }>('SELECT $1::int AS n, $2::text AS s', [i, 'x']).then((r) => {
          if (r.rows[0]!.n !== i) throw new Error(`query ${i} got the result of query ${r.rows[0]!.n}`)
        }),
      )
    }
    await Promise.all(pending)
    const ms = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    return { perSecond: (queries / ms) * 1000, cpuUs: (cpu.user + cpu.system) / queries }
  } finally {
    await c.end()
  }
}

async function main(): Promise<void> {
  const rounds = flag('rounds', 7)
  const queries = flag('queries', 10_000)
  stopAllOnSignals()
  const binDir = process.env.PIPEGRES_BENCH_PGBIN
  const server = await startServer({ name: 'bench-pooler', ...(binDir ? { binDir } : {}), settings: { fsync: 'off', synchronous_commit: 'off' } })
  const bouncer = await startPgBouncer(server, { poolMode: 'transaction', poolSize: 4 })
  try {
    const user = encodeURIComponent(server.superuser.user)
    const urls = {
      pgbouncer: `postgres://${user}@127.0.0.1:${bouncer.port}/postgres?sslmode=disable`,
      server: `postgres://${user}:${encodeURIComponent(server.superuser.password)}@127.0.0.1:${server.port}/postgres?sslmode=disable`,
    }
    const results = VARIANTS.map(() => ({ perSecond: [] as number[], cpuUs: [] as number[] }))
    // A warm-up round, not counted: PgBouncer opens its server connections.
    for (const v of VARIANTS) await run(urls[v.through], v.options, 1000)
    for (let r = 0; r < rounds; r++) {
      // Each round starts with another variant, so no variant always runs first.
      for (let k = 0; k < VARIANTS.length; k++) {
        const i = (r + k) % VARIANTS.length
        const v = VARIANTS[i]!
        const m = await run(urls[v.through], v.options, queries)
        results[i]!.perSecond.push(m.perSecond)
        results[i]!.cpuUs.push(m.cpuUs)
      }
    }
    console.log(`PostgreSQL ${server.versionString.replace(/^postgres \(PostgreSQL\)\s*/, '')}, PgBouncer ${bouncer.version} (transaction mode, pool of 4)`)
    console.log(`${fmt(queries)} pipelined single-row SELECTs on a fresh connection, ${rounds} interleaved rounds, medians (min-max)\n`)
    console.log('| client | queries/s | client CPU per query | rate vs default through PgBouncer |')
    console.log('|---|---|---|---|')
    const base = median(results[0]!.perSecond)
    VARIANTS.forEach((v, i) => {
      const rate = results[i]!.perSecond
      const cpu = results[i]!.cpuUs
      console.log(
        `| ${v.label} | ${fmt(median(rate))} (${fmt(Math.min(...rate))}-${fmt(Math.max(...rate))}) | ${fmt(median(cpu), 2)} µs (${fmt(Math.min(...cpu), 2)}-${fmt(Math.max(...cpu), 2)}) | ${fmt(median(rate) / base, 2)} |`,
      )
    })
  } finally {
    await bouncer.stop()
    await server.stop()
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
