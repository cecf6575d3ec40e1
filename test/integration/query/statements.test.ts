import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Client, PgError } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'

const db = await fileClient()

/** The prepared statements of a client's own session, as the server sees them (simple protocol: prepares nothing). */
async function prepared(c: Client): Promise<string[]> {
  const [r] = await c.simpleQuery<{ statement: string }>('SELECT statement FROM pg_prepared_statements ORDER BY prepare_time, name')
  return r!.rows.map((x) => x.statement)
}

test('a statement is parsed once per connection and reused by text', async () => {
  const c = await openClient()
  try {
    const text = 'SELECT $1::int * 2 AS d'
    for (let i = 0; i < 5; i++) assert.deepEqual((await c.query(text, [i])).rows, [{ d: i * 2 }])
    await Promise.all([c.query(text, [1]), c.query(text, [2]), c.query(text, [3])])
    assert.deepEqual(await prepared(c), [text])
  } finally {
    await c.end()
  }
})

test('the cache is bounded: least recently used statements are closed on the server', async () => {
  const c = await openClient({ statementCacheSize: 5 })
  try {
    const texts = Array.from({ length: 20 }, (_, i) => `SELECT ${i}::int AS n, $1::text AS t`)
    for (const t of texts) await c.query(t, ['x'])
    // Re-using one keeps it from being evicted.
    await c.query(texts[16]!, ['y'])
    await c.query('SELECT 100 AS n, $1::text AS t', ['z'])
    const left = await prepared(c)
    assert.equal(left.length, 5)
    assert.ok(left.includes(texts[16]!))
    assert.ok(!left.includes(texts[15]!))
    // Evicted statements are prepared again when needed.
    assert.deepEqual((await c.query(texts[0]!, ['w'])).rows, [{ n: 0, t: 'w' }])
  } finally {
    await c.end()
  }
})

test('eviction while many distinct statements are in flight', async () => {
  const c = await openClient({ statementCacheSize: 3 })
  try {
    const ps = []
    for (let i = 0; i < 300; i++) ps.push(c.query(`SELECT ${i % 17}::int AS n, $1::int AS m`, [i]))
    const rs = await Promise.all(ps)
    rs.forEach((r, i) => assert.deepEqual(r.rows, [{ n: i % 17, m: i }]))
    // Statements kept past the capacity while in use are closed behind the next query.
    await c.query('SELECT 1 AS one')
    const left = await prepared(c)
    assert.ok(left.length <= 3, `${left.length} statements left`)
  } finally {
    await c.end()
  }
})

test('prepare: false on the client uses unnamed statements only', async () => {
  const c = await openClient({ prepare: false })
  try {
    for (let i = 0; i < 3; i++) assert.deepEqual((await c.query('SELECT $1::int + 1 AS n', [i])).rows, [{ n: i + 1 }])
    const many = await Promise.all(Array.from({ length: 100 }, (_, i) => c.query('SELECT $1::text AS s', [`v${i}`])))
    many.forEach((r, i) => assert.deepEqual(r.rows, [{ s: `v${i}` }]))
    assert.deepEqual(await prepared(c), [])
    await assert.rejects(c.query('SELECT 1/$1::int', [0]), (e: unknown) => e instanceof PgError && e.code === '22012')
  } finally {
    await c.end()
  }
})

test('prepare: false per query', async () => {
  const c = await openClient()
  try {
    assert.deepEqual((await c.query('SELECT $1::int AS n', [5], { prepare: false })).rows, [{ n: 5 }])
    assert.deepEqual(await prepared(c), [])
  } finally {
    await c.end()
  }
})

test('prepare=false in the connection string', async () => {
  const c = await openClient({ prepare: undefined, connectionString: (await import('../../support/servers/test-server.js')).connectionUrl(await (await import('../../support/servers/test-server.js')).getTestServer(), (await (await import('../../support/servers/test-server.js')).getTestServer()).superuser, { params: { prepare: 'false' } }) })
  try {
    await c.query('SELECT $1::int AS n', [1])
    assert.deepEqual(await prepared(c), [])
  } finally {
    await c.end()
  }
})

test('a failed Parse does not poison the cache: the text works once the table exists', async () => {
  const t = uniqueName('later')
  const text = `SELECT count(*)::int AS n FROM ${t}`
  await assert.rejects(db.query(text), (e: unknown) => e instanceof PgError && e.code === '42P01')
  await db.query(`CREATE TABLE ${t} (a int)`)
  try {
    assert.deepEqual((await db.query(text)).rows, [{ n: 0 }])
  } finally {
    await db.query(`DROP TABLE ${t}`)
  }
})

test('DISCARD ALL and DEALLOCATE ALL drop the cache with the server statements', async () => {
  const text = 'SELECT $1::int + 10 AS n'
  assert.deepEqual((await db.query(text, [1])).rows, [{ n: 11 }])
  await db.query('DISCARD ALL')
  assert.deepEqual((await db.query(text, [2])).rows, [{ n: 12 }])
  await db.simpleQuery('DEALLOCATE ALL')
  assert.deepEqual((await db.query(text, [3])).rows, [{ n: 13 }])
})

test('a statement whose result type changed is prepared afresh after the server refuses it', async () => {
  const t = uniqueName('shape')
  await db.query(`CREATE TABLE ${t} (a int)`)
  try {
    const text = `SELECT * FROM ${t}`
    await db.query(`INSERT INTO ${t} VALUES (1)`)
    assert.deepEqual((await db.query(text)).rows, [{ a: 1 }])
    await db.query(`ALTER TABLE ${t} ADD COLUMN b text DEFAULT 'x'`)
    await assert.rejects(db.query(text), (e: unknown) => e instanceof PgError && e.code === '0A000')
    assert.deepEqual((await db.query(text)).rows, [{ a: 1, b: 'x' }])
  } finally {
    await db.query(`DROP TABLE ${t}`)
  }
})

test('a statement deallocated behind the client is sent again, once, on the unnamed statement', async () => {
  const c = await openClient()
  const t = uniqueName('dealloc')
  await c.query(`CREATE TEMP TABLE ${t} (a int)`)
  try {
    const text = `INSERT INTO ${t} VALUES ($1) RETURNING a`
    await c.query(text, [1])
    const names = (await c.simpleQuery<{ name: string }>("SELECT name FROM pg_prepared_statements WHERE statement LIKE 'INSERT%'"))[0]!.rows.map((r) => r.name)
    assert.equal(names.length, 1)
    assert.match(names[0]!, /^_p[0-9a-z]{6}_\d+$/, 'statement names carry a tag unique to the process')
    await c.simpleQuery(`DEALLOCATE "${names[0]}"`)
    // Bind failed with 26000, so the INSERT never ran: it is sent again, and runs once.
    assert.deepEqual((await c.query(text, [2])).rows, [{ a: 2 }])
    assert.deepEqual((await c.query(`SELECT a FROM ${t} ORDER BY a`)).rows, [{ a: 1 }, { a: 2 }])
    // The connection no longer relies on named statements.
    await c.query(text, [3])
    const after = (await c.simpleQuery<{ n: string }>("SELECT count(*) AS n FROM pg_prepared_statements WHERE statement LIKE 'INSERT%'"))[0]!.rows[0]!.n
    assert.equal(Number(after), 0)
  } finally {
    await c.end()
  }
})

test('a direct connection is recognised as such: statements prepared outside a transaction are reused inside later ones', async () => {
  const c = await openClient()
  try {
    const text = 'SELECT $1::int * 2 AS n'
    const prepared = async () =>
      (await c.simpleQuery<{ name: string }>(`SELECT name FROM pg_prepared_statements WHERE statement = '${text.replaceAll("'", "''")}'`))[0]!.rows.map((r) => r.name)
    assert.deepEqual((await c.query(text, [1])).rows, [{ n: 2 }])
    const before = await prepared()
    // The first transaction cannot know yet whether a pooler sits in between: it may prepare
    // the statement again (closing the old one). It also asks the server for its pid.
    await c.begin(async (tx) => assert.deepEqual((await tx.query(text, [2])).rows, [{ n: 4 }]))
    const afterFirst = await prepared()
    assert.equal(afterFirst.length, 1, 'a statement prepared again replaces the old one on the server')
    await c.begin(async (tx) => assert.deepEqual((await tx.query(text, [3])).rows, [{ n: 6 }]))
    assert.deepEqual(await prepared(), afterFirst, 'known to be direct: the statement is reused')
    assert.equal(before.length, 1)
  } finally {
    await c.end()
  }
})
