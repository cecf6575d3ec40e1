// The statement cache at message level: a text is parsed once and bound by
// name afterwards, its parameters then sent in binary by the types the server
// described; a statement the server lost is prepared again, or the query sent
// again on the unnamed statement when it never ran; an evicted statement is
// closed behind the query that evicted it.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client, PgError } from '../../../src/index.js'
import { closeComplete, readyForQuery } from '../../support/fakes/backend-messages.js'
import { expectBound, expectPrepared, expectUnnamed, replyBound, replyError, replyPrepared, replyUnnamed, statementName } from '../../support/fakes/scripted-exchanges.js'
import { expect, scriptedBackend, send } from '../../support/fakes/scripted-backend.js'

const int4 = (n: number): Uint8Array => Uint8Array.of(n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255)

test('a text is parsed once; later queries bind the same statement, parameters in binary by the described types', async () => {
  const name = statementName()
  const text = 'SELECT $1::int4 AS n'
  const be = scriptedBackend([
    [
      // Bound before the description is known: the value goes as untyped text.
      ...expectPrepared(text, { name: name.capture, params: ['7'] }),
      replyPrepared([['n', 25]], [['7']], { paramTypes: [23] }),
      expect.bind({ statement: name.same, paramFormats: [1], params: [int4(8)] }),
      expect.execute({ maxRows: 0 }),
      expect.sync(),
      replyBound([['8']]),
      ...expectBound({ name: name.same, params: [int4(9)] }),
      replyBound([['9']]),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    for (const n of [7, 8, 9]) assert.deepEqual((await db.query(text, [n])).rows, [{ n: String(n) }])
  })
})

test('queries of one text pipelined together: the first parses, the others bind its name before its replies are in', async () => {
  const name = statementName()
  const be = scriptedBackend([
    [
      ...expectPrepared('SELECT $1::text AS v', { name: name.capture, params: ['a'] }),
      ...expectBound({ name: name.same, params: ['b'] }),
      replyPrepared([['v', 25]], [['a']], { paramTypes: [25] }),
      replyBound([['b']]),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const [a, b] = await Promise.all([db.query('SELECT $1::text AS v', ['a']), db.query('SELECT $1::text AS v', ['b'])])
    assert.deepEqual([a.rows, b.rows], [[{ v: 'a' }], [{ v: 'b' }]])
  })
})

test('a statement deallocated behind the client (26000 at Bind) is sent again, once, on the unnamed statement, and named statements are given up', async () => {
  const text = 'INSERT INTO t VALUES ($1) RETURNING a'
  const be = scriptedBackend([
    [
      ...expectPrepared(text, { params: ['1'] }),
      replyPrepared([['a', 25]], [['1']], { paramTypes: [25], tag: 'INSERT 0 1' }),
      ...expectBound({ params: [new TextEncoder().encode('2')] }),
      replyError('26000', 'prepared statement "_p" does not exist'),
      // Bind failed, so the INSERT never ran: the client sends it again, as the unnamed statement.
      ...expectUnnamed(text, { params: ['2'] }),
      replyUnnamed([['a', 25]], [['2']], { tag: 'INSERT 0 1' }),
      ...expectUnnamed(text, { params: ['3'] }),
      replyUnnamed([['a', 25]], [['3']], { tag: 'INSERT 0 1' }),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    assert.deepEqual((await db.query(text, ['1'])).rows, [{ a: '1' }])
    const again = await db.query(text, ['2'])
    assert.deepEqual(again.rows, [{ a: '2' }])
    assert.equal(again.command, 'INSERT')
    assert.deepEqual((await db.query(text, ['3'])).rows, [{ a: '3' }])
  })
})

test('"cached plan must not change result type" (0A000) fails the query, and the text is prepared afresh next time', async () => {
  const first = statementName()
  const text = 'SELECT * FROM t'
  const be = scriptedBackend([
    [
      ...expectPrepared(text, { name: first.capture }),
      replyPrepared([['a', 25]], [['1']]),
      ...expectBound({ name: first.same }),
      replyError('0A000', 'cached plan must not change result type'),
      ...expectPrepared(text, { name: (v: unknown) => typeof v === 'string' && v !== first.value }),
      replyPrepared([['a', 25], ['b', 25]], [['1', 'x']]),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    assert.deepEqual((await db.query(text)).rows, [{ a: '1' }])
    await assert.rejects(db.query(text), (e: unknown) => e instanceof PgError && e.code === '0A000')
    assert.deepEqual((await db.query(text)).rows, [{ a: '1', b: 'x' }])
  })
})

test('a full cache evicts the least recently used statement and closes it, with its own Sync, behind the query that evicted it', async () => {
  const a = statementName()
  const be = scriptedBackend([
    [
      ...expectPrepared('SELECT 1 AS a', { name: a.capture }),
      replyPrepared(['a'], [['1']]),
      ...expectPrepared('SELECT 2 AS b'),
      expect.close('S', a.same),
      expect.sync(),
      replyPrepared(['b'], [['2']]),
      send(closeComplete(), readyForQuery()),
      // Evicted: the first text is parsed again.
      ...expectPrepared('SELECT 1 AS a', { name: (v: unknown) => v !== a.value }),
      expect.close('S'),
      expect.sync(),
      replyPrepared(['a'], [['1']]),
      send(closeComplete(), readyForQuery()),
    ],
  ])
  await be.run(new Client({ ...be.options, statementCacheSize: 1 }), async (db) => {
    assert.deepEqual((await db.query('SELECT 1 AS a')).rows, [{ a: '1' }])
    assert.deepEqual((await db.query('SELECT 2 AS b')).rows, [{ b: '2' }])
    assert.deepEqual((await db.query('SELECT 1 AS a')).rows, [{ a: '1' }])
  })
})

test('prepare: false runs every query on the unnamed statement, parsed each time', async () => {
  const be = scriptedBackend([[...expectUnnamed('SELECT 1 AS a'), replyUnnamed(['a'], [['1']]), ...expectUnnamed('SELECT 1 AS a'), replyUnnamed(['a'], [['1']])]])
  await be.run(new Client(be.options), async (db) => {
    for (let i = 0; i < 2; i++) assert.deepEqual((await db.query('SELECT 1 AS a', [], { prepare: false })).rows, [{ a: '1' }])
  })
})

test('DISCARD ALL drops the cache with the server statements: the next query parses again', async () => {
  const first = statementName()
  const be = scriptedBackend([
    [
      ...expectPrepared('SELECT 1 AS a', { name: first.capture }),
      replyPrepared(['a'], [['1']]),
      ...expectPrepared('DISCARD ALL'),
      replyPrepared([], [], { tag: 'DISCARD ALL' }),
      ...expectPrepared('SELECT 1 AS a', { name: (v: unknown) => v !== first.value }),
      replyPrepared(['a'], [['1']]),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    await db.query('SELECT 1 AS a')
    await db.query('DISCARD ALL')
    assert.deepEqual((await db.query('SELECT 1 AS a')).rows, [{ a: '1' }])
  })
})
