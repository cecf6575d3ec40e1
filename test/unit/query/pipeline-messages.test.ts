// Pipelining at message level: queries issued together are written before
// any reply, and replies are matched to them in order; an error fails only
// its own query, the server skipping to that query's Sync and no further.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client, PgError } from '../../../src/index.js'
import { expectPrepared, expectUnnamed, replyError, replyPrepared, replyUnnamed } from '../../support/fakes/scripted-exchanges.js'
import { pipelined, scriptedBackend } from '../../support/fakes/scripted-backend.js'

test('a burst of queries is written before the first reply, and each gets its own rows', async () => {
  const texts = ['SELECT 1 AS a', 'SELECT 2 AS b', 'SELECT 3 AS c']
  const be = scriptedBackend([
    [
      pipelined(15),
      ...texts.flatMap((sql, i) => [...expectPrepared(sql), replyPrepared([String.fromCharCode(97 + i)], [[String(i + 1)]])]),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const results = await Promise.all(texts.map((t) => db.query(t)))
    assert.deepEqual(
      results.map((r) => r.rows),
      [[{ a: '1' }], [{ b: '2' }], [{ c: '3' }]],
    )
  })
})
