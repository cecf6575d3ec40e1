// startTransaction() on a Pool and on a ReservedClient: the transaction holds
// one connection until it ends and then gives it back, through the pool's
// release hooks; no way of ending (commit, rollback, a failed statement, a
// lost connection, disposal) leaks a slot, checked over a thousand
// transactions on a pool of one; a reservation waiting for the connection of
// a transaction whose connection is lost gets another at once.

import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { ArgumentError, ConnectionError, createPool, PgError, TransactionError, type Pool, type PoolOptions, type StartedTransaction } from '../../../src/index.js'
import { uniqueName } from '../../support/client.js'
import { txTable } from '../../support/tx-table.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'

const { t, committed, insert } = await txTable('tx_outside_pool_rows')

const pools: Pool[] = []
after(async () => {
  await Promise.all(pools.map((p) => p.end()))
})

async function newPool(extra: PoolOptions = {}): Promise<Pool> {
  const { options } = await mainDatabase()
  const p = createPool({ ...options, ...extra })
  pools.push(p)
  return p
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

async function pidOf(tx: StartedTransaction): Promise<number> {
  return (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
}

/** Ends the transaction's server process, and waits until the pool has seen its connection go. */
async function loseConnection(tx: StartedTransaction): Promise<void> {
  await adminQuery(`SELECT pg_terminate_backend(${await pidOf(tx)})`)
  for (let i = 0; i < 500 && tx.state === 'active'; i++) await sleep(5)
  assert.equal(tx.state, 'failed')
}

describe('a pool', () => {
  test('the transaction holds one connection until commit() resolves; the pool serves its other queries elsewhere', async () => {
    const pool = await newPool({ max: 3 })
    const tx = await pool.startTransaction()
    const pids = await Promise.all(Array.from({ length: 20 }, () => pidOf(tx)))
    assert.equal(new Set(pids).size, 1)
    assert.equal(pool.reservedCount, 1)
    const outside = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
    assert.notEqual(outside.rows[0]!.pid, pids[0])
    await tx.commit()
    assert.equal(pool.reservedCount, 0)
    await assert.rejects(tx.query('SELECT 1'), (e: unknown) => e instanceof ArgumentError && /was committed/.test(e.message))
  })

  test('wrong options are refused before a connection is taken', async () => {
    const pool = await newPool({ max: 1 })
    await assert.rejects(pool.startTransaction({ isolation: 'eventual' } as never), ArgumentError)
    await assert.rejects(pool.startTransaction({ retry: { attempts: 2 } } as never), /begin\(\{ retry \}, fn\)/)
    assert.equal(pool.totalCount, 0)
    assert.equal(pool.reservedCount, 0)
    const tx = await pool.startTransaction({ readOnly: true, isolation: 'repeatable read' })
    const r = await tx.query<{ iso: string; ro: string }>("SELECT current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro")
    assert.deepEqual(r.rows[0], { iso: 'repeatable read', ro: 'on' })
    await tx.rollback()
    assert.equal(pool.reservedCount, 0)
  })

  test('a thousand transactions in a row on a pool of one: committed, rolled back, failed, disposed and lost; the pool still serves', async () => {
    const pool = await newPool({ max: 1 })
    const tag = uniqueName('thousand')
    let commits = 0
    const outcomes = new Map<string, number>()
    for (let i = 0; i < 1000; i++) {
      const tx = await pool.startTransaction()
      await insert(tx, tag)
      let how: string
      if (i % 100 === 50) {
        how = 'lost'
        await loseConnection(tx)
        await assert.rejects(insert(tx, tag), ConnectionError)
        await assert.rejects(tx.commit(), ConnectionError)
      } else if (i % 5 === 0) {
        how = 'committed'
        await tx.commit()
        commits++
      } else if (i % 5 === 1) {
        how = 'rolledBack'
        await tx.rollback()
      } else if (i % 5 === 2) {
        how = 'failed statement, commit'
        await assert.rejects(tx.query('SELECT 1/0'), PgError)
        await assert.rejects(tx.commit(), (e: unknown) => e instanceof TransactionError && e.code === 'PG_TRANSACTION_ROLLED_BACK')
      } else if (i % 5 === 3) {
        how = 'disposed'
        await tx[Symbol.asyncDispose]()
      } else {
        how = 'failed statement, rollback'
        await assert.rejects(tx.query('SELECT 1/0'), PgError)
        await tx.rollback()
      }
      assert.notEqual(tx.state, 'active', how)
      outcomes.set(how, (outcomes.get(how) ?? 0) + 1)
      assert.equal(pool.reservedCount, 0, `after transaction ${i} (${how})`)
    }
    assert.equal(outcomes.get('lost'), 10)
    assert.equal(await committed(tag), commits)
    assert.deepEqual((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    assert.equal(pool.waitingCount, 0)
    assert.ok(pool.totalCount <= 1)
    const last = await pool.startTransaction()
    await insert(last, tag)
    await last.commit()
    assert.equal(await committed(tag), commits + 1)
  })

  test('a transaction waiting for the only connection gets a new one as soon as the holder loses its own', async () => {
    const pool = await newPool({ max: 1 })
    const first = await pool.startTransaction()
    await first.query('SELECT 1')
    const got: StartedTransaction[] = []
    const pending = [pool.startTransaction(), pool.startTransaction()].map((p) => p.then((tx) => (got.push(tx), tx)))
    await sleep(20)
    assert.equal(got.length, 0)
    assert.equal(pool.waitingCount, 2)
    await adminQuery(`SELECT pg_terminate_backend(${await pidOf(first)})`)
    // Neither first.rollback() nor first.state is needed for it.
    const second = await Promise.race([pending[0]!, sleep(5000).then(() => null)])
    assert.ok(second !== null, 'the waiting transaction never got a connection')
    assert.equal(first.state, 'failed')
    // Ending the lost transaction gives back a connection that is gone: the
    // third keeps waiting for the second's rather than take that one.
    await first.rollback()
    const tag = uniqueName('after_loss')
    await insert(second, tag)
    await sleep(20)
    assert.equal(got.length, 1)
    await second.commit()
    const third = await pending[1]!
    await insert(third, tag)
    await third.commit()
    assert.equal(await committed(tag), 2)
    assert.equal(pool.reservedCount, 0)
    assert.ok(pool.totalCount <= 1)
  })

  test("the pool's release steps run when the transaction ends; a failing onRelease discards the connection, the outcome stands", async () => {
    let releases = 0
    const pool = await newPool({
      max: 1,
      reset: 'RESET ALL',
      onRelease: async () => {
        releases++
        if (releases % 2 === 0) throw new Error('onRelease failed')
      },
    })
    const tag = uniqueName('hooks')
    for (let i = 0; i < 6; i++) {
      const tx = await pool.startTransaction()
      await tx.query("SET application_name = 'set_inside'")
      await insert(tx, tag)
      await tx.commit()
      assert.equal(tx.state, 'committed')
      assert.equal(pool.reservedCount, 0)
      const r = await pool.query<{ name: string }>("SELECT current_setting('application_name') AS name")
      assert.notEqual(r.rows[0]!.name, 'set_inside', 'reset did not run')
    }
    assert.equal(releases, 6)
    assert.equal(await committed(tag), 6)
  })
})

describe('a reserved connection', () => {
  test('transactions on it run one after another; releasing it under an open one rolls that back and fails it', async () => {
    const pool = await newPool({ max: 2 })
    const r = await pool.reserve()
    const tag = uniqueName('reserved')
    const first = await r.startTransaction()
    let second: StartedTransaction | null = null
    const pending = r.startTransaction().then((tx) => (second = tx))
    await insert(first, tag)
    await sleep(20)
    assert.equal(second, null)
    await first.commit()
    const tx = await pending
    await insert(tx, tag)
    await r.release()
    assert.equal(tx.state, 'failed')
    await assert.rejects(tx.query('SELECT 1'), ConnectionError)
    await tx.rollback()
    await assert.rejects(r.startTransaction(), (e: unknown) => e instanceof ArgumentError && /released/.test(e.message))
    assert.equal(await committed(tag), 1)
    assert.equal(pool.reservedCount, 0)
    assert.equal((await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t} WHERE tag = $1`, [tag])).rows[0]!.n, 1)
  })
})
