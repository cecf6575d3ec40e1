import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { mainDatabase } from '../../support/servers/test-server.js'
import { repoRoot as root } from '../../support/paths.js'

// pipegres runs unchanged on Bun and Deno (both are dev dependencies): the
// same compiled smoke script, against the test server, under each. Deno runs
// it with network access and without --allow-env: connecting with full
// settings must not need to read the environment.

// The runtimes come from the repository's node_modules; the script is the compiled one.
const script = fileURLToPath(new URL('../../support/children/runtime-smoke.js', import.meta.url))

interface Outcome {
  code: number | null
  stdout: string
  stderr: string
}

function run(command: string, args: string[], input: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    // Only what a runtime needs to start: the test's PG* variables and DATABASE_URL stay out.
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, NO_COLOR: '1' }
    const child = spawn(command, args, { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(input)
  })
}

async function smoke(command: string, args: string[]): Promise<Record<string, unknown>> {
  const { connectionString } = await mainDatabase()
  assert.ok(connectionString, 'the smoke test needs the database as a connection string')
  const out = await run(command, [...args, script], JSON.stringify({ connectionString, connectTimeout: 10_000 }))
  assert.equal(out.code, 0, `${command} failed:\n${out.stderr}\n${out.stdout}`)
  const last = out.stdout.trim().split('\n').pop()!
  return JSON.parse(last) as Record<string, unknown>
}

function check(report: Record<string, unknown>): void {
  assert.equal(report.pipelined, 1000)
  assert.equal(report.types, true)
  assert.equal(report.stream, (5000 * 5001) / 2)
  assert.equal(report.cursorBatches, 3)
  assert.equal(report.copy, '1\tone\n2\ttwo\n3\tthree\n')
  assert.equal(report.notification, 'hello')
  assert.deepEqual(report.cancel, { error: 'AbortError', fast: true, after: { ok: 1 } })
  assert.equal(report.transactions, '4')
  assert.equal(report.poolConnections, 3)
  assert.equal(report.poolTransaction, 'read committed')
}

const bin = (name: string): string => join(root, 'node_modules', '.bin', name)

test('Bun runs pipegres unchanged: pipelining, types, streams, COPY, LISTEN, cancel, transactions, pools', { timeout: 120_000 }, async () => {
  assert.ok(existsSync(bin('bun')), 'bun is a dev dependency: run npm install')
  check(await smoke(bin('bun'), ['run']))
})

test('Deno runs pipegres unchanged, with network access only (no --allow-env)', { timeout: 120_000 }, async () => {
  assert.ok(existsSync(bin('deno')), 'deno is a dev dependency: run npm install')
  check(await smoke(bin('deno'), ['run', '--no-prompt', '--allow-net', '--no-config']))
})
