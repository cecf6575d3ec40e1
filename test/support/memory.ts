// What a test process holds on to, measured after a real collection.
//
// RSS is no measure of what a stream keeps: newer V8 keeps freed pages pooled
// for reuse and the allocator keeps its arenas, so RSS steps up once and stays
// there without anything being held. heapUsed without a collection swings by
// tens of MiB with the collector's timing. What a test can rely on is the
// JS heap plus the memory of the Buffers it references, each read right after
// a full collection.

import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

let gcFn: (() => void) | null = null

/** A full collection, whether or not the process was started with --expose-gc. */
export function collect(): void {
  if (gcFn === null) {
    const own = (globalThis as { gc?: () => void }).gc
    if (typeof own === 'function') gcFn = own
    else {
      setFlagsFromString('--expose-gc')
      gcFn = runInNewContext('gc') as () => void
    }
  }
  gcFn()
}

/** Bytes held after a full collection: the live JS heap and the Buffers (ArrayBuffers) it references. */
export function retainedBytes(): number {
  collect()
  const m = process.memoryUsage()
  return m.heapUsed + m.arrayBuffers
}

/**
 * Watches the most a process held while data flowed: `sample()` where a test
 * consumes data (it collects only every `every` calls, so it is cheap to call
 * per chunk), `peakGrowth` the highest retained bytes above the base.
 */
export class RetainedPeak {
  private readonly base = retainedBytes()
  private calls = 0
  peakGrowth = 0

  constructor(private readonly every = 10_000) {}

  sample(): void {
    if (++this.calls % this.every === 0) this.measure()
  }

  measure(): void {
    this.peakGrowth = Math.max(this.peakGrowth, retainedBytes() - this.base)
  }

  mib(): string {
    return `${(this.peakGrowth / 2 ** 20).toFixed(1)} MiB`
  }
}
