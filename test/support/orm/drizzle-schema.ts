import { relations } from 'drizzle-orm'
import {
  bigint,
  boolean,
  date,
  doublePrecision,
  integer,
  interval,
  json,
  jsonb,
  line,
  numeric,
  pgEnum,
  pgTable,
  point,
  real,
  serial,
  smallint,
  text,
  time,
  timestamp,
  uuid,
  inet,
  varchar,
} from 'drizzle-orm/pg-core'
import { uniqueName } from '../client.js'

// Tables of the drizzle tests, named uniquely: test files share one database.

export const mood = pgEnum(uniqueName('dz_mood'), ['sad', 'ok', 'happy'])

export const users = pgTable(uniqueName('dz_users') as 'dz_users', {
  id: serial('id').primaryKey(),
  name: text('name').notNull().unique(),
  mood: mood('mood'),
})

export const posts = pgTable(uniqueName('dz_posts') as 'dz_posts', {
  id: serial('id').primaryKey(),
  authorId: integer('author_id')
    .notNull()
    .references(() => users.id),
  title: varchar('title', { length: 100 }).notNull(),
})

export const usersRelations = relations(users, ({ many }) => ({ posts: many(posts) }))
export const postsRelations = relations(posts, ({ one }) => ({ author: one(users, { fields: [posts.authorId], references: [users.id] }) }))

/** A column of every type whose values drizzle maps, compared with drizzle's node-postgres driver. */
export const kinds = pgTable(uniqueName('dz_kinds') as 'dz_kinds', {
  id: serial('id').primaryKey(),
  big: bigint('big', { mode: 'bigint' }),
  bigNumber: bigint('big_number', { mode: 'number' }),
  small: smallint('small'),
  float4: real('float4'),
  float8: doublePrecision('float8'),
  flag: boolean('flag'),
  amount: numeric('amount'),
  amountNumber: numeric('amount_number', { mode: 'number' }),
  at: timestamp('at', { mode: 'date' }),
  atString: timestamp('at_string', { mode: 'string' }),
  atPrecise: timestamp('at_precise', { mode: 'string', precision: 6 }),
  atTz: timestamp('at_tz', { mode: 'date', withTimezone: true }),
  atTzString: timestamp('at_tz_string', { mode: 'string', withTimezone: true }),
  day: date('day', { mode: 'string' }),
  dayDate: date('day_date', { mode: 'date' }),
  clock: time('clock'),
  span: interval('span'),
  doc: jsonb('doc'),
  plain: json('plain'),
  tags: text('tags').array(),
  scores: integer('scores').array(),
  bigs: bigint('bigs', { mode: 'bigint' }).array(),
  stamps: timestamp('stamps', { mode: 'string' }).array(),
  days: date('days').array(),
  amounts: numeric('amounts').array(),
  moods: mood('moods').array(),
  mood: mood('mood'),
  ident: uuid('ident'),
  addr: inet('addr'),
  spot: point('spot', { mode: 'xy' }),
  spotTuple: point('spot_tuple'),
  edge: line('edge'),
  edgeAbc: line('edge_abc', { mode: 'abc' }),
})

export const schema = { users, posts, usersRelations, postsRelations, kinds }
