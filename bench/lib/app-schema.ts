import { pgTable, text, uuid } from 'drizzle-orm/pg-core'
import { APP_TABLE } from './app.js'

/** The users table for drizzle, shared by its app clients. */
export const appUsers = pgTable(APP_TABLE, {
  id: uuid('id').primaryKey(),
  name: text('name'),
  email: text('email'),
  password: text('password'),
})

/** The users table for Kysely. */
export interface AppDatabase {
  bench_users: { id: string; name: string | null; email: string | null; password: string | null }
}
