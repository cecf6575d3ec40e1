// Drizzle's postgres-js driver, unchanged, on pipegres/postgres: it changes
// sql.options.parsers and .serializers (dates pass through as text) and runs
// everything through unsafe(), .values() and begin()/savepoint().

import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { eq, sql as dsql } from 'drizzle-orm'
import { integer, jsonb, pgTable, serial, text, timestamp } from 'drizzle-orm/pg-core'
import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from '../../../../src/integrations/postgres/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'

const { connectionString, source } = await mainDatabase()
const skip = source === 'PGlite' ? 'pipegres/postgres opens sockets of its own' : false
const name = uniqueName('pgjs_drizzle')
const notes = pgTable(name, {
  id: serial('id').primaryKey(),
  title: text('title').notNull(),
  stars: integer('stars').notNull().default(0),
  meta: jsonb('meta').$type<{ tags: string[] }>(),
  at: timestamp('at', { withTimezone: true, mode: 'date' }),
})

const client = postgres(connectionString ?? {}, { max: 3, onnotice: () => {} })
// postgres.js's client type; pipegres/postgres's sql function stands in for it.
const db = drizzle(client as never)

before(async () => {
  if (skip) return
  await client.unsafe(`create table "${name}" (id serial primary key, title text not null, stars int not null default 0, meta jsonb, at timestamptz)`)
})
after(async () => {
  if (!skip) await client.unsafe(`drop table if exists "${name}"`)
  await client.end()
})

test('insert returning, select, update, delete', { skip }, async () => {
  const at = new Date('2024-02-29T12:34:56.789Z')
  const [row] = await db.insert(notes).values({ title: 'first', meta: { tags: ['a'] }, at }).returning()
  assert.equal(row!.title, 'first')
  assert.deepEqual(row!.meta, { tags: ['a'] })
  assert.equal(row!.at!.toISOString(), at.toISOString())
  await db.insert(notes).values([{ title: 'second', stars: 3 }, { title: 'third', stars: 5 }])
  const starred = await db.select({ title: notes.title }).from(notes).where(dsql`${notes.stars} > 2`).orderBy(notes.id)
  assert.deepEqual(starred, [{ title: 'second' }, { title: 'third' }])
  await db.update(notes).set({ stars: 9 }).where(eq(notes.title, 'first'))
  const [first] = await db.select().from(notes).where(eq(notes.title, 'first'))
  assert.equal(first!.stars, 9)
  await db.delete(notes).where(eq(notes.title, 'third'))
  const [{ n }] = (await db.execute(dsql`select count(*)::int as n from ${notes}`)) as unknown as [{ n: number }]
  assert.equal(n, 2)
})

test('transactions commit, roll back, and nest', { skip }, async () => {
  await db.transaction(async (tx) => {
    await tx.insert(notes).values({ title: 'tx' })
    await tx
      .transaction(async (inner) => {
        await inner.insert(notes).values({ title: 'inner' })
        inner.rollback()
      })
      .catch(() => {})
  })
  await assert.rejects(
    db.transaction(async (tx) => {
      await tx.insert(notes).values({ title: 'gone' })
      throw new Error('undo')
    }),
    /undo/,
  )
  const titles = (await db.select({ title: notes.title }).from(notes).orderBy(notes.id)).map((r) => r.title)
  assert.ok(titles.includes('tx'))
  assert.ok(!titles.includes('inner') && !titles.includes('gone'))
})
