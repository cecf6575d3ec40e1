// result.notices: the NoticeResponses a statement raised come with its own
// result, pipelined or not, while the client-wide handler still sees them all.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { Client, PgNotice } from '../../../src/index.js'
import { openClient } from '../../support/client.js'

const heard: PgNotice[] = []
let db: Client
before(async () => {
  db = await openClient({ onNotice: (n) => heard.push(n) })
})
after(async () => {
  await db.end()
})

const raise = (...messages: string[]) => `DO $$ BEGIN ${messages.map((m) => `RAISE NOTICE '${m}';`).join(' ')} END $$`

test('each pipelined query gets the notices it raised, in order; the client-wide handler hears them all', async () => {
  heard.length = 0
  const [a, b, c] = await Promise.all([db.query(raise('a1', 'a2')), db.query('SELECT 1 AS n'), db.query(raise('c1'))])
  assert.deepEqual(a.notices.map((n) => n.message), ['a1', 'a2'])
  assert.equal(a.notices[0]!.severityNonLocalized ?? a.notices[0]!.severity, 'NOTICE')
  assert.equal(a.notices[0]!.code, '00000')
  assert.deepEqual(b.notices, [])
  assert.deepEqual(c.notices.map((n) => n.message), ['c1'])
  assert.deepEqual(heard.map((n) => n.message), ['a1', 'a2', 'c1'])
})

test('a result without notices shares one frozen empty array', async () => {
  const [x, y] = await Promise.all([db.query('SELECT 1'), db.query('SELECT 2', [], { prepare: false })])
  assert.equal(x.notices, y.notices)
  assert.ok(Object.isFrozen(x.notices))
})

test('notices raised by a function while rows are returned, and by each statement of a simple query', async () => {
  await db.query(`CREATE OR REPLACE FUNCTION pg_temp.noisy(i int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'row %', i; RETURN i; END $$`)
  const r = await db.query('SELECT pg_temp.noisy(n) AS n FROM generate_series(1, 3) AS n')
  assert.deepEqual(r.rows, [{ n: 1 }, { n: 2 }, { n: 3 }])
  assert.deepEqual(r.notices.map((n) => n.message), ['row 1', 'row 2', 'row 3'])
  const results = await db.simpleQuery(`${raise('first')}; SELECT 1; ${raise('third', 'third again')}`)
  assert.deepEqual(results.map((x) => x.notices.map((n) => n.message)), [['first'], [], ['third', 'third again']])
})

test('inside a transaction, notices stay with their statements', async () => {
  const got = await db.begin(async (tx) => {
    const one = await tx.query(raise('in tx'))
    const two = await tx.query('SELECT 2 AS n')
    return [one.notices.map((n) => n.message), two.notices.length]
  })
  assert.deepEqual(got, [['in tx'], 0])
})
