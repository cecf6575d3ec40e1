// test-needs: runtimes (Node 24 or 26, where this Node has no await using)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { nodeBinary } from '../../support/servers/matrix.js'
import { mainDatabase } from '../../support/servers/test-server.js'
import { disposeScenarios, type DisposeReport } from '../../support/children/dispose-scenarios.js'
import * as lib from '../../../src/index.js'
import * as replication from '../../../src/replication.js'
import * as pg from '../../../src/integrations/pg/index.js'
import { repoRoot as root } from '../../support/paths.js'

// `await using` on everything pipegres opens (test/support/children/dispose-scenarios.ts),
// each disposer checked against the server, when its scope ends and when it
// throws. Twice: compiled by tsc, which rewrites `await using` into helper
// calls (TypeScript's downlevel emit: what a TypeScript user targeting
// ES2022 runs, on Node 20 and 22 too), in this process; and as the source
// itself, run by a Node that has the syntax (24 and later) with types
// stripped. The source needs no compiling for that, so it is a helper of
// this file rather than a fixture kept apart: on Node 20 nothing ever parses
// the syntax, since the compiled file has none.

// The source is the repository's, the compiled file build/'s.
const source = join(root, 'test', 'support', 'children', 'dispose-scenarios.ts')

function check(report: DisposeReport): void {
  const expected: DisposeReport = {
    connectEnded: 'gone',
    connectThrew: true,
    connectEndedOnThrow: 'gone',
    newClientThrew: true,
    newClientEnded: 'gone',
    newClientClosed: true,
    reservationReleased: true,
    reservationState: 'idle',
    reservationRolledBack: true,
    reservedThrew: true,
    reservationReleasedOnThrow: true,
    reservationRolledBackOnThrow: true,
    poolTxThrew: true,
    poolTxRolledBack: true,
    poolTxReleased: true,
    poolThrew: true,
    poolEnded: true,
    txThrew: true,
    txRolledBack: true,
    txCommittedKept: true,
    cursorThrew: true,
    cursorOpenState: 'active',
    cursorClosedState: 'idle',
    cursorClosedNormally: 'idle',
    streamThrew: true,
    streamEndedState: 'idle',
    streamPartlyReadThrew: true,
    streamRunningState: 'active',
    streamCancelledState: 'idle',
    copyInThrew: true,
    copyInRolledBack: true,
    copyInEndedKept: true,
    copyOutThrew: true,
    copyOutState: 'idle',
    listenThrew: true,
    listening: true,
    unlistened: true,
    clientWorksAfter: true,
    subscriptionThrew: true,
    walsenderEnded: 'gone',
    temporarySlotDropped: true,
    replicationThrew: true,
    replicationEnded: 'gone',
    pgClientThrew: true,
    pgClientEnded: 'gone',
    pgPoolThrew: true,
    pgPoolClientReleased: true,
    pgPoolClientState: 'idle',
    pgPoolEnded: 'gone',
  }
  assert.deepEqual(report, expected)
}

async function url(): Promise<string> {
  const { connectionString } = await mainDatabase()
  assert.ok(connectionString, 'these tests need the database as a connection string')
  return connectionString
}

test('await using, as TypeScript compiles it for ES2022: every disposer, on this Node', async () => {
  const compiled = readFileSync(new URL('../../support/children/dispose-scenarios.js', import.meta.url), 'utf8')
  // The helper calls stand in for the syntax: this run tests the downlevel emit.
  assert.match(compiled, /__addDisposableResource/)
  assert.doesNotMatch(compiled, /await using /)
  check(await disposeScenarios(lib, replication, pg, await url()))
})

/** A Node that parses `await using`: this one from 24 on, else the test matrix's 26 or 24 when installed. */
function nativeNode(): string | null {
  if (Number(process.versions.node.split('.')[0]) >= 24) return process.execPath
  for (const line of [26, 24] as const) if (existsSync(nodeBinary(line))) return nodeBinary(line)
  return null
}

test('await using, as Node 24+ runs it natively: every disposer', async (t) => {
  const node = nativeNode()
  if (node === null) {
    t.skip(`Node ${process.versions.node} has no \`await using\` and no Node 24 or 26 is installed (npm run runtimes installs them)`)
    return
  }
  const connectionString = await url()
  const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(node, [source, connectionString], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
  assert.equal(out.code, 0, `${node} failed:\n${out.stderr}\n${out.stdout}`)
  const { node: version, report } = JSON.parse(out.stdout.trim().split('\n').pop()!) as { node: string; report: DisposeReport }
  assert.ok(Number(version.slice(1).split('.')[0]) >= 24, version)
  check(report)
})
