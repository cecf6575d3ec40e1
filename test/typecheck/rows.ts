// Type-level tests, compiled by test/unit/project/typecheck.test.ts with `tsc --noEmit -p test/typecheck`:
// the row type given to a query reaches every way of reading its rows, and
// misuse is a compile error (each `@ts-expect-error` fails the build if the
// line below it compiles).

import { connect, createPool, type Client, type Cursor, type Result, type Row, type RowStream, type StartedTransaction, type Transaction, type TransactionState } from '../../src/index.js'

interface User {
  id: number
  email: string
}

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
function expectType<T>(_value: T): void {}
function assertEqual<A, B>(_check: Equal<A, B>): void {}

export async function rows(db: Client): Promise<void> {
  // query<T>(): rows of T.
  const r = await db.query<User>('SELECT id, email FROM users WHERE id = $1', [1])
  assertEqual<typeof r, Result<User>>(true)
  expectType<User[]>(r.rows)
  expectType<number | null>(r.rowCount)
  // @ts-expect-error: no such column in User
  void r.rows[0]?.name
  // @ts-expect-error: email is a string
  const wrong: number = r.rows[0]!.email
  void wrong

  // Without a type argument: Row, an object of unknown values.
  const plain = await db.query('SELECT 1 AS n')
  assertEqual<(typeof plain.rows)[number], Row>(true)
  // @ts-expect-error: an unknown value is not a number until checked
  const n: number = plain.rows[0]!.n
  void n

  // The sql template.
  const t = await db.sql<User>`SELECT id, email FROM users WHERE id = ${1}`
  expectType<User[]>(t.rows)
  // @ts-expect-error: no such column in User
  void t.rows[0]?.missing

  // stream<T>() and cursor<T>().
  const s = db.stream<User>('SELECT id, email FROM users')
  assertEqual<typeof s, RowStream<User>>(true)
  for await (const u of s) {
    expectType<string>(u.email)
    // @ts-expect-error: no such column in User
    void u.missing
  }
  const c = db.cursor<User>('SELECT id, email FROM users', [], { batchSize: 10 })
  assertEqual<typeof c, Cursor<User>>(true)
  for await (const batch of c) expectType<User[]>(batch)
  expectType<Promise<User[]>>(c.read())
  const fromCopy = db.copyToRows<User>('SELECT id, email FROM users')
  assertEqual<typeof fromCopy, RowStream<User>>(true)

  // Transactions: the function's result type comes out of begin(); its queries are typed the same way.
  const id = await db.begin(async (tx) => {
    assertEqual<typeof tx, Transaction>(true)
    const inside = await tx.query<User>('SELECT id, email FROM users LIMIT 1')
    return inside.rows[0]!.id
  })
  assertEqual<typeof id, number>(true)
  // @ts-expect-error: begin() resolves with what the function returns (a number here)
  const notText: string = await db.begin(async (tx) => (await tx.query<User>('SELECT 1')).rows[0]!.id)
  void notText
  // @ts-expect-error: the transaction function must return a promise
  void db.begin((tx) => tx)
  await db.begin(async (tx) => {
    const sp = await tx.savepoint(async (inner) => (await inner.sql<User>`SELECT ${1}::int AS id, '' AS email`).rows)
    expectType<User[]>(sp)
  })

  // Pools and reserved connections.
  const pool = createPool()
  expectType<User[]>((await pool.query<User>('SELECT 1')).rows)
  const reserved = await pool.reserve()
  expectType<User[]>((await reserved.sql<User>`SELECT ${1}`).rows)
  expectType<string>(await pool.begin({ isolation: 'serializable' }, async (tx) => (await tx.query<User>('SELECT 1')).rows[0]!.email))
  // @ts-expect-error: not an isolation level
  void pool.begin({ isolation: 'snapshot' }, async () => 1)

  // startTransaction(): a transaction ended from outside, typed like begin()'s, disposable with `await using`.
  {
    await using started = await pool.startTransaction({ isolation: 'serializable', readOnly: true })
    assertEqual<typeof started, StartedTransaction>(true)
    expectType<Transaction>(started)
    expectType<User[]>((await started.query<User>('SELECT 1')).rows)
    assertEqual<typeof started.state, TransactionState>(true)
    expectType<Promise<void>>(started.commit())
    // @ts-expect-error: retrying needs begin(fn)
    void db.startTransaction({ retry: { attempts: 3 } })
    // @ts-expect-error: startTransaction() takes options, not a function
    void reserved.startTransaction(async () => 1)
  }

  // `await using` on everything that is opened; no synchronous `using`, since closing talks to the server.
  {
    await using scopedPool = createPool({ min: 1 })
    expectType<number>(scopedPool.options.idleTimeoutMillis)
    await using scopedDb = await connect()
    await using conn = await scopedPool.reserve()
    await using cursor = conn.cursor<User>('SELECT 1')
    await using rows = scopedDb.stream<User>('SELECT 1')
    await using listener = await scopedDb.listen('events', () => {})
    await using copy = scopedDb.copyFrom('COPY t FROM STDIN')
    expectType<User[]>(await cursor.read())
    void rows
    void listener
    void copy
    // @ts-expect-error: disposal is asynchronous
    using notSync = scopedPool
    void notSync
  }

  // simpleQuery<T>(): one typed result per statement.
  const many = await db.simpleQuery<User>('SELECT 1; SELECT 2')
  expectType<Result<User>[]>(many)

  // Arguments are checked too.
  // @ts-expect-error: values are an array
  void db.query('SELECT $1', 1)
  // @ts-expect-error: rowMode is 'object' or 'array'
  void db.query('SELECT 1', [], { rowMode: 'tuple' })
}
