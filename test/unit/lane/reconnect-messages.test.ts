// A lane's connection lost mid-pipeline, at message level: what was written
// fails with an error that says it may have run; what was never written goes
// to the next connection, in its order; after a FATAL outside a transaction
// the queries pipelined behind the interrupted one never started, and go
// again too; a transaction's queries never move to another connection. No
// result is ever given to a query it does not answer.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client, ConnectionError, type Result } from '../../../src/index.js'
import { errorResponse, notification } from '../../support/fakes/backend-messages.js'
import { expectPrepared, expectUnnamed, replyPrepared, replyUnnamed } from '../../support/fakes/scripted-exchanges.js'
import { block, pipelined, refused, scriptedBackend, send, streamFails } from '../../support/fakes/scripted-backend.js'

/** Settles every promise, then says for each: its rows, or its error. */
async function outcomes(queries: Promise<Result>[]): Promise<(unknown[] | Error)[]> {
  return (await Promise.allSettled(queries)).map((s) => (s.status === 'fulfilled' ? s.value.rows : (s.reason as Error)))
}

function mayHaveRun(e: unknown): boolean {
  return e instanceof ConnectionError && e.mayHaveRun === true && /may have run/.test(e.message)
}

test('the stream fails with queries written: each fails saying it may have run; the next query opens a new connection', async () => {
  const be = scriptedBackend([
    [pipelined(10), ...expectPrepared('SELECT 1 AS a'), ...expectPrepared('SELECT 2 AS b'), streamFails()],
    [...expectPrepared('SELECT 3 AS c'), replyPrepared(['c'], [['3']])],
  ])
  await be.run(new Client(be.options), async (db) => {
    const lost = new Promise<Error>((resolve) => db.once('disconnect', resolve))
    const [a, b] = await outcomes([db.query('SELECT 1 AS a'), db.query('SELECT 2 AS b')])
    assert.ok(mayHaveRun(a), String(a))
    assert.ok(mayHaveRun(b), String(b))
    assert.ok((await lost) instanceof ConnectionError)
    assert.deepEqual((await db.query('SELECT 3 AS c')).rows, [{ c: '3' }])
  })
})

test('queries not yet written when the stream fails (it was not draining) are sent on the next connection, in order', async () => {
  const be = scriptedBackend([
    [
      ...expectPrepared('SELECT 0 AS z'),
      replyPrepared(['z'], [['0']]),
      // From here write() says "wait for drain": what the client has not written yet stays in its queue.
      block(),
      ...expectPrepared('SELECT 1 AS a'),
      streamFails(),
    ],
    [pipelined(10), ...expectPrepared('SELECT 2 AS b'), replyPrepared(['b'], [['2']]), ...expectPrepared('SELECT 3 AS c'), replyPrepared(['c'], [['3']])],
  ])
  await be.run(new Client(be.options), async (db) => {
    await db.query('SELECT 0 AS z')
    const queries = [db.query('SELECT 1 AS a')]
    // Issued on a later turn, once the first was handed to the stream and refused for more.
    await new Promise((r) => setImmediate(r))
    queries.push(db.query('SELECT 2 AS b'), db.query('SELECT 3 AS c'))
    const [a, b, c] = await outcomes(queries)
    assert.ok(mayHaveRun(a), String(a))
    assert.deepEqual(b, [{ b: '2' }])
    assert.deepEqual(c, [{ c: '3' }])
  })
})

test('a FATAL while the head query runs: the queries pipelined behind it never started, and run on the next connection', async () => {
  const be = scriptedBackend([
    [
      pipelined(15),
      ...expectPrepared('SELECT 1 AS a'),
      ...expectPrepared('SELECT 2 AS b'),
      ...expectPrepared('SELECT 3 AS c'),
      send(errorResponse({ S: 'FATAL', V: 'FATAL', C: '57P01', M: 'terminating connection due to administrator command' })),
    ],
    [pipelined(10), ...expectPrepared('SELECT 2 AS b'), replyPrepared(['b'], [['2']]), ...expectPrepared('SELECT 3 AS c'), replyPrepared(['c'], [['3']])],
  ])
  await be.run(new Client(be.options), async (db) => {
    const [a, b, c] = await outcomes([db.query('SELECT 1 AS a'), db.query('SELECT 2 AS b'), db.query('SELECT 3 AS c')])
    assert.ok(a instanceof ConnectionError && /administrator command/.test(a.message), String(a))
    assert.deepEqual(b, [{ b: '2' }])
    assert.deepEqual(c, [{ c: '3' }])
  })
})

test('a transaction whose connection is lost fails: its queries are not sent on the next connection, and no ROLLBACK goes there', async () => {
  const be = scriptedBackend([
    [pipelined(10), ...expectUnnamed('BEGIN'), ...expectPrepared('INSERT INTO t VALUES (1)'), replyUnnamed([], [], { tag: 'BEGIN', status: 'T' }), streamFails()],
    [...expectPrepared('SELECT 1 AS after'), replyPrepared(['after'], [['1']])],
  ])
  await be.run(new Client(be.options), async (db) => {
    const err = await db.begin((tx) => tx.query('INSERT INTO t VALUES (1)')).catch((e: unknown) => e)
    assert.ok(mayHaveRun(err), String(err))
    assert.deepEqual((await db.query('SELECT 1 AS after')).rows, [{ after: '1' }])
  })
})

test('a lost connection whose next attempt is refused: the queries waiting for it fail with the attempt\'s error, saying they never ran', async () => {
  const be = scriptedBackend([
    [...expectPrepared('SELECT 0 AS z'), replyPrepared(['z'], [['0']]), block(), ...expectPrepared('SELECT 1 AS a'), streamFails()],
    refused('no route to the scripted host'),
  ])
  await be.run(new Client(be.options), async (db) => {
    await db.query('SELECT 0 AS z')
    const a = db.query('SELECT 1 AS a')
    await new Promise((r) => setImmediate(r))
    const [ra, rb] = await outcomes([a, db.query('SELECT 2 AS b')])
    assert.ok(mayHaveRun(ra), String(ra))
    assert.ok(rb instanceof ConnectionError && /no route to the scripted host/.test(rb.message) && rb.mayHaveRun !== true, String(rb))
  })
})

test('a listening client reconnects on its own after a loss and listens again before anything else; notifications reach the handler', async () => {
  let heard: (payload: string) => void = () => {}
  const payload = new Promise<string>((resolve) => (heard = resolve))
  const be = scriptedBackend([
    [...expectPrepared('LISTEN "jobs"'), replyPrepared([], [], { tag: 'LISTEN' }), streamFails()],
    [...expectPrepared('LISTEN "jobs"'), replyPrepared([], [], { tag: 'LISTEN' }), send(notification(2001, 'jobs', 'hello'))],
  ])
  await be.run(new Client(be.options), async (db) => {
    await db.listen('jobs', (p) => heard(p))
    assert.equal(await payload, 'hello')
  })
})
