// Binary results without prepared statements: with prepare: false, a text's
// first execution comes back in text, and once its columns are known to
// decode in binary, the next ones come back in binary, still in one round
// trip, decoded to the same values; schema changes in between are read by
// what the server sends.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CodecError } from '../../../src/index.js'
import { openClient, uniqueName } from '../../support/client.js'

const db = await openClient({ prepare: false })
const formats = (r: { fields: { format: number }[] }) => r.fields.map((f) => f.format)

const TYPED = `SELECT 1::int2 AS a, 2::int4 AS b, 3::int8 AS c, 1.5::float8 AS d, 12.34::numeric AS e, true AS f,
  '2024-02-29 12:34:56.789+00'::timestamptz AS g, '2024-02-29'::date AS h, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS i,
  '{"k": [1, 2]}'::jsonb AS j, ARRAY['x', NULL, 'z'] AS k, '\\xdeadbeef'::bytea AS l, 'ünï' AS m, NULL::int4 AS n, $1::text AS o`

test('the first execution comes back in text, the next in binary, with the same values', async () => {
  const first = await db.query(TYPED, ['p'])
  assert.ok(formats(first).every((f) => f === 0))
  const second = await db.query(TYPED, ['p'])
  assert.ok(formats(second).every((f) => f === 1), `formats ${formats(second)}`)
  assert.deepEqual(second.rows, first.rows)
  // Once known, pipelined executions all come back in binary, each with its own values.
  await db.query('SELECT $1::int4 AS n, $1::text AS t', [-1])
  const many = await Promise.all(Array.from({ length: 200 }, (_, i) => db.query('SELECT $1::int4 AS n, $1::text AS t', [i])))
  for (const r of many) assert.deepEqual(formats(r), [1, 1])
  many.forEach((r, i) => assert.deepEqual(r.rows, [{ n: i, t: String(i) }]))
})

test('a text whose columns cannot all be read in binary stays in text', async () => {
  // tsvector prefers text; int4 beside it does not make the result binary.
  for (let i = 0; i < 3; i++) {
    const r = await db.query("SELECT 1 AS n, 'a b'::tsvector AS v")
    assert.deepEqual(formats(r), [0, 0])
    assert.deepEqual(r.rows, [{ n: 1, v: "'a' 'b'" }])
  }
})

test('columns added, removed and retyped between executions are decoded as the server sends them', async () => {
  const t = uniqueName('dc')
  await db.query(`CREATE TABLE ${t} (a int4, b text)`)
  try {
    await db.query(`INSERT INTO ${t} VALUES (1, 'one')`)
    const sql = `SELECT * FROM ${t}`
    await db.query(sql)
    assert.deepEqual(formats(await db.query(sql)), [1, 1])
    await db.query(`ALTER TABLE ${t} ALTER a TYPE int8, ADD c float8 DEFAULT 2.5`)
    const changed = await db.query(sql)
    assert.deepEqual(changed.rows, [{ a: 1n, b: 'one', c: 2.5 }])
    await db.query(`ALTER TABLE ${t} DROP b`)
    assert.deepEqual((await db.query(sql)).rows, [{ a: 1n, c: 2.5 }])
    // Inside a transaction too: a single binary format code cannot make the Bind fail.
    await db.begin(async (tx) => {
      await tx.query(`ALTER TABLE ${t} ADD d bool DEFAULT true`)
      assert.deepEqual((await tx.query(sql)).rows, [{ a: 1n, c: 2.5, d: true }])
    })
  } finally {
    await db.query(`DROP TABLE ${t}`)
  }
})

test('a column retyped to a type met for the first time is looked up, then read in binary', async () => {
  const t = uniqueName('dc')
  const mood = uniqueName('mood')
  await db.query(`CREATE TABLE ${t} (a int4)`)
  try {
    await db.query(`INSERT INTO ${t} VALUES (1)`)
    const sql = `SELECT a FROM ${t}`
    await db.query(sql)
    assert.deepEqual(formats(await db.query(sql)), [1])
    await db.query(`CREATE TYPE ${mood} AS ENUM ('1', '2')`)
    await db.query(`ALTER TABLE ${t} ALTER a TYPE ${mood} USING a::text::${mood}`)
    const r = await db.query(sql)
    assert.deepEqual(r.rows, [{ a: '1' }])
  } finally {
    await db.query(`DROP TABLE ${t}`)
    await db.query(`DROP TYPE IF EXISTS ${mood}`)
  }
})

test('a column retyped to a type read in text: a clear error once (never a value read differently), then text', async () => {
  const reader = await openClient({ prepare: false })
  const t = uniqueName('dc')
  await reader.query(`CREATE TABLE ${t} (a int4)`)
  try {
    await reader.query(`INSERT INTO ${t} VALUES (7)`)
    const sql = `SELECT a FROM ${t}`
    await reader.query(sql)
    assert.deepEqual(formats(await reader.query(sql)), [1])
    // tsvector is read in text.
    await reader.query(`ALTER TABLE ${t} ALTER a TYPE tsvector USING a::text::tsvector`)
    await assert.rejects(reader.query(sql), (e: unknown) => e instanceof CodecError && e.message.startsWith('the statement ran, but its result cannot be read: column "a" is now of type tsvector, which is read in text'))
    const again = await reader.query(sql)
    assert.deepEqual(again.rows, [{ a: "'7'" }])
    assert.deepEqual(formats(again), [0])
    // The connection stays in step.
    assert.deepEqual((await reader.query('SELECT 1 AS n')).rows, [{ n: 1 }])
  } finally {
    await reader.query(`DROP TABLE ${t}`)
    await reader.end()
  }
})

test.after(async () => {
  await db.end()
})
