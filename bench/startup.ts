// `npm run bench:startup`: what a client costs before its first query, against pg
// and postgres.js in one interleaved run: the CPU and wall time of importing it in
// a new process above a bare `node`, the same for a process that connects and runs
// `SELECT 1` against a local server (a serverless function's cold start), and
// what an application's bundle of `connect` + `createPool` (or the peer's
// equivalent) weighs, minified and gzipped, for Node and for Workers.
//
//   --rounds 15      interleaved rounds (default 15); medians are reported
//   --busy-ok        measure on a busy machine (figures marked)
//   --no-bundle      leave out the bundle sizes
//   --instructions   count the instructions each process runs (valgrind's
//                    callgrind, about 50x slower; default 3 rounds) instead of
//                    timing it: the same on a quiet machine and a busy one,
//                    where CPU times on a shared virtual machine move by 20%
//                    between runs. Counts every thread's (V8's compiler threads too).
//
// The clients are loaded as an application loads them: pipegres from its
// package entry (dist/, `npm run build`), pg and postgres.js from node_modules.

import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startServer, stopAllOnSignals } from '../test/support/servers/postgres.js'
import { bundle } from '../scripts/bundle-size.js'
import { describeBusy, waitForQuiet } from './lib/quiet.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? undefined : process.argv[i + 1]
}
const instructions = process.argv.includes('--instructions')
const rounds = Number(arg('rounds') ?? (instructions ? 3 : 15))
const busyOk = process.argv.includes('--busy-ok') || instructions

interface Client {
  name: string
  /** Module source that imports the client (and nothing else). */
  load: string
  /** Module source that imports it, connects to process.env.URL, runs SELECT 1 and closes. */
  query: string
  /** What an application bundling `connect` + `createPool` (or the peer's equivalent) imports. */
  bundled: string
}

const CLIENTS: Client[] = [
  {
    name: 'pipegres',
    load: `import { connect } from 'pipegres'`,
    query: `import { connect } from 'pipegres'\nconst db = await connect(process.env.URL)\nawait db.query('SELECT 1')\nawait db.end()`,
    bundled: `export { connect, createPool } from 'pipegres'`,
  },
  {
    name: 'pg',
    load: `import pg from 'pg'`,
    query: `import pg from 'pg'\nconst db = new pg.Client(process.env.URL)\nawait db.connect()\nawait db.query('SELECT 1')\nawait db.end()`,
    bundled: `export { Client, Pool } from 'pg'`,
  },
  {
    name: 'postgres.js',
    load: `import postgres from 'postgres'`,
    query: `import postgres from 'postgres'\nconst sql = postgres(process.env.URL, { max: 1 })\nawait sql\`SELECT 1\`\nawait sql.end()`,
    bundled: `export { default } from 'postgres'`,
  },
]

/**
 * The child's own CPU (user + system, from its start to its end, the loader
 * included) in µs, and the wall time the parent saw; with --instructions, the
 * instructions it ran (in `cpuUs`'s place) and the wall time under valgrind.
 */
function runChild(source: string, env: NodeJS.ProcessEnv): Promise<{ cpuUs: number; wallMs: number }> {
  const code = `${source}\nconst u = process.cpuUsage(); process.stdout.write(String(u.user + u.system))`
  const t0 = performance.now()
  const node = [process.execPath, '--input-type=module', '-e', code]
  const [command, ...args] = instructions ? ['valgrind', '--tool=callgrind', '--callgrind-out-file=/dev/null', ...node] : node
  return new Promise((resolve, reject) => {
    // From the repository, so that 'pipegres' resolves to the package itself (dist/).
    const child = spawn(command!, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (b: Buffer) => (out += b.toString()))
    child.stderr.on('data', (b: Buffer) => (err += b.toString()))
    child.on('error', (e: NodeJS.ErrnoException) => reject(e.code === 'ENOENT' && instructions ? new Error('--instructions needs valgrind (apt-get install valgrind)') : e))
    child.on('close', (status) => {
      if (status !== 0) return reject(new Error(`child exited with ${status}: ${err}`))
      if (!instructions) return resolve({ cpuUs: Number(out), wallMs: performance.now() - t0 })
      const counted = /Collected : (\d+)/.exec(err)
      if (counted === null) reject(new Error(`valgrind reported no instruction count: ${err.slice(-500)}`))
      else resolve({ cpuUs: Number(counted[1]), wallMs: performance.now() - t0 })
    })
  })
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

type Runs = { cpuUs: number; wallMs: number }[]

/** The --instructions table: millions of instructions above a bare node's, and each client's ratio to pipegres's. */
function reportInstructions(bare: Runs, load: Map<string, Runs>, query: Map<string, Runs>): void {
  const m = (runs: Runs): number => median(runs.map((r) => r.cpuUs)) / 1e6
  const bareI = m(bare)
  const pipegresLoad = m(load.get('pipegres')!) - bareI
  const pipegresQuery = m(query.get('pipegres')!) - bareI
  console.log(`Node ${process.versions.node}, ${rounds} interleaved rounds under valgrind, medians, millions of instructions; a bare node: ${bareI.toFixed(1)}M`)
  console.log('client        import: above bare   vs pipegres   |  new process to SELECT 1: above bare   vs pipegres')
  for (const c of CLIENTS) {
    const l = m(load.get(c.name)!) - bareI
    const q = m(query.get(c.name)!) - bareI
    console.log(`${c.name.padEnd(12)} ${`${l.toFixed(1)}M`.padStart(18)} ${`${(l / pipegresLoad).toFixed(2)}x`.padStart(13)}   | ${`${q.toFixed(1)}M`.padStart(36)} ${`${(q / pipegresQuery).toFixed(2)}x`.padStart(13)}`)
  }
}

async function main(): Promise<void> {
  const quiet = await waitForQuiet(60_000)
  if (!quiet.quiet && !busyOk) {
    console.error(`the machine is busy (${describeBusy(quiet.busy ?? 0)}): a startup benchmark would measure the neighbours; --busy-ok measures anyway`)
    process.exitCode = 1
    return
  }
  stopAllOnSignals()
  const server = await startServer({ name: 'startup' })
  const url = `postgres://${server.superuser.user}:${encodeURIComponent(server.superuser.password)}@${server.host}:${server.port}/${server.database}?sslmode=disable`
  const env: NodeJS.ProcessEnv = { ...process.env, URL: url }
  delete env.NODE_OPTIONS
  try {
    const bare: { cpuUs: number; wallMs: number }[] = []
    const load = new Map<string, { cpuUs: number; wallMs: number }[]>(CLIENTS.map((c) => [c.name, []]))
    const query = new Map<string, { cpuUs: number; wallMs: number }[]>(CLIENTS.map((c) => [c.name, []]))
    // One warm-up of each (the file system cache), then rounds in turn: bare, each client's import, each client's first query.
    for (const c of CLIENTS) {
      await runChild(c.load, env)
      await runChild(c.query, env)
    }
    for (let r = 0; r < rounds; r++) {
      bare.push(await runChild('', env))
      for (const c of CLIENTS) load.get(c.name)!.push(await runChild(c.load, env))
      for (const c of CLIENTS) query.get(c.name)!.push(await runChild(c.query, env))
    }
    if (instructions) return reportInstructions(bare, load, query)
    const bareCpu = median(bare.map((m) => m.cpuUs)) / 1000
    const bareWall = median(bare.map((m) => m.wallMs))
    const pipegresLoad = median(load.get('pipegres')!.map((m) => m.cpuUs)) / 1000 - bareCpu
    console.log(`Node ${process.versions.node}, ${rounds} interleaved rounds, medians; a bare node: ${bareCpu.toFixed(0)} ms CPU, ${bareWall.toFixed(0)} ms wall${quiet.quiet ? '' : ` († busy machine: ${describeBusy(quiet.busy ?? 0)})`}`)
    console.log('client        import: CPU above bare   wall above bare   vs pipegres   |  new process to SELECT 1: CPU   wall')
    for (const c of CLIENTS) {
      const cpu = median(load.get(c.name)!.map((m) => m.cpuUs)) / 1000 - bareCpu
      const wall = median(load.get(c.name)!.map((m) => m.wallMs)) - bareWall
      const qCpu = median(query.get(c.name)!.map((m) => m.cpuUs)) / 1000
      const qWall = median(query.get(c.name)!.map((m) => m.wallMs))
      console.log(
        `${c.name.padEnd(12)} ${`${cpu.toFixed(1)} ms`.padStart(22)} ${`${wall.toFixed(1)} ms`.padStart(17)} ${`${(cpu / pipegresLoad).toFixed(2)}x`.padStart(13)}   | ${`${qCpu.toFixed(0)} ms`.padStart(31)} ${`${qWall.toFixed(0)} ms`.padStart(6)}`,
      )
    }
  } finally {
    await server.stop()
  }
  if (process.argv.includes('--no-bundle')) return
  console.log('\nbundle of connect + createPool (pg: Client, Pool; postgres.js: its default), esbuild --bundle --minify, gzip -9')
  for (const target of ['node', 'workerd'] as const) {
    for (const c of CLIENTS) {
      try {
        const r = await bundle(c.bundled, target)
        console.log(`${`${c.name} (${target})`.padEnd(24)} ${`${(r.bytes / 1024).toFixed(1)} KiB`.padStart(10)} minified ${`${(r.gzip / 1024).toFixed(1)} KiB`.padStart(10)} gzipped`)
      } catch (err) {
        console.log(`${`${c.name} (${target})`.padEnd(24)} does not bundle for ${target}: ${(err as Error).message.split('\n')[0]}`)
      }
    }
  }
  const only = await bundle(`export { connect } from 'pipegres'`, 'workerd')
  console.log(`${'pipegres, connect alone (workerd)'.padEnd(24)} ${`${(only.bytes / 1024).toFixed(1)} KiB`.padStart(10)} minified ${`${(only.gzip / 1024).toFixed(1)} KiB`.padStart(10)} gzipped`)
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
