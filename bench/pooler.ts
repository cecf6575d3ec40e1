// `npm run bench:pooler [-- --rounds N --queries N --workloads w2,w3,app]`: pipegres
// through real PgBouncers in transaction mode (pool of 4) and straight to the server,
// in interleaved rounds; medians with their ranges, client CPU per query.
//
// Workloads (a users table of 10,000 rows, looked up by primary key):
//   w2   N single-row SELECTs, all in flight on one fresh connection
//   w3   the same over a Pool of 4
//   app  64 requests in progress at a time, each awaiting 3 lookups one after the other, over a Pool of 4
// Variants: PgBouncer 1.24 with unnamed statements (the default behind a recognised
// pooler), with prepare: 'always' (PgBouncer keeps the named statements), and both
// without the bound on what a pooled connection has in flight; PgBouncer 1.18 with and
// without that bound; the server directly. "no bound" lifts the bound inside this
// process only, to show what it costs (without it, 1.18 can break under deep pipelines).
//
// PgBouncer 1.24 comes from scripts/build-pgbouncer.sh (its variants are left out
// when it is not built); PIPEGRES_BENCH_PGBIN=<bin dir> picks the PostgreSQL
// installation (default: embedded).

import { findPgBouncer, findPgBouncer124, startPgBouncer, type RunningPgBouncer } from '../test/support/servers/pgbouncer.js'
import { startServer, stopAllOnSignals } from '../test/support/servers/postgres.js'
import { InflightBound } from '../src/connection/inflight-bound.js'
import { connect, createPool, type ClientOptions } from '../src/index.js'
import { flag } from './lib/args.js'

type Through = 'pgbouncer-1.24' | 'pgbouncer-1.18' | 'server'

interface Variant {
  label: string
  through: Through
  options: ClientOptions
  unbounded?: boolean
}

const VARIANTS: Variant[] = [
  { label: 'PgBouncer 1.24, default (unnamed statements)', through: 'pgbouncer-1.24', options: {} },
  { label: "PgBouncer 1.24, prepare: 'always'", through: 'pgbouncer-1.24', options: { prepare: 'always' } },
  { label: 'PgBouncer 1.24, default, no bound', through: 'pgbouncer-1.24', options: {}, unbounded: true },
  { label: "PgBouncer 1.24, prepare: 'always', no bound", through: 'pgbouncer-1.24', options: { prepare: 'always' }, unbounded: true },
  { label: 'PgBouncer 1.18, default', through: 'pgbouncer-1.18', options: {} },
  { label: 'PgBouncer 1.18, default, no bound', through: 'pgbouncer-1.18', options: {}, unbounded: true },
  { label: 'server directly, default', through: 'server', options: {} },
]

type Workload = 'w2' | 'w3' | 'app'
const WORKLOADS: Workload[] = ['w2', 'w3', 'app']
const USERS = 10_000
const SELECT_USER = 'SELECT id, name, email FROM bench_pooler_users WHERE id = $1'

// The bound is lifted by admitting every request; the same code path otherwise.
const admits = InflightBound.prototype.admits
function setBound(on: boolean): void {
  InflightBound.prototype.admits = on ? admits : () => true
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })

function check(row: { id: number; name: string } | undefined, id: number): void {
  if (row?.id !== id || row.name !== `user ${id}`) throw new Error(`the lookup of ${id} got ${JSON.stringify(row)}`)
}

/** One repetition on fresh connections (the first burst after connecting is part of what a pooler changes); queries per second and client CPU per query. */
async function run(workload: Workload, url: string, options: ClientOptions, queries: number): Promise<{ perSecond: number; cpuUs: number }> {
  const db = workload === 'w2' ? await connect({ connectionString: url, ...options }) : createPool({ connectionString: url, max: 4, ...options })
  try {
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    if (workload === 'app') {
      let next = 0
      const requests = Math.ceil(queries / 3)
      const worker = async (): Promise<void> => {
        while (next < requests) {
          const r = next++
          for (let q = 0; q < 3; q++) {
            const id = ((r * 3 + q) * 7919) % USERS
            check((await db.query<{ id: number; name: string }>(SELECT_USER, [id])).rows[0], id)
          }
        }
      }
      await Promise.all(Array.from({ length: 64 }, worker))
    } else {
      const pending: Promise<void>[] = []
      for (let i = 0; i < queries; i++) {
        const id = (i * 7919) % USERS
        pending.push(db.query<{ id: number; name: string }>(SELECT_USER, [id]).then((r) => check(r.rows[0], id)))
      }
      await Promise.all(pending)
    }
    const ms = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    return { perSecond: (queries / ms) * 1000, cpuUs: (cpu.user + cpu.system) / queries }
  } finally {
    await db.end()
  }
}

async function main(): Promise<void> {
  const rounds = flag('rounds', 5)
  const queries = flag('queries', 10_000)
  const at = process.argv.indexOf('--workloads')
  const workloads = at < 0 ? WORKLOADS : (process.argv[at + 1] ?? '').split(',').map((w) => w.trim() as Workload)
  for (const w of workloads) if (!WORKLOADS.includes(w)) throw new Error(`--workloads takes ${WORKLOADS.join(', ')}, not ${w}`)
  stopAllOnSignals()
  const binDir = process.env.PIPEGRES_BENCH_PGBIN
  const server = await startServer({ name: 'bench-pooler', ...(binDir ? { binDir } : {}), settings: { fsync: 'off', synchronous_commit: 'off' } })
  const bouncers: RunningPgBouncer[] = []
  try {
    const setup = await connect({ host: '127.0.0.1', port: server.port, user: server.superuser.user, password: server.superuser.password, database: 'postgres', sslmode: 'disable' })
    await setup.simpleQuery(
      `CREATE TABLE bench_pooler_users (id int PRIMARY KEY, name text NOT NULL, email text NOT NULL); ` +
        `INSERT INTO bench_pooler_users SELECT i, 'user ' || i, 'user' || i || '@example.com' FROM generate_series(0, ${USERS - 1}) i; ANALYZE bench_pooler_users`,
    )
    await setup.end()
    const user = encodeURIComponent(server.superuser.user)
    const urls: Partial<Record<Through, string>> = {
      server: `postgres://${user}:${encodeURIComponent(server.superuser.password)}@127.0.0.1:${server.port}/postgres?sslmode=disable`,
    }
    const versions: string[] = []
    for (const [through, binary] of [
      ['pgbouncer-1.24', findPgBouncer124()],
      ['pgbouncer-1.18', findPgBouncer()],
    ] as const) {
      if (binary === undefined) continue
      // max_prepared_statements is 1.21+ (and 200 by default since 1.22): said only to 1.24.
      const settings: Record<string, string> = through === 'pgbouncer-1.24' ? { max_prepared_statements: '200' } : {}
      const b = await startPgBouncer(server, { poolMode: 'transaction', poolSize: 4, binary, settings })
      bouncers.push(b)
      urls[through] = `postgres://${user}@127.0.0.1:${b.port}/postgres?sslmode=disable`
      versions.push(b.version)
    }
    const variants = VARIANTS.filter((v) => urls[v.through] !== undefined)
    for (const workload of workloads) {
      const results = variants.map(() => ({ perSecond: [] as number[], cpuUs: [] as number[], failed: 0 }))
      const once = async (v: Variant, n: number): Promise<{ perSecond: number; cpuUs: number } | null> => {
        setBound(v.unbounded !== true)
        try {
          return await run(workload, urls[v.through]!, v.options, n)
        } catch (err) {
          console.error(`${workload}, ${v.label}: ${(err as Error).message}`)
          return null
        } finally {
          setBound(true)
        }
      }
      // A warm-up round, not counted: PgBouncer opens its server connections.
      for (const v of variants) await once(v, 1000)
      for (let r = 0; r < rounds; r++) {
        // Each round starts with another variant, so no variant always runs first.
        for (let k = 0; k < variants.length; k++) {
          const i = (r + k) % variants.length
          const m = await once(variants[i]!, queries)
          if (m === null) results[i]!.failed++
          else {
            results[i]!.perSecond.push(m.perSecond)
            results[i]!.cpuUs.push(m.cpuUs)
          }
        }
      }
      console.log(`\n${workload}: PostgreSQL ${server.versionString.replace(/^postgres \(PostgreSQL\)\s*/, '')}, PgBouncer ${versions.join(' and ')} (transaction mode, pool of 4), Node ${process.version}`)
      console.log(`${fmt(queries)} queries per repetition, ${rounds} interleaved rounds, medians (min-max)\n`)
      console.log('| variant | queries/s | client CPU per query | rate vs the first | failed rounds |')
      console.log('|---|---|---|---|---|')
      const base = median(results[0]!.perSecond)
      variants.forEach((v, i) => {
        const { perSecond: rate, cpuUs: cpu, failed } = results[i]!
        if (rate.length === 0) return console.log(`| ${v.label} | – | – | – | ${failed} |`)
        console.log(
          `| ${v.label} | ${fmt(median(rate))} (${fmt(Math.min(...rate))}-${fmt(Math.max(...rate))}) | ${fmt(median(cpu), 2)} µs (${fmt(Math.min(...cpu), 2)}-${fmt(Math.max(...cpu), 2)}) | ${fmt(median(rate) / base, 2)} | ${failed} |`,
        )
      })
    }
  } finally {
    for (const b of bouncers) await b.stop()
    await server.stop()
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
