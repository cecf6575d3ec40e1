// The rarer built-in codecs (network, geometry, bit strings, text search,
// ranges, records, composites: types/codecs/extra.ts) load the first time a
// connection meets one of their types. Each scenario runs in a new process,
// where they have not loaded, and must read exactly what the same scenario
// reads here with them loaded: rows held while they load, parameters that
// need them written only once they are there, whatever the path (query,
// pipelined statements, typed(), stream, cursor, batch, simple query,
// composites learned from pg_type, COPY, describe).

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { connect, type Client } from '../../../src/index.js'
import { extraCodecs, loadExtraCodecs } from '../../../src/types/builtins.js'
import { json, runScenario, SCENARIOS, type LazyReport, type Scenario } from '../../support/children/lazy-codecs-child.js'
import { runCommand } from '../../support/servers/os.js'
import { mainDatabase } from '../../support/servers/test-server.js'
import { repoRoot } from '../../support/paths.js'
import { serverOnly, NOT_ON_PGLITE } from '../../support/target.js'

const child = fileURLToPath(new URL('../../support/children/lazy-codecs-child.js', import.meta.url))

/** One scenario in a new process: what it reports (its last line of JSON). */
async function runChild(scenario: Scenario, url: string): Promise<LazyReport> {
  const out = await runCommand(process.execPath, [child, scenario, url], { account: undefined, cwd: repoRoot, timeoutMs: 60_000 })
  return JSON.parse(out.trim().split('\n').filter((line) => line.startsWith('{')).pop()!) as LazyReport
}

test('a program that meets no rarer type never loads their codecs', serverOnly(NOT_ON_PGLITE.serverSettings), async () => {
  const { connectionString } = await mainDatabase()
  assert.ok(connectionString, 'this test needs the database as a connection string')
  const report = await runChild('core-only', connectionString)
  assert.deepEqual(report, { loadedAtStart: false, loadedAtEnd: false, result: [{ a: 1, b: 'x', c: true, d: [1.5] }] })
})

test('each path reads the rarer types, met first, as it reads them once their codecs are loaded', serverOnly(NOT_ON_PGLITE.serverSettings), async () => {
  const { connectionString } = await mainDatabase()
  assert.ok(connectionString, 'this test needs the database as a connection string')
  await loadExtraCodecs()
  assert.ok(extraCodecs() !== null)
  const expected = new Map<Scenario, unknown>()
  for (const s of SCENARIOS) {
    if (s === 'core-only') continue
    // A connection each, as the child has: a statement's first execution reads its rows in text, later ones may in binary.
    const db: Client = await connect(connectionString)
    try {
      expected.set(s, JSON.parse(json(await runScenario(s, db))))
    } finally {
      await db.end()
    }
  }
  // What is expected is what the codecs read, not the text fallback (points, ranges and composites as objects):
  // the comparison below would pass if both read text.
  const [row] = expected.get('query') as Record<string, unknown>[]
  assert.deepEqual(row, { inet: '10.1.2.3/8', mac: '08:00:2b:01:02:03', bits: '101', point: { x: 1.5, y: 2 }, ts: "'a':1 'b':2", range: { range: [1, 5, true, false, false] }, inets: ['1.2.3.4', null], rec: ['1', '1.1.1.1'], n: 7 })
  const [h] = expected.get('composite') as { h: Record<string, unknown> }[]
  assert.deepEqual(h!.h, { name: 'db', addr: '10.0.0.9', spot: { x: 1, y: 1 } })

  // Two processes at a time: each starts a Node and a connection.
  const reports = new Map<Scenario, LazyReport>()
  const queue = SCENARIOS.filter((s) => s !== 'core-only')
  await Promise.all(
    [0, 1].map(async () => {
      for (let s = queue.shift(); s !== undefined; s = queue.shift()) reports.set(s, await runChild(s, connectionString))
    }),
  )
  for (const [s, report] of reports) {
    assert.equal(report.loadedAtStart, false, `${s}: the codecs had loaded before its first query`)
    assert.equal(report.loadedAtEnd, true, `${s}: the codecs never loaded`)
    assert.deepEqual(report.result, expected.get(s), `${s} read differently with the codecs loaded on first use`)
  }
})
