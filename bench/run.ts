// The benchmark runner: `npm run bench -- [options]`.
//
// Starts its own PostgreSQL (fsync, synchronous_commit and full_page_writes off:
// this measures clients, not disks), creates the benchmark tables, then runs
// every client on every workload in its own child process, interleaving the
// clients round by round (A B C A B C ...), and prints medians with min–max,
// client CPU per row or query, peak RSS, and every client's ratio to pipegres.
//
//   --workloads typed-read,select-pipelined   which workloads (default: all)
//   --rounds 5                                interleaved rounds (default 5)
//   --repeat 3                                measured repetitions per child (after one warm-up)
//   --quick                                   small sizes, 3 rounds (for npm start)
//   --size 4000000                            rows or queries per workload instead of its own (e.g. to see
//                                             whether a streaming client's peak RSS grows with the data)
//   --pin                                     server on CPU 0, clients on CPU 1
//   --json <file>                             also write the raw results
// PIPEGRES_BENCH_PGBIN=<bin dir> picks the PostgreSQL installation (default: embedded).

import { execFileSync, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startServer, stopAllOnSignals } from '../harness/server.js'
import { connect } from '../src/index.js'
import type { Measurement, Task, Target } from './lib/protocol.js'
import { setupSql, streamSetupSql } from './lib/workloads.js'

const here = dirname(fileURLToPath(import.meta.url))

interface Variant {
  client: string
  variant: string
  label: string
}

interface Workload {
  name: string
  title: string
  unit: 'row' | 'query' | 'cancel'
  /** 'latency': report the median time per repetition instead of a rate. */
  show?: 'rate' | 'latency'
  size: number
  quickSize: number
  variants: Variant[]
}

const v = (client: string, variant = '', label = client): Variant => ({ client, variant, label })

const WORKLOADS: Workload[] = [
  {
    name: 'typed-read',
    title: 'Read the typed table as objects (int4, int8, float8, numeric, bool, timestamptz, date, uuid, jsonb, bytea, text[])',
    unit: 'row',
    size: 200_000,
    quickSize: 20_000,
    variants: [v('pipegres', 'binary', 'pipegres (binary)'), v('pipegres', 'text', 'pipegres (text)'), v('pg'), v('postgres')],
  },
  {
    name: 'select-pipelined',
    title: 'Single-row SELECT by primary key, all in flight on one connection',
    unit: 'query',
    size: 100_000,
    quickSize: 20_000,
    variants: [v('pipegres'), v('pg', 'pipeline', 'pg (pipeline: true)'), v('pg'), v('postgres')],
  },
  {
    name: 'pool-select',
    title: 'Single-row SELECT by primary key, all in flight over a pool of 4 connections',
    unit: 'query',
    size: 100_000,
    quickSize: 20_000,
    variants: [v('pipegres', '', 'pipegres Pool'), v('pg', '', 'pg Pool'), v('postgres', '', 'postgres (max: 4)')],
  },
  {
    name: 'cancel',
    title: 'Cancelling a running query: time from abort() (pipegres) or cancel() (postgres.js) to the rejection',
    unit: 'cancel',
    show: 'latency',
    size: 1,
    quickSize: 1,
    variants: [v('pipegres'), v('postgres')],
  },
  {
    name: 'select-sequential',
    title: 'Single-row SELECT by primary key, each awaited before the next',
    unit: 'query',
    size: 20_000,
    quickSize: 3_000,
    variants: [v('pipegres'), v('pg'), v('postgres')],
  },
  {
    name: 'stream-select',
    title: 'Stream a large SELECT (int4, text, int8) row by row or batch by batch, counting rows without keeping them',
    unit: 'row',
    size: 1_000_000,
    quickSize: 50_000,
    variants: [
      v('pipegres', 'stream', 'pipegres stream()'),
      v('pipegres', 'cursor', 'pipegres cursor(1000)'),
      v('pg', 'query-stream', 'pg + pg-query-stream (batchSize 1000)'),
      v('pg', 'cursor', 'pg + pg-cursor read(1000)'),
      v('postgres', 'cursor', 'postgres cursor(1000)'),
      v('postgres', 'forEach', 'postgres forEach()'),
    ],
  },
  {
    name: 'copy-from-text',
    title: 'COPY FROM STDIN of ready-made text COPY data (64 KiB chunks) into an emptied table',
    unit: 'row',
    size: 1_000_000,
    quickSize: 50_000,
    variants: [v('pipegres', '', 'pipegres copyFrom()'), v('pg', '', 'pg + pg-copy-streams from()'), v('postgres', '', 'postgres writable()')],
  },
  {
    name: 'copy-from-rows',
    title: 'COPY FROM STDIN of JS arrays into an emptied table: pipegres encodes them itself, the others through a hand-written text encoder (timed)',
    unit: 'row',
    size: 1_000_000,
    quickSize: 50_000,
    variants: [
      v('pipegres', 'binary', 'pipegres copyFromRows() (binary)'),
      v('pipegres', 'text', 'pipegres copyFromRows() (text)'),
      v('pg', '', 'pg + pg-copy-streams from() + JS encoder'),
      v('postgres', '', 'postgres writable() + JS encoder'),
    ],
  },
  {
    name: 'copy-to',
    title: 'COPY TO STDOUT of the whole table, counting bytes (pipegres copyToRows(): decoded rows, counted)',
    unit: 'row',
    size: 1_000_000,
    quickSize: 50_000,
    variants: [
      v('pipegres', '', 'pipegres copyTo()'),
      v('pg', '', 'pg + pg-copy-streams to()'),
      v('postgres', '', 'postgres readable()'),
      v('pipegres', 'rows', "pipegres copyToRows() (binary)"),
    ],
  },
]

/** Workloads that read the streaming table: it holds as many rows as the largest of them reads. */
const STREAM_TABLE_READERS = ['stream-select', 'copy-to']

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? undefined : process.argv[i + 1]
}
const flag = (name: string): boolean => process.argv.includes(`--${name}`)

const quick = flag('quick')
const pin = flag('pin')
const rounds = Number(arg('rounds') ?? (quick ? 3 : 5))
const repeat = Number(arg('repeat') ?? (quick ? 2 : 3))
const selected = arg('workloads')?.split(',') ?? WORKLOADS.map((w) => w.name)
const sizeOverride = arg('size') === undefined ? undefined : Number(arg('size'))
const sizeOf = (w: Workload): number => sizeOverride ?? (quick ? w.quickSize : w.size)

function runChild(v: Variant, task: Task): Promise<Measurement> {
  const script = join(here, 'clients', `${v.client}.js`)
  const [cmd, args] = pin ? ['taskset', ['-c', '1', process.execPath, script]] : [process.execPath, [script]]
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, [...args, JSON.stringify(task)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d))
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`${v.label} failed on ${task.workload} (exit ${code})`))
      else resolve(JSON.parse(out) as Measurement)
    })
  })
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

const fmt = (n: number): string => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2))

interface Row {
  label: string
  perSecond: number[]
  cpuPerUnit: number[]
  peakRss: number[]
  /** Each child's checksum of what it read or wrote. */
  checks: string[]
}

function report(w: Workload, rows: Row[]): string {
  if (w.show === 'latency') {
    const lines = [`### ${w.title}`, '', '| client | ms, median (min–max) |', '|---|---|']
    for (const r of rows) {
      const ms = r.perSecond.map((x) => 1000 / x)
      lines.push(`| ${r.label} | ${median(ms).toFixed(2)} (${Math.min(...ms).toFixed(2)}–${Math.max(...ms).toFixed(2)}) |`)
    }
    return lines.join('\n')
  }
  const base = rows[0]!
  const baseRate = median(base.perSecond)
  const lines = [
    `### ${w.title}`,
    '',
    `| client | ${w.unit === 'query' ? 'queries' : 'rows'}/s, median (min–max) | vs ${base.label} | client CPU µs/${w.unit} | peak RSS MB |`,
    '|---|---|---|---|---|',
  ]
  for (const r of rows) {
    const rate = median(r.perSecond)
    lines.push(
      `| ${r.label} | ${fmt(rate)} (${fmt(Math.min(...r.perSecond))}–${fmt(Math.max(...r.perSecond))}) | ${(rate / baseRate).toFixed(2)} | ${median(r.cpuPerUnit).toFixed(2)} | ${Math.round(median(r.peakRss) / 1048576)} |`,
    )
  }
  return lines.join('\n')
}

async function main(): Promise<void> {
  stopAllOnSignals()
  const binDir = process.env.PIPEGRES_BENCH_PGBIN
  const server = await startServer({
    name: 'bench',
    ...(binDir ? { binDir } : {}),
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', shared_buffers: '512MB', max_connections: '50' },
  })
  try {
    if (pin) execFileSync('taskset', ['-a', '-p', '-c', '0', String(server.pid)], { stdio: 'ignore' })
    const target: Target = { host: server.host, port: server.port, user: server.superuser.user, password: server.superuser.password, database: server.database }
    const workloads = WORKLOADS.filter((w) => selected.includes(w.name))
    const setup = await connect({ ...target, sslmode: 'disable' })
    const typedRows = Math.max(...workloads.map((w) => (w.name === 'typed-read' ? sizeOf(w) : 0)), 1000)
    for (const sql of setupSql(typedRows, quick ? 10_000 : 100_000)) await setup.query(sql)
    const streamRows = Math.max(...workloads.map((w) => (STREAM_TABLE_READERS.includes(w.name) ? sizeOf(w) : 0)), 1000)
    for (const sql of streamSetupSql(streamRows)) await setup.query(sql)
    await setup.end()
    console.log(`PostgreSQL ${server.versionString.replace(/^postgres \(PostgreSQL\)\s*/, '')}, ${rounds} interleaved rounds, ${repeat} measured repetitions each${pin ? ', server on CPU 0, clients on CPU 1' : ''}\n`)

    const results: Record<string, Row[]> = {}
    for (const w of workloads) {
      const size = sizeOf(w)
      const rows: Row[] = w.variants.map((v) => ({ label: v.label, perSecond: [], cpuPerUnit: [], peakRss: [], checks: [] }))
      for (let round = 0; round < rounds; round++) {
        // Rotate the order every round so that no client always runs first.
        for (let k = 0; k < w.variants.length; k++) {
          const i = (k + round) % w.variants.length
          const variant = w.variants[i]!
          const m = await runChild(variant, { target, workload: w.name, size, variant: variant.variant, repeat })
          if (m.check.startsWith('inconsistent')) console.warn(`warning: ${variant.label} on ${w.name}: ${m.check}`)
          const row = rows[i]!
          for (let r = 0; r < m.wallMs.length; r++) {
            row.perSecond.push((m.units / m.wallMs[r]!) * 1000)
            row.cpuPerUnit.push(m.cpuUs[r]! / m.units)
          }
          row.peakRss.push(m.peakRss)
          row.checks.push(m.check)
        }
      }
      results[w.name] = rows
      console.log(report(w, rows) + '\n')
    }
    const json = arg('json')
    if (json) writeFileSync(json, JSON.stringify(results, null, 2))
  } finally {
    await server.stop()
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
