// A real pgpool-II (Debian's `pgpool2` package) in front of a primary and its
// standbys, on a free loopback port, in its usual mode: streaming replication,
// connection pooling and load balancing on.
//
//   const pgpool = await startPgpool(cluster)
//   connect(`postgres://postgres@127.0.0.1:${pgpool.port}/postgres?sslmode=disable`)
//   await pgpool.stop()

import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, chown, mkdtemp, open, rm, writeFile } from 'node:fs/promises'
import { connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, isAlive, logTail, serverAccount, serverEnv } from './os.js'

export interface PgpoolBackend {
  readonly host: string
  readonly port: number
}

export interface PgpoolOptions {
  /** Extra pgpool.conf settings, applied after the harness's own. */
  settings?: Record<string, string>
}

export interface RunningPgpool {
  readonly port: number
  readonly host: '127.0.0.1'
  readonly version: string
  readonly logFile: string
  stop(): Promise<void>
}

const CANDIDATES = ['/usr/sbin/pgpool', '/usr/bin/pgpool', '/usr/local/bin/pgpool']
const STARTUP_TIMEOUT_MS = 20_000

/** The pgpool binary: PIPEGRES_PGPOOL, else where Debian's package puts it; undefined when there is none. */
export function findPgpool(): string | undefined {
  const fromEnv = process.env.PIPEGRES_PGPOOL
  if (fromEnv) return fromEnv
  return CANDIDATES.find((p) => existsSync(p))
}

const running = new Set<ChildProcess>()
let exitHook = false

const quote = (v: string): string => `'${v.replace(/'/g, "''")}'`

/** Starts pgpool in front of `backends` (the first is the primary), user `postgres` with trust everywhere. */
export async function startPgpool(backends: readonly PgpoolBackend[], options: PgpoolOptions = {}): Promise<RunningPgpool> {
  const binary = findPgpool()
  if (binary === undefined) throw new Error('pgpool is not installed (Debian: apt-get install pgpool2; or set PIPEGRES_PGPOOL)')
  if (!exitHook) {
    exitHook = true
    // A test process that ends early must not leave a pooler behind.
    process.on('exit', () => {
      for (const child of running) child.kill('SIGKILL')
    })
  }
  const account = serverAccount()
  const dir = await mkdtemp(join(tmpdir(), 'pipegres-pgpool-'))
  const port = await freePort(false)
  const pcpPort = await freePort(false)
  const logFile = join(dir, 'pgpool.log')
  const settings: Record<string, string> = {
    listen_addresses: quote('127.0.0.1'),
    port: String(port),
    unix_socket_directories: quote(dir),
    pcp_listen_addresses: quote(''),
    pcp_port: String(pcpPort),
    pcp_socket_dir: quote(dir),
    backend_clustering_mode: quote('streaming_replication'),
    load_balance_mode: 'on',
    connection_cache: 'on',
    num_init_children: '16',
    max_pool: '2',
    enable_pool_hba: 'off',
    pool_passwd: quote(''),
    sr_check_period: '1',
    sr_check_user: quote('postgres'),
    sr_check_password: quote(''),
    health_check_period: '1',
    health_check_timeout: '2',
    health_check_user: quote('postgres'),
    health_check_password: quote(''),
    health_check_max_retries: '0',
    failover_on_backend_error: 'on',
    failover_command: quote(''),
    use_watchdog: 'off',
    logdir: quote(dir),
    pid_file_name: quote(join(dir, 'pgpool.pid')),
    log_destination: quote('stderr'),
    log_min_messages: quote('warning'),
    ...options.settings,
  }
  backends.forEach((b, i) => {
    settings[`backend_hostname${i}`] = quote(b.host)
    settings[`backend_port${i}`] = String(b.port)
    settings[`backend_weight${i}`] = '1'
    settings[`backend_flag${i}`] = quote('ALLOW_TO_FAILOVER')
  })
  const conf = Object.entries(settings).map(([k, v]) => `${k} = ${v}`)
  await writeFile(join(dir, 'pgpool.conf'), `${conf.join('\n')}\n`)
  await writeFile(join(dir, 'pcp.conf'), '')
  await writeFile(join(dir, 'pool_hba.conf'), '')
  if (account) {
    await chown(dir, account.uid, account.gid)
    for (const f of ['pgpool.conf', 'pcp.conf', 'pool_hba.conf']) await chown(join(dir, f), account.uid, account.gid)
  }
  await chmod(dir, 0o755)

  const log = await open(logFile, 'a')
  let child: ChildProcess
  try {
    // -n: stay in the foreground, so the harness owns the process.
    child = spawn(binary, ['-n', '-f', join(dir, 'pgpool.conf'), '-F', join(dir, 'pcp.conf'), '-a', join(dir, 'pool_hba.conf')], {
      cwd: dir,
      env: serverEnv(),
      stdio: ['ignore', log.fd, log.fd],
      ...(account ? { uid: account.uid, gid: account.gid } : {}),
    })
    child.unref()
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', reject)
    })
  } finally {
    await log.close()
  }
  running.add(child)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))

  const stop = async (): Promise<void> => {
    if (child.pid !== undefined && isAlive(child.pid)) {
      // SIGINT: fast shutdown (clients are disconnected).
      child.kill('SIGINT')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await exited
      clearTimeout(timer)
    }
    running.delete(child)
    await rm(dir, { recursive: true, force: true })
  }

  const deadline = Date.now() + STARTUP_TIMEOUT_MS
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const why = logTail(logFile)
      await stop()
      throw new Error(`pgpool exited at startup:\n${why}`)
    }
    if (await accepts(port)) break
    if (Date.now() > deadline) {
      const why = logTail(logFile)
      await stop()
      throw new Error(`pgpool did not listen on port ${port} within ${STARTUP_TIMEOUT_MS} ms:\n${why}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  return { port, host: '127.0.0.1', version: await versionOf(binary), logFile, stop }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

async function versionOf(binary: string): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(binary, ['--version'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s))
    child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s))
    child.on('close', () => resolve(/pgpool-II version\s+(\S+)/.exec(out)?.[1] ?? 'unknown'))
    child.on('error', () => resolve('unknown'))
  })
}
