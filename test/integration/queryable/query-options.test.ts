// Per-query options: misspelt or unknown ones are refused by name before
// anything is sent, on every call that runs a query; and describe(), which
// tells a statement's parameter and column types without running it.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Writable } from 'node:stream'
import { ArgumentError, PgError, createPool, type Client, type Pool } from '../../../src/index.js'
import { openClient, uniqueName } from '../../support/client.js'
import { mainDatabase } from '../../support/servers/test-server.js'

let db: Client
let pool: Pool
before(async () => {
  db = await openClient()
  pool = createPool({ ...(await mainDatabase()).options, max: 2 })
})
after(async () => {
  await db.end()
  await pool.end()
})

const unknownOption = (name: string) => (err: unknown) => err instanceof ArgumentError && err.message.includes(`"${name}"`)

test('a misspelt query option is refused by name, and nothing runs', async () => {
  const table = uniqueName('opts')
  await db.query(`CREATE TEMP TABLE ${table} (n int)`)
  await assert.rejects(db.query(`INSERT INTO ${table} VALUES (1)`, [], { timout: 5 } as never), unknownOption('timout'))
  await assert.rejects(pool.query('SELECT 1', [], { rowmode: 'array' } as never), unknownOption('rowmode'))
  const { rows } = await db.query(`SELECT count(*)::int AS n FROM ${table}`)
  assert.deepEqual(rows, [{ n: 0 }])
})

test('every query call checks its own options: what one call takes another refuses', async () => {
  // batchSize belongs to cursor(), highWaterMark to stream().
  await assert.rejects(db.stream('SELECT 1', [], { batchSize: 5 } as never).next(), unknownOption('batchSize'))
  await assert.rejects(db.cursor('SELECT 1', [], { highWaterMark: 5 } as never).read(), unknownOption('highWaterMark'))
  await assert.rejects(db.simpleQuery('SELECT 1', { prepare: false } as never), unknownOption('prepare'))
  const sink = new Writable({ write: (_c, _e, done) => done() })
  await assert.rejects(db.queryRaw('SELECT 1', [], sink, { rowMode: 'array' } as never), unknownOption('rowMode'))
  await assert.rejects(db.describe('SELECT 1', { types: {} } as never), unknownOption('types'))
  await assert.rejects(db.copyToRows('SELECT 1', { batchSize: 1 } as never).next(), unknownOption('batchSize'))
  await assert.rejects(async () => {
    for await (const chunk of db.copyTo('COPY (SELECT 1) TO STDOUT', { format: 'csv' } as never)) void chunk
  }, unknownOption('format'))
  // Options that are spelt right still work, and an option given as undefined counts as absent.
  const r = await db.query('SELECT 1 AS a', [], { rowMode: 'array', timeout: undefined, other: undefined } as never)
  assert.deepEqual(r.rows, [[1]])
  const rows = []
  for await (const row of db.stream('SELECT generate_series(1, 3) AS n', [], { highWaterMark: 2 })) rows.push(row)
  assert.equal(rows.length, 3)
})

test('a transaction checks the options of its queries too', async () => {
  await assert.rejects(
    db.begin(async (tx) => {
      await tx.query('SELECT 1', [], { signl: undefined, prepar: false } as never)
    }),
    unknownOption('prepar'),
  )
  assert.equal((await db.query('SELECT 1 AS one')).rows[0]!.one, 1)
})

test('describe() gives parameter types and columns without running the statement', async (t) => {
  const table = uniqueName('described')
  await db.query(`CREATE TABLE ${table} (id bigint, name text, at timestamptz)`)
  t.after(() => db.query(`DROP TABLE ${table}`))
  const d = await db.describe(`INSERT INTO ${table} (id, name) VALUES ($1, $2) RETURNING id, at`)
  assert.deepEqual(d.parameters, [20, 25])
  assert.deepEqual(d.fields.map((f) => [f.name, f.typeOid]), [['id', 20], ['at', 1184]])
  assert.equal((await db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n, 0, 'the INSERT was not executed')
  const none = await pool.describe(`DELETE FROM ${table} WHERE id = $1`)
  assert.deepEqual(none, { parameters: [20], fields: [] })
})

test('describe() learns types it meets for the first time, and reports errors with the query', async () => {
  const type = uniqueName('mood')
  await db.query(`CREATE TYPE ${type} AS ENUM ('sad', 'ok')`)
  try {
    const d = await db.describe(`SELECT $1::${type} AS m, ARRAY['ok']::${type}[] AS ms`)
    assert.equal(d.fields.length, 2)
    // The enum and its array are known now: a value of them decodes without another lookup.
    const { rows } = await db.query(`SELECT 'ok'::${type} AS m, ARRAY['ok','sad']::${type}[] AS ms`)
    assert.deepEqual(rows, [{ m: 'ok', ms: ['ok', 'sad'] }])
    await assert.rejects(db.describe('SELECT * FROM no_such_table_here'), (err: unknown) => err instanceof PgError && err.code === '42P01' && err.query === 'SELECT * FROM no_such_table_here')
    // The connection stays in step after the error.
    assert.equal((await db.query('SELECT 2 AS two')).rows[0]!.two, 2)
  } finally {
    await db.query(`DROP TYPE ${type}`)
  }
})

test('describe() inside a transaction and pipelined between queries keeps every reply in place', async () => {
  const results = await Promise.all([db.query('SELECT 1 AS a'), db.describe('SELECT $1::int4 + 1 AS b'), db.query('SELECT 3 AS c')])
  assert.deepEqual(results[0].rows, [{ a: 1 }])
  assert.deepEqual(results[1].parameters, [23])
  assert.deepEqual(results[2].rows, [{ c: 3 }])
  await db.begin(async (tx) => {
    const d = await tx.describe('SELECT now() AS t')
    assert.equal(d.fields[0]!.typeOid, 1184)
  })
})
