// `npm run bench:pglite [-- --rounds N]`: PostgreSQL in this process (PGlite,
// compiled to WebAssembly), queried three ways in interleaved rounds:
//   - pipegres over connectPGlite() (the protocol code of a network client, pipelined),
//   - PGlite's own query() API (what its users call),
//   - Drizzle's PGlite driver (drizzle-orm/pglite, on top of that API).
// Workloads, on a users table of 10,000 rows (int4 key, three texts):
//   lookups  10,000 single-row SELECTs by primary key, all issued at once
//   read     the whole table as row objects, in one query, 10 times
// Everything runs in one thread, so wall time is the CPU both the client and
// PGlite spent; the rows are checked, and every variant must read the same.

import { PGlite } from '@electric-sql/pglite'
import { eq } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/pglite'
import { integer, pgTable, text } from 'drizzle-orm/pg-core'
import { connectPGlite } from '../src/integrations/pglite/index.js'
import type { Client } from '../src/index.js'

const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1] || 5)
const ROWS = 10_000
const LOOKUPS = 10_000
const READS = 10

const users = pgTable('users', { id: integer('id').primaryKey(), name: text('name'), email: text('email'), password: text('password') })
type User = { id: number; name: string | null; email: string | null; password: string | null }

interface Runner {
  label: string
  lookup(id: number): Promise<User | undefined>
  readAll(): Promise<User[]>
}

async function setUp(): Promise<{ pglite: PGlite; runners: Runner[]; db: Client }> {
  const pglite = await PGlite.create()
  await pglite.exec(`CREATE TABLE users (id int4 PRIMARY KEY, name text, email text, password text);
    INSERT INTO users SELECT g, 'user ' || g, 'user' || g || '@example.com', md5('pw' || g) FROM generate_series(1, ${ROWS}) g`)
  // Alone: exec() runs a multi-statement string as one transaction, which VACUUM refuses.
  await pglite.exec('VACUUM ANALYZE users')
  const db = await connectPGlite(pglite)
  const orm = drizzle(pglite)
  const byId = 'SELECT id, name, email, password FROM users WHERE id = $1'
  const all = 'SELECT id, name, email, password FROM users'
  // PGlite runs one statement at a time: pipegres's client holds its one session, so the
  // other two take turns on the same instance between pipegres's runs (nothing overlaps).
  const runners: Runner[] = [
    { label: 'pipegres connectPGlite()', lookup: async (id) => (await db.query<User>(byId, [id])).rows[0], readAll: async () => (await db.query<User>(all)).rows },
    { label: "PGlite's query()", lookup: async (id) => (await pglite.query<User>(byId, [id])).rows[0], readAll: async () => (await pglite.query<User>(all)).rows },
    {
      label: "Drizzle's PGlite driver",
      lookup: async (id) => (await orm.select().from(users).where(eq(users.id, id)))[0],
      readAll: async () => orm.select().from(users),
    },
  ]
  return { pglite, runners, db }
}

function check(u: User | undefined, id: number): void {
  if (u?.id !== id || u.name !== `user ${id}`) throw new Error(`lookup ${id} got ${JSON.stringify(u)}`)
}

/** Milliseconds for the workload; the rows are checked after the clock stops. */
async function measure(r: Runner, workload: 'lookups' | 'read'): Promise<number> {
  const t0 = performance.now()
  if (workload === 'lookups') {
    const ids = Array.from({ length: LOOKUPS }, (_, i) => (i * 7919) % ROWS + 1)
    const got = await Promise.all(ids.map((id) => r.lookup(id)))
    const ms = performance.now() - t0
    got.forEach((u, i) => check(u, ids[i]!))
    return ms
  }
  let rows = 0
  let sum = 0
  for (let i = 0; i < READS; i++) {
    const all = await r.readAll()
    rows += all.length
    for (const u of all) sum += u.email!.length + u.password!.length
  }
  const ms = performance.now() - t0
  if (rows !== READS * ROWS || sum === 0) throw new Error(`${r.label} read ${rows} rows`)
  return ms
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')

const { pglite, runners, db } = await setUp()
try {
  for (const workload of ['lookups', 'read'] as const) {
    const units = workload === 'lookups' ? LOOKUPS : READS * ROWS
    // One warm-up each, then rounds in rotating order.
    for (const r of runners) await measure(r, workload)
    const times = runners.map(() => [] as number[])
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < runners.length; k++) {
        const i = (k + round) % runners.length
        times[i]!.push(await measure(runners[i]!, workload))
      }
    }
    const base = (units / median(times[0]!)) * 1000
    console.log(`\n### PGlite in process: ${workload === 'lookups' ? `${fmt(LOOKUPS)} single-row SELECTs by primary key, issued at once` : `the ${fmt(ROWS)}-row users table read as objects, ${READS} times`}\n`)
    console.log(`| client | ${workload === 'lookups' ? 'queries' : 'rows'}/s, median (min–max) | vs pipegres | µs per ${workload === 'lookups' ? 'query' : 'row'} (client and PGlite) |`)
    console.log('|---|---|---|---|')
    runners.forEach((r, i) => {
      const rates = times[i]!.map((ms) => (units / ms) * 1000)
      const m = (units / median(times[i]!)) * 1000
      console.log(`| ${r.label} | ${fmt(m)} (${fmt(Math.min(...rates))}–${fmt(Math.max(...rates))}) | ${(m / base).toFixed(2)} | ${((median(times[i]!) * 1000) / units).toFixed(2)} |`)
    })
  }
  console.log(`\nNode ${process.versions.node}, @electric-sql/pglite, ${rounds} interleaved rounds after a warm-up; one thread, so time is CPU.`)
} finally {
  await db.end()
  await pglite.close()
}
