// Process and account helpers for running PostgreSQL binaries, which refuse to
// run as root: under root they run as an unprivileged account instead.

import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { createServer } from 'node:net'

export interface Account {
  name: string
  uid: number
  gid: number
}

function readIdFile(path: string): string[][] {
  try {
    return readFileSync(path, 'utf8').split('\n').map((line) => line.split(':'))
  } catch {
    return []
  }
}

/** The account to run PostgreSQL as: undefined (ourselves) unless we are root. */
export function serverAccount(): Account | undefined {
  if (process.getuid?.() !== 0) return undefined
  const users = readIdFile('/etc/passwd')
  const groups = readIdFile('/etc/group')
  const user = users.find((u) => u[0] === 'postgres') ?? users.find((u) => u[0] === 'nobody')
  if (!user || user[2] === undefined || user[3] === undefined) {
    throw new Error("running as root, but neither a 'postgres' nor a 'nobody' account exists to run PostgreSQL as")
  }
  let gid = Number(user[3])
  if (user[0] === 'nobody') {
    const nogroup = groups.find((g) => g[0] === 'nogroup') ?? groups.find((g) => g[0] === 'nobody')
    if (nogroup?.[2] !== undefined) gid = Number(nogroup[2])
  }
  return { name: user[0]!, uid: Number(user[2]), gid }
}

/**
 * glibc's tunable that makes malloc ask the kernel for transparent huge pages
 * on what it maps (it takes effect where THP is in madvise mode, the common
 * default). The suite runs its servers and test processes with it: on virtual
 * machines a page fault costs tens of microseconds, and the tests that move
 * tens of MiB per value spent most of their CPU, client and server, faulting
 * in fresh 4 KiB pages (protocol/big-values: 79 CPU-s → 35). What the tests
 * measure of memory counts copies of values of 64 MiB, which 2 MiB pages do
 * not change. A GLIBC_TUNABLES that already sets it is left as it is.
 */
export function withHugePages(tunables: string | undefined): string {
  if (tunables === undefined || tunables === '') return HUGE_PAGES
  return /(^|:)glibc\.malloc\.hugetlb=/.test(tunables) ? tunables : `${tunables}:${HUGE_PAGES}`
}

/** `tunables` without the huge-page setting of withHugePages(), or undefined when nothing is left. */
export function withoutHugePages(tunables: string | undefined): string | undefined {
  const rest = (tunables ?? '').split(':').filter((t) => t !== '' && t !== HUGE_PAGES)
  return rest.length > 0 ? rest.join(':') : undefined
}

const HUGE_PAGES = 'glibc.malloc.hugetlb=1'

/** The environment for PostgreSQL binaries: PG* variables meant for clients (PGPORT, PGDATA...) would change what they do. */
export function serverEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('PG') && !key.startsWith('LC_')) env[key] = value
  }
  env.LC_ALL = 'C'
  env.LANG = 'C'
  return env
}

export interface RunOptions {
  account: Account | undefined
  cwd: string
  /** Appends the command's output to this file instead of collecting it. */
  logFile?: string
  timeoutMs?: number
}

/** Runs a command to completion; rejects with its output (or the log file's tail) when it fails. */
export async function runCommand(file: string, args: string[], options: RunOptions): Promise<string> {
  const log = options.logFile ? await open(options.logFile, 'a') : undefined
  try {
    return await new Promise<string>((resolve, reject) => {
      const child = spawn(file, args, {
        cwd: options.cwd,
        env: serverEnv(),
        stdio: ['ignore', log ? log.fd : 'pipe', log ? log.fd : 'pipe'],
        ...(options.account ? { uid: options.account.uid, gid: options.account.gid } : {}),
      })
      let output = ''
      child.stdout?.setEncoding('utf8').on('data', (s: string) => (output += s))
      child.stderr?.setEncoding('utf8').on('data', (s: string) => (output += s))
      const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000)
      child.on('error', (err) => {
        clearTimeout(timer)
        reject(new Error(`could not run ${file}: ${err.message}`, { cause: err }))
      })
      child.on('close', (code, signal) => {
        clearTimeout(timer)
        if (code === 0) return resolve(output)
        const how = signal ? `was killed by ${signal}` : `exited with code ${code}`
        const tail = options.logFile ? logTail(options.logFile) : output.trim()
        reject(new Error(`${file} ${args.join(' ')} ${how}:\n${tail}`))
      })
    })
  } finally {
    await log?.close()
  }
}

/** The last lines of a log file, for error messages. */
export function logTail(path: string, lines = 40): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch (err) {
    return `(could not read ${path}: ${(err as Error).message})`
  }
}

function listen(host: string, port: number): Promise<import('node:net').Server> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen({ host, port, exclusive: true }, () => resolve(server))
  })
}

const close = (server: import('node:net').Server) => new Promise<void>((resolve) => server.close(() => resolve()))

/** Whether this machine can listen on ::1 (containers often have IPv6 off). */
export async function hasIpv6Loopback(): Promise<boolean> {
  try {
    await close(await listen('::1', 0))
    return true
  } catch {
    return false
  }
}

/**
 * A port free on 127.0.0.1 (and ::1 when asked). Another process may still take
 * it before PostgreSQL binds it, so the caller retries when the bind fails.
 */
export async function freePort(ipv6: boolean): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const v4 = await listen('127.0.0.1', 0)
    const port = (v4.address() as import('node:net').AddressInfo).port
    try {
      if (ipv6) await close(await listen('::1', port))
      return port
    } catch (err) {
      if (attempt >= 20) throw err
    } finally {
      await close(v4)
    }
  }
}

/** Whether `port` can be bound on 127.0.0.1 (and ::1 when asked) right now. */
export async function portFree(port: number, ipv6: boolean): Promise<boolean> {
  try {
    await close(await listen('127.0.0.1', port))
    if (ipv6) await close(await listen('::1', port))
    return true
  } catch {
    return false
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4))

/** Blocks the thread: only for process 'exit' handlers, where nothing asynchronous runs any more. */
export function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms)
}

/** Whether a process is still running (a zombie, dead but not reaped by us, counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return true
  }
}
