import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { ArgumentError, PgError, SqlState, TransactionError, type Client } from '../../../src/index.js'
import { adminQuery } from '../../support/servers/test-server.js'
import { openClient, uniqueName } from '../../support/client.js'

// begin({ retry }) against real conflicts between two transactions on two connections.

const clients: Client[] = []
let table = ''

before(async () => {
  table = uniqueName('retry')
  await adminQuery(`CREATE TABLE ${table} (id int PRIMARY KEY, class int NOT NULL, value int NOT NULL)`)
})

after(async () => {
  await Promise.allSettled(clients.map((c) => c.end()))
  await adminQuery(`DROP TABLE IF EXISTS ${table}`)
})

async function two(): Promise<[Client, Client]> {
  const a = await openClient()
  const b = await openClient()
  clients.push(a, b)
  return [a, b]
}

/** Resolves once `n` parties have arrived; later arrivals go straight through. */
function barrier(n: number): () => Promise<void> {
  let arrived = 0
  let open!: () => void
  const opened = new Promise<void>((r) => (open = r))
  return () => {
    if (++arrived >= n) open()
    return opened
  }
}

test('write skew under serializable: the loser is run again and both commit; the callback sees its attempt', async () => {
  const [a, b] = await two()
  const base = 1000
  await adminQuery(`INSERT INTO ${table} VALUES (${base}, 1, 10), (${base + 1}, 2, 10)`)
  const meet = barrier(2)
  const attempts: number[][] = [[], []]
  // Each reads the other class and writes its own: the classic cycle only one can commit.
  const run = (c: Client, me: number, other: number, id: number) =>
    c.begin({ isolation: 'serializable', retry: { attempts: 4, baseDelay: 1 } }, async (tx) => {
      attempts[me - 1]!.push(tx.attempt)
      const sum = (await tx.query<{ s: number }>(`SELECT coalesce(sum(value), 0)::int AS s FROM ${table} WHERE class = $1`, [other])).rows[0]!.s
      if (tx.attempt === 1) await meet()
      await tx.query(`INSERT INTO ${table} VALUES ($1, $2, $3)`, [id, me, sum])
      return sum
    })
  const [sa, sb] = await Promise.all([run(a, 1, 2, base + 10), run(b, 2, 1, base + 20)])
  assert.deepEqual(attempts.map((x) => x.length).sort(), [1, 2], `one side ran twice: ${JSON.stringify(attempts)}`)
  assert.deepEqual(attempts.flat().sort(), [1, 1, 2])
  // The second run saw the first's committed row, as if they had run one after the other.
  assert.deepEqual([sa, sb].sort((x, y) => x - y), [10, 20])
  const rows = await adminQuery(`SELECT id FROM ${table} WHERE id >= ${base + 10} ORDER BY id`)
  assert.deepEqual(rows.rows.map((r) => Number(r[0])), [base + 10, base + 20])
})

test('without retry the same conflict fails one side with serialization_failure', async () => {
  const [a, b] = await two()
  const base = 2000
  await adminQuery(`INSERT INTO ${table} VALUES (${base}, 3, 10), (${base + 1}, 4, 10)`)
  const meet = barrier(2)
  const run = (c: Client, me: number, other: number, id: number) =>
    c.begin({ isolation: 'serializable' }, async (tx) => {
      const sum = (await tx.query<{ s: number }>(`SELECT coalesce(sum(value), 0)::int AS s FROM ${table} WHERE class = $1`, [other])).rows[0]!.s
      await meet()
      await tx.query(`INSERT INTO ${table} VALUES ($1, $2, $3)`, [id, me, sum])
    })
  const outcomes = await Promise.allSettled([run(a, 3, 4, base + 10), run(b, 4, 3, base + 20)])
  const failed = outcomes.filter((o) => o.status === 'rejected')
  assert.equal(failed.length, 1)
  const err = (failed[0] as PromiseRejectedResult).reason
  assert.ok(err instanceof PgError && err.code === SqlState.SerializationFailure, String(err))
})

test('a deadlock: the victim is run again and both finish', async () => {
  const [a, b] = await two()
  const base = 3000
  await adminQuery(`INSERT INTO ${table} VALUES (${base}, 5, 0), (${base + 1}, 5, 0)`)
  const meet = barrier(2)
  const runs = [0, 0]
  const run = (c: Client, k: number, first: number, second: number) =>
    c.begin({ retry: { attempts: 3, baseDelay: 1 } }, async (tx) => {
      runs[k]!++
      await tx.query(`SET LOCAL deadlock_timeout = '20ms'`)
      await tx.query(`UPDATE ${table} SET value = value + 1 WHERE id = $1`, [first])
      if (tx.attempt === 1) await meet()
      await tx.query(`UPDATE ${table} SET value = value + 1 WHERE id = $1`, [second])
    })
  await Promise.all([run(a, 0, base, base + 1), run(b, 1, base + 1, base)])
  assert.deepEqual([...runs].sort(), [1, 2])
  const rows = await adminQuery(`SELECT value FROM ${table} WHERE id IN (${base}, ${base + 1}) ORDER BY id`)
  assert.deepEqual(rows.rows.map((r) => Number(r[0])), [2, 2], 'each transaction applied once')
})

test('other errors are never retried, and a conflict on every attempt ends in a TransactionError naming it', async () => {
  const [a] = await two()
  let runs = 0
  await assert.rejects(
    a.begin({ retry: { attempts: 5 } }, async (tx) => {
      runs++
      await tx.query(`INSERT INTO ${table} VALUES (1, 0, 0), (1, 0, 0)`)
    }),
    (e: unknown) => e instanceof PgError && e.code === SqlState.UniqueViolation,
  )
  assert.equal(runs, 1)
  runs = 0
  const started = performance.now()
  await assert.rejects(
    a.begin({ isolation: 'serializable', retry: { attempts: 3, baseDelay: 20 } }, async (tx) => {
      runs++
      await tx.query(`DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$`)
    }),
    (e: unknown) =>
      e instanceof TransactionError &&
      e.code === 'PG_TRANSACTION_ROLLED_BACK' &&
      /serialization_failure \(40001\) on every one of its 3 attempts/.test(e.message) &&
      e.cause instanceof PgError,
  )
  assert.equal(runs, 3)
  // Two waits of 20 and 40 ms, each at least half of that.
  assert.ok(performance.now() - started >= 30, 'the attempts were spaced out')
  // The connection is fine afterwards.
  assert.deepEqual((await a.query('SELECT 1 AS one')).rows, [{ one: 1 }])
})

test('retry options are checked before anything is sent', async () => {
  const [a] = await two()
  const noop = async () => undefined
  for (const [retry, message] of [
    [{ attempts: 0 }, /retry.attempts must be a whole number of at least 1/],
    [{}, /retry.attempts is required/],
    [{ attempts: 2, tries: 3 }, /unknown retry option "tries"/],
    [5, /must be an object/],
    [{ attempts: 2, maxDelay: -1 }, /retry.maxDelay/],
  ] as const) {
    await assert.rejects(a.begin({ retry: retry as never }, noop), (e: unknown) => e instanceof ArgumentError && message.test((e as Error).message))
  }
})
