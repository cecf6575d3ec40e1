// pipegres/postgres against a server: the values postgres.js gives, the
// helpers, transactions, cursors, COPY, LISTEN/NOTIFY and errors. The
// behaviour in depth is postgres.js's own suite (npm run test:postgres-suite);
// these pin what the README's "Switching from postgres.js" promises.

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import postgres, { PostgresError } from '../../../../src/integrations/postgres/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'

const { connectionString, source } = await mainDatabase()
const skip = source === 'PGlite' ? 'pipegres/postgres opens sockets of its own' : false
const sql = postgres(connectionString ?? {}, { max: 2, onnotice: () => {} })
const table = uniqueName('pgjs_items')
/** The code of the error `p` rejects with. */
const codeOf = (p: PromiseLike<unknown>): Promise<unknown> => Promise.resolve(p).then(() => undefined, (e: { code?: unknown }) => e.code)
after(async () => {
  if (!skip) await sql`drop table if exists ${sql(table)}`
  await sql.end()
})

test('values come back as postgres.js gives them', { skip }, async () => {
  const [row] = await sql`select 1::int4 as i, 9007199254740993::int8 as big, 1.50::numeric as num, 1.1::float4 as f4, true as b,
    '2024-02-29'::date as d, '{"a":1}'::jsonb as j, '1 day'::interval as iv, '(1,2)'::point as p, ${'x'} as s, ${1} as one, ${true} as t`
  assert.deepEqual(
    { ...row, d: (row!.d as Date).toISOString() },
    { i: 1, big: '9007199254740993', num: '1.50', f4: 1.1, b: true, d: '2024-02-29T00:00:00.000Z', j: { a: 1 }, iv: '1 day', p: '(1,2)', s: 'x', one: '1', t: true },
  )
  const r = await sql`select 1 as x`
  assert.equal(r.count, 1)
  assert.equal(r.command, 'SELECT')
  assert.equal(r.columns[0]!.name, 'x')
})

test('a query is a promise that runs when first awaited, then()ed or execute()d, and never as a fragment; each way settles it once', { skip }, async () => {
  // Bounded: a query that settled with itself, or never started, would hang here.
  const within = <T>(p: PromiseLike<T>, what: string): Promise<T> =>
    Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not settled within 5 s`)), 5000).unref())])
  const runs = async (): Promise<number> => Number((await sql`select count(*)::int as n from pg_stat_activity where query like ${'%pgjs-lazy%'} and pid <> pg_backend_pid()`)[0]!.n)
  const q = sql`select 1 as x -- pgjs-lazy`
  assert.ok(q instanceof Promise)
  await new Promise((r) => setTimeout(r, 50))
  assert.equal(await runs(), 0, 'not sent before it is awaited')
  // await, Promise.all and Promise.resolve take the query itself.
  assert.equal(Promise.resolve(q), q)
  const [a, b] = await within(Promise.all([q, q]), 'Promise.all')
  assert.equal(a, b, 'one execution, one result')
  assert.deepEqual([...(await within(q, 'await'))], [{ x: 1 }])
  assert.deepEqual(await within(sql`select 2 as x`.then((r) => r[0]), 'then()'), { x: 2 })
  assert.equal(await within(sql`select 3 as x`.finally(() => {}), 'finally()').then((r) => r[0]!.x), 3)
  assert.equal(await codeOf(within(sql`select 1/0`, 'a failing query')), '22012')
  assert.equal(await within(sql`select 1/0`.catch(() => 'caught'), 'catch()'), 'caught')
  // A fragment runs only inside the query it is written into.
  const fragment = sql`where 1 = ${1}`
  assert.deepEqual([...(await within(sql`select 4 as x ${fragment}`, 'a query with a fragment'))], [{ x: 4 }])
  // Started before it is awaited, and awaited twice.
  const early = sql`select 5 as x`.execute()
  assert.equal((await within(early, 'execute()'))[0]!.x, 5)
  assert.equal((await early)[0]!.x, 5)
})

test('helpers: insert, update, in, identifiers, fragments', { skip }, async () => {
  await sql`create table ${sql(table)} (id int primary key, name text, tags text[])`
  const rows = [{ id: 1, name: 'a', tags: ['x'] }, { id: 2, name: 'b', tags: [] }]
  assert.equal((await sql`insert into ${sql(table)} ${sql(rows)}`).count, 2)
  await sql`update ${sql(table)} set ${sql({ name: 'c' }, 'name')} where id = ${2}`
  const where = sql`id in ${sql([1, 2])}`
  const got = await sql`select ${sql(['id', 'name'])} from ${sql(table)} where ${where} order by id`
  assert.deepEqual([...got], [{ id: 1, name: 'a' }, { id: 2, name: 'c' }])
  assert.deepEqual([...(await sql`select * from ${sql(table)} where id = 1`.values())], [[1, 'a', ['x']]])
  assert.equal(await codeOf(sql`select ${undefined}`), 'UNDEFINED_VALUE')
})

test('transactions commit, roll back, nest savepoints and run arrays of queries', { skip }, async () => {
  const [a, b] = await sql.begin((tx) => [tx`select 1 as x`, tx`select 2 as x`])
  assert.equal(a![0]!.x + b![0]!.x, 3)
  await assert.rejects(
    sql.begin(async (tx) => {
      await tx`insert into ${tx(table)} values (3, 'gone')`
      throw new Error('undo')
    }),
    /undo/,
  )
  await sql.begin('isolation level serializable', async (tx) => {
    await tx`insert into ${tx(table)} values (4, 'kept')`
    await tx.savepoint(async (sp) => {
      await sp`insert into ${sp(table)} values (5, 'undone')`
      throw new Error('back to the savepoint')
    }).catch(() => {})
  })
  const ids = await sql`select id from ${sql(table)} where id > 2 order by id`
  assert.deepEqual(ids.map((r) => r.id), [4])
  assert.equal(await codeOf(sql`begin`), 'UNSAFE_TRANSACTION')
})

test('cursors, forEach and COPY', { skip }, async () => {
  const sizes: number[] = []
  for await (const rows of sql`select generate_series(1, 5) as n`.cursor(2)) sizes.push(rows.length)
  assert.deepEqual(sizes, [2, 2, 1])
  let sum = 0
  await sql`select generate_series(1, 4) as n`.forEach((row) => (sum += (row as { n: number }).n))
  assert.equal(sum, 10)
  const w = await sql`copy ${sql(table)} (id, name) from stdin`.writable()
  w.end('10\tcopied\n')
  await w.result
  const out: Buffer[] = []
  for await (const chunk of await sql`copy (select name from ${sql(table)} where id = 10) to stdout`.readable()) out.push(chunk as Buffer)
  assert.equal(Buffer.concat(out).toString(), 'copied\n')
})

test('listen and notify', { skip }, async () => {
  let heard: (payload: string) => void = () => {}
  const got = new Promise<string>((resolve) => (heard = resolve))
  const listening = await sql.listen('pgjs_test_channel', (payload) => heard(payload))
  assert.equal(typeof listening.state.pid, 'number')
  await sql.notify('pgjs_test_channel', 'hello')
  assert.equal(await got, 'hello')
  await listening.unlisten()
})

test("listen's state.pid: undefined once its backend is gone, then the new backend's, notifications flowing again; three times over", { skip }, async () => {
  const own = postgres(connectionString ?? {}, { max: 1, onnotice: () => {} })
  const until = async (what: string, ok: () => boolean): Promise<void> => {
    const deadline = performance.now() + 10_000
    while (!ok()) {
      if (performance.now() > deadline) assert.fail(`${what} within 10 s`)
      await new Promise((r) => setTimeout(r, 5))
    }
  }
  try {
    const heard: string[] = []
    let relistened = 0
    const listening = await own.listen('pgjs_state_channel', (payload) => heard.push(payload), () => relistened++)
    for (let round = 0; round < 3; round++) {
      const old = listening.state.pid
      assert.equal(typeof old, 'number')
      await own`select pg_terminate_backend(${old!})`
      await until('the lost backend was dropped', () => listening.state.pid !== old)
      assert.ok(listening.state.pid === undefined || typeof listening.state.pid === 'number')
      await until('a new backend listened', () => typeof listening.state.pid === 'number' && relistened === round + 2)
      assert.notEqual(listening.state.pid, old)
      await own.notify('pgjs_state_channel', `after ${round}`)
      await until('the notification came', () => heard.includes(`after ${round}`))
    }
    await listening.unlisten()
  } finally {
    await own.end()
  }
})

test('errors: PostgresError with postgres.js fields, query and parameters; cancel', { skip }, async () => {
  const err = (await sql`select * from no_such_table_here where x = ${1}`.catch((e: unknown) => e)) as PostgresError
  assert.ok(err instanceof PostgresError)
  assert.equal(err.code, '42P01')
  assert.equal(err.routine, 'parserOpenTable')
  assert.equal(err.query, 'select * from no_such_table_here where x = $1')
  assert.deepEqual(err.parameters, [1])
  assert.equal(Object.keys(err).includes('query'), false)
  const q = sql`select pg_sleep(5)`
  setTimeout(() => q.cancel(), 100)
  assert.equal(await codeOf(q), '57014')
  const ended = postgres(connectionString ?? {})
  await ended.end()
  assert.equal(await codeOf(ended`select 1`), 'CONNECTION_ENDED')
})
