// A real PgBouncer (Debian's `pgbouncer` package, 1.18 on bookworm; or 1.24,
// built from Debian trixie's source by scripts/build-pgbouncer.sh) in front of a
// test server, on a free loopback port, for tests and benchmarks of pooler behaviour.
//
//   const bouncer = await startPgBouncer(server, { poolMode: 'transaction', poolSize: 2 })
//   connect(`postgres://postgres@127.0.0.1:${bouncer.port}/postgres?sslmode=disable`)
//   await bouncer.stop()

import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, chown, mkdtemp, open, rm, writeFile } from 'node:fs/promises'
import { connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, isAlive, logTail, serverAccount, serverEnv, withoutHugePages } from './os.js'
import { repoRoot } from '../paths.js'

export interface PgBouncerOptions {
  poolMode: 'session' | 'transaction' | 'statement'
  /** Server connections per database and user. */
  poolSize: number
  /** Extra [pgbouncer] settings. */
  settings?: Record<string, string>
  /** The binary to run (default: findPgBouncer()). */
  binary?: string
}

export interface RunningPgBouncer {
  port: number
  host: '127.0.0.1'
  version: string
  logFile: string
  stop(): Promise<void>
}

/** What a PgBouncer needs of the server behind it: where its Unix socket is, and a role that logs in there with trust. */
export interface BackendServer {
  socketDir: string
  port: number
  superuser: { user: string }
}

const CANDIDATES = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer']
const STARTUP_TIMEOUT_MS = 15_000

/** The pgbouncer binary: PIPEGRES_PGBOUNCER, else where Debian's package puts it; undefined when there is none. */
export function findPgBouncer(): string | undefined {
  const fromEnv = process.env.PIPEGRES_PGBOUNCER
  if (fromEnv) return fromEnv
  return CANDIDATES.find((p) => existsSync(p))
}

/** What builds PgBouncer 1.24 where findPgBouncer124() looks (repository-relative). */
export const PGBOUNCER_124_SCRIPT = 'scripts/build-pgbouncer.sh'

/**
 * PgBouncer 1.24 (protocol-level prepared statements, max_prepared_statements):
 * PIPEGRES_PGBOUNCER_124, else .tmp/pgbouncer-1.24/bin/pgbouncer in the
 * repository, where scripts/build-pgbouncer.sh puts it; undefined when there is none.
 */
export function findPgBouncer124(): string | undefined {
  const fromEnv = process.env.PIPEGRES_PGBOUNCER_124
  if (fromEnv) return fromEnv
  const built = join(repoRoot, '.tmp', 'pgbouncer-1.24', 'bin', 'pgbouncer')
  return existsSync(built) ? built : undefined
}

const running = new Set<ChildProcess>()
let exitHook = false

/**
 * PgBouncer runs on malloc's defaults, without the huge pages the runner gives
 * the rest of the suite (withHugePages in os.ts): with them its reads come in
 * other steps, and PgBouncer 1.18's transaction-mode bug got past the
 * client's in-flight bound in 2 of 3 deep-pipeline runs, where it had passed
 * every run without them. The bound narrows that bug's window and does not
 * close it (lane/probe.ts); the pooler is tested as distributions run it.
 */
function pgbouncerEnv(): NodeJS.ProcessEnv {
  const env = serverEnv()
  const tunables = withoutHugePages(env.GLIBC_TUNABLES)
  if (tunables === undefined) delete env.GLIBC_TUNABLES
  else env.GLIBC_TUNABLES = tunables
  return env
}

export async function startPgBouncer(server: BackendServer, options: PgBouncerOptions): Promise<RunningPgBouncer> {
  const binary = options.binary ?? findPgBouncer()
  if (binary === undefined) throw new Error('pgbouncer is not installed (Debian: apt-get install pgbouncer; or set PIPEGRES_PGBOUNCER)')
  if (!exitHook) {
    exitHook = true
    // A test process that ends early must not leave a pooler behind.
    process.on('exit', () => {
      for (const child of running) child.kill('SIGKILL')
    })
  }
  // PgBouncer refuses to run as root: run it as the account the test server runs as.
  const account = serverAccount()
  const dir = await mkdtemp(join(tmpdir(), 'pipegres-pgbouncer-'))
  const port = await freePort(false)
  const logFile = join(dir, 'pgbouncer.log')
  const settings: Record<string, string> = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: join(dir, 'users.txt'),
    pool_mode: options.poolMode,
    default_pool_size: String(options.poolSize),
    min_pool_size: '0',
    reserve_pool_size: '0',
    max_client_conn: '500',
    logfile: logFile,
    pidfile: join(dir, 'pgbouncer.pid'),
    admin_users: server.superuser.user,
    ...options.settings,
  }
  const ini = [
    '[databases]',
    `* = host=${server.socketDir} port=${server.port}`,
    '[pgbouncer]',
    ...Object.entries(settings).map(([k, v]) => `${k} = ${v}`),
    '',
  ].join('\n')
  await writeFile(join(dir, 'pgbouncer.ini'), ini)
  await writeFile(join(dir, 'users.txt'), `"${server.superuser.user}" ""\n`)
  if (account) {
    await chown(dir, account.uid, account.gid)
    for (const f of ['pgbouncer.ini', 'users.txt']) await chown(join(dir, f), account.uid, account.gid)
  }
  await chmod(dir, 0o755)

  const log = await open(join(dir, 'stdout.log'), 'a')
  let child: ChildProcess
  try {
    child = spawn(binary, [join(dir, 'pgbouncer.ini')], {
      cwd: dir,
      env: pgbouncerEnv(),
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
      // SIGINT: safe shutdown, waiting for no client (the tests have ended theirs).
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
      const why = `${logTail(logFile)}\n${logTail(join(dir, 'stdout.log'))}`
      await stop()
      throw new Error(`pgbouncer exited at startup:\n${why}`)
    }
    if (await accepts(port)) break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`pgbouncer did not listen on port ${port} within ${STARTUP_TIMEOUT_MS} ms:\n${logTail(logFile)}`)
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
    const child = spawn(binary, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s))
    child.on('close', () => resolve(/PgBouncer\s+(\S+)/.exec(out)?.[1] ?? 'unknown'))
    child.on('error', () => resolve('unknown'))
  })
}
