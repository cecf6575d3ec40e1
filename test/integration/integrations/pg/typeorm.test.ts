// TypeORM with pipegres/pg as its driver: schema synchronization and a
// migration, repositories, relations, the query builder, transactions
// (DataSource.transaction and a QueryRunner rolled back), raw queries.

import 'reflect-metadata'
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { DataSource, EntitySchema, type MigrationInterface, type QueryRunner } from 'typeorm'
import pg from '../../../../src/integrations/pg/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'

interface Author {
  id: number
  name: string
  born: string | null
  stats: Record<string, unknown> | null
  score: string
  books?: Book[]
}
interface Book {
  id: number
  title: string
  pages: number
  author?: Author
}

const AuthorEntity = new EntitySchema<Author>({
  name: 'Author',
  tableName: 'authors',
  columns: {
    id: { type: 'int', primary: true, generated: 'increment' },
    name: { type: 'varchar', length: 100, unique: true },
    born: { type: 'date', nullable: true },
    stats: { type: 'jsonb', nullable: true },
    score: { type: 'numeric', precision: 10, scale: 2, default: 0 },
  },
  relations: { books: { type: 'one-to-many', target: 'Book', inverseSide: 'author' } },
})
const BookEntity = new EntitySchema<Book>({
  name: 'Book',
  tableName: 'books',
  columns: {
    id: { type: 'int', primary: true, generated: 'increment' },
    title: { type: 'text' },
    pages: { type: 'int' },
  },
  relations: { author: { type: 'many-to-one', target: 'Author', inverseSide: 'books', joinColumn: true } },
})

class AddShelf1700000000000 implements MigrationInterface {
  name = 'AddShelf1700000000000'
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "${schema}"."shelves" (id serial PRIMARY KEY, label text NOT NULL)`)
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "${schema}"."shelves"`)
  }
}

const { connectionString } = await mainDatabase()
const schema = uniqueName('pgt')
const setup = new pg.Client({ connectionString })
await setup.connect()
await setup.query(`CREATE SCHEMA "${schema}"`)
await setup.end()

const ds = new DataSource({
  type: 'postgres',
  url: connectionString,
  driver: pg,
  schema,
  entities: [AuthorEntity, BookEntity],
  migrations: [AddShelf1700000000000],
  migrationsTableName: 'migrations',
  synchronize: true,
  poolSize: 4,
  logging: false,
})
await ds.initialize()
after(async () => {
  await ds.query(`DROP SCHEMA "${schema}" CASCADE`)
  await ds.destroy()
})

test('synchronize created the tables; a migration runs and reverts', async () => {
  const tables = await ds.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, [schema])
  assert.deepEqual(tables.map((t: { table_name: string }) => t.table_name), ['authors', 'books'])
  const ran = await ds.runMigrations()
  assert.deepEqual(ran.map((m) => m.name), ['AddShelf1700000000000'])
  await ds.query(`INSERT INTO "${schema}"."shelves" (label) VALUES ($1)`, ['top'])
  await ds.undoLastMigration()
  const left = await ds.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'shelves'`, [schema])
  assert.equal(left[0].n, 0)
})

test('repositories, relations and the query builder', async () => {
  const authors = ds.getRepository(AuthorEntity)
  const books = ds.getRepository(BookEntity)
  const le = await authors.save({ name: 'Le Guin', born: '1929-10-21', stats: { awards: ['Hugo', 'Nebula'] }, score: '9.50' })
  await books.save([
    { title: 'The Dispossessed', pages: 387, author: le },
    { title: 'A Wizard of Earthsea', pages: 183, author: le },
  ])
  const found = await authors.findOne({ where: { id: le.id }, relations: { books: true } })
  assert.ok(found)
  assert.equal(found.books!.length, 2)
  assert.deepEqual(found.stats, { awards: ['Hugo', 'Nebula'] })
  assert.equal(found.score, '9.50')
  assert.equal(found.born, '1929-10-21')
  const long = await books.createQueryBuilder('b').innerJoin('b.author', 'a').where('a.name = :name', { name: 'Le Guin' }).andWhere('b.pages > :p', { p: 200 }).getMany()
  assert.deepEqual(long.map((b) => b.title), ['The Dispossessed'])
  const sum = await books.createQueryBuilder('b').select('SUM(b.pages)', 'total').getRawOne()
  assert.equal(sum.total, '570')
  const updated = await books.update({ title: 'The Dispossessed' }, { pages: 400 })
  assert.equal(updated.affected, 1)
  const deleted = await books.delete({ pages: 183 })
  assert.equal(deleted.affected, 1)
  await assert.rejects(authors.insert({ name: 'Le Guin' }), (err: Error & { driverError?: { code?: string } }) => err.driverError?.code === '23505')
})

test('transactions: DataSource.transaction commits, a QueryRunner rolls back, concurrent ones stay apart', async () => {
  const authors = ds.getRepository(AuthorEntity)
  await ds.transaction(async (m) => {
    await m.save(AuthorEntity, { name: 'in-tx' })
  })
  assert.ok(await authors.findOneBy({ name: 'in-tx' }))

  const qr = ds.createQueryRunner()
  await qr.connect()
  await qr.startTransaction()
  await qr.manager.save(AuthorEntity, { name: 'rolled-back' })
  assert.ok(await qr.manager.findOneBy(AuthorEntity, { name: 'rolled-back' }), 'visible inside')
  assert.equal(await authors.findOneBy({ name: 'rolled-back' }), null, 'not visible outside')
  await qr.rollbackTransaction()
  await qr.release()
  assert.equal(await authors.findOneBy({ name: 'rolled-back' }), null)

  await Promise.all(Array.from({ length: 10 }, (_, i) => ds.transaction((m) => m.save(AuthorEntity, { name: `c${i}` }))))
  assert.equal(await authors.count(), 12)
})
