// result.timing: when a query was issued, written, first answered and
// complete, so a pipelined query's wait behind others can be told from the
// server's work on it.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { createPool, type Client, type QueryTiming } from '../../../src/index.js'
import { openClient } from '../../support/client.js'
import { mainDatabase } from '../../support/servers/test-server.js'

let db: Client
before(async () => {
  db = await openClient()
})
after(async () => {
  await db.end()
})

function inOrder(t: QueryTiming, from: number, to: number): void {
  assert.deepEqual(Object.keys(t), ['queued', 'written', 'firstByte', 'completed'])
  assert.ok(from <= t.queued, `queued ${t.queued} before the call at ${from}`)
  assert.ok(t.queued <= t.written, `written ${t.written} before queued ${t.queued}`)
  assert.ok(t.written <= t.firstByte, `first byte ${t.firstByte} before written ${t.written}`)
  assert.ok(t.firstByte <= t.completed, `completed ${t.completed} before the first byte ${t.firstByte}`)
  assert.ok(t.completed <= to, `completed ${t.completed} after the promise settled at ${to}`)
}

test('one query: issued, written, answered and completed in that order, within the call', async () => {
  for (const prepare of [true, false]) {
    const from = performance.now()
    const r = await db.query('SELECT $1::int AS n', [1], { prepare })
    inOrder(r.timing, from, performance.now())
  }
})

test('a query pipelined behind a slow one: written at once with it, answered only after it', async () => {
  const from = performance.now()
  const [slow, quick] = await Promise.all([db.query('SELECT pg_sleep(0.2)'), db.query('SELECT 1 AS n')])
  const to = performance.now()
  inOrder(slow.timing, from, to)
  inOrder(quick.timing, from, to)
  // Both went out in the same write...
  assert.equal(quick.timing.written, slow.timing.written)
  // ...and the quick one waited behind the sleep on the server, not before being written.
  assert.ok(quick.timing.firstByte - quick.timing.written >= 190, `waited ${quick.timing.firstByte - quick.timing.written} ms`)
  assert.ok(quick.timing.firstByte >= slow.timing.firstByte)
})

test('a query waiting for a pool connection held by a transaction: queued long before it is written', async () => {
  const { options } = await mainDatabase()
  const pool = createPool({ ...options, max: 1 })
  try {
    await pool.query('SELECT 1')
    let waiting: Promise<{ timing: QueryTiming }> | undefined
    await pool.begin(async (tx) => {
      waiting = pool.query('SELECT 2')
      await tx.query('SELECT pg_sleep(0.15)')
    })
    const { timing } = await waiting!
    assert.ok(timing.written - timing.queued >= 140, `written ${timing.written - timing.queued} ms after queued`)
    assert.ok(timing.firstByte - timing.written < timing.written - timing.queued)
  } finally {
    await pool.end()
  }
})

test('each statement of a simple query has its own timing', async () => {
  const from = performance.now()
  const results = await db.simpleQuery('SELECT 1 AS n; SELECT pg_sleep(0.1); SELECT 3 AS n')
  const to = performance.now()
  assert.equal(results.length, 3)
  for (const r of results) inOrder(r.timing, from, to)
  const [first, , third] = results
  assert.equal(first!.timing.written, third!.timing.written)
  assert.ok(third!.timing.completed - first!.timing.written >= 95)
  assert.ok(third!.timing.firstByte >= first!.timing.firstByte)
})

test('results carry timing as a plain object of four numbers', async () => {
  const r = await db.query('SELECT 1 AS n')
  assert.equal(Object.getPrototypeOf(r.timing), Object.prototype)
  for (const v of Object.values(r.timing)) assert.equal(typeof v, 'number')
  assert.deepEqual(JSON.parse(JSON.stringify(r.timing)), r.timing)
})
