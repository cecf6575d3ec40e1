import { test } from 'node:test'
import assert from 'node:assert/strict'
import { InflightBound } from '../../../src/connection/inflight-bound.js'

test('InflightBound admits one request however large, then up to its counts of requests and bytes', () => {
  const b = new InflightBound(3, 1000)
  assert.equal(b.admits(0), true)
  b.written(5000, false)
  assert.equal(b.admits(1), false, 'over the bytes: nothing more until it is answered')
  b.completed()
  assert.equal(b.admits(0), true)
  b.written(100, false)
  b.written(100, false)
  assert.equal(b.admits(2), true)
  b.written(100, false)
  assert.equal(b.admits(3), false, 'at the count of requests')
  b.completed()
  assert.equal(b.admits(2), true)
})

test('InflightBound: a request written ahead of the others is answered first, and its bytes leave first', () => {
  const b = new InflightBound(10, 1000)
  b.written(900, false)
  b.written(50, true)
  assert.equal(b.admits(2), true, '950 bytes in flight')
  // The one written ahead completes first: 900 bytes stay in flight, 1,050 with the next.
  b.completed()
  b.written(150, false)
  assert.equal(b.admits(2), false)
})
