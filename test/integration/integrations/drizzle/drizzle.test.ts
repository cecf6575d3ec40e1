import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq, getTableName, sql, TransactionRollbackError } from 'drizzle-orm'
// From drizzle-orm/errors: the root export of it came after 0.44.0, where the peer range starts (`npm run test:peers`).
import { DrizzleQueryError } from 'drizzle-orm/errors'
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres'
import pg from 'pg'
import { PgError, TimeoutError, connect, createPool, type Pool } from '../../../../src/index.js'
import { drizzle, migrate } from '../../../../src/integrations/drizzle/index.js'
import { intervalText } from '../../../../src/integrations/drizzle/values.js'
import { Interval } from '../../../../src/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'
import { kinds, mood, posts, schema, users } from '../../../support/orm/drizzle-schema.js'

let pool: Pool
let pgPool: pg.Pool
let db: ReturnType<typeof drizzle<typeof schema>>

before(async () => {
  const { options, connectionString } = await mainDatabase()
  pool = createPool({ ...options, max: 4 })
  pgPool = new pg.Pool(connectionString !== undefined ? { connectionString, max: 2 } : { max: 2 })
  db = drizzle(pool, { schema })
  const enumName = mood.enumName
  await pool.simpleQuery(`
    CREATE TYPE "${enumName}" AS ENUM ('sad', 'ok', 'happy');
    CREATE TABLE "${getTableName(users)}" (id serial PRIMARY KEY, name text NOT NULL UNIQUE, mood "${enumName}");
    CREATE TABLE "${getTableName(posts)}" (id serial PRIMARY KEY, author_id int NOT NULL REFERENCES "${getTableName(users)}"(id), title varchar(100) NOT NULL);
    CREATE TABLE "${getTableName(kinds)}" (
      id serial PRIMARY KEY, big int8, big_number int8, small int2, float4 real, float8 float8, flag bool,
      amount numeric, amount_number numeric, at timestamp(3), at_string timestamp, at_precise timestamp(6),
      at_tz timestamptz, at_tz_string timestamptz, day date, day_date date, clock time, span interval,
      doc jsonb, plain json, tags text[], scores int[], bigs int8[], stamps timestamp[], days date[], amounts numeric[],
      moods "${enumName}"[], mood "${enumName}", ident uuid, addr inet, spot point, spot_tuple point, edge line, edge_abc line)`)
})

after(async () => {
  await pool.simpleQuery(`DROP TABLE IF EXISTS "${getTableName(posts)}", "${getTableName(users)}", "${getTableName(kinds)}"; DROP TYPE IF EXISTS "${mood.enumName}"`)
  await Promise.all([pool.end(), pgPool.end()])
})

test('select, insert, update and delete with returning', async () => {
  const [ada] = await db.insert(users).values({ name: 'ada', mood: 'happy' }).returning()
  assert.equal(ada!.name, 'ada')
  assert.equal(ada!.mood, 'happy')
  const rows = await db.select({ id: users.id, name: users.name }).from(users).where(eq(users.name, 'ada'))
  assert.deepEqual(rows, [{ id: ada!.id, name: 'ada' }])
  const updated = await db.update(users).set({ mood: 'ok' }).where(eq(users.id, ada!.id)).returning({ mood: users.mood })
  assert.deepEqual(updated, [{ mood: 'ok' }])
  const result = await db.delete(users).where(eq(users.id, ada!.id))
  assert.equal(result.rowCount, 1)
  assert.equal(await db.$count(users), 0)
})

test('the relational query API loads relations', async () => {
  const [a, b] = await db.insert(users).values([{ name: 'rel-a' }, { name: 'rel-b' }]).returning()
  await db.insert(posts).values([
    { authorId: a!.id, title: 'first' },
    { authorId: a!.id, title: 'second' },
    { authorId: b!.id, title: 'third' },
  ])
  const found = await db.query.users.findMany({ with: { posts: { columns: { title: true }, orderBy: (p, { asc }) => [asc(p.id)] } }, orderBy: (u, { asc }) => [asc(u.id)] })
  assert.deepEqual(found.map((u) => [u.name, u.posts.map((p) => p.title)]), [['rel-a', ['first', 'second']], ['rel-b', ['third']]])
  const post = await db.query.posts.findFirst({ where: eq(posts.title, 'third'), with: { author: true } })
  assert.equal(post!.author.name, 'rel-b')
  await db.delete(posts)
  await db.delete(users)
})

test('transactions: commit, tx.rollback(), and nested savepoints', async () => {
  await db.transaction(async (tx) => {
    await tx.insert(users).values({ name: 'kept' })
    await tx
      .transaction(async (inner) => {
        await inner.insert(users).values({ name: 'undone' })
        inner.rollback()
      })
      .catch((err: unknown) => assert.ok(err instanceof TransactionRollbackError))
    await tx.transaction(async (inner) => {
      await inner.insert(users).values({ name: 'nested' })
      await inner.transaction(async (deeper) => void (await deeper.insert(users).values({ name: 'deeper' })))
    })
  })
  const names = (await db.select({ name: users.name }).from(users).orderBy(users.id)).map((r) => r.name)
  assert.deepEqual(names, ['kept', 'nested', 'deeper'])

  await assert.rejects(
    db.transaction(async (tx) => {
      await tx.insert(users).values({ name: 'rolled back' })
      tx.rollback()
    }),
    TransactionRollbackError,
  )
  assert.equal(await db.$count(users), 3)

  const level = await db.transaction(
    async (tx) => (await tx.execute<{ l: string }>(sql`SELECT current_setting('transaction_isolation') AS l`)).rows[0]!.l,
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  )
  assert.equal(level, 'repeatable read')
  await db.delete(users)
})

test('prepared queries with placeholders', async () => {
  await db.insert(users).values([{ name: 'p1' }, { name: 'p2' }])
  const byName = db.select({ name: users.name }).from(users).where(eq(users.name, sql.placeholder('name'))).prepare('by_name')
  assert.deepEqual(await byName.execute({ name: 'p1' }), [{ name: 'p1' }])
  assert.deepEqual(await byName.execute({ name: 'p2' }), [{ name: 'p2' }])
  assert.deepEqual(await byName.execute({ name: 'none' }), [])
  await db.delete(users)
})

test('every column type reads as through drizzle on node-postgres', async () => {
  const row = {
    big: 9007199254740993n,
    bigNumber: 42,
    small: -7,
    float4: 1.5,
    float8: 0.1,
    flag: true,
    amount: '12345678901234567890.0100',
    amountNumber: 2.5,
    at: new Date('2024-02-29T12:34:56.789Z'),
    atString: '2024-02-29 12:34:56.5',
    atPrecise: '2024-02-29 12:34:56.123456',
    atTz: new Date('2024-02-29T12:34:56.789Z'),
    atTzString: '2024-02-29 12:34:56.25+00',
    day: '2024-02-29',
    dayDate: new Date('2024-02-29T00:00:00Z'),
    clock: '12:34:56.5',
    span: '1 year 2 mons -3 days +04:05:06.5',
    doc: { a: [1, 'two', null], b: { c: true } },
    plain: [1, 2, 3],
    tags: ['a', 'b,c', 'd"e', ''],
    scores: [1, 2, 3],
    bigs: [1n, -9007199254740993n],
    stamps: ['2024-01-01 00:00:00', '1999-12-31 23:59:59.999999'],
    days: ['2024-01-01', '2024-12-31'],
    amounts: ['1.50', '-2'],
    moods: ['sad', 'happy'] as ('sad' | 'ok' | 'happy')[],
    mood: 'ok' as const,
    ident: '6ba7b810-9dad-11d1-80b4-00c04fd430c8',
    addr: '192.168.0.1/24',
    spot: { x: 1.5, y: -2 },
    spotTuple: [3, 4] as [number, number],
    edge: [1, -1, 0] as [number, number, number],
    edgeAbc: { a: 2, b: 3, c: 4.5 },
  }
  const [{ id }] = (await db.insert(kinds).values(row).returning({ id: kinds.id })) as [{ id: number }]
  await db.insert(kinds).values({})
  const reference = drizzlePg(pgPool)
  // Both drivers, on a first (text) and a later (binary) execution of the statement.
  for (let round = 0; round < 2; round++) {
    const viaPipegres = await db.select().from(kinds).orderBy(kinds.id)
    const viaPg = await reference.select().from(kinds).orderBy(kinds.id)
    assert.deepEqual(viaPipegres, viaPg)
    assert.equal(viaPipegres[0]!.id, id)
    assert.deepEqual(viaPipegres[0], { ...viaPg[0], ...row, id })
    const raw = await db.execute(sql`SELECT * FROM ${kinds} ORDER BY id`)
    const rawPg = await reference.execute(sql`SELECT * FROM ${kinds} ORDER BY id`)
    // Raw rows too, except arrays of the types node-postgres leaves as text.
    const strip = (r: Record<string, unknown>) => ({ ...r, stamps: undefined, days: undefined, amounts: undefined, moods: undefined, edge: undefined, edge_abc: undefined })
    assert.deepEqual(raw.rows.map(strip), rawPg.rows.map(strip))
  }
  await db.delete(kinds)
})

test('intervals print as PostgreSQL prints them', async () => {
  const cases = ['0', '1 day', '-1 day', '1 mon -1 day', '-1 year -2 mons +3 days -04:05:06.000001', '100 hours', '-00:00:01', '1 year 2 mons', '00:00:00.5', '-1 mons 1 day']
  const { rows } = await pool.query<{ i: Interval; t: string }>(`SELECT v::interval AS i, v::interval::text AS t FROM unnest($1::text[]) AS v`, [cases])
  for (const r of rows) assert.equal(intervalText(r.i), r.t)
})

/** The pipegres error behind a failed drizzle query, which drizzle wraps in its DrizzleQueryError. */
function pipegresErrorOf(err: unknown): unknown {
  assert.ok(err instanceof DrizzleQueryError, String(err))
  return err.cause
}

test('errors keep pipegres classes as the cause of drizzle errors', async () => {
  await db.insert(users).values({ name: 'dup' })
  const err = await db
    .insert(users)
    .values({ name: 'dup' })
    .catch((e: unknown) => e)
  const cause = pipegresErrorOf(err)
  assert.ok(cause instanceof PgError, String(cause))
  assert.equal(cause.code, '23505')
  await db.delete(users)
})

test('a timeout in queryOptions cancels on the server; a pool shared with direct calls is one pool', async () => {
  await pool.query('SELECT 1')
  const slow = drizzle(pool, { queryOptions: { timeout: 100 } })
  const err = await slow.execute(sql`SELECT pg_sleep(5)`).catch((e: unknown) => e)
  assert.ok(pipegresErrorOf(err) instanceof TimeoutError)
  const [direct, viaDrizzle] = await Promise.all([pool.query('SELECT 1::int AS n'), db.execute(sql`SELECT 2::int AS n`)])
  assert.deepEqual([direct.rows, viaDrizzle.rows], [[{ n: 1 }], [{ n: 2 }]])
  assert.ok(pool.totalCount <= 4)
})

test('a single client works too: transactions take its exclusive lane', async () => {
  const { options } = await mainDatabase()
  const client = await connect(options)
  try {
    const cdb = drizzle({ client, schema })
    const results = await Promise.all([
      cdb.transaction(async (tx) => (await tx.insert(users).values({ name: 'c1' }).returning())[0]!.name),
      ...Array.from({ length: 50 }, (_, i) => cdb.execute<{ n: number }>(sql`SELECT ${i}::int AS n`).then((r) => r.rows[0]!.n)),
    ])
    assert.equal(results[0], 'c1')
    assert.deepEqual(results.slice(1), Array.from({ length: 50 }, (_, i) => i))
    await cdb.delete(users)
  } finally {
    await client.end()
  }
})

test('migrate() applies a drizzle-kit migrations folder once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pipegres-drizzle-'))
  const table = uniqueName('dz_migrated')
  const migrationsSchema = uniqueName('dz_mig')
  try {
    mkdirSync(join(dir, 'meta'))
    const entries = [
      { idx: 0, version: '7', when: 1700000000000, tag: '0000_init', breakpoints: true },
      { idx: 1, version: '7', when: 1700000001000, tag: '0001_more', breakpoints: true },
    ]
    writeFileSync(join(dir, 'meta', '_journal.json'), JSON.stringify({ version: '7', dialect: 'postgresql', entries }))
    writeFileSync(join(dir, '0000_init.sql'), `CREATE TABLE "${table}" (id int PRIMARY KEY);\n--> statement-breakpoint\nINSERT INTO "${table}" VALUES (1);`)
    writeFileSync(join(dir, '0001_more.sql'), `ALTER TABLE "${table}" ADD COLUMN note text;`)
    const config = { migrationsFolder: dir, migrationsSchema, migrationsTable: 'log' }
    await migrate(db, config)
    await migrate(db, config)
    const applied = await pool.query<{ n: bigint }>(`SELECT count(*) AS n FROM "${migrationsSchema}".log`)
    assert.equal(applied.rows[0]!.n, 2n)
    const cols = await pool.query<{ column_name: string }>(`SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`, [table])
    assert.deepEqual(cols.rows.map((r) => r.column_name), ['id', 'note'])
  } finally {
    rmSync(dir, { recursive: true, force: true })
    await pool.simpleQuery(`DROP TABLE IF EXISTS "${table}"; DROP SCHEMA IF EXISTS "${migrationsSchema}" CASCADE`)
  }
})
