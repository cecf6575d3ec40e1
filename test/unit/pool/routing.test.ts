import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Lane } from '../../../src/lane/lane.js'
import { leastOutstanding, type PoolLane } from '../../../src/pool/routing.js'

// The pool's default routing: one rule, the same for a query and for a
// reservation (a query and a reservation once had two copies that differed
// on ties).

function lane(pending: number, extra: Partial<PoolLane> = {}): PoolLane {
  return { lane: { pendingQueries: pending } as unknown as Lane, reserved: null, lastUsed: 0, expiresAt: Infinity, retiring: false, closing: false, host: null, ...extra }
}

for (const exclusive of [false, true]) {
  const need = { exclusive, readOnly: false, after: null }
  const what = exclusive ? 'a reservation' : 'a query'

  test(`${what}: an idle lane is reused rather than opening another`, () => {
    const lanes = [lane(3), lane(0), lane(0)]
    assert.equal(leastOutstanding.choose(lanes, need, true), lanes[1])
  })

  test(`${what}: every lane busy, the pool opens another while it may`, () => {
    assert.equal(leastOutstanding.choose([lane(2), lane(1)], need, true), 'open')
    assert.equal(leastOutstanding.choose([], need, true), 'open')
  })

  test(`${what}: a full pool gives the least loaded lane, the first opened on a tie`, () => {
    const lanes = [lane(5), lane(2), lane(2), lane(4)]
    assert.equal(leastOutstanding.choose(lanes, need, false), lanes[1])
  })

  test(`${what}: reserved, retiring and closing lanes take nothing; with none left a full pool waits`, () => {
    const lanes = [lane(0, { reserved: {} }), lane(0, { retiring: true }), lane(0, { closing: true })]
    assert.equal(leastOutstanding.choose(lanes, need, false), 'wait')
    assert.equal(leastOutstanding.choose(lanes, need, true), 'open')
  })
}
