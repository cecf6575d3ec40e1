// batch() at message level: every statement written together under one Sync
// (one implicit transaction on the server); the first failure makes the
// server skip the rest up to that Sync and roll back what ran, and the client
// sends nothing more for it: no ROLLBACK, no retry.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client, PgError } from '../../../src/index.js'
import { bindComplete, commandComplete, dataRow, errorResponse, noData, parameterDescription, parseComplete, readyForQuery, rowDescription } from '../../support/fakes/backend-messages.js'
import { expectBound, expectPrepared, NAMED, pgError, replyBound, replyPrepared } from '../../support/fakes/scripted-exchanges.js'
import { expect, pipelined, scriptedBackend, send, type Step } from '../../support/fakes/scripted-backend.js'

/**
 * A statement met for the first time is prepared in a prelude of its own:
 * Parse and Describe under a Sync of their own, so that a text the server
 * cannot parse concerns that prelude only.
 */
const prelude = (sql: string): Step[] => [expect.parse({ name: NAMED, sql }), expect.describe('S', NAMED), expect.sync()]
/** A statement of the main part: Bind and Execute, with no Sync of its own. */
const main = (): Step[] => [expect.bind({ statement: NAMED }), expect.execute({ maxRows: 0 })]
/** A prelude's answer: parsed, described (one text column, or none), ready. */
const preludeReply = (column: string | null): Uint8Array[] => [parseComplete(), parameterDescription([]), column === null ? noData() : rowDescription([column]), readyForQuery()]

test('new statements are prepared in preludes; then every statement is bound and executed under a single Sync; results come back in order', async () => {
  const be = scriptedBackend([
    [
      ...prelude('INSERT INTO t VALUES (1)'),
      ...prelude('SELECT 2 AS b'),
      ...main(),
      ...main(),
      expect.sync(),
      send(...preludeReply(null), ...preludeReply('b')),
      send(bindComplete(), commandComplete('INSERT 0 1'), bindComplete(), dataRow(['2']), commandComplete('SELECT 1'), readyForQuery()),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const [ins, sel] = await db.batch((b) => {
      b.query('INSERT INTO t VALUES (1)')
      b.query('SELECT 2 AS b')
    })
    assert.equal(ins!.command, 'INSERT')
    assert.equal(ins!.rowCount, 1)
    assert.deepEqual(sel!.rows, [{ b: '2' }])
  })
})

test('a failing statement rejects the batch with its index; the client sends no ROLLBACK, and the next query runs as usual', async () => {
  const be = scriptedBackend([
    [
      pipelined(21),
      ...prelude('INSERT INTO t VALUES (1)'),
      ...prelude('SELECT 1/0 AS boom'),
      ...prelude('SELECT 3 AS c'),
      ...main(),
      ...main(),
      ...main(),
      expect.sync(),
      send(...preludeReply(null), ...preludeReply('boom'), ...preludeReply('c')),
      // The INSERT ran; the division failed; the server skipped the third and rolled the INSERT back at the Sync.
      send(bindComplete(), commandComplete('INSERT 0 1'), bindComplete(), errorResponse(pgError('22012', 'division by zero')), readyForQuery('I')),
      ...expectPrepared('SELECT 4 AS d'),
      replyPrepared(['d'], [['4']]),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const batch = db.batch((b) => {
      b.query('INSERT INTO t VALUES (1)')
      b.query('SELECT 1/0 AS boom')
      b.query('SELECT 3 AS c')
    })
    const after = db.query('SELECT 4 AS d')
    const err = await batch.then(
      () => assert.fail('the batch succeeded'),
      (e: unknown) => e,
    )
    assert.ok(err instanceof PgError, String(err))
    assert.equal(err.code, '22012')
    assert.equal(err.batchIndex, 1)
    assert.equal(err.query, 'SELECT 1/0 AS boom')
    assert.deepEqual((await after).rows, [{ d: '4' }])
  })
})

test('a Parse that fails in a prelude fails the batch at that statement; the main part, skipped by the server, fails with it', async () => {
  const be = scriptedBackend([
    [
      ...prelude('SELECT 1 AS a'),
      ...prelude('SELECT nope'),
      ...main(),
      ...main(),
      expect.sync(),
      send(...preludeReply('a'), errorResponse(pgError('42703', 'column "nope" does not exist')), readyForQuery()),
      // The main part binds a statement the server does not have: it answers with 26000, and skips to the Sync.
      send(bindComplete(), dataRow(['1']), commandComplete('SELECT 1'), errorResponse(pgError('26000', 'prepared statement does not exist')), readyForQuery()),
      // The statement that was prepared stays cached: only Bind follows.
      ...expectBound(),
      replyBound([['1']]),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    await assert.rejects(
      db.batch((b) => {
        b.query('SELECT 1 AS a')
        b.query('SELECT nope')
      }),
      { code: '42703', batchIndex: 1 },
    )
    assert.deepEqual((await db.query('SELECT 1 AS a')).rows, [{ a: '1' }])
  })
})

test('statements prepared by an earlier batch are only bound: one Bind and Execute each, one Sync', async () => {
  const be = scriptedBackend([
    [
      ...expectPrepared('SELECT 1 AS a'),
      replyPrepared(['a'], [['1']]),
      ...main(),
      ...main(),
      expect.sync(),
      send(bindComplete(), dataRow(['1']), commandComplete('SELECT 1'), bindComplete(), dataRow(['1']), commandComplete('SELECT 1'), readyForQuery()),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    await db.query('SELECT 1 AS a')
    const results = await db.batch((b) => {
      b.query('SELECT 1 AS a')
      b.query('SELECT 1 AS a')
    })
    assert.deepEqual(
      results.map((r) => r.rows),
      [[{ a: '1' }], [{ a: '1' }]],
    )
  })
})
