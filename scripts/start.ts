// `npm start`: a short tour of pipegres against a real PostgreSQL. Without
// DATABASE_URL (or PG* variables) it starts an embedded PostgreSQL in a temporary
// directory and removes it afterwards.
//
// It creates a table, fills it with pipelined INSERTs, reads it back with
// thousands of pipelined SELECTs in flight on one connection and then with
// awaited one-at-a-time SELECTs, and measures what a queued query costs in memory.
// Then, unless --no-bench is given, a short run of the benchmark suite compares
// pipegres with pg, postgres.js and Bun's SQL client on a server of its own.

import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startServer, stopAllOnSignals, type RunningServer } from '../test/support/servers/postgres.js'
import { connect, type Client, type ClientOptions } from '../src/index.js'

const ROWS = 10_000
const PIPELINED = 100_000
const SEQUENTIAL = 5_000
const QUEUED = 200_000

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US')
}

function cpuMicros(since: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(since)
  return u.user + u.system
}

async function target(): Promise<{ options: ClientOptions; server?: RunningServer; label: string }> {
  if (process.env.DATABASE_URL) return { options: { connectionString: process.env.DATABASE_URL }, label: 'the server in DATABASE_URL' }
  if (['PGHOST', 'PGHOSTADDR', 'PGPORT', 'PGDATABASE', 'PGUSER'].some((k) => process.env[k])) {
    return { options: {}, label: 'the server described by the PG* variables' }
  }
  console.log('No DATABASE_URL: starting an embedded PostgreSQL in a temporary directory...')
  stopAllOnSignals()
  const server = await startServer({ name: 'demo' })
  return {
    server,
    label: `an embedded PostgreSQL ${server.version} on port ${server.port}`,
    options: { host: server.host, port: server.port, user: server.superuser.user, password: server.superuser.password, database: server.database, sslmode: 'disable' },
  }
}

async function pipelinedInserts(db: Client, table: string): Promise<void> {
  const t0 = performance.now()
  const inserts: Promise<unknown>[] = []
  for (let i = 1; i <= ROWS; i++) inserts.push(db.query(`INSERT INTO ${table} (id, name, email) VALUES ($1, $2, $3)`, [i, `user ${i}`, `user${i}@example.com`]))
  await Promise.all(inserts)
  const ms = performance.now() - t0
  console.log(`  ${fmt(ROWS)} single-row INSERTs, all in flight at once: ${ms.toFixed(0)} ms (${fmt((ROWS / ms) * 1000)} inserts/s)`)
}

async function pipelinedSelects(db: Client, table: string): Promise<number> {
  const text = `SELECT id, name, email FROM ${table} WHERE id = $1`
  await db.query(text, [1])
  const cpu = process.cpuUsage()
  const t0 = performance.now()
  const all: Promise<{ rows: { id: number }[] }>[] = new Array(PIPELINED)
  for (let i = 0; i < PIPELINED; i++) all[i] = db.query<{ id: number }>(text, [(i % ROWS) + 1])
  const results = await Promise.all(all)
  const ms = performance.now() - t0
  const us = cpuMicros(cpu) / PIPELINED
  results.forEach((r, i) => {
    if (r.rows[0]?.id !== (i % ROWS) + 1) throw new Error(`query ${i} got the wrong row`)
  })
  const qps = (PIPELINED / ms) * 1000
  console.log(`  ${fmt(PIPELINED)} SELECTs by primary key, all in flight on one connection: ${ms.toFixed(0)} ms`)
  console.log(`    ${fmt(qps)} queries/s, ${us.toFixed(2)} µs of client CPU per query; every row checked against its query`)
  return qps
}

async function sequentialSelects(db: Client, table: string): Promise<number> {
  const text = `SELECT id, name, email FROM ${table} WHERE id = $1`
  const lat: number[] = []
  const t0 = performance.now()
  for (let i = 0; i < SEQUENTIAL; i++) {
    const s = performance.now()
    await db.query(text, [(i % ROWS) + 1])
    lat.push(performance.now() - s)
  }
  const ms = performance.now() - t0
  lat.sort((a, b) => a - b)
  const qps = (SEQUENTIAL / ms) * 1000
  const p = (q: number) => (lat[Math.floor(q * (lat.length - 1))]! * 1000).toFixed(0)
  console.log(`  ${fmt(SEQUENTIAL)} SELECTs one at a time (each awaited): ${fmt(qps)} queries/s, latency p50 ${p(0.5)} µs, p99 ${p(0.99)} µs`)
  return qps
}

async function queuedMemory(db: Client): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const before = process.memoryUsage().heapUsed
  const all: Promise<unknown>[] = new Array(QUEUED)
  for (let i = 0; i < QUEUED; i++) all[i] = db.query('SELECT $1::int AS n', [i])
  const perQuery = (process.memoryUsage().heapUsed - before) / QUEUED
  const pending = db.pendingQueries
  await Promise.all(all)
  console.log(`  ${fmt(QUEUED)} queries issued in one loop: ${fmt(pending)} waiting at once, ${perQuery.toFixed(0)} bytes of heap per queued query`)
  return perQuery
}

async function main(): Promise<void> {
  const { options, server, label } = await target()
  let db: Client | undefined
  try {
    db = await connect({ ...options, applicationName: 'pipegres-demo' })
    console.log(`Connected to ${label}: PostgreSQL ${db.serverParameters.server_version}, protocol ${db.protocolVersion}${db.tls ? ', TLS' : ''}`)
    const table = `pipegres_demo_${process.pid}`
    await db.query(`CREATE TEMP TABLE ${table} (id int PRIMARY KEY, name text NOT NULL, email text NOT NULL)`)
    console.log(`Created table ${table}.`)
    await pipelinedInserts(db, table)
    const pipelined = await pipelinedSelects(db, table)
    const sequential = await sequentialSelects(db, table)
    await queuedMemory(db)
    const bad = await Promise.allSettled([db.query('SELECT 1 AS ok'), db.query('SELECT 1/0'), db.query('SELECT 2 AS ok')])
    console.log(`  an error in the middle of a pipeline fails only its own query: ${bad.map((r) => r.status).join(', ')}`)
    console.log(`Pipelining made one connection ${(pipelined / sequential).toFixed(1)}x faster than awaiting each query.`)
  } finally {
    await db?.end()
    if (server) {
      await server.stop()
      console.log('Stopped the embedded PostgreSQL and removed its directory.')
    }
  }
}

/**
 * The short benchmark: the pipelined and the read workload (W2 and W4 of `npm
 * run bench`), each client's headline variant only, at the quick sizes, whose
 * ranking matched the full run's in the quiet runs the README quotes; three
 * interleaved rounds. On a busy machine it
 * measures anyway and marks the disturbed figures (a first look should not refuse).
 */
const START_WORKLOADS = ['pipelined', 'users-read']
const START_CLIENTS = ['pipegres', 'pg', 'postgres', 'bun']

function shortBenchmark(): Promise<number> {
  const runner = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench', 'run.js')
  const args = [runner, '--quick', '--busy-ok', '--first-variants', '--workloads', START_WORKLOADS.join(','), '--clients', START_CLIENTS.join(',')]
  console.log('\nA short benchmark, pipegres against pg, postgres.js and Bun\'s SQL (client CPU per row or query is the figure to compare): starting a PostgreSQL of its own...')
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit' })
    child.on('error', reject)
    child.on('exit', (code) => resolve(code ?? 1))
  })
}

main()
  .then(async () => {
    if (process.exitCode || process.argv.includes('--no-bench')) return
    const code = await shortBenchmark()
    if (code !== 0) process.exitCode = code
    else console.log('\n`npm run bench` runs every workload (sequential, pool, app-shaped, COPY, streaming, replication, ...) at full size, with pgbench as the ceiling.')
  })
  .catch((err: unknown) => {
    console.error(err)
    process.exitCode = 1
  })
