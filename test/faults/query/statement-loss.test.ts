// A query whose named statement the server did not take (42P05: a statement
// of that name already there, as behind a pooler) is sent again once its
// Sync and the Close of an evicted statement behind it are answered. If the
// connection dies in between, the query fails: it must never be left waiting.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { connect, ConnectionError } from '../../../src/index.js'
import { bindComplete, commandComplete, concat, dataRow, errorResponse, parameterDescription, parseComplete, readyForQuery, rowDescription } from '../../support/fakes/backend-messages.js'
import { fakeServer } from '../../support/fakes/fake-server.js'

test('a query to be sent again behind the Close of an evicted statement fails when the connection dies before that Close is answered', async () => {
  let closeSeen = false
  const s = await fakeServer(async (c) => {
    await c.acceptStartup()
    await c.readUntilSync()
    c.write(concat([parseComplete(), parameterDescription([]), rowDescription([['n', 23]]), bindComplete(), dataRow(['1']), commandComplete('SELECT 1'), readyForQuery()]))
    // The second text evicts the first statement (a cache of one): its Close + Sync follow the query's Sync.
    await c.readUntilSync()
    c.write(concat([errorResponse({ S: 'ERROR', V: 'ERROR', C: '42P05', M: 'prepared statement already exists' }), readyForQuery()]))
    const close = await c.readUntilSync()
    closeSeen = close.some((m) => m.type === 'C')
    c.socket.destroy()
  })
  const db = await connect({ ...s.options, statementCacheSize: 1 })
  try {
    assert.deepEqual((await db.query('SELECT 1 AS n')).rows, [{ n: 1 }])
    const outcome = await Promise.race([db.query('SELECT 2 AS n').then(() => 'resolved', (e: unknown) => e), sleep(5000).then(() => 'still waiting after 5 s')])
    assert.ok(closeSeen, 'the evicted statement was closed behind the query')
    assert.ok(outcome instanceof ConnectionError, String(outcome))
  } finally {
    await db.end().catch(() => {})
    await s.close()
  }
})
