// A deep pipeline through a transaction-mode pooler: each of several clients
// puts 1,500 queries in flight at once (three SELECT texts, INSERTs, failing
// queries, batches, simple-protocol transactions) and then a transaction of
// its own, while the clients share the pooler's few server connections. Every
// reply is checked against the parameters of its own query, and the table
// against every write that should (and should not) have stayed.
//
// PgBouncer 1.18 breaks under exactly this without a bound on what the client
// has in flight: a server sees part of one client message as a message of its
// own and ends the session with 08P01, or replies go missing.

import assert from 'node:assert/strict'
import { after, before } from 'node:test'
import { logTail } from './servers/os.js'
import { startPgBouncer, type RunningPgBouncer } from './servers/pgbouncer.js'
import { connect, ConnectionError, PgError, type Client, type ClientOptions } from '../../src/index.js'
import { uniqueName } from './client.js'
import { stressSize } from './tier.js'
import { adminQuery, getTestServer } from './servers/test-server.js'

export const IN_FLIGHT = 1500
/**
 * Runs in a row: 50 in the stress tier, where PgBouncer 1.18's bug shows within a few dozen
 * without the bound, 6 in `npm test`; PIPEGRES_DEEP_PIPELINE_RUNS changes it (to look for a
 * break faster, or longer).
 */
export const RUNS = Number(process.env.PIPEGRES_DEEP_PIPELINE_RUNS ?? stressSize(6, 50))

/** What one run wrote, by id: its n and body columns. */
type Expected = Map<number, [number, string]>

const value = (id: number): number => (id * 7919) % 1_000_003
/**
 * A text of 20 to about 3,000 characters, different for every id: messages of
 * many sizes, so that some straddle every read the pooler makes of its socket.
 */
const body = (id: number): string => `${id}:`.padEnd(20 + ((id * 7877) % 2999), String.fromCharCode(97 + (id % 26)))
const row = (id: number): [number, string] => [value(id), body(id)]

/**
 * What one client's burst left: the rows it wrote, and the rows of writes that
 * failed with a lost session, which may or may not have run.
 */
interface BurstResult {
  wrote: Expected
  maybe: Expected
  /** Queries that failed with a lost session (only where the pooler's bug is tolerated). */
  lost: number
}

/**
 * Issues one client's burst; resolves once every reply has been checked.
 * `tolerateLostSessions`: a query may fail with a ConnectionError (the pooler
 * ended the session), never with a wrong reply or someone else's error.
 */
async function burst(db: Client, table: string, who: string, first: number, tolerateLostSessions: boolean): Promise<BurstResult> {
  const wrote: Expected = new Map()
  const pending: Promise<unknown>[] = []
  /** The ids each pending query writes, by its index in `pending`. */
  const writes: number[][] = []
  let id = first
  for (let i = 0; i < IN_FLIGHT; i++) {
    const tag = `${who}:${i}`
    switch (i % 8) {
      case 0:
      case 4:
        pending.push(db.query<{ n: number; tag: string }>('SELECT $1::int AS n, $2::text AS tag', [i, tag]).then((r) => assert.deepEqual(r.rows, [{ n: i, tag }])))
        break
      case 1:
        pending.push(db.query<{ m: number; tag: string }>('SELECT $1::int * 3 AS m, $2::text AS tag', [i, tag]).then((r) => assert.deepEqual(r.rows, [{ m: i * 3, tag }])))
        break
      case 2: {
        const mine = id++
        wrote.set(mine, row(mine))
        writes[pending.length] = [mine]
        pending.push(
          db
            .query<{ id: number; n: number; len: number }>(`INSERT INTO ${table} (id, actor, n, body) VALUES ($1, $2, $3, $4) RETURNING id, n, length(body) AS len`, [mine, who, value(mine), body(mine)])
            .then((r) => assert.deepEqual(r.rows, [{ id: mine, n: value(mine), len: body(mine).length }])),
        )
        break
      }
      case 3:
        pending.push(db.query<{ s: string }>('SELECT $1::text || $2::text || $3::text AS s', [tag, '/', String(i)]).then((r) => assert.deepEqual(r.rows, [{ s: `${tag}/${i}` }])))
        break
      case 5: {
        // A batch is one implicit transaction: the failing one at every fourth turn leaves none of its rows.
        const ids = [id++, id++]
        const fails = i % 32 === 29
        if (!fails) for (const x of ids) wrote.set(x, row(x))
        if (!fails) writes[pending.length] = ids
        const batch = db.batch((b) => {
          for (const x of ids) b.query(`INSERT INTO ${table} (id, actor, n, body) VALUES ($1, $2, $3, $4) RETURNING id`, [x, who, value(x), body(x)])
          b.query('SELECT $1::text AS tag', [tag])
          if (fails) b.query('SELECT 1 / ($1::int - $1::int)', [i])
        })
        pending.push(
          fails
            ? assert.rejects(batch, (e) => e instanceof PgError && e.code === '22012' && e.batchIndex === 3)
            : batch.then((r) => {
                assert.deepEqual(r.slice(0, 2).map((x) => x.rows[0]), ids.map((x) => ({ id: x })))
                assert.deepEqual(r[2]!.rows, [{ tag }])
              }),
        )
        break
      }
      case 6: {
        // BEGIN ... COMMIT in one simple-protocol Query: the pooler sees a transaction open and close inside one message.
        const mine = id++
        wrote.set(mine, row(mine))
        writes[pending.length] = [mine]
        pending.push(
          db
            .simpleQuery<{ id: number }>(`BEGIN; INSERT INTO ${table} (id, actor, n, body) VALUES (${mine}, '${who}', ${value(mine)}, '${body(mine)}'); SELECT ${mine}::int AS id; COMMIT`)
            .then((r) => assert.deepEqual(r[2]!.rows, [{ id: mine }])),
        )
        break
      }
      default:
        if (i % 64 === 7) {
          // An error between Syncs: the queries around it must not notice.
          pending.push(assert.rejects(db.query('SELECT 1 / ($1::int - $1::int)', [i]), (e) => e instanceof PgError && e.code === '22012'))
        } else {
          pending.push(db.query<{ n: number; tag: string }>('SELECT $1::int AS n, $2::text AS tag', [i, tag]).then((r) => assert.deepEqual(r.rows, [{ n: i, tag }])))
        }
    }
  }
  // A transaction behind the burst: BEGIN, pipelined INSERTs, a read of its own rows, COMMIT, each with its own Sync.
  const txIds = [id++, id++, id++]
  for (const x of txIds) wrote.set(x, row(x))
  writes[pending.length] = txIds
  pending.push(
    db.begin(async (tx) => {
      const rows = await Promise.all(txIds.map((x) => tx.query<{ id: number }>(`INSERT INTO ${table} (id, actor, n, body) VALUES ($1, $2, $3, $4) RETURNING id`, [x, who, value(x), body(x)])))
      assert.deepEqual(rows.map((r) => r.rows[0]!.id), txIds)
      const seen = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE id = ANY($1::int[])`, [txIds])
      assert.deepEqual(seen.rows, [{ n: 3 }], 'the transaction sees its own rows')
    }),
  )
  const settled = await Promise.allSettled(pending)
  const maybe: Expected = new Map()
  const failed: unknown[] = []
  let lost = 0
  settled.forEach((s, k) => {
    if (s.status === 'fulfilled') return
    // A lost session is the pooler's doing; the client's part is to say so, and to say the query may have run.
    // assert.rejects wraps what it got instead of the expected error.
    const reason: unknown = s.reason instanceof assert.AssertionError && s.reason.actual instanceof ConnectionError ? s.reason.actual : s.reason
    if (tolerateLostSessions && reason instanceof ConnectionError) {
      lost++
      for (const x of writes[k] ?? []) {
        maybe.set(x, wrote.get(x)!)
        wrote.delete(x)
      }
    } else failed.push(reason)
  })
  if (failed.length > 0) throw new Error(`${who}: ${failed.length} of ${settled.length} queries failed; the first: ${String(failed[0])}`, { cause: failed[0] })
  return { wrote, maybe, lost }
}

export interface DeepPipelineOptions {
  url: string
  table: string
  clients: number
  runs: number
  /** A run that takes longer has lost replies. */
  runTimeoutMs: number
  options?: ClientOptions
  /**
   * How many runs may meet a pooler ending a session (PgBouncer before 1.21,
   * see POOLED_MAX_BYTES in src/lane/probe.ts); 0 tolerates none.
   */
  lossyRuns?: number
}

/** What the runs met: how many runs saw a session ended by the pooler, and how many queries it failed. */
export interface DeepPipelineReport {
  lossyRuns: number
  lostQueries: number
}

/**
 * `runs` runs in a row, each with fresh clients; the first failure ends it.
 * A failure throws, naming the run; else returns how many runs met a session
 * the pooler ended (at most `lossyRuns`) and the queries those failed.
 */
export async function deepPipelineRuns({ url, table, clients, runs, runTimeoutMs, options = {}, lossyRuns = 0 }: DeepPipelineOptions): Promise<DeepPipelineReport> {
  const report: DeepPipelineReport = { lossyRuns: 0, lostQueries: 0 }
  for (let run = 0; run < runs; run++) {
    const dbs: Client[] = []
    let timer: NodeJS.Timeout | undefined
    try {
      for (let k = 0; k < clients; k++) dbs.push(await connect({ connectionString: url, ...options }))
      const base = run * 100_000
      const work = Promise.all(dbs.map((db, k) => burst(db, table, `r${run}c${k}`, base + k * 10_000, lossyRuns > 0)))
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`run ${run}: replies still missing after ${runTimeoutMs} ms`)), runTimeoutMs)
      })
      const wrote = await Promise.race([work, deadline]).catch((err: unknown) => {
        throw new Error(`run ${run + 1} of ${runs}: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
      })
      const want = new Map<number, [number, string]>()
      const maybe = new Map<number, [number, string]>()
      let lost = 0
      for (const w of wrote) {
        for (const [id, r] of w.wrote) want.set(id, r)
        for (const [id, r] of w.maybe) maybe.set(id, r)
        lost += w.lost
      }
      if (lost > 0 && ++report.lossyRuns > lossyRuns) throw new Error(`run ${run + 1} of ${runs}: the pooler ended a session in ${report.lossyRuns} runs, more than the ${lossyRuns} tolerated`)
      report.lostQueries += lost
      const got = await adminQuery(`SELECT id, n, body FROM ${table} WHERE id >= ${base} AND id < ${base + 100_000} ORDER BY id`)
      const have = new Map((got.rows as [string, string, string][]).map(([id, n, b]) => [Number(id), [Number(n), b] as [number, string]]))
      // A write that failed with a lost session may have run: its row is there with its own values, or not at all.
      for (const [id, r] of maybe) {
        const row = have.get(id)
        if (row !== undefined) {
          assert.deepEqual(row, r, `run ${run + 1}: row ${id}, whose write failed with a lost session, holds its own values`)
          have.delete(id)
        }
      }
      assert.deepEqual(have, want, `run ${run + 1}: the table holds exactly the rows written, each with its own values`)
    } finally {
      clearTimeout(timer)
      for (const db of dbs) db.destroy()
    }
  }
  return report
}

/**
 * Sets up a test file for deep pipelines through PgBouncer: its table, and
 * `through(binary)`, which starts a PgBouncer in transaction mode with 2 server
 * connections and runs `runs` rounds through it with 4 clients, of which
 * `lossyRuns` may meet the pooler ending a session. A failure shows what
 * PgBouncer logged last.
 */
export function deepPipelineFile(): { through(binary: string | undefined, options?: ClientOptions, runs?: number, lossyRuns?: number): Promise<DeepPipelineReport> } {
  const bouncers: RunningPgBouncer[] = []
  let table = ''
  before(async () => {
    table = uniqueName('deep')
    await adminQuery(`CREATE TABLE ${table} (id int PRIMARY KEY, actor text NOT NULL, n int NOT NULL, body text NOT NULL)`)
  })
  after(async () => {
    await Promise.allSettled(bouncers.map((b) => b.stop()))
    if (table) await adminQuery(`DROP TABLE IF EXISTS ${table}`)
  })
  return {
    async through(binary, options = {}, runs = RUNS, lossyRuns = 0) {
      const server = await getTestServer()
      const bouncer = await startPgBouncer(server, { poolMode: 'transaction', poolSize: 2, ...(binary === undefined ? {} : { binary }) })
      bouncers.push(bouncer)
      const url = `postgres://${server.superuser.user}@127.0.0.1:${bouncer.port}/postgres?sslmode=disable`
      await adminQuery(`TRUNCATE ${table}`)
      try {
        return await deepPipelineRuns({ url, table, clients: 4, runs, runTimeoutMs: 30_000, options, lossyRuns })
      } catch (err) {
        throw new Error(`PgBouncer ${bouncer.version}: ${(err as Error).message}\nPgBouncer's log ends:\n${logTail(bouncer.logFile, 15)}`, { cause: err })
      } finally {
        await bouncer.stop()
      }
    },
  }
}
