// Pipelining at message level: queries issued together are written before
// any reply, and replies are matched to them in order; an error fails only
// its own query (the server skips to that query's Sync, no further), and a
// reply the head query cannot take closes the connection instead of being
// given to the next one.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client, ConnectionError, PgError, ProtocolError } from '../../../src/index.js'
import { bindComplete, commandComplete, dataRow, errorResponse, parameterDescription, parseComplete, readyForQuery, rowDescription } from '../../support/fakes/backend-messages.js'
import { expectBound, expectPrepared, pgError, replyError, replyPrepared, statementName } from '../../support/fakes/scripted-exchanges.js'
import { pipelined, scriptedBackend, send } from '../../support/fakes/scripted-backend.js'

test('a burst of queries is written before the first reply, and each gets its own rows', async () => {
  const texts = ['SELECT 1 AS a', 'SELECT 2 AS b', 'SELECT 3 AS c']
  const be = scriptedBackend([[pipelined(15), ...texts.flatMap((sql, i) => [...expectPrepared(sql), replyPrepared([String.fromCharCode(97 + i)], [[String(i + 1)]])])]])
  await be.run(new Client(be.options), async (db) => {
    const results = await Promise.all(texts.map((t) => db.query(t)))
    assert.deepEqual(
      results.map((r) => r.rows),
      [[{ a: '1' }], [{ b: '2' }], [{ c: '3' }]],
    )
  })
})

test('replies arriving one message at a time still go to the query they answer', async () => {
  // Each reply message in a chunk of its own: the client must not settle a query before its ReadyForQuery.
  const be = scriptedBackend([
    [
      pipelined(10),
      ...expectPrepared('SELECT 1 AS a'),
      send(parseComplete()),
      send(parameterDescription([])),
      send(rowDescription(['a'])),
      send(bindComplete()),
      send(dataRow(['1'])),
      send(commandComplete('SELECT 1')),
      send(readyForQuery()),
      ...expectPrepared('SELECT 2 AS b'),
      replyPrepared(['b'], [['2'], ['3']]),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const [a, b] = await Promise.all([db.query('SELECT 1 AS a'), db.query('SELECT 2 AS b')])
    assert.deepEqual(a.rows, [{ a: '1' }])
    assert.deepEqual(b.rows, [{ b: '2' }, { b: '3' }])
    assert.equal(b.rowCount, 2)
  })
})

test('an error mid-pipeline fails its own query only: the queries before and after it succeed', async () => {
  const be = scriptedBackend([
    [
      pipelined(15),
      ...expectPrepared('SELECT 1 AS a'),
      replyPrepared(['a'], [['1']]),
      ...expectPrepared('SELECT 1/0 AS b'),
      // Parsed, described and bound; the error comes while it executes, and the server skips to its Sync.
      replyError('22012', 'division by zero', 'I', parseComplete(), parameterDescription([]), rowDescription(['b']), bindComplete()),
      ...expectPrepared('SELECT 3 AS c'),
      replyPrepared(['c'], [['3']]),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const [a, b, c] = await Promise.allSettled([db.query('SELECT 1 AS a'), db.query('SELECT 1/0 AS b'), db.query('SELECT 3 AS c')])
    assert.deepEqual(a.status === 'fulfilled' && a.value.rows, [{ a: '1' }])
    assert.ok(b.status === 'rejected' && b.reason instanceof PgError && b.reason.code === '22012', String(b.status === 'rejected' && b.reason))
    assert.equal((b.reason as PgError).query, 'SELECT 1/0 AS b')
    assert.deepEqual(c.status === 'fulfilled' && c.value.rows, [{ c: '3' }])
  })
})

test('a Parse that fails: a query of the same text pipelined behind it, bound to the statement that never came to be, reports the Parse error', async () => {
  const name = statementName()
  const text = 'INSERT INTO missing VALUES ($1)'
  const be = scriptedBackend([
    [
      pipelined(8),
      ...expectPrepared(text, { name: name.capture, params: ['1'] }),
      replyError('42P01', 'relation "missing" does not exist'),
      // The second was written before the failure was known: it binds the same name, and the server has no such statement.
      ...expectBound({ name: name.same, params: ['2'] }),
      replyError('26000', `prepared statement "${'x'}" does not exist`),
      // Not cached: the next one parses afresh.
      ...expectPrepared(text, { params: ['3'] }),
      replyError('42P01', 'relation "missing" does not exist'),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const [first, second] = await Promise.allSettled([db.query(text, ['1']), db.query(text, ['2'])])
    for (const r of [first, second]) assert.ok(r.status === 'rejected' && r.reason instanceof PgError && r.reason.code === '42P01', String(r.status === 'rejected' && r.reason))
    await assert.rejects(db.query(text, ['3']), { code: '42P01' })
  })
})

test('a reply the head query cannot take closes the connection: no query is given another one\'s rows', async () => {
  const be = scriptedBackend([
    [
      pipelined(10),
      ...expectPrepared('SELECT 1 AS a'),
      // A DataRow where the ParseComplete belongs: the connection must not guess.
      send(dataRow(['stray'])),
      ...expectPrepared('SELECT 2 AS b'),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const [a, b] = await Promise.allSettled([db.query('SELECT 1 AS a'), db.query('SELECT 2 AS b')])
    assert.ok(a.status === 'rejected' && b.status === 'rejected')
    assert.ok(a.reason instanceof ProtocolError, String(a.reason))
    // The query behind it was sent too and fails with the same connection loss; it is not handed the stray row.
    assert.ok(b.reason instanceof ProtocolError || b.reason instanceof ConnectionError, String(b.reason))
  })
})

test('an ErrorResponse while nothing is in flight is a protocol error, not a failure pinned on the next query', async () => {
  const be = scriptedBackend([[...expectPrepared('SELECT 1 AS a'), replyPrepared(['a'], [['1']]), send(errorResponse(pgError('XX000', 'out of turn')))]])
  await be.run(new Client(be.options), async (db) => {
    const closed = new Promise<Error | null>((resolve) => db.on('disconnect', resolve))
    assert.deepEqual((await db.query('SELECT 1 AS a')).rows, [{ a: '1' }])
    const err = await closed
    assert.ok(err instanceof ProtocolError, String(err))
  })
})
