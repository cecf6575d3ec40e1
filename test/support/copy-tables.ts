// The tables the COPY tests fill and read (test/integration/copy/copy-*.test.ts):
// each test makes its own, so tests and files can share a database.

import type { Client } from '../../src/index.js'
import { uniqueName } from './client.js'

/** Fresh tables through the file's client `db`, and their row counts. */
export function copyTables(db: Client) {
  return {
    /** A fresh table (id int primary key, name text, n int8) and its name. */
    async table(extra = ''): Promise<string> {
      const name = uniqueName('copy')
      await db.query(`CREATE TABLE ${name} (id int PRIMARY KEY, name text, n int8${extra})`)
      return name
    },
    count: async (t: string, c: Client = db): Promise<number> => (await c.query<{ c: number }>(`SELECT count(*)::int AS c FROM ${t}`)).rows[0]!.c,
  }
}

/** Rows `from` to `to` of such a table as COPY text data. */
export function textRows(from: number, to: number): string {
  let s = ''
  for (let i = from; i <= to; i++) s += `${i}\tname ${i}\t${i * 10}\n`
  return s
}
