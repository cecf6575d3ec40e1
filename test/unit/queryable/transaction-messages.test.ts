// Transactions at message level: BEGIN pipelined with the transaction's
// first statements, COMMIT after them, ROLLBACK when the function throws;
// COMMIT answered with ROLLBACK (a statement had failed) is an error; and
// nothing from outside the transaction is written while it holds the
// connection.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client, PgError, TransactionError, type Result } from '../../../src/index.js'
import { bindComplete, closeComplete, noData, parameterDescription, parseComplete, readyForQuery, rowDescription } from '../../support/fakes/backend-messages.js'
import { expectBound, expectPrepared, expectUnnamed, replyBound, replyError, replyPrepared, replyUnnamed, statementName } from '../../support/fakes/scripted-exchanges.js'
import { expect, pipelined, scriptedBackend, send, where } from '../../support/fakes/scripted-backend.js'

test('BEGIN, the statements, COMMIT: in that order, BEGIN written with the first statement before any reply', async () => {
  const be = scriptedBackend([
    [
      pipelined(10),
      ...expectUnnamed('BEGIN'),
      replyUnnamed([], [], { tag: 'BEGIN', status: 'T' }),
      ...expectPrepared('INSERT INTO t VALUES (1)'),
      replyPrepared([], [], { tag: 'INSERT 0 1', status: 'T' }),
      ...expectUnnamed('COMMIT'),
      replyUnnamed([], [], { tag: 'COMMIT', status: 'I' }),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const r = await db.begin(async (tx) => (await tx.query('INSERT INTO t VALUES (1)')).rowCount)
    assert.equal(r, 1)
    assert.equal(db.transactionStatus, 'I')
  })
})

test('a function that throws after a failed statement: ROLLBACK is sent, and the statement\'s error is what the caller gets', async () => {
  const be = scriptedBackend([
    [
      ...expectUnnamed('BEGIN'),
      ...expectPrepared('INSERT INTO t VALUES (1)'),
      replyUnnamed([], [], { tag: 'BEGIN', status: 'T' }),
      replyError('23505', 'duplicate key value violates unique constraint "t_pkey"', 'E', parseComplete(), parameterDescription([]), noData(), bindComplete()),
      ...expectUnnamed('ROLLBACK'),
      replyUnnamed([], [], { tag: 'ROLLBACK', status: 'I' }),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const err = await db.begin((tx) => tx.query('INSERT INTO t VALUES (1)')).catch((e: unknown) => e)
    assert.ok(err instanceof PgError && err.code === '23505', String(err))
    assert.equal(db.transactionStatus, 'I')
  })
})

test('a failed statement the function caught: COMMIT is answered with ROLLBACK, and the transaction rejects with a TransactionError', async () => {
  const be = scriptedBackend([
    [
      ...expectUnnamed('BEGIN'),
      ...expectPrepared('SELECT 1/0 AS x'),
      replyUnnamed([], [], { tag: 'BEGIN', status: 'T' }),
      replyError('22012', 'division by zero', 'E', parseComplete(), parameterDescription([]), rowDescription(['x']), bindComplete()),
      ...expectUnnamed('COMMIT'),
      // What a server says to COMMIT in a failed transaction.
      replyUnnamed([], [], { tag: 'ROLLBACK', status: 'I' }),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const err = await db
      .begin(async (tx) => {
        await tx.query('SELECT 1/0 AS x').catch(() => undefined)
        return 'done'
      })
      .catch((e: unknown) => e)
    assert.ok(err instanceof TransactionError && err.code === 'PG_TRANSACTION_ROLLED_BACK', String(err))
  })
})

test('a query from outside waits for COMMIT; the first transaction on an open connection asks for the backend pid (the pooling probe)', async () => {
  const outer = statementName()
  const be = scriptedBackend([
    {
      pid: 4321,
      steps: [
        ...expectPrepared('SELECT 1 AS a', { name: outer.capture }),
        replyPrepared(['a'], [['1']]),
        // Held for a transaction for the first time: is this the server itself, or a pooler? The pid says.
        ...expectUnnamed('SELECT pg_backend_pid() AS pid'),
        ...expectUnnamed('BEGIN'),
        // Not known yet when the transaction's statement is written: a statement prepared outside it
        // might live on another server connection of a pooler, so it is prepared again inside, the old one closed behind.
        ...expectPrepared('SELECT 1 AS a', { name: where<string>('a new name', (v) => v !== outer.value) }),
        expect.close('S', outer.same),
        expect.sync(),
        replyUnnamed(['pid'], [['4321']]),
        replyUnnamed([], [], { tag: 'BEGIN', status: 'T' }),
        replyPrepared(['a'], [['1']], { status: 'T' }),
        send(closeComplete(), readyForQuery('T')),
        ...expectUnnamed('COMMIT'),
        replyUnnamed([], [], { tag: 'COMMIT' }),
        // Only now the query issued from outside during the transaction.
        ...expectPrepared('SELECT 2 AS outside'),
        replyPrepared(['outside'], [['2']]),
        // Known to be direct since the probe: the next transaction binds the cached statement.
        ...expectUnnamed('BEGIN'),
        ...expectBound(),
        replyUnnamed([], [], { tag: 'BEGIN', status: 'T' }),
        replyBound([['1']], { status: 'T' }),
        ...expectUnnamed('COMMIT'),
        replyUnnamed([], [], { tag: 'COMMIT' }),
      ],
    },
  ])
  await be.run(new Client(be.options), async (db) => {
    await db.query('SELECT 1 AS a')
    let outside: Promise<Result> | null = null
    await db.begin(async (tx) => {
      outside = db.query('SELECT 2 AS outside')
      assert.deepEqual((await tx.query('SELECT 1 AS a')).rows, [{ a: '1' }])
    })
    assert.deepEqual((await outside!).rows, [{ outside: '2' }])
    await db.begin(async (tx) => assert.deepEqual((await tx.query('SELECT 1 AS a')).rows, [{ a: '1' }]))
  })
})

test('a transaction\'s options make its BEGIN', async () => {
  const be = scriptedBackend([
    [
      ...expectUnnamed('BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY'),
      // COMMIT waits for BEGIN's answer: a BEGIN that failed must not be followed by a COMMIT outside any transaction.
      replyUnnamed([], [], { tag: 'BEGIN', status: 'T' }),
      ...expectUnnamed('COMMIT'),
      replyUnnamed([], [], { tag: 'COMMIT' }),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    await db.begin({ isolation: 'serializable', readOnly: true }, async () => undefined)
  })
})
