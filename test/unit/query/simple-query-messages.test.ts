// simpleQuery() at message level: one Query message for any number of
// statements, one result per statement; an error stops the string there (the
// server runs nothing after it) and fails the call, not the queries around it.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client, PgError } from '../../../src/index.js'
import { emptyQueryResponse, errorResponse, readyForQuery } from '../../support/fakes/backend-messages.js'
import { expectPrepared, pgError, replyPrepared, simpleResult } from '../../support/fakes/scripted-exchanges.js'
import { expect, pipelined, scriptedBackend, send } from '../../support/fakes/scripted-backend.js'

test('several statements go in one Query message and come back as one result each', async () => {
  const text = "SELECT 1 AS a; CREATE TABLE t (x int); SELECT 'p' AS b, 'q' AS c"
  const be = scriptedBackend([
    [
      expect.query(text),
      send(...simpleResult('SELECT 1', ['a'], [['1']]), ...simpleResult('CREATE TABLE'), ...simpleResult('SELECT 1', ['b', 'c'], [['p', 'q']]), readyForQuery()),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const results = await db.simpleQuery(text)
    assert.deepEqual(
      results.map((r) => [r.command, r.rows]),
      [
        ['SELECT', [{ a: '1' }]],
        ['CREATE TABLE', []],
        ['SELECT', [{ b: 'p', c: 'q' }]],
      ],
    )
  })
})

test('an empty statement answers with EmptyQueryResponse and yields no rows', async () => {
  const be = scriptedBackend([[expect.query(''), send(emptyQueryResponse(), readyForQuery())]])
  await be.run(new Client(be.options), async (db) => {
    const results = await db.simpleQuery('')
    assert.ok(results.every((r) => r.rows.length === 0))
  })
})

test('an error in the middle of the string rejects the call; the queries pipelined around it keep their results', async () => {
  const be = scriptedBackend([
    [
      pipelined(11),
      ...expectPrepared('SELECT 0 AS z'),
      replyPrepared(['z'], [['0']]),
      expect.query('SELECT 1 AS a; SELECT 1/0; SELECT 3 AS c'),
      // The server stops at the error: the third statement never runs.
      send(...simpleResult('SELECT 1', ['a'], [['1']]), errorResponse(pgError('22012', 'division by zero')), readyForQuery()),
      ...expectPrepared('SELECT 4 AS d'),
      replyPrepared(['d'], [['4']]),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const [z, s, d] = await Promise.allSettled([db.query('SELECT 0 AS z'), db.simpleQuery('SELECT 1 AS a; SELECT 1/0; SELECT 3 AS c'), db.query('SELECT 4 AS d')])
    assert.deepEqual(z.status === 'fulfilled' && z.value.rows, [{ z: '0' }])
    assert.ok(s.status === 'rejected' && s.reason instanceof PgError && s.reason.code === '22012', String(s.status === 'rejected' && s.reason))
    assert.deepEqual(d.status === 'fulfilled' && d.value.rows, [{ d: '4' }])
  })
})

test('the transaction status of the last ReadyForQuery is the client\'s', async () => {
  const be = scriptedBackend([[expect.query('BEGIN'), send(...simpleResult('BEGIN'), readyForQuery('T')), expect.query('COMMIT'), send(...simpleResult('COMMIT'), readyForQuery('I'))]])
  await be.run(new Client(be.options), async (db) => {
    await db.simpleQuery('BEGIN')
    assert.equal(db.transactionStatus, 'T')
    await db.simpleQuery('COMMIT')
    assert.equal(db.transactionStatus, 'I')
  })
})
