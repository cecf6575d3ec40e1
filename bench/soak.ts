// `npm run bench:soak [-- --kills N --every MS --workers N --max N]`: an app-shaped
// load (70% SELECT by key, 30% INSERT) on a pool while another connection
// terminates every backend of the pool at a fixed interval. Reports how many
// requests fail per kill, and checks the ledger: every acknowledged INSERT is
// in the table exactly once. Exits non-zero when one is missing or doubled, a
// read gets another query's row, or a request never settles.
//
// Starts its own PostgreSQL unless DATABASE_URL is set.
// PIPEGRES_BENCH_PGBIN=<bin dir> picks the PostgreSQL installation (default: embedded).

import { startServer, stopAllOnSignals, type RunningServer } from '../test/support/servers/postgres.js'
import { connect, createPool, PgError, PipegresError, type Client, type Pool } from '../src/index.js'
import { flag } from './lib/args.js'

const APP = 'soak'
const READ_ROWS = 1000
const READ_SHARE = 0.7
// Load keeps running this long after the last kill, so that round's failures are counted too.
const TAIL_MS = 1000
// A request still pending this long after the workers were told to stop is counted as hung.
const SETTLE_MS = 30_000


const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Class, code and first line of the message: messages carry no ids or pids, so equal kinds group together. */
function kindOf(err: unknown): string {
  if (!(err instanceof Error)) return `non-Error ${String(err)}`
  const code = err instanceof PgError || err instanceof PipegresError ? ` ${err.code}` : ''
  return `${err.name}${code}: ${err.message.split('\n', 1)[0]}`
}

interface Tally {
  completed: number
  failed: number
  reads: number
  inserts: number
  /** A read answered with a row other than the one it asked for. */
  misattributed: number
  kinds: Map<string, number>
  /** Failures by the kill round they happened after (index 0: before the first kill). */
  failedByRound: number[]
  acked: number[]
  failedInserts: number[]
  /** INSERT ids sent and not yet settled. */
  inFlight: Set<number>
  /** Requests of any kind not yet settled. */
  pending: number
}

interface Load {
  stop(): void
  /** Resolves when every worker has returned, or after `SETTLE_MS` with those still waiting. */
  settled(): Promise<boolean>
}

function startLoad(pool: Pool, workers: number, tally: Tally, round: () => number): Load {
  let stopping = false
  let nextId = 1
  const one = async (worker: number): Promise<void> => {
    if (Math.random() < READ_SHARE) {
      const key = 1 + Math.floor(Math.random() * READ_ROWS)
      const r = await pool.query<{ id: number; v: string }>('SELECT id, v FROM soak_read WHERE id = $1', [key])
      tally.reads++
      if (r.rows.length !== 1 || r.rows[0]!.id !== key) tally.misattributed++
      return
    }
    const id = nextId++
    tally.inFlight.add(id)
    try {
      await pool.query('INSERT INTO soak_ledger (id, worker, payload) VALUES ($1, $2, $3)', [id, worker, `w${worker}-${id}`])
      tally.acked.push(id)
      tally.inserts++
    } catch (err) {
      tally.failedInserts.push(id)
      throw err
    } finally {
      tally.inFlight.delete(id)
    }
  }
  const loop = async (worker: number): Promise<void> => {
    while (!stopping) {
      tally.pending++
      try {
        await one(worker)
        tally.completed++
      } catch (err) {
        tally.failed++
        const kind = kindOf(err)
        tally.kinds.set(kind, (tally.kinds.get(kind) ?? 0) + 1)
        const r = round()
        tally.failedByRound[r] = (tally.failedByRound[r] ?? 0) + 1
      } finally {
        tally.pending--
      }
    }
  }
  const all = Promise.all(Array.from({ length: workers }, (_, w) => loop(w)))
  return {
    stop: () => {
      stopping = true
    },
    settled: async () => {
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), SETTLE_MS)
      })
      const done = await Promise.race([all.then(() => true as const), timeout])
      clearTimeout(timer)
      return done
    },
  }
}

interface Ledger {
  missing: number
  doubled: number
  failedPresent: number
  unsettledPresent: number
  neverSent: number
}

async function checkLedger(admin: Client, tally: Tally, issued: number): Promise<Ledger> {
  // Streamed into a count per id: a minute of load stores around a million rows, too many to hold as objects.
  const copies = new Uint8Array(issued + 1)
  let neverSent = 0
  for await (const [id] of admin.stream<[number]>('SELECT id::int4 FROM soak_ledger', [], { rowMode: 'array' })) {
    if (id >= 1 && id <= issued) copies[id] = Math.min(copies[id]! + 1, 255)
    else neverSent++
  }
  let doubled = 0
  for (const n of copies) if (n > 1) doubled++
  return {
    missing: tally.acked.filter((id) => copies[id] === 0).length,
    doubled,
    failedPresent: tally.failedInserts.filter((id) => copies[id]! > 0).length,
    unsettledPresent: [...tally.inFlight].filter((id) => copies[id]! > 0).length,
    neverSent,
  }
}

async function setUp(admin: Client): Promise<void> {
  await admin.simpleQuery(`
    DROP TABLE IF EXISTS soak_ledger, soak_read;
    CREATE TABLE soak_ledger (id bigint NOT NULL, worker int, payload text);
    CREATE TABLE soak_read (id int PRIMARY KEY, v text NOT NULL);
    INSERT INTO soak_read SELECT g, md5(g::text) FROM generate_series(1, ${READ_ROWS}) g;
    ANALYZE soak_read;
  `)
}

async function main(): Promise<void> {
  const kills = flag('kills', 12)
  const every = flag('every', 5000)
  const workers = flag('workers', 64)
  const max = flag('max', 4)
  stopAllOnSignals()
  let server: RunningServer | null = null
  let url = process.env.DATABASE_URL
  if (!url) {
    const binDir = process.env.PIPEGRES_BENCH_PGBIN || undefined
    server = await startServer({ name: 'bench-soak', ...(binDir ? { binDir } : {}), settings: { fsync: 'off', synchronous_commit: 'off' } })
    const user = encodeURIComponent(server.superuser.user)
    url = `postgres://${user}:${encodeURIComponent(server.superuser.password)}@127.0.0.1:${server.port}/postgres?sslmode=disable`
  }
  let admin: Client | null = null
  let pool: Pool | null = null
  try {
    admin = await connect({ connectionString: url, applicationName: `${APP}-admin` })
    await setUp(admin)
    const version = (await admin.query<{ v: string }>('SELECT current_setting($1) AS v', ['server_version'])).rows[0]!.v
    pool = createPool({ connectionString: url, max, applicationName: APP })

    const tally: Tally = { completed: 0, failed: 0, reads: 0, inserts: 0, misattributed: 0, kinds: new Map(), failedByRound: [0], acked: [], failedInserts: [], inFlight: new Set(), pending: 0 }
    let rounds = 0
    let killed = 0
    const killedByRound: number[] = []
    const t0 = performance.now()
    // Failures count against the kill that was sent before them: the connections start failing before the admin's answer arrives.
    let killsSent = 0
    const load = startLoad(pool, workers, tally, () => killsSent)
    for (let i = 0; i < kills; i++) {
      await sleep(every)
      killsSent++
      tally.failedByRound[killsSent] = 0
      const r = await admin.query<{ killed: boolean }>(
        'SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()',
        [APP],
      )
      const n = r.rows.filter((row) => row.killed).length
      killed += n
      killedByRound.push(n)
      rounds++
    }
    await sleep(TAIL_MS)
    load.stop()
    const loadMs = performance.now() - t0
    const settled = await load.settled()
    const hung = tally.pending
    // A hung request would keep end() waiting forever.
    if (settled) await pool.end()
    else pool.destroy()
    pool = null

    const issued = tally.acked.length + tally.failedInserts.length + tally.inFlight.size
    const ledger = await checkLedger(admin, tally, issued)
    const requests = tally.completed + tally.failed
    const kinds = [...tally.kinds].sort((a, b) => b[1] - a[1])

    console.log(`PostgreSQL ${version}, pool of ${max} (application_name ${APP}), ${workers} workers: ${Math.round(READ_SHARE * 100)}% SELECT by primary key, ${Math.round((1 - READ_SHARE) * 100)}% INSERT`)
    console.log(`${rounds} kill rounds, one every ${fmt(every)} ms, ${fmt(killed)} backends terminated (per round: ${killedByRound.join(' ')}); ${fmt(loadMs / 1000, 1)} s of load\n`)
    console.log('| measure | value |')
    console.log('|---|---|')
    console.log(`| requests completed | ${fmt(tally.completed)} (${fmt(tally.reads)} reads, ${fmt(tally.inserts)} inserts) |`)
    console.log(`| requests failed | ${fmt(tally.failed)} (${fmt((tally.failed / Math.max(requests, 1)) * 100, 3)}%) |`)
    console.log(`| failed per kill round | ${fmt(tally.failed / Math.max(rounds, 1), 1)} |`)
    console.log(`| failed per killed connection | ${fmt(tally.failed / Math.max(killed, 1), 1)} |`)
    console.log(`| throughput | ${fmt(requests / (loadMs / 1000))} requests/s |`)
    console.log(`\nFailures after each kill (before the first: ${tally.failedByRound[0]}): ${tally.failedByRound.slice(1).join(' ')}`)
    if (kinds.length > 0) {
      console.log('Failures by kind:')
      for (const [kind, n] of kinds.slice(0, 5)) console.log(`  ${fmt(n).padStart(7)}  ${kind}`)
      if (kinds.length > 5) console.log(`  ... and ${kinds.length - 5} other kinds`)
    }
    console.log(
      `\nLedger: ${fmt(tally.acked.length)} acknowledged INSERTs, ${fmt(ledger.missing)} missing, ${fmt(ledger.doubled)} ids stored twice or more; ` +
        `${fmt(tally.failedInserts.length)} failed INSERTs, ${fmt(ledger.failedPresent)} of which ran anyway`,
    )
    const problems: string[] = []
    if (ledger.missing > 0) problems.push(`${ledger.missing} acknowledged INSERTs missing`)
    if (ledger.doubled > 0) problems.push(`${ledger.doubled} ids stored more than once`)
    if (ledger.neverSent > 0) problems.push(`${ledger.neverSent} ids in the table that were never sent`)
    if (tally.misattributed > 0) problems.push(`${tally.misattributed} reads got another query's row`)
    if (!settled) problems.push(`${hung} requests (${tally.inFlight.size} of them INSERTs) still pending ${SETTLE_MS / 1000} s after the load stopped`)
    if (killed === 0) problems.push('no backend was terminated: nothing was measured')
    console.log(problems.length === 0 ? 'OK: no acknowledged write lost or doubled' : `FAILED: ${problems.join('; ')}`)

    console.log(
      JSON.stringify({
        bench: 'soak',
        server: version,
        workers,
        max,
        everyMs: every,
        killRounds: rounds,
        backendsKilled: killed,
        killedByRound,
        loadSeconds: Number((loadMs / 1000).toFixed(2)),
        completed: tally.completed,
        failed: tally.failed,
        failedPerRound: Number((tally.failed / Math.max(rounds, 1)).toFixed(2)),
        failedPerKilledConnection: Number((tally.failed / Math.max(killed, 1)).toFixed(2)),
        failedByRound: tally.failedByRound,
        requestsPerSecond: Math.round(requests / (loadMs / 1000)),
        failureKinds: Object.fromEntries(kinds.slice(0, 5)),
        acknowledgedInserts: tally.acked.length,
        missingAcknowledged: ledger.missing,
        doubledIds: ledger.doubled,
        failedInserts: tally.failedInserts.length,
        failedInsertsPresent: ledger.failedPresent,
        unsettledRequests: hung,
        unsettledInserts: tally.inFlight.size,
        unsettledInsertsPresent: ledger.unsettledPresent,
        idsNeverSent: ledger.neverSent,
        misattributedReads: tally.misattributed,
        ok: problems.length === 0,
      }),
    )
    if (problems.length > 0) process.exitCode = 1
  } finally {
    pool?.destroy()
    await admin?.end()
    await server?.stop()
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
