import type { Client } from '../../src/index.js'
import { fileClient, uniqueName } from './client.js'
import { adminQuery } from './servers/test-server.js'

/**
 * The table the transaction tests write into, with the file's client: rows
 * carry a tag and the id of the transaction that wrote them. `committed`
 * counts a tag's rows through the harness's own connection, so it sees
 * committed data only.
 */
export async function txTable(prefix: string): Promise<{
  db: Client
  t: string
  committed(tag: string): Promise<number>
  insert(q: { query: Client['query'] }, tag: string): ReturnType<Client['query']>
}> {
  const t = uniqueName(prefix)
  const db = await fileClient({
    setup: `CREATE TABLE ${t} (seq serial PRIMARY KEY, tag text NOT NULL, xid xid8 DEFAULT pg_current_xact_id())`,
    cleanup: `DROP TABLE IF EXISTS ${t}`,
  })
  return {
    db,
    t,
    committed: async (tag) => Number((await adminQuery(`SELECT count(*) FROM ${t} WHERE tag = '${tag}'`)).rows[0]![0]),
    insert: (q, tag) => q.query(`INSERT INTO ${t} (tag) VALUES ($1)`, [tag]),
  }
}
