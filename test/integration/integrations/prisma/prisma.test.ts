import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { ColumnTypeEnum } from '@prisma/driver-adapter-utils'
import { TimeoutError, PgError, createPool, type Pool } from '../../../../src/index.js'
import { PrismaPipegres } from '../../../../src/integrations/prisma/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { ddl, dropDdl, generateClient, names, type GeneratedClient } from '../../../support/orm/prisma-client.js'

let pool: Pool
let generated: GeneratedClient
// eslint-disable-next-line @typescript-eslint/no-explicit-any
let prisma: any

before(async () => {
  const { options } = await mainDatabase()
  pool = createPool({ ...options, max: 4 })
  const [gen] = await Promise.all([generateClient(), pool.simpleQuery(ddl)])
  generated = gen
  prisma = new generated.PrismaClient({ adapter: new PrismaPipegres(pool) })
})

after(async () => {
  await prisma?.$disconnect()
  await pool.simpleQuery(dropDdl).catch(() => undefined)
  await pool.end()
  generated?.cleanup()
})

test('Prisma Client: create with nested writes, find with include, update, delete', async () => {
  const ada = await prisma.user.create({ data: { email: 'ada@example.com', name: 'Ada', posts: { create: [{ title: 'notes' }, { title: 'engine' }] } }, include: { posts: true } })
  assert.equal(ada.name, 'Ada')
  assert.deepEqual(ada.posts.map((p: { title: string }) => p.title).sort(), ['engine', 'notes'])
  const found = await prisma.user.findUnique({ where: { email: 'ada@example.com' }, include: { posts: { orderBy: { title: 'asc' } } } })
  assert.deepEqual(found.posts.map((p: { title: string }) => p.title), ['engine', 'notes'])
  const updated = await prisma.user.update({ where: { id: ada.id }, data: { name: 'Ada L.' } })
  assert.equal(updated.name, 'Ada L.')
  assert.equal(await prisma.post.count({ where: { authorId: ada.id } }), 2)
  await prisma.post.deleteMany({})
  await prisma.user.delete({ where: { id: ada.id } })
  assert.equal(await prisma.user.count(), 0)
})

test('Prisma Client: every scalar type round-trips', async () => {
  const data = {
    email: 'types@example.com',
    profile: { nested: { list: [1, 'two', null, true] }, n: 1.5 },
    balance: '12345.67',
    big: 9007199254740993n,
    born: new Date('1815-12-10T00:00:00Z'),
    seen: new Date('2024-02-29T12:34:56.789Z'),
    wake: new Date('1970-01-01T06:30:15.250Z'),
    avatar: new Uint8Array([0, 1, 2, 254, 255]),
    tags: ['a', 'b,c', 'd"e'],
    role: 'ADMIN',
    score: 0.1,
    active: false,
    uid: '6ba7b810-9dad-11d1-80b4-00c04fd430c8',
  }
  const created = await prisma.user.create({ data })
  const read = await prisma.user.findUnique({ where: { id: created.id } })
  for (const r of [created, read]) {
    assert.deepEqual(r.profile, data.profile)
    assert.equal(r.balance.toString(), '12345.67')
    assert.equal(r.big, data.big)
    assert.equal(r.born.toISOString(), data.born.toISOString())
    assert.equal(r.seen.toISOString(), data.seen.toISOString())
    assert.equal(r.wake.toISOString(), data.wake.toISOString())
    assert.deepEqual([...r.avatar], [...data.avatar])
    assert.deepEqual(r.tags, data.tags)
    assert.equal(r.role, 'ADMIN')
    assert.equal(r.score, 0.1)
    assert.equal(r.active, false)
    assert.equal(r.uid, data.uid)
    assert.ok(r.createdAt instanceof Date)
  }
  const empty = await prisma.user.create({ data: { email: 'empty@example.com' } })
  assert.equal(empty.profile, null)
  assert.deepEqual(empty.tags, [])
  const filtered = await prisma.user.findMany({ where: { big: { gt: 1n }, tags: { has: 'b,c' }, role: 'ADMIN', seen: { lt: new Date() } }, select: { email: true } })
  assert.deepEqual(filtered, [{ email: 'types@example.com' }])
  await prisma.user.deleteMany({})
})

test('Prisma Client: $queryRaw and $executeRaw', async () => {
  const rows = await prisma.$queryRaw`SELECT ${5}::int AS n, ${'x'}::text AS s, 7::int8 AS big, 1.5::numeric AS dec, now() AS at, '{"a":1}'::jsonb AS j, '\\x0102'::bytea AS b`
  assert.equal(rows[0].n, 5)
  assert.equal(rows[0].s, 'x')
  assert.equal(rows[0].big, 7n)
  assert.equal(rows[0].dec.toString(), '1.5')
  assert.ok(rows[0].at instanceof Date)
  assert.deepEqual(rows[0].j, { a: 1 })
  assert.deepEqual([...rows[0].b], [1, 2])
  const changed = await prisma.$executeRawUnsafe(`INSERT INTO "${names.users}" (email) VALUES ($1), ($2)`, 'r1@example.com', 'r2@example.com')
  assert.equal(changed, 2)
  await prisma.user.deleteMany({})
})

test('Prisma Client: interactive and batch transactions commit and roll back', async () => {
  await prisma.$transaction(async (tx: typeof prisma) => {
    await tx.user.create({ data: { email: 'tx1@example.com' } })
    assert.equal(await tx.user.count(), 1)
  })
  await assert.rejects(
    prisma.$transaction(async (tx: typeof prisma) => {
      await tx.user.create({ data: { email: 'tx2@example.com' } })
      throw new Error('undo')
    }),
    /undo/,
  )
  await prisma.$transaction([prisma.user.create({ data: { email: 'tx3@example.com' } }), prisma.user.create({ data: { email: 'tx4@example.com' } })])
  const level = await prisma.$transaction(async (tx: typeof prisma) => (await tx.$queryRaw`SELECT current_setting('transaction_isolation') AS l`)[0].l, { isolationLevel: 'Serializable' })
  assert.equal(level, 'serializable')
  const emails = (await prisma.user.findMany({ orderBy: { id: 'asc' } })).map((u: { email: string }) => u.email)
  assert.deepEqual(emails, ['tx1@example.com', 'tx3@example.com', 'tx4@example.com'])
  await prisma.user.deleteMany({})
})

test('Prisma Client: errors are mapped to Prisma codes and keep the PgError', async () => {
  await prisma.user.create({ data: { email: 'dup@example.com' } })
  const err = await prisma.user.create({ data: { email: 'dup@example.com' } }).catch((e: unknown) => e)
  assert.equal(err.code, 'P2002')
  assert.ok(err.meta.driverAdapterError.originalError instanceof PgError)
  assert.equal(err.meta.driverAdapterError.originalError.code, '23505')
  await prisma.user.deleteMany({})
})

test('a timeout in queryOptions cancels on the server and reaches the caller as Prisma P1008 carrying the TimeoutError', async () => {
  await pool.query('SELECT 1')
  const slow = new generated.PrismaClient({ adapter: new PrismaPipegres(pool, { queryOptions: { timeout: 100 } }) })
  // A model query held up by a lock: Prisma's timeout code.
  const locked = pool.begin(async (tx) => {
    await tx.query(`LOCK TABLE "${names.users}" IN ACCESS EXCLUSIVE MODE`)
    const err = await slow.user.findMany().catch((e: unknown) => e)
    assert.equal(err.code, 'P1008')
    assert.ok(err.meta.driverAdapterError.originalError instanceof TimeoutError, String(err))
  })
  await locked
  // A raw query: Prisma's code for a failed raw query, with the same error inside.
  const raw = await slow.$queryRaw`SELECT pg_sleep(5)`.catch((e: unknown) => e)
  assert.equal(raw.code, 'P2010')
  assert.ok(raw.meta.driverAdapterError.originalError instanceof TimeoutError)
  assert.equal(raw.meta.driverAdapterError.originalError.cause.code, '57014', 'cancelled on the server')
  await slow.$disconnect()
  assert.deepEqual((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'disconnecting Prisma leaves a shared pool open')
})

test('the adapter contract: column types by OID, scripts, transactions and savepoints', async () => {
  const adapter = await new PrismaPipegres(pool, { schema: 'public' }).connect()
  assert.deepEqual(adapter.getConnectionInfo?.(), { supportsRelationJoins: true, maxBindValues: 32767, schemaName: 'public' })
  const r = await adapter.queryRaw({
    sql: `SELECT 1::int2 AS a, 2::int8 AS b, 1.5::float4 AS c, 2.5::float8 AS d, 3.25::numeric AS e, true AS f, '2024-01-02'::date AS g,
      '12:00:01+02'::timetz AS h, '2024-01-02 03:04:05.678+00'::timestamptz AS i, '{"k":[1]}'::json AS j, gen_random_uuid() AS k,
      'x'::text AS l, '\\x00ff'::bytea AS m, ARRAY[1,2]::int4[] AS n, ARRAY['{"a":1}'::jsonb] AS o, 'ADMIN'::"${names.role}" AS p, $1::text AS q`,
    args: ['arg'],
    argTypes: [{ scalarType: 'string', arity: 'scalar' }],
  })
  const T = ColumnTypeEnum
  assert.deepEqual(r.columnTypes, [T.Int32, T.Int64, T.Float, T.Double, T.Numeric, T.Boolean, T.Date, T.Time, T.DateTime, T.Json, T.Uuid, T.Text, T.Bytes, T.Int32Array, T.JsonArray, T.Text, T.Text])
  const row = r.rows[0]!
  assert.deepEqual(row.slice(0, 9), [1, '2', 1.5, 2.5, '3.25', true, '2024-01-02', '12:00:01', '2024-01-02T03:04:05.678Z'])
  assert.equal(row[9], '{"k":[1]}')
  assert.deepEqual([...(row[12] as Uint8Array)], [0, 255])
  assert.deepEqual(row.slice(13), [[1, 2], ['{"a":1}'], 'ADMIN', 'arg'])

  await adapter.executeScript(`CREATE TEMP TABLE script_t (v int); INSERT INTO script_t VALUES (1); DROP TABLE script_t`)
  const tx = await adapter.startTransaction('REPEATABLE READ')
  assert.equal(tx.options.usePhantomQuery, true)
  await tx.executeRaw({ sql: `INSERT INTO "${names.users}" (email) VALUES ('sp1@example.com')`, args: [], argTypes: [] })
  await tx.createSavepoint!('s1')
  await tx.executeRaw({ sql: `INSERT INTO "${names.users}" (email) VALUES ('sp2@example.com')`, args: [], argTypes: [] })
  await tx.rollbackToSavepoint!('s1')
  await tx.releaseSavepoint!('s1')
  await tx.commit()
  const emails = await pool.query<{ email: string }>(`SELECT email FROM "${names.users}"`)
  assert.deepEqual(emails.rows, [{ email: 'sp1@example.com' }])

  const rolled = await adapter.startTransaction()
  await rolled.executeRaw({ sql: `DELETE FROM "${names.users}"`, args: [], argTypes: [] })
  await rolled.rollback()
  assert.equal((await pool.query(`SELECT 1 FROM "${names.users}"`)).rowCount, 1)

  const failing = await adapter.startTransaction()
  await failing.executeRaw({ sql: 'SELECT 1/0', args: [], argTypes: [] }).catch(() => undefined)
  await assert.rejects(failing.commit(), (e: Error & { cause?: { kind?: string } }) => e.name === 'DriverAdapterError' || e.name === 'TransactionError')
  const dup = await adapter.executeRaw({ sql: `INSERT INTO "${names.users}" (email) VALUES ('sp1@example.com')`, args: [], argTypes: [] }).catch((e: unknown) => e)
  assert.deepEqual((dup as { cause: unknown }).cause, { kind: 'UniqueConstraintViolation', constraint: { fields: ['email'] }, table: names.users, originalCode: '23505', originalMessage: (dup as { cause: { originalMessage: string } }).cause.originalMessage })
  await pool.query(`DELETE FROM "${names.users}"`)
  await adapter.dispose()
})
