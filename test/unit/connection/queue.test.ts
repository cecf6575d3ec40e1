import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Queue } from '../../../src/connection/queue.js'

// The FIFO of requests, across growth and wrap-around.

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
