// The coalesce option at message level: identical reads in flight together
// are sent once and every caller gets the rows; a read with other values, a
// statement that writes, or a read issued after the first was answered goes
// to the server on its own. Wrong options are refused before anything is sent.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ArgumentError, Client } from '../../../src/index.js'
import { expectBound, expectPrepared, replyBound, replyPrepared } from '../../support/fakes/scripted-exchanges.js'
import { scriptedBackend } from '../../support/fakes/scripted-backend.js'

test('two identical reads in flight: one Parse, Bind, Execute is sent, and both callers get the rows, each a result of its own', async () => {
  const be = scriptedBackend([[...expectPrepared('SELECT $1::text AS v', { params: ['k'] }), replyPrepared(['v'], [['k']], { paramTypes: [25] })]])
  await be.run(new Client({ ...be.options, coalesce: true }), async (db) => {
    const [a, b] = await Promise.all([db.query('SELECT $1::text AS v', ['k']), db.query('SELECT $1::text AS v', ['k'])])
    assert.deepEqual(a.rows, [{ v: 'k' }])
    assert.deepEqual(b.rows, [{ v: 'k' }])
    assert.notEqual(a.rows, b.rows, 'each caller may change its rows without touching the other\'s')
  })
})

test('different values, a write, or a read issued after the first reply: each is sent', async () => {
  const be = scriptedBackend([
    [
      ...expectPrepared('SELECT $1::text AS v', { params: ['a'] }),
      ...expectBound({ params: ['b'] }),
      ...expectPrepared('INSERT INTO t VALUES (1) RETURNING 1 AS one'),
      ...expectBound(),
      replyPrepared(['v'], [['a']], { paramTypes: [25] }),
      replyBound([['b']]),
      replyPrepared(['one'], [['1']], { tag: 'INSERT 0 1' }),
      replyBound([['1']], { tag: 'INSERT 0 1' }),
      // Issued once the first was answered: nothing in flight to join.
      ...expectBound({ params: [new TextEncoder().encode('a')] }),
      replyBound([['a']]),
    ],
  ])
  await be.run(new Client({ ...be.options, coalesce: true }), async (db) => {
    // The first text's Bind is written before its description is in: the second is bound as the first was.
    const read = 'SELECT $1::text AS v'
    const write = 'INSERT INTO t VALUES (1) RETURNING 1 AS one'
    const [a, b, w1, w2] = await Promise.all([db.query(read, ['a']), db.query(read, ['b']), db.query(write), db.query(write)])
    assert.deepEqual([a.rows, b.rows, w1.rowCount, w2.rowCount], [[{ v: 'a' }], [{ v: 'b' }], 1, 1])
    assert.deepEqual((await db.query(read, ['a'])).rows, [{ v: 'a' }])
  })
})

test('without the option, identical reads are each sent', async () => {
  const be = scriptedBackend([[...expectPrepared('SELECT 1 AS a'), ...expectBound(), replyPrepared(['a'], [['1']]), replyBound([['1']])]])
  await be.run(new Client(be.options), async (db) => {
    await Promise.all([db.query('SELECT 1 AS a'), db.query('SELECT 1 AS a')])
  })
})

test('wrong arguments and options are refused with an ArgumentError, and nothing is written', async () => {
  const be = scriptedBackend([[...expectPrepared('SELECT 1 AS a'), replyPrepared(['a'], [['1']])]])
  await be.run(new Client(be.options), async (db) => {
    await db.query('SELECT 1 AS a')
    const calls: [string, () => Promise<unknown>][] = [
      ['an unknown option', () => db.query('SELECT 2', [], { nope: true } as never)],
      ['a rowMode that does not exist', () => db.query('SELECT 2', [], { rowMode: 'matrix' } as never)],
      ['values that are not an array', () => db.query('SELECT $1', 'x' as never)],
      ['a text that is not a string', () => db.query(42 as never)],
      ['a NUL in the text', () => db.query('SELECT 1\0')],
      ['an async batch function', () => db.batch((async () => undefined) as never)],
    ]
    for (const [what, call] of calls) await assert.rejects(call(), ArgumentError, what)
  })
})
