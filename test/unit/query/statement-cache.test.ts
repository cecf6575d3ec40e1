import { test } from 'node:test'
import assert from 'node:assert/strict'
import { StatementCache, StatementState } from '../../../src/query/statement-cache.js'

// The statement cache without a server: LRU order and capacity, statements in
// use kept, evictions handed out once.

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
