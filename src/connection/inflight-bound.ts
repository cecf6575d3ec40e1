import { Queue } from './queue.js'

/**
 * A bound on what one connection has written and not yet seen answered: at
 * most `maxRequests` requests (each ends with its own Sync), and new ones only
 * while fewer than `maxBytes` bytes are in flight. One request may always be
 * in flight, however large. A direct connection has none; the owner sets one
 * for a pooler that breaks under deep pipelines (see lane/probe.ts).
 */
export class InflightBound {
  private bytes = 0
  /** The size of each request in flight, in the connection's FIFO order. */
  private readonly sizes = new Queue<number>()

  constructor(
    readonly maxRequests: number,
    readonly maxBytes: number,
  ) {}

  /** Whether another request may be written while `inflight` are in flight. */
  admits(inflight: number): boolean {
    return inflight === 0 || (inflight < this.maxRequests && this.bytes < this.maxBytes)
  }

  /** A request of `size` bytes was written: behind the others, or `ahead` of them (Connection.writeAhead). */
  written(size: number, ahead: boolean): void {
    if (ahead) this.sizes.unshift(size)
    else this.sizes.push(size)
    this.bytes += size
  }

  /** The request at the head of the FIFO is complete. */
  completed(): void {
    this.bytes -= this.sizes.shift() ?? 0
  }
}
