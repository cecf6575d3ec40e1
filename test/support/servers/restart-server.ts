// Stops a server started by test/support/servers/postgres.ts and starts it again on the same
// data directory and port, for tests of a server restart with queries in
// flight. The harness itself only starts fresh servers (and stop() removes the
// data directory), so the second postmaster is this helper's own child: stop
// it with the returned stop() before the harness's stop() removes its files.

import { spawn, type ChildProcess } from 'node:child_process'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { BootstrapConnection } from './bootstrap-sql.js'
import { isAlive, logTail, serverAccount, serverEnv } from './os.js'
import type { RunningServer } from './postgres.js'

export interface Restarted {
  pid: number
  stop(): Promise<void>
}

const started = new Set<ChildProcess>()
let exitHook = false

function installExitHook(): void {
  if (exitHook) return
  exitHook = true
  // Last resort if a test dies before its finally: an immediate shutdown.
  process.on('exit', () => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT')
  })
}

async function waitForExit(pid: number, ms: number): Promise<void> {
  const deadline = performance.now() + ms
  while (isAlive(pid)) {
    if (performance.now() > deadline) throw new Error(`postmaster ${pid} did not exit within ${ms} ms`)
    await delay(20)
  }
}

/** Fast shutdown (SIGINT: open transactions are rolled back, clients get FATAL 57P01), as `pg_ctl stop -m fast`. */
export async function stopPostmaster(pid: number): Promise<void> {
  process.kill(pid, 'SIGINT')
  await waitForExit(pid, 30_000)
}

/** Starts the server's postmaster again, on its data directory and port; resolves once it accepts connections. */
export async function startAgain(server: RunningServer): Promise<Restarted> {
  installExitHook()
  const account = serverAccount()
  const log = await open(server.logFile, 'a')
  let child: ChildProcess
  try {
    child = spawn(join(server.binDir, 'postgres'), ['-D', server.dataDir], {
      cwd: join(server.dataDir, '..'),
      env: serverEnv(),
      stdio: ['ignore', log.fd, log.fd],
      ...(account ? { uid: account.uid, gid: account.gid } : {}),
    })
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', reject)
    })
  } finally {
    await log.close()
  }
  started.add(child)
  child.unref()
  const pid = child.pid!
  const stop = async (): Promise<void> => {
    if (isAlive(pid)) await stopPostmaster(pid)
    started.delete(child)
  }
  const socket = { path: join(server.socketDir, `.s.PGSQL.${server.port}`) }
  const deadline = performance.now() + 60_000
  for (;;) {
    if (!isAlive(pid)) throw new Error(`the restarted server exited; end of its log:\n${logTail(server.logFile)}`)
    try {
      const conn = await BootstrapConnection.open(socket, { user: 'postgres', timeoutMs: 5000 })
      await conn.close()
      return { pid, stop }
    } catch {
      // Not listening yet, or still starting up (57P03).
    }
    if (performance.now() > deadline) {
      await stop().catch(() => undefined)
      throw new Error(`the restarted server did not accept connections within 60 s; end of its log:\n${logTail(server.logFile)}`)
    }
    await delay(50)
  }
}
