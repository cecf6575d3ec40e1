// test-tags: slow, stress
// Floods: a million queries queued behind a server that does not answer (a
// hundred thousand in `npm test`, test/support/tier.ts). What
// must hold: memory per queued query stays small, every query settles
// (nothing hangs, no unhandled rejection). The timeouts of such floods are in
// floods-timeouts.test.ts: each file takes minutes, and has its own time limit.

import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { bytes, mib, MILLION, runChild } from '../../support/flood-run.js'
import { stressSize, stressTier } from '../../support/tier.js'

const N = stressSize(200_000, MILLION)
// The first batch's figure counts the queries that fitted in the socket buffers (about 80,000 here,
// written and so dearer) among the queued: meaningful at a million, mostly those at the quick size,
// where the marginal figure (the second batch, all queued) is the one that holds the bound.
const firstBatchBound = stressTier()

describe(`${N} queries queued behind a server that stopped reading`, () => {
  test('take at most 400 bytes of heap each, promise and parameters included, and all reject when the client is destroyed', async (t) => {
    const r = await runChild('queued-memory', N)
    t.diagnostic(
      `${bytes(r.bytesPerQuery)} bytes per queued query over the first ${N} (marginal ${bytes(r.marginalBytesPerQuery)}); ` +
        `heap ${mib(r.heapBaseMiB)} -> ${mib(r.heapPeakMiB)} with ${2 * N} queued, RSS ${mib(r.rssPeakMiB)}; ` +
        `all settled ${(r.settleMs as number).toFixed(0)} ms after destroy(); heap afterwards ${mib(r.heapAfterMiB)}`,
    )
    assert.equal(r.pendingAfterFirst, N)
    assert.equal(r.pendingAfterSecond, 2 * N)
    if (firstBatchBound) assert.ok((r.bytesPerQuery as number) <= 400, `${r.bytesPerQuery as number} bytes per queued query`)
    assert.ok((r.marginalBytesPerQuery as number) <= 400, `marginal ${r.marginalBytesPerQuery as number} bytes per queued query`)
    assert.equal(r.resolved, 0)
    assert.deepEqual(r.codes, { PG_CONNECTION_ENDED: 2 * N })
    // Nothing of them is kept once they have settled.
    assert.ok((r.heapAfterMiB as number) - (r.heapBaseMiB as number) < 16, `heap ${mib(r.heapBaseMiB)} before, ${mib(r.heapAfterMiB)} after`)
  })

  // A timeout is a node of its timeout value's deadline list, not a timer of its own (query/deadlines.ts):
  // about 160 bytes on top of a query without one, where a Node timer per query cost about 380.
  test('with a query timeout, each also carries its deadline: still under 600 bytes', async (t) => {
    const r = await runChild('queued-memory-timeout', N)
    t.diagnostic(`${bytes(r.bytesPerQuery)} bytes per queued query with queryTimeout set (marginal ${bytes(r.marginalBytesPerQuery)})`)
    if (firstBatchBound) assert.ok((r.bytesPerQuery as number) <= 600, `${r.bytesPerQuery as number} bytes per queued query`)
    assert.ok((r.marginalBytesPerQuery as number) <= 600, `marginal ${r.marginalBytesPerQuery as number} bytes per queued query`)
    assert.deepEqual(r.codes, { PG_CONNECTION_ENDED: 2 * N })
  })
})
