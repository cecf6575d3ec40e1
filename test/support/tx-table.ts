import type { Client } from '../../src/index.js'
import { fileClient, uniqueName } from './client.js'
import { testPGlite } from './servers/pglite-target.js'
import { adminQuery } from './servers/test-server.js'
import { onPGlite } from './target.js'

/**
 * The table the transaction tests write into, with the file's client: rows
 * carry a tag and the id of the transaction that wrote them. `committed`
 * counts a tag's rows through the harness's own connection, so it sees
 * committed data only. PGlite has no second connection: there it counts
 * through PGlite's own query() on the one session, which sees committed data
 * only while the session is in no transaction, and it refuses to count in one.
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
  const committedOnPGlite = async (tag: string): Promise<number> => {
    if (db.transactionStatus !== 'I') throw new Error('counting only committed rows while a transaction is open needs a second session, which PGlite does not have')
    const { rows } = await (await testPGlite()).query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t} WHERE tag = $1`, [tag])
    return rows[0]!.n
  }
  return {
    db,
    t,
    committed: onPGlite ? committedOnPGlite : async (tag) => Number((await adminQuery(`SELECT count(*) FROM ${t} WHERE tag = '${tag}'`)).rows[0]![0]),
    insert: (q, tag) => q.query(`INSERT INTO ${t} (tag) VALUES ($1)`, [tag]),
  }
}
