import { test } from 'node:test'
import assert from 'node:assert/strict'
import { addDeadline, removeDeadline, type DeadlineList, type Expiring } from '../../../src/query/deadlines.js'

// The deadline lists behind query timeouts, with real timers and short
// timeouts: each watch expires once, never before its deadline, in the order
// of its deadline; a removed one never expires; no timer is left behind.

class Watch implements Expiring {
  deadline = 0
  prev: Expiring | null = null
  next: Expiring | null = null
  list: DeadlineList | null = null
  addedAt = 0
  /** When the synchronous run that added it began: the clock its deadline counts from. */
  burstAt = 0
  expiredAt: number[] = []
  constructor(
    readonly id: number,
    private readonly onExpire?: (w: Watch) => void,
  ) {}
  expire(): void {
    this.expiredAt.push(performance.now())
    this.onExpire?.(this)
  }
  add(timeout: number, burstAt = performance.now()): this {
    this.addedAt = performance.now()
    this.burstAt = burstAt
    addDeadline(this, timeout)
    return this
  }
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Waits until `done()` holds, at most `ms`. */
async function until(done: () => boolean, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms
  while (!done()) {
    if (performance.now() > end) assert.fail(`${what}: not within ${ms} ms`)
    await sleep(5)
  }
}

test('each watch expires once, no earlier than its timeout (less the timer\'s millisecond), in the order it was added', async () => {
  const before = timers()
  const order: number[] = []
  const watches: Watch[] = []
  // Added over a few turns, so that deadlines differ within one list; two timeout values interleaved.
  for (let turn = 0; turn < 5; turn++) {
    const burstAt = performance.now()
    for (let i = 0; i < 200; i++) {
      const id = watches.length
      watches.push(new Watch(id, () => order.push(id)).add(id % 2 === 0 ? 40 : 25, burstAt))
    }
    await sleep(3)
  }
  assert.equal(timers(), before + 2, 'one timer per timeout value, not one per watch')
  await until(() => order.length === watches.length, 5000, 'every watch expired')
  for (const w of watches) {
    assert.equal(w.expiredAt.length, 1, `watch ${w.id} expired ${w.expiredAt.length} times`)
    const timeout = w.id % 2 === 0 ? 40 : 25
    const after = w.expiredAt[0]! - w.burstAt
    assert.ok(after >= timeout - 1, `watch ${w.id} expired ${after.toFixed(2)} ms after its turn began, timeout ${timeout}`)
    assert.equal(w.list, null)
  }
  // Within a timeout value, in the order they were added (their deadlines' order).
  for (const parity of [0, 1]) {
    const ids = order.filter((id) => id % 2 === parity)
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), `timeout ${parity === 0 ? 40 : 25}: expired in the order added`)
  }
  await sleep(1)
  assert.equal(timers(), before, 'no timer left once the lists are empty')
})

test('watches added in one synchronous run with the same timeout expire in one pass, however long the run took', async () => {
  // As queries issued together time out together: a busy machine stretching the
  // run past the timer's tolerance must not split them across passes.
  const watches: Watch[] = []
  // Counted once the pass that expired the first one is over.
  let expiredInFirstPass: number | undefined
  const onExpire = (): void => {
    if (expiredInFirstPass !== undefined) return
    expiredInFirstPass = -1
    queueMicrotask(() => (expiredInFirstPass = watches.filter((w) => w.expiredAt.length === 1).length))
  }
  const burstAt = performance.now()
  for (let i = 0; i < 20; i++) {
    watches.push(new Watch(i, onExpire).add(15, burstAt))
    const spin = performance.now() + 0.5
    while (performance.now() < spin);
  }
  // 20 adds, 10 ms apart from first to last.
  await until(() => watches.every((w) => w.expiredAt.length === 1), 5000, 'every watch expired')
  // One pass is one synchronous run: counted at its end, not timed (a loaded machine can pause a run for
  // many milliseconds, which a bound on the spread of their expiry times took for a second pass).
  assert.equal(expiredInFirstPass, 20, 'all in the first pass')
  assert.ok(watches[0]!.expiredAt[0]! - burstAt >= 14)
})

test('a removed watch never expires; removing every watch stops the timer', async () => {
  const before = timers()
  const watches = Array.from({ length: 100 }, (_, i) => new Watch(i).add(30))
  // Every other one, the head among them, goes before its deadline: its query settled.
  for (const w of watches) if (w.id % 2 === 0) removeDeadline(w)
  // Removing twice is harmless.
  removeDeadline(watches[0]!)
  await until(() => watches.every((w) => w.id % 2 === 0 || w.expiredAt.length === 1), 5000, 'the odd watches expired')
  await sleep(40)
  assert.ok(watches.every((w) => (w.id % 2 === 0 ? w.expiredAt.length === 0 : w.expiredAt.length === 1)))

  const gone = Array.from({ length: 10 }, (_, i) => new Watch(i).add(60_000))
  assert.equal(timers(), before + 1)
  for (const w of gone) removeDeadline(w)
  assert.equal(timers(), before, 'the list\'s timer stopped with its last watch')
})

test('expiring one may remove or add others of its own list: the removed never expire, the added wait for their own deadline', async () => {
  let third: Watch | undefined
  let added: Watch | undefined
  const first = new Watch(1, () => {
    removeDeadline(third!)
    added = new Watch(4).add(20)
  })
  const second = new Watch(2).add(20)
  first.add(20)
  third = new Watch(3).add(20)
  await until(() => first.expiredAt.length === 1 && second.expiredAt.length === 1, 5000, 'the first two expired')
  assert.equal(third.expiredAt.length, 0, 'removed while the list was expiring')
  assert.equal(added!.expiredAt.length, 0, 'added during the expiry: its deadline is still ahead')
  await until(() => added!.expiredAt.length === 1, 5000, 'the added watch expired')
  assert.ok(added!.expiredAt[0]! - added!.addedAt >= 19)
  await sleep(30)
  assert.equal(third.expiredAt.length, 0)
})

test('a timeout shorter than one added before it on another list expires first', async () => {
  const order: number[] = []
  new Watch(1, () => order.push(1)).add(80)
  new Watch(2, () => order.push(2)).add(10)
  await until(() => order.length === 2, 5000, 'both expired')
  assert.deepEqual(order, [2, 1])
})
