// rowMode 'lazy': rows keep their DataRow bytes and decode a column when it is
// first read. They must give the same values as rowMode 'object' for every
// kind of result (binary and text, prepared and not, every request type),
// stay correct while the connection goes on reading, keep what the caller
// assigns, and say what failed when a value cannot be decoded.

import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { inspect } from 'node:util'
import { ArgumentError, CodecError, isLazyRow, plainRow, type Client } from '../../../src/index.js'
import { openClient, uniqueName } from '../../support/client.js'

const TYPED = `SELECT g AS a, g::int8 AS b, g * 1.5::float8 AS c, (g / 7.0)::numeric AS d, g % 2 = 0 AS e,
  '2024-02-29 12:34:56.789+00'::timestamptz + g * interval '1 hour' AS f, '2024-02-29'::date + g AS h,
  md5(g::text)::uuid AS i, jsonb_build_object('k', g, 'l', ARRAY[g, g + 1]) AS j, ARRAY['x', NULL, g::text] AS k,
  decode(md5(g::text), 'hex') AS l, 'ünï ' || g AS m, NULLIF(g % 3, 0) AS n, repeat('z', g % 40) AS o
  FROM generate_series(1, $1::int) AS g`

const clients: Client[] = []
after(async () => {
  await Promise.all(clients.map((c) => c.end()))
})
// Plain sockets read into one buffer shared by every connection: lazy rows must not see it reused.
async function client(options: Parameters<typeof openClient>[0] = {}): Promise<Client> {
  const c = await openClient({ sslmode: 'disable', ...options })
  clients.push(c)
  return c
}

const db = await client()
const other = await client()

test('lazy rows give the values object rows give, in binary and in text, prepared or not', async () => {
  const unprepared = await client({ prepare: false })
  for (const c of [db, unprepared]) {
    // Twice: the first execution of an unprepared text comes back in text, the next in binary.
    for (let round = 0; round < 2; round++) {
      const eager = await c.query(TYPED, [300])
      const lazy = await c.query(TYPED, [300], { rowMode: 'lazy' })
      assert.equal(lazy.rows.length, 300)
      assert.ok(lazy.rows.every(isLazyRow))
      assert.deepEqual(lazy.rows.map(plainRow), eager.rows)
    }
  }
})

test('JSON.stringify, console.log and plainRow show a lazy row as its plain object', async () => {
  const text = "SELECT 1 AS id, 'ann' AS name, '{\"x\": [1, 2]}'::jsonb AS doc, NULL::text AS gone"
  const [lazy] = (await db.query(text, [], { rowMode: 'lazy' })).rows
  const [eager] = (await db.query(text)).rows
  assert.equal(JSON.stringify(lazy), JSON.stringify(eager))
  assert.equal(inspect(lazy), inspect(eager))
  const plain = plainRow(lazy!)
  assert.deepEqual(plain, eager)
  assert.equal(Object.getPrototypeOf(plain), Object.prototype)
  assert.deepEqual(structuredClone(plain), eager)
  // What the mode gives up, and why it is opt-in: the columns are not own properties.
  assert.deepEqual(Object.keys(lazy!), [])
  assert.ok('name' in lazy!)
  assert.equal(isLazyRow(eager), false)
  assert.deepEqual(plainRow(eager!), eager)
})

test('each read decodes anew, assignments are kept, and wide rows read every column right', async () => {
  const [row] = (await db.query("SELECT '{\"k\": [1]}'::jsonb AS doc, 'a' AS name, 5 AS n", [], { rowMode: 'lazy' })).rows as Record<string, unknown>[]
  // Nothing is cached in the row: an object value is a new one, equal to the last, on every read.
  const doc = row!.doc as { k: number[] }
  assert.notEqual(row!.doc, doc)
  assert.deepEqual(row!.doc, doc)
  doc.k.push(2)
  assert.deepEqual(row!.doc, { k: [1] })
  row!.name = 'b'
  row!.doc = doc
  assert.equal(row!.doc, doc)
  assert.deepEqual(plainRow(row!), { doc: { k: [1, 2] }, name: 'b', n: 5 })

  // Past 16 columns a row keeps its columns' offsets once read.
  const cols = Array.from({ length: 40 }, (_, i) => (i % 5 === 4 ? `NULL::text AS c${i}` : `repeat('v', ${i}) || ${i} AS c${i}`)).join(', ')
  const wide = await db.query(`SELECT ${cols} FROM generate_series(1, 3)`, [], { rowMode: 'lazy' })
  const eager = await db.query(`SELECT ${cols} FROM generate_series(1, 3)`)
  assert.deepEqual(wide.rows.map(plainRow), eager.rows)
  const w = wide.rows[1] as Record<string, unknown>
  w.c7 = 'changed'
  assert.equal(w.c39, null)
  assert.equal(w.c38, 'v'.repeat(38) + '38')
  assert.equal(w.c7, 'changed')
  assert.equal(w.c6, 'v'.repeat(6) + '6')
})

test('hostile and repeated column names behave as in rowMode object', async () => {
  const text = `SELECT 1 AS "__proto__", 2 AS "constructor", 3 AS "hasOwnProperty", 4 AS "a", 5 AS "a", 6 AS "valueOf"`
  const [lazy] = (await db.query(text, [], { rowMode: 'lazy' })).rows as Record<string, unknown>[]
  const [eager] = (await db.query(text)).rows as Record<string, unknown>[]
  assert.equal(lazy!.__proto__, 1)
  assert.equal(lazy!.constructor, 2)
  assert.equal(lazy!.a, 5)
  const plain = plainRow(lazy!)
  assert.equal(Object.getPrototypeOf(plain), Object.prototype)
  assert.deepEqual(Object.keys(plain), Object.keys(eager!))
  assert.deepEqual(Object.getOwnPropertyDescriptor(plain, '__proto__')?.value, 1)
  assert.deepEqual(plain, eager)
  assert.equal(JSON.stringify(lazy), JSON.stringify(eager))
})

test('rows stay right while the connection reads on, over many socket reads and messages split between them', async () => {
  // 20,000 rows span many socket reads; 300 KB values span several, so their DataRows are assembled.
  const big = await db.query("SELECT g AS n, repeat(chr(97 + g % 26), 300000) AS v FROM generate_series(1, 6) AS g", [], { rowMode: 'lazy' })
  const many = await db.query(TYPED, [20_000], { rowMode: 'lazy' })
  assert.equal(db.tls, false)
  // Other results read in between, on this connection and on another, must not disturb the rows kept.
  for (let i = 0; i < 20; i++) await Promise.all(Array.from({ length: 50 }, (_, k) => (k % 2 === 0 ? db : other).query(TYPED, [k % 5])))
  const eager = await db.query(TYPED, [20_000])
  assert.deepEqual(many.rows.map(plainRow), eager.rows)
  big.rows.forEach((r, i) => {
    assert.equal(r.n, i + 1)
    assert.equal(r.v, String.fromCharCode(97 + ((i + 1) % 26)).repeat(300000))
  })
})

test('a value that cannot be decoded throws a CodecError when it is read, every time, and the other columns still read', async () => {
  const bad = await client({ customTypes: [{ oid: 25, parse: (t) => { if (t === 'bad') throw new Error('no bad values'); return t.toUpperCase() } }] })
  const r = await bad.query("SELECT 1 AS n, 'bad'::text AS t, 'ok'::text AS u", [], { rowMode: 'lazy' })
  const row = r.rows[0]!
  assert.equal(row.n, 1)
  assert.equal(row.u, 'OK')
  for (let i = 0; i < 2; i++) assert.throws(() => row.t, (err: unknown) => err instanceof CodecError && /column "t" .*: no bad values/.test(err.message))
  // With rowMode object the same value fails the query itself.
  await assert.rejects(bad.query("SELECT 1 AS n, 'bad'::text AS t"), /no bad values/)
})

test('every request type takes rowMode lazy, and a client or pool can make it the default', async () => {
  const lazyDb = await client({ rowMode: 'lazy' })
  const q = await lazyDb.query('SELECT 1 AS a')
  assert.ok(isLazyRow(q.rows[0]))
  assert.equal(q.rows[0]!.a, 1)
  // An explicit mode still wins over the default.
  assert.deepEqual((await lazyDb.query('SELECT 1 AS a', [], { rowMode: 'object' })).rows, [{ a: 1 }])

  const simple = await lazyDb.simpleQuery("SELECT 1 AS a; SELECT 'x' AS b")
  assert.equal(simple[0]!.rows[0]!.a, 1)
  assert.equal(simple[1]!.rows[0]!.b, 'x')
  assert.ok(isLazyRow(simple[1]!.rows[0]))

  const rs = await db.batch((b) => {
    b.query('SELECT 2 AS c', [], { rowMode: 'lazy' })
    b.query('SELECT 3 AS d')
  })
  assert.ok(isLazyRow(rs[0]!.rows[0]))
  assert.equal(rs[0]!.rows[0]!.c, 2)
  assert.deepEqual(rs[1]!.rows, [{ d: 3 }])

  let sum = 0
  for await (const row of db.stream<{ g: number }>('SELECT g FROM generate_series(1, 5000) AS g', [], { rowMode: 'lazy' })) sum += row.g
  assert.equal(sum, (5000 * 5001) / 2)

  const cursor = db.cursor<{ g: number }>('SELECT g FROM generate_series(1, 250) AS g', [], { rowMode: 'lazy', batchSize: 100 })
  const seen: number[] = []
  for await (const batch of cursor) for (const row of batch) seen.push(row.g)
  assert.equal(seen.length, 250)
  assert.equal(seen[249], 250)

  // COPY rows are decoded as they arrive: a default of 'lazy' gives objects there, an explicit 'lazy' is refused.
  const table = uniqueName('lazy_copy')
  await db.simpleQuery(`CREATE TEMP TABLE ${table} (n int); INSERT INTO ${table} VALUES (1), (2)`)
  const copied: unknown[] = []
  for await (const row of lazyDb.copyToRows(`SELECT 7 AS n`)) copied.push(row)
  assert.deepEqual(copied, [{ n: 7 }])
  await assert.rejects(db.copyToRows(table, { rowMode: 'lazy' as 'object' }).next(), (err: unknown) => err instanceof ArgumentError && /'lazy' is for query results/.test(err.message))
  await assert.rejects(db.query('SELECT 1', [], { rowMode: 'lazily' as 'lazy' }), /rowMode must be 'object', 'array' or 'lazy', not "lazily"/)
})
