import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { connect, createPool, AbortError, ConnectionError, PgError, TimeoutError, TransactionError } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'
import { closedPort } from '../../support/connect.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'

// Every rejection an application awaits names the application's functions:
// each test awaits the failing call three async functions deep and checks
// that all three appear in the stack, below the frames where pipegres made
// the error (kept: they tell where in the protocol it arose).

const db = await fileClient()

/** Runs `op` three awaits deep, in functions named after the test, and returns what it rejected with. */
async function failureOf(op: () => Promise<unknown>): Promise<Error> {
  async function loadUserProfile(): Promise<unknown> {
    return await op()
  }
  async function handleRequest(): Promise<unknown> {
    const profile = await loadUserProfile()
    return profile
  }
  async function serveClient(): Promise<unknown> {
    return await handleRequest()
  }
  try {
    await serveClient()
  } catch (err) {
    assert.ok(err instanceof Error, `rejected with a non-Error: ${String(err)}`)
    return err
  }
  assert.fail('the operation should have failed')
}

function assertCaller(err: Error): void {
  const stack = err.stack ?? ''
  for (const name of ['loadUserProfile', 'handleRequest', 'serveClient']) {
    assert.match(stack, new RegExp(`at async ${name} `), `${name} is missing from the stack:\n${stack}`)
  }
  assert.ok(stack.startsWith(`${err.name}: ${err.message}`), stack)
}

test('a server error names the awaiting functions, after the frames where the reply was read', async () => {
  const err = await failureOf(() => db.query('SELECT * FROM pipegres_no_such_table'))
  assert.ok(err instanceof PgError)
  assertCaller(err)
  // The protocol-level origin stays: where the ErrorResponse was turned into the error.
  assert.match(err.stack!, /ExtendedRequest\.error/)
  const s = err.stack!
  assert.ok(s.indexOf('ExtendedRequest.error') < s.indexOf('at async loadUserProfile'), 'origin first, then the callers')
})

test('the sql template, simpleQuery() and queryRaw() show the caller too', async () => {
  assertCaller(await failureOf(() => db.sql`SELECT 1 / ${0}::int`))
  assertCaller(await failureOf(() => db.simpleQuery('SELECT 1; SELECT 1/0')))
  const sink = new Writable({ write: (_c, _e, cb) => cb() })
  assertCaller(await failureOf(() => db.queryRaw('SELECT 1/0', [], sink)))
})

test('a timeout and an abort show the caller', async () => {
  const timeout = await failureOf(() => db.query('SELECT pg_sleep(10)', [], { timeout: 50 }))
  assert.ok(timeout instanceof TimeoutError)
  assertCaller(timeout)
  const ac = new AbortController()
  setTimeout(() => ac.abort(), 50)
  const abort = await failureOf(() => db.query('SELECT pg_sleep(10)', [], { signal: ac.signal }))
  assert.ok(abort instanceof AbortError)
  assertCaller(abort)
})

test('a lost connection shows the caller', async () => {
  const victim = await openClient()
  try {
    const pid = victim.processId
    const lost = failureOf(() => victim.query('SELECT pg_sleep(10)'))
    await new Promise((r) => setTimeout(r, 100))
    await adminQuery(`SELECT pg_terminate_backend(${pid})`)
    const e = await lost
    assert.ok(e instanceof ConnectionError || e instanceof PgError, String(e))
    assertCaller(e)
  } finally {
    victim.destroy()
  }
})

test('a failed connect() shows the caller', async () => {
  const port = await closedPort()
  const err = await failureOf(() => connect({ host: '127.0.0.1', port, user: 'nobody', password: 'x', connectTimeout: 2000 }))
  assert.ok(err instanceof ConnectionError)
  assertCaller(err)
})

test('errors of begin(): a statement that failed inside, and a commit turned into a rollback', async () => {
  const inside = await failureOf(() => db.begin(async (tx) => tx.query('SELECT 1/0')))
  assert.ok(inside instanceof PgError)
  assertCaller(inside)
  const rolledBack = await failureOf(() =>
    db.begin(async (tx) => {
      await tx.query('SELECT 1/0').catch(() => undefined)
    }),
  )
  assert.ok(rolledBack instanceof TransactionError)
  assertCaller(rolledBack)
})

test('errors of startTransaction(): a failed statement, the commit it turns into a rollback, a query once it is over', async () => {
  const tx = await db.startTransaction()
  const inside = await failureOf(() => tx.query('SELECT 1/0'))
  assert.ok(inside instanceof PgError)
  assertCaller(inside)
  const rolledBack = await failureOf(() => tx.commit())
  assert.ok(rolledBack instanceof TransactionError)
  assertCaller(rolledBack)
  assertCaller(await failureOf(() => tx.query('SELECT 1')))
  const { options } = await mainDatabase()
  const pool = createPool({ ...options, max: 1 })
  try {
    const ptx = await pool.startTransaction()
    assertCaller(await failureOf(() => ptx.query('SELECT 1/0')))
    await ptx.rollback()
  } finally {
    await pool.end()
  }
})

test('a stream and a cursor that fail while being read show the caller', async () => {
  const streamed = await failureOf(async () => {
    for await (const _ of db.stream('SELECT 1 / (3 - g) FROM generate_series(1, 5) g')) void _
  })
  assert.ok(streamed instanceof PgError)
  assertCaller(streamed)
  const cursored = await failureOf(async () => {
    for await (const _ of db.cursor('SELECT 1 / (3 - g) FROM generate_series(1, 5) g', [], { batchSize: 1 })) void _
  })
  assert.ok(cursored instanceof PgError)
  assertCaller(cursored)
  const read = await failureOf(() => db.cursor('SELECT 1/0').read())
  assertCaller(read)
})

test('COPY: copyFromRows(), copyToRows() and a copyFrom() stream awaited through its result', async () => {
  const table = uniqueName('stack_copy')
  await db.query(`CREATE TABLE ${table} (id int PRIMARY KEY)`)
  try {
    const rows = await failureOf(() => db.copyFromRows(table, [[1], [1]]))
    assert.ok(rows instanceof PgError)
    assertCaller(rows)
    const out = await failureOf(async () => {
      for await (const _ of db.copyToRows('SELECT 1 / (1 - g) FROM generate_series(0, 3) g')) void _
    })
    assertCaller(out)
    const stream = await failureOf(async () => {
      const w = db.copyFrom(`COPY ${table} FROM STDIN`)
      w.end('2\n2\n')
      return w.result
    })
    assert.ok(stream instanceof PgError)
    assertCaller(stream)
    const out2 = await failureOf(async () => {
      const r = db.copyTo('COPY (SELECT 1 / (1 - g) FROM generate_series(0, 3) g) TO STDOUT')
      r.resume()
      return r.result
    })
    assertCaller(out2)
    // pipeline() rejects from Node's stream machinery, after the failure: the error shows where pipegres met it.
    const piped = await pipeline(Readable.from(['3\n', '3\n']), db.copyFrom(`COPY ${table} FROM STDIN`)).then(
      () => assert.fail('should have failed'),
      (e: unknown) => e as Error,
    )
    assert.ok(piped instanceof PgError)
    assert.match(piped.stack ?? '', /CopyIn\.error/)
  } finally {
    await db.query(`DROP TABLE ${table}`)
  }
})

test('a pool: queries, reservations and begin() show the caller', async () => {
  const { options } = await mainDatabase()
  const pool = createPool({ ...options, max: 2 })
  try {
    assertCaller(await failureOf(() => pool.query('SELECT 1/0')))
    const reserved = await pool.reserve()
    try {
      assertCaller(await failureOf(() => reserved.query('SELECT 1/0')))
    } finally {
      await reserved.release()
    }
    assertCaller(await failureOf(() => pool.begin(async (tx) => tx.query('SELECT 1/0'))))
  } finally {
    await pool.end()
  }
  assertCaller(await failureOf(() => pool.reserve()))
  assertCaller(await failureOf(() => pool.query('SELECT 1')))
})

test('an error shared by several queries reaches each caller as its own copy, of the same class and fields', async () => {
  const victim = await openClient()
  victim.destroy(new ConnectionError('PG_CONNECTION_ENDED', 'gone'))
  const [a, b] = await Promise.all([failureOf(() => victim.query('SELECT 1')), failureOf(() => victim.query('SELECT 2'))])
  assert.ok(a instanceof ConnectionError && b instanceof ConnectionError)
  assert.equal(a.code, b.code)
  assert.equal(a.message, b.message)
  assertCaller(a)
  assertCaller(b)
})

test('nothing is captured for a query that succeeds', async () => {
  const capture = Error.captureStackTrace
  let captured = 0
  Error.captureStackTrace = function (this: unknown, ...args: Parameters<typeof capture>) {
    captured++
    return capture.apply(this, args)
  } as typeof capture
  try {
    const all = []
    for (let i = 0; i < 2000; i++) all.push(db.query('SELECT $1::int AS n', [i]))
    await Promise.all(all)
    for await (const _ of db.stream('SELECT generate_series(1, 100)')) void _
    await db.begin(async (tx) => tx.query('SELECT 1'))
  } finally {
    Error.captureStackTrace = capture
  }
  assert.equal(captured, 0)
  // And the counting works: a failure does capture.
  Error.captureStackTrace = function (this: unknown, ...args: Parameters<typeof capture>) {
    captured++
    return capture.apply(this, args)
  } as typeof capture
  try {
    await db.query('SELECT 1/0').catch(() => undefined)
  } finally {
    Error.captureStackTrace = capture
  }
  assert.ok(captured > 0)
})
