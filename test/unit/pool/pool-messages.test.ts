// A pool over scripted connections, at message level: queries issued together
// spread over new connections while the pool may open them, then go to the
// least loaded; a reservation holds one connection, and what the pool cannot
// place waits in its queue until a connection is given back; a released
// reservation leaves no transaction open behind it.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConnectionError, createPool } from '../../../src/index.js'
import { emptyQueryResponse, readyForQuery } from '../../support/fakes/backend-messages.js'
import { expectPrepared, expectUnnamed, replyPrepared, replyUnnamed, simpleResult } from '../../support/fakes/scripted-exchanges.js'
import { act, block, expect, pipelined, scriptedBackend, send, streamFails } from '../../support/fakes/scripted-backend.js'

test('queries issued together open a connection each while the pool may, then go to the least loaded, the first on a tie', async () => {
  const be = scriptedBackend([
    [pipelined(10), ...expectPrepared('SELECT 1 AS a'), ...expectPrepared('SELECT 3 AS c'), replyPrepared(['a'], [['1']]), replyPrepared(['c'], [['3']])],
    [...expectPrepared('SELECT 2 AS b'), replyPrepared(['b'], [['2']])],
  ])
  await be.run(createPool({ ...be.options, max: 2 }), async (pool) => {
    const [a, b, c] = await Promise.all([pool.query('SELECT 1 AS a'), pool.query('SELECT 2 AS b'), pool.query('SELECT 3 AS c')])
    assert.deepEqual([a.rows, b.rows, c.rows], [[{ a: '1' }], [{ b: '2' }], [{ c: '3' }]])
    assert.equal(pool.totalCount, 2)
  })
})

test('a reservation holds its connection: the pool\'s queries go to another one meanwhile', async () => {
  const be = scriptedBackend([
    [...expectPrepared('SELECT 1 AS mine'), replyPrepared(['mine'], [['1']]), ...expectPrepared('SELECT 3 AS mine_again'), replyPrepared(['mine_again'], [['3']])],
    [...expectPrepared('SELECT 2 AS other'), replyPrepared(['other'], [['2']])],
  ])
  await be.run(createPool({ ...be.options, max: 2 }), async (pool) => {
    const mine = await pool.reserve()
    assert.deepEqual((await mine.query('SELECT 1 AS mine')).rows, [{ mine: '1' }])
    assert.deepEqual((await pool.query('SELECT 2 AS other')).rows, [{ other: '2' }])
    assert.deepEqual((await mine.query('SELECT 3 AS mine_again')).rows, [{ mine_again: '3' }])
    assert.equal(pool.reservedCount, 1)
    await mine.release()
    assert.equal(pool.reservedCount, 0)
  })
})

test('a full pool with its connection reserved: queries wait in the queue and are sent once the reservation is given back', async () => {
  let waiting = -1
  const be = scriptedBackend([
    [
      ...expectPrepared('SELECT 1 AS held'),
      replyPrepared(['held'], [['1']]),
      // The reservation is released once its query is answered; only then do the waiting queries reach the connection.
      pipelined(10),
      ...expectPrepared('SELECT 2 AS queued'),
      ...expectPrepared('SELECT 3 AS queued_too'),
      replyPrepared(['queued'], [['2']]),
      replyPrepared(['queued_too'], [['3']]),
    ],
  ])
  await be.run(createPool({ ...be.options, max: 1 }), async (pool) => {
    const held = await pool.reserve()
    const queued = [pool.query('SELECT 2 AS queued'), pool.query('SELECT 3 AS queued_too')]
    waiting = pool.waitingCount
    assert.deepEqual((await held.query('SELECT 1 AS held')).rows, [{ held: '1' }])
    await held.release()
    const results = await Promise.all(queued)
    assert.deepEqual(
      results.map((r) => r.rows),
      [[{ queued: '2' }], [{ queued_too: '3' }]],
    )
    assert.equal(waiting, 2)
  })
})

test('a reservation released with a transaction open: its status is asked with an empty query, then ROLLBACK, then reset', async () => {
  const be = scriptedBackend([
    [
      ...expectUnnamed('BEGIN'),
      replyUnnamed([], [], { tag: 'BEGIN', status: 'T' }),
      expect.query(''),
      send(emptyQueryResponse(), readyForQuery('T')),
      expect.query('ROLLBACK'),
      send(...simpleResult('ROLLBACK'), readyForQuery('I')),
      expect.query('DISCARD ALL'),
      send(...simpleResult('DISCARD ALL'), readyForQuery('I')),
    ],
  ])
  await be.run(createPool({ ...be.options, max: 1, reset: 'DISCARD ALL' }), async (pool) => {
    const conn = await pool.reserve()
    await conn.query('BEGIN', [], { prepare: false })
    await conn.release()
  })
})

test('pool.begin() runs on a reservation of its own: BEGIN and COMMIT there, the pool\'s other queries on another connection', async () => {
  const be = scriptedBackend([
    [
      ...expectUnnamed('BEGIN'),
      ...expectPrepared('UPDATE t SET a = 1'),
      replyUnnamed([], [], { tag: 'BEGIN', status: 'T' }),
      replyPrepared([], [], { tag: 'UPDATE 1', status: 'T' }),
      act('the pool runs a query outside the transaction', () => outside()),
      ...expectUnnamed('COMMIT'),
      replyUnnamed([], [], { tag: 'COMMIT' }),
    ],
    [...expectPrepared('SELECT 1 AS outside'), replyPrepared(['outside'], [['1']])],
  ])
  let outside: () => Promise<unknown> = async () => {}
  await be.run(createPool({ ...be.options, max: 2 }), async (pool) => {
    outside = () => pool.query('SELECT 1 AS outside')
    await pool.begin(async (tx) => {
      await tx.query('UPDATE t SET a = 1')
    })
  })
})

test('a pool connection lost with queries it never wrote: those go to a new connection; the written one fails saying it may have run', async () => {
  const be = scriptedBackend([
    [...expectPrepared('SELECT 0 AS z'), replyPrepared(['z'], [['0']]), block(), ...expectPrepared('SELECT 1 AS a'), streamFails()],
    [pipelined(10), ...expectPrepared('SELECT 2 AS b'), ...expectPrepared('SELECT 3 AS c'), replyPrepared(['b'], [['2']]), replyPrepared(['c'], [['3']])],
  ])
  await be.run(createPool({ ...be.options, max: 1 }), async (pool) => {
    await pool.query('SELECT 0 AS z')
    const a = pool.query('SELECT 1 AS a')
    await new Promise((r) => setImmediate(r))
    const [ra, rb, rc] = await Promise.allSettled([a, pool.query('SELECT 2 AS b'), pool.query('SELECT 3 AS c')])
    assert.ok(ra.status === 'rejected' && ra.reason instanceof ConnectionError && ra.reason.mayHaveRun === true, String(ra.status === 'rejected' && ra.reason))
    assert.deepEqual(rb.status === 'fulfilled' && rb.value.rows, [{ b: '2' }])
    assert.deepEqual(rc.status === 'fulfilled' && rc.value.rows, [{ c: '3' }])
  })
})
