// Runs a flood scenario of test/support/children/flood-child.ts in a process of its own
// (started with --expose-gc, so heap figures are read after a forced
// collection), for the flood test files.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, before } from 'node:test'
import { fileURLToPath } from 'node:url'
import { mainDatabase } from './servers/test-server.js'

export const MILLION = 1_000_000
const childScript = fileURLToPath(new URL('./children/flood-child.js', import.meta.url))

// Under the runner's limit of 285 s per test, so that a child that takes longer fails with its own
// message first. A million queries take 40 s on a quiet machine; one loaded several times over
// took past 100 s.
export async function runChild(scenario: string, count?: number, timeoutMs = 200_000): Promise<Record<string, unknown>> {
  const db = await mainDatabase()
  const env: NodeJS.ProcessEnv = { ...process.env }
  if (db.connectionString !== undefined) env.PIPEGRES_FLOOD_URL = db.connectionString
  else delete env.PIPEGRES_FLOOD_URL
  // The managed server takes plain TCP: figures of the client's own, not of TLS.
  if (db.source === 'managed server') env.PIPEGRES_FLOOD_SSLMODE = 'disable'
  else delete env.PIPEGRES_FLOOD_SSLMODE
  // One collector thread: a child holds two million queries, and most of its CPU goes to collecting
  // them; helper threads beside three other test files on two cores cost a quarter more CPU for the
  // same wall time. The heap figures, read after gc(), are the same either way.
  const args = ['--expose-gc', '--single-threaded-gc', childScript, scenario, ...(count === undefined ? [] : [String(count)])]
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s))
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-4000)))
  let killed = false
  const timer = setTimeout(() => {
    killed = true
    child.kill('SIGKILL')
  }, timeoutMs)
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])))
  clearTimeout(timer)
  const why = killed ? `did not finish within ${timeoutMs / 1000} s: killed` : `exited with ${code ?? signal}`
  assert.equal(code, 0, `flood child ${scenario} ${why}:\n${stderr}\n${stdout.slice(-2000)}`)
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>
}

export const mib = (n: unknown): string => `${(n as number).toFixed(1)} MiB`
export const bytes = (n: unknown): string => (n as number).toFixed(0)

/**
 * Collects the unhandled rejections of the calling test file (hooks registered
 * at its top level) and returns the check that there were none.
 */
export function watchUnhandledRejections(): () => void {
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason)
  before(() => process.on('unhandledRejection', onUnhandled))
  after(() => process.off('unhandledRejection', onUnhandled))
  return () => assert.deepEqual(unhandled.map(String), [], 'unhandled rejections')
}
