import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { ArgumentError, connect, createPool } from '../../src/index.js'
import { hasTemporal } from '../../src/types/codec.js'
import { missingRuntime, nodeBinary } from '../../harness/matrix.js'
import { openClient } from '../helpers/client.js'
import { mainDatabase } from '../helpers/server.js'
import { checkTemporalValues } from './temporal-api-cases.js'

// The temporal type option against a real server: on a runtime with the
// global Temporal (Node 26) every value in both formats, parameters and
// COPY; on one without, the option is refused with an ArgumentError, and the
// Temporal tests run in a child on Node 26 (they are never skipped).

/** Runs `f` with the global Temporal taken away (on a runtime that has one), to see the option refused as where it is missing. */
async function withoutTemporal<T>(f: () => Promise<T>): Promise<T> {
  const g = globalThis as { Temporal?: unknown }
  const saved = Object.getOwnPropertyDescriptor(g, 'Temporal')
  delete g.Temporal
  try {
    return await f()
  } finally {
    if (saved !== undefined) Object.defineProperty(g, 'Temporal', saved)
  }
}

const refused = (e: unknown) => e instanceof ArgumentError && /types\.temporal needs the global Temporal/.test(e.message) && /Node 26/.test(e.message)

test('without the global Temporal, the option is an ArgumentError for a client, a pool and a query', async () => {
  const db = await mainDatabase()
  await withoutTemporal(async () => {
    assert.equal(hasTemporal(), false)
    await assert.rejects(async () => connect({ ...db.options, types: { temporal: true } }), refused)
    assert.throws(() => createPool({ ...db.options, types: { temporal: true } }), refused)
    const client = await openClient()
    try {
      await assert.rejects(client.query('SELECT 1', [], { types: { temporal: true } }), refused)
      // Off is off: nothing is needed for it.
      assert.deepEqual((await client.query('SELECT 1 AS n', [], { types: { temporal: false } })).rows, [{ n: 1 }])
    } finally {
      await client.end()
    }
  })
  await assert.rejects(async () => connect({ ...db.options, types: { temporal: 'yes' as never } }), (e: unknown) => e instanceof ArgumentError && /must be one of false, true/.test(e.message))
})

if (hasTemporal()) {
  checkTemporalValues()
} else {
  test('the Temporal values, on Node 26 (this runtime has no Temporal)', async () => {
    const node = nodeBinary(26)
    const missing = missingRuntime(node)
    assert.equal(missing, undefined, missing)
    const db = await mainDatabase()
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db.connectionString ?? process.env.DATABASE_URL }
    // The child reports on its own, not as a subtest of this runner.
    delete env.NODE_TEST_CONTEXT
    const out = await new Promise<string>((resolve, reject) => {
      execFile(node, ['--test-reporter=tap', fileURLToPath(import.meta.url)], { env, timeout: 240_000 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`the Temporal tests failed on Node 26:\n${stdout}\n${stderr}`))
        else resolve(stdout)
      })
    })
    const pass = /^# pass (\d+)/m.exec(out)
    assert.ok(pass !== null && Number(pass[1]) >= 10, `expected the Temporal tests to pass on Node 26:\n${out}`)
  })
}
