// What the runs of peers' own test suites share (scripts/pg-suite.ts for
// node-postgres's, scripts/postgres-suite.ts for postgres.js's): the suite's
// run-suite.sh, whose folder lives beside the repository rather than in it,
// run against a built module with its output passed through and kept.

import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'

/**
 * Ends the process when `suite` is missing: an error when its path was asked
 * for (`explicit`), else a note that nothing ran and a summary line of one
 * skip, for a checkout without the peers' folder beside it.
 */
export function requireSuite(name: string, suite: string, explicit: boolean, what: string, variable: string): void {
  if (existsSync(suite)) return
  if (explicit) {
    console.error(`${name}: no run-suite.sh at ${suite}: check the path`)
    process.exit(2)
  }
  console.log(`${name}: no run-suite.sh at ${suite} (${what} are not in this repository): skipped; pass its path as the argument or in ${variable}`)
  console.log('summary: 0 passed, 0 failed, 1 skipped')
  process.exit(0)
}

/** Runs `bash suite module`, printing its output as it comes; resolves with all of it. */
export function runSuite(suite: string, module: string, env: NodeJS.ProcessEnv, timeoutMs: number, cwd?: string): Promise<string> {
  return new Promise<string>((done, reject) => {
    const child = spawn('bash', [suite, module], { env, stdio: ['ignore', 'pipe', 'inherit'], ...(cwd === undefined ? {} : { cwd }) })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      process.stdout.write(chunk)
    })
    const timer = setTimeout(() => {
      child.kill('SIGTERM')
      reject(new Error(`run-suite.sh did not finish within ${timeoutMs / 60_000} minutes`))
    }, timeoutMs)
    child.on('error', reject)
    child.on('close', () => {
      clearTimeout(timer)
      done(out)
    })
  })
}
