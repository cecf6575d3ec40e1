// Transactions begun with startTransaction() and ended from outside by
// commit() or rollback(), on a Client: the outcome and state of each way of
// ending, options, queries refused once the transaction is ending or over,
// failed statements, pipelining in order, savepoints, `await using`, and the
// connection lost under it. Pools and reservations:
// transaction-outside-pool.test.ts.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ArgumentError, Client, ConnectionError, PgError, StartedTransaction, Transaction, TransactionError } from '../../../src/index.js'
import { openClient, uniqueName } from '../../support/client.js'
import { closedPort } from '../../support/connect.js'
import { txTable } from '../../support/tx-table.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'

const { db, t, committed, insert } = await txTable('tx_outside_rows')

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

describe('commit and rollback', () => {
  test('commit(): the rows are visible only once it resolved; the state says committed', async () => {
    const tag = uniqueName('commit')
    const tx = await db.startTransaction()
    assert.ok(tx instanceof StartedTransaction && tx instanceof Transaction)
    assert.equal(tx.state, 'active')
    await insert(tx, tag)
    await insert(tx, tag)
    assert.equal(await committed(tag), 0)
    assert.equal(db.transactionStatus, 'T')
    await tx.commit()
    assert.equal(tx.state, 'committed')
    assert.equal(await committed(tag), 2)
    assert.equal(db.transactionStatus, 'I')
  })

  test('rollback(): nothing is committed and the client goes on', async () => {
    const tag = uniqueName('rollback')
    const tx = await db.startTransaction()
    await insert(tx, tag)
    await tx.rollback()
    assert.equal(tx.state, 'rolledBack')
    assert.equal(await committed(tag), 0)
    assert.equal(db.transactionStatus, 'I')
    assert.deepEqual((await db.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    // Rolling back what is over is a no-op; committing it is refused.
    await tx.rollback()
    await assert.rejects(tx.commit(), (e: unknown) => e instanceof ArgumentError && /rolled back/.test(e.message))
  })

  test("options: isolation, readOnly and deferrable reach BEGIN; retry and a function are refused, naming begin()", async () => {
    const tx = await db.startTransaction({ isolation: 'serializable', readOnly: true, deferrable: true })
    const r = await tx.query<{ iso: string; ro: string; def: string }>(
      "SELECT current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro, current_setting('transaction_deferrable') AS def",
    )
    assert.deepEqual(r.rows[0], { iso: 'serializable', ro: 'on', def: 'on' })
    await assert.rejects(insert(tx, uniqueName('read_only')), (e: unknown) => e instanceof PgError && e.code === '25006')
    await tx.rollback()
    await assert.rejects(db.startTransaction({ retry: { attempts: 3 } } as never), (e: unknown) => e instanceof ArgumentError && /begin\(\{ retry \}, fn\)/.test(e.message))
    await assert.rejects(db.startTransaction((async () => undefined) as never), (e: unknown) => e instanceof ArgumentError && /begin\(fn\)/.test(e.message))
    await assert.rejects(db.startTransaction({ isolation: 'snapshot' } as never), (e: unknown) => e instanceof ArgumentError && /isolation must be one of/.test(e.message))
    await assert.rejects(db.startTransaction({ readonly: true } as never), (e: unknown) => e instanceof ArgumentError && /unknown transaction option "readonly"/.test(e.message))
    // None of them held the client.
    assert.deepEqual((await db.query('SELECT 2 AS two')).rows, [{ two: 2 }])
  })

  test('commit() after a failed statement rolls back and rejects with a TransactionError, as the server answers ROLLBACK', async () => {
    const tag = uniqueName('failed_statement')
    const tx = await db.startTransaction()
    await insert(tx, tag)
    await assert.rejects(tx.query('SELECT 1/0'), (e: unknown) => e instanceof PgError && e.code === '22012')
    // The transaction is aborted on the server, but still open until it is ended.
    assert.equal(tx.state, 'active')
    await assert.rejects(tx.query('SELECT 1'), (e: unknown) => e instanceof PgError && e.code === '25P02')
    const e = await tx.commit().then(() => null, (x: unknown) => x)
    assert.ok(e instanceof TransactionError && e.code === 'PG_TRANSACTION_ROLLED_BACK', String(e))
    assert.match((e as Error).message, /rolled back instead of committed/)
    assert.equal(tx.state, 'rolledBack')
    assert.equal(await committed(tag), 0)
    assert.equal(db.transactionStatus, 'I')
    // Rolling back after that is what a careful caller does: it resolves.
    await tx.rollback()
    await assert.rejects(tx.query('SELECT 1'), (x: unknown) => x instanceof ArgumentError && /was rolled back/.test(x.message) && x.cause === e)
  })

  test("COMMIT's own error (a deferred constraint) rejects commit() with the PgError; the state says rolled back", async () => {
    const u = uniqueName('deferred')
    await db.query(`CREATE TABLE ${u} (id int UNIQUE DEFERRABLE INITIALLY DEFERRED)`)
    try {
      const tx = await db.startTransaction()
      await tx.query(`INSERT INTO ${u} VALUES (1), (1)`)
      await assert.rejects(tx.commit(), (e: unknown) => e instanceof PgError && e.code === '23505')
      assert.equal(tx.state, 'rolledBack')
      assert.equal(db.transactionStatus, 'I')
      assert.equal((await db.query(`SELECT count(*)::int AS n FROM ${u}`)).rows[0]!.n, 0)
    } finally {
      await db.query(`DROP TABLE ${u}`)
    }
  })
})

describe('queries refused once the transaction is ending or over', () => {
  test('after commit: every kind of query is an ArgumentError that says the transaction was committed', async () => {
    const tx = await db.startTransaction()
    await tx.commit()
    const committedError = (e: unknown) => e instanceof ArgumentError && /this transaction was committed/.test(e.message)
    await assert.rejects(tx.query('SELECT 1'), committedError)
    await assert.rejects(tx.sql`SELECT 1`, committedError)
    await assert.rejects(tx.simpleQuery('SELECT 1'), committedError)
    await assert.rejects(tx.batch((b) => b.query('SELECT 1')), committedError)
    await assert.rejects(tx.describe('SELECT 1'), committedError)
    await assert.rejects(
      (async () => {
        for await (const _ of tx.stream('SELECT 1')) void _
      })(),
      committedError,
    )
    await assert.rejects(tx.savepoint(async () => undefined), committedError)
    await assert.rejects(tx.commit(), (e: unknown) => e instanceof ArgumentError && /already committed/.test(e.message))
    await assert.rejects(tx.rollback(), (e: unknown) => e instanceof ArgumentError && /already committed/.test(e.message))
  })

  test('a query issued while COMMIT is in flight is refused and never runs, inside or outside', async () => {
    const tag = uniqueName('during_commit')
    const tx = await db.startTransaction()
    await insert(tx, tag)
    const committing = tx.commit()
    await assert.rejects(insert(tx, tag), (e: unknown) => e instanceof ArgumentError && /being committed/.test(e.message))
    await assert.rejects(tx.rollback(), (e: unknown) => e instanceof ArgumentError && /already being committed/.test(e.message))
    await committing
    assert.equal(await committed(tag), 1)
  })

  test('a query issued while ROLLBACK is in flight is refused; rollback() twice gives the same promise', async () => {
    const tag = uniqueName('during_rollback')
    const tx = await db.startTransaction()
    await insert(tx, tag)
    const rolling = tx.rollback()
    assert.equal(tx.rollback(), rolling)
    await assert.rejects(insert(tx, tag), (e: unknown) => e instanceof ArgumentError && /being rolled back/.test(e.message))
    await rolling
    assert.equal(await committed(tag), 0)
  })
})

describe('pipelining and the connection', () => {
  test('queries issued without waiting are pipelined and answered in order; BEGIN goes with them', async () => {
    const tx = await db.startTransaction()
    const rs = await Promise.all(Array.from({ length: 200 }, (_, i) => tx.query<{ n: number }>('SELECT $1::int AS n', [i])))
    assert.deepEqual(
      rs.map((r) => r.rows[0]!.n),
      Array.from({ length: 200 }, (_, i) => i),
    )
    await tx.commit()
  })

  test('queries issued on the client meanwhile wait until the transaction ends, then see its outcome', async () => {
    const tag = uniqueName('outside_waits')
    const tx = await db.startTransaction()
    await insert(tx, tag)
    const outside = db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t} WHERE tag = $1`, [tag])
    let settled = false
    void outside.then(() => (settled = true))
    await insert(tx, tag)
    await sleep(30)
    assert.equal(settled, false, 'the outside query ran inside the transaction')
    await tx.commit()
    assert.equal((await outside).rows[0]!.n, 2)
  })

  test('a second startTransaction() on the client waits for the first to end', async () => {
    const first = await db.startTransaction()
    let second: StartedTransaction | null = null
    const pending = db.startTransaction().then((tx) => (second = tx))
    await first.query('SELECT 1')
    await sleep(20)
    assert.equal(second, null)
    await first.rollback()
    const tx = await pending
    assert.equal(tx.state, 'active')
    await tx.commit()
  })

  test('end() waits for an open transaction to be ended', async () => {
    const c = await openClient()
    const tx = await c.startTransaction()
    let ended = false
    const ending = c.end().then(() => (ended = true))
    await tx.query('SELECT 1')
    await sleep(20)
    assert.equal(ended, false)
    await tx.commit()
    await ending
    assert.equal(tx.state, 'committed')
  })
})

describe('savepoints and disposal', () => {
  test('savepoint() nests as in begin(): a failed one is rolled back, the rest commits', async () => {
    const tag = uniqueName('savepoint')
    const tx = await db.startTransaction()
    await insert(tx, `${tag}_outer`)
    await assert.rejects(
      tx.savepoint(async (sp) => {
        await insert(sp, `${tag}_inner`)
        await sp.savepoint(async (deeper) => insert(deeper, `${tag}_deeper`))
        throw new Error('undo the savepoint')
      }),
      /undo the savepoint/,
    )
    await tx.savepoint(async (sp) => insert(sp, `${tag}_kept`))
    await tx.commit()
    assert.deepEqual(
      [await committed(`${tag}_outer`), await committed(`${tag}_inner`), await committed(`${tag}_deeper`), await committed(`${tag}_kept`)],
      [1, 0, 0, 1],
    )
  })

  test('commit() and rollback() inside a savepoint are refused: the savepoint would outlive its transaction', async () => {
    const tx = await db.startTransaction()
    await tx.savepoint(async () => {
      await assert.rejects(tx.commit(), (e: unknown) => e instanceof ArgumentError && /inside savepoint\(\)/.test(e.message))
      await assert.rejects(tx.rollback(), (e: unknown) => e instanceof ArgumentError && /inside savepoint\(\)/.test(e.message))
    })
    await tx.commit()
    assert.equal(tx.state, 'committed')
  })

  test('`await using` rolls back a transaction left uncommitted, and leaves a committed one alone', async () => {
    const tag = uniqueName('await_using')
    let kept: StartedTransaction | undefined
    await assert.rejects(
      (async () => {
        await using tx = await db.startTransaction()
        kept = tx
        await insert(tx, `${tag}_thrown`)
        throw new Error('leave the block')
      })(),
      /leave the block/,
    )
    assert.equal(kept!.state, 'rolledBack')
    {
      await using tx = await db.startTransaction()
      kept = tx
      await insert(tx, `${tag}_committed`)
      await tx.commit()
    }
    assert.equal(kept.state, 'committed')
    assert.equal(await committed(`${tag}_thrown`), 0)
    assert.equal(await committed(`${tag}_committed`), 1)
    assert.equal(db.transactionStatus, 'I')
  })
})

describe('failures of the connection', () => {
  test('the connection lost under an idle transaction: it fails at once, lets go of the client, and refuses queries', async () => {
    const c = await openClient()
    try {
      const tag = uniqueName('lost_idle')
      const tx = await c.startTransaction()
      await insert(tx, tag)
      const outside = c.query<{ one: number }>('SELECT 1 AS one')
      await adminQuery(`SELECT pg_terminate_backend(${c.processId})`)
      // The client's query was held behind the transaction: it runs on a new connection.
      assert.deepEqual((await outside).rows, [{ one: 1 }])
      assert.equal(tx.state, 'failed')
      await assert.rejects(tx.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError && /this transaction failed/.test(e.message))
      await assert.rejects(tx.commit(), (e: unknown) => e instanceof ConnectionError)
      // Rolling back a transaction the server already discarded resolves.
      await tx.rollback()
      assert.equal(await committed(tag), 0)
      const next = await c.startTransaction()
      await insert(next, tag)
      await next.commit()
      assert.equal(await committed(tag), 1)
    } finally {
      await c.end()
    }
  })

  test('the connection lost under a running statement: the statement fails, then the transaction', async () => {
    const c = await openClient()
    try {
      const tx = await c.startTransaction()
      const sleeping = tx.query('SELECT pg_sleep(30)').then(
        () => null,
        (e: unknown) => e,
      )
      await sleep(50)
      await adminQuery(`SELECT pg_terminate_backend(${c.processId})`)
      assert.ok((await sleeping) instanceof ConnectionError)
      assert.equal(tx.state, 'failed')
      await tx.rollback()
      assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    } finally {
      await c.end()
    }
  })

  test('a BEGIN that cannot be sent (no server) fails the transaction and its queries, and lets go of the client', async () => {
    const { connectionString } = await mainDatabase()
    const c = new Client({ connectionString: connectionString!, host: '127.0.0.1', port: await closedPort(), sslmode: 'disable', connectTimeout: 2000 })
    try {
      const tx = await c.startTransaction()
      await assert.rejects(tx.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError)
      assert.equal(tx.state, 'failed')
      await assert.rejects(tx.commit(), (e: unknown) => e instanceof ConnectionError)
      await tx.rollback()
      // The client is not held: its own queries fail as a client's do, at once.
      await assert.rejects(c.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError)
    } finally {
      c.destroy()
    }
  })
})
