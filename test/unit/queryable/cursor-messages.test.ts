// cursor() at message level: the portal executed with a row limit and a
// Flush (no Sync, which would end it), PortalSuspended between batches, the
// next batch asked for while the current one is in use, a Sync once the
// portal is exhausted; queries issued meanwhile wait behind it.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client } from '../../../src/index.js'
import { bindComplete, closeComplete, commandComplete, dataRow, parameterDescription, parseComplete, portalSuspended, readyForQuery, rowDescription } from '../../support/fakes/backend-messages.js'
import { expectPrepared, NAMED, replyPrepared } from '../../support/fakes/scripted-exchanges.js'
import { expect, scriptedBackend, send, type Step } from '../../support/fakes/scripted-backend.js'

const text = 'SELECT g FROM generate_series(1, 5) g'

/** The cursor's statement, described before it is bound (its rows are decoded as they come). */
const describeFirst: Step[] = [
  expect.parse({ name: NAMED, sql: text }),
  expect.describe('S', NAMED),
  expect.flush(),
  send(parseComplete(), parameterDescription([]), rowDescription(['g'])),
  expect.bind({ statement: NAMED }),
  expect.execute({ portal: '', maxRows: 2 }),
  expect.flush(),
]

test('rows come in batches: Execute with a row limit, PortalSuspended, the next Execute, and Sync once the portal is exhausted', async () => {
  const be = scriptedBackend([
    [
      ...describeFirst,
      send(bindComplete(), dataRow(['1']), dataRow(['2']), portalSuspended()),
      expect.execute({ maxRows: 2 }),
      expect.flush(),
      send(dataRow(['3']), dataRow(['4']), portalSuspended()),
      expect.execute({ maxRows: 2 }),
      expect.flush(),
      send(dataRow(['5']), commandComplete('SELECT 5')),
      expect.sync(),
      send(readyForQuery()),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const batches: unknown[][] = []
    const cursor = db.cursor(text, [], { batchSize: 2 })
    for await (const rows of cursor) batches.push(rows)
    assert.deepEqual(batches, [[{ g: '1' }, { g: '2' }], [{ g: '3' }, { g: '4' }], [{ g: '5' }]])
    assert.equal(cursor.rowCount, 5)
  })
})

test('a query issued while the cursor is open is written only after the cursor\'s Sync', async () => {
  const be = scriptedBackend([
    [
      ...describeFirst,
      send(bindComplete(), dataRow(['1']), dataRow(['2']), portalSuspended()),
      expect.execute({ maxRows: 2 }),
      expect.flush(),
      send(dataRow(['3']), commandComplete('SELECT 3')),
      expect.sync(),
      ...expectPrepared('SELECT 9 AS n'),
      send(readyForQuery()),
      replyPrepared(['n'], [['9']]),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const cursor = db.cursor(text, [], { batchSize: 2 })
    const first = await cursor.read()
    assert.deepEqual(first, [{ g: '1' }, { g: '2' }])
    const other = db.query('SELECT 9 AS n')
    const rest: unknown[] = []
    for (let rows = await cursor.read(); rows.length > 0; rows = await cursor.read()) rest.push(...rows)
    assert.deepEqual(rest, [{ g: '3' }])
    assert.deepEqual((await other).rows, [{ n: '9' }])
  })
})

test('closing a cursor between batches closes its portal (Close P + Sync): no cancel is needed', async () => {
  const be = scriptedBackend([
    [
      ...describeFirst,
      send(bindComplete(), dataRow(['1']), dataRow(['2']), portalSuspended()),
      // The next batch is fetched while the first is in use.
      expect.execute({ maxRows: 2 }),
      expect.flush(),
      send(dataRow(['3']), dataRow(['4']), portalSuspended()),
      expect.close('P', ''),
      expect.sync(),
      send(closeComplete(), readyForQuery()),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const cursor = db.cursor(text, [], { batchSize: 2 })
    for await (const rows of cursor) {
      assert.deepEqual(rows, [{ g: '1' }, { g: '2' }])
      break
    }
    assert.equal(be.cancels.length, 0)
  })
})
