import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseCommandTag } from '../../../src/query/result.js'
import { buildQuery, fragment, identifier, quoteIdentifier } from '../../../src/query/sql-template.js'
import { StatementCache, StatementState } from '../../../src/query/statement-cache.js'
import { Queue } from '../../../src/connection/queue.js'
import { ArgumentError } from '../../../src/errors.js'

test('command tags: command and row count', () => {
  const cases: [string, string, number | null][] = [
    ['SELECT 5', 'SELECT', 5],
    ['INSERT 0 12', 'INSERT', 12],
    ['UPDATE 0', 'UPDATE', 0],
    ['DELETE 3', 'DELETE', 3],
    ['MERGE 2', 'MERGE', 2],
    ['FETCH 10', 'FETCH', 10],
    ['MOVE 4', 'MOVE', 4],
    ['COPY 1000000', 'COPY', 1000000],
    ['CREATE TABLE', 'CREATE TABLE', null],
    ['DROP INDEX', 'DROP INDEX', null],
    ['BEGIN', 'BEGIN', null],
    ['SET', 'SET', null],
    ['', '', null],
    ['SELECT', 'SELECT', null],
    // Not the shape of a counted tag: all command, no count read out of it.
    ['SELECT 1 2', 'SELECT 1 2', null],
    ['SELECT 0x10', 'SELECT 0x10', null],
    ['SELECT ', 'SELECT ', null],
    ['INSERT 5', 'INSERT 5', null],
  ]
  for (const [tag, command, rowCount] of cases) assert.deepEqual(parseCommandTag(tag), { command, rowCount }, tag)
})

function tag(strings: TemplateStringsArray, ...values: unknown[]): { strings: TemplateStringsArray; values: unknown[] } {
  return { strings, values }
}

test('sql template: values become numbered parameters, never text', () => {
  const evil = "'; DROP TABLE x; --"
  const t = tag`SELECT * FROM t WHERE a = ${1} AND b = ${evil} OR c = ${null}`
  assert.deepEqual(buildQuery(t.strings, t.values), { text: 'SELECT * FROM t WHERE a = $1 AND b = $2 OR c = $3', values: [1, evil, null] })
})

test('sql template: the text of a call site is computed once', () => {
  const run = (v: number) => {
    const t = tag`SELECT ${v}`
    return buildQuery(t.strings, t.values)
  }
  const a = run(1)
  const b = run(2)
  assert.equal(a.text, b.text)
  assert.deepEqual(b.values, [2])
})

test('sql template: fragments nest and renumber; identifiers are quoted', () => {
  const inner = fragment`x = ${'a'} AND y IN (${1}, ${2})`
  const outer = fragment`(${inner}) OR z = ${3}`
  const t = tag`SELECT ${identifier('my"col')} FROM ${identifier('s', 't')} WHERE ${outer} LIMIT ${10}`
  assert.deepEqual(buildQuery(t.strings, t.values), {
    text: 'SELECT "my""col" FROM "s"."t" WHERE (x = $1 AND y IN ($2, $3)) OR z = $4 LIMIT $5',
    values: ['a', 1, 2, 3, 10],
  })
})

test('identifiers: empty, NUL and non-strings are refused', () => {
  assert.equal(quoteIdentifier('simple'), '"simple"')
  assert.throws(() => identifier(), ArgumentError)
  assert.throws(() => identifier(''), ArgumentError)
  assert.throws(() => identifier('a\0b'), ArgumentError)
  assert.throws(() => identifier(5 as unknown as string), ArgumentError)
})

test('statement cache: LRU order, capacity, statements in use are kept, evictions are handed out once', () => {
  const c = new StatementCache(2)
  const a = c.create('a', 'a', [])
  const b = c.create('b', 'b', [])
  const d = c.create('d', 'd', [])
  assert.notEqual(a.name, b.name)
  c.insert(a)
  c.insert(b)
  assert.equal(c.get('a'), a) // a is now the most recently used
  a.users = 1
  c.insert(d) // b is the least recently used and not in use
  assert.deepEqual(c.takeEvicted(), [b])
  assert.equal(b.state, StatementState.Gone)
  assert.deepEqual(c.takeEvicted(), [])
  const e = c.create('e', 'e', [])
  c.insert(e) // a in use, d just used before e... d is evicted
  assert.deepEqual(c.takeEvicted().map((s) => s.key), ['d'])
  const f = c.create('f', 'f', [])
  e.users = 1
  c.insert(f) // a and e in use, f just inserted: over capacity for now
  assert.equal(c.size, 3)
  assert.deepEqual(c.takeEvicted(), [])
  c.release(a) // a released: evicted now
  assert.deepEqual(c.takeEvicted(), [a])
  assert.equal(c.size, 2)
})

test('statement cache: delete and clear', () => {
  const c = new StatementCache(10)
  const a = c.create('a', 'a', [])
  c.insert(a)
  c.delete(a)
  assert.equal(c.get('a'), undefined)
  assert.equal(a.state, StatementState.Gone)
  const b = c.create('b', 'b', [])
  c.insert(b)
  c.clear()
  assert.equal(c.size, 0)
  assert.equal(b.state, StatementState.Gone)
})

test('queue: FIFO across growth and wrap-around', () => {
  const q = new Queue<number>(2)
  const expected: number[] = []
  let next = 0
  for (let round = 0; round < 50; round++) {
    for (let i = 0; i < round % 7; i++) {
      q.push(next)
      expected.push(next++)
    }
    for (let i = 0; i < round % 5 && expected.length > 0; i++) {
      assert.equal(q.peek(), expected[0])
      assert.equal(q.shift(), expected.shift())
    }
    assert.equal(q.length, expected.length)
    assert.equal(q.peekSecond(), expected[1])
  }
  assert.deepEqual(q.drain(), expected)
  assert.equal(q.shift(), undefined)
  assert.equal(q.peek(), undefined)
})
