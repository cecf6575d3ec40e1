// test-needs: runtimes (Node 26)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { ArgumentError, connect, createPool } from '../../../../src/index.js'
import { hasTemporal } from '../../../../src/types/codec.js'
import { onNode26 } from '../../../support/newer-node.js'
import { openClient } from '../../../support/client.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { checkTemporalValues } from './temporal-api-server-cases.js'

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

if (hasTemporal()) checkTemporalValues()
else onNode26(fileURLToPath(import.meta.url), 12, { DATABASE_URL: (await mainDatabase()).connectionString ?? process.env.DATABASE_URL })
