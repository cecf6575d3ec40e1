import type { RequestContext } from '../connection/request.js'
import { AbortError } from '../errors.js'
import { writeClose, writeExecute, writeFlush, writeSync } from '../protocol/frontend.js'
import type { Writer } from '../protocol/writer.js'
import { DecodingRequest, type RowConsumer } from './consumer-request.js'
import { BIND_DEFERRED, CLOSING, DISCARD, EXECUTING, SETTLED, Step, UNSYNCED, type Exchange } from './exchange.js'

/** Where a cursor's rows go, a batch at a time. */
export interface BatchConsumer extends RowConsumer {
  /** Rows per Execute. */
  readonly batchSize: number
  /** The batch asked for is complete; `last` when the portal is exhausted. */
  batch(last: boolean): void
}

/**
 * cursor(): the portal executed a batch at a time (Execute with a row limit,
 * then Flush), the writer held until the portal is exhausted or closed, so
 * nothing else runs on the connection meanwhile.
 */
export class CursorQuery extends DecodingRequest<BatchConsumer> {
  protected override writeTail(w: Writer, ctx: RequestContext): void {
    writeExecute(w, '', this.consumer.batchSize)
    writeFlush(w)
    this.flags |= EXECUTING | UNSYNCED
    ctx.holdWriter(this)
  }

  /** A Sync behind this request's own would end the portal: evicted statements wait for the next query. */
  protected override get closesEvicted(): boolean {
    return false
  }

  /**
   * A cursor between batches has nothing running on the server to cancel (a
   * CancelRequest would be ignored): it is simply closed.
   */
  protected override halt(x: Exchange): void {
    if (x.step === Step.Rows && (this.flags & EXECUTING) === 0) this.closeCursor()
    else x.ctx.requestCancel(this)
  }

  protected override suspended(x: Exchange): void {
    this.flags &= ~EXECUTING
    if ((this.flags & CLOSING) !== 0) x.step = Step.CursorClosing
    else if ((this.flags & DISCARD) !== 0) this.closeCursor()
    else this.consumer.batch(false)
  }

  protected override completed(x: Exchange): void {
    // The portal is exhausted: Sync ends it, and the writer is free again.
    this.flags &= ~(EXECUTING | UNSYNCED)
    if ((this.flags & CLOSING) !== 0) {
      // Close + Sync are on their way already.
      x.step = Step.CursorClosing
      return
    }
    x.ctx.writeNow(writeSync)
    x.ctx.releaseWriter(this)
    if ((this.flags & DISCARD) === 0) this.consumer.batch(true)
  }

  /** Asks for the next batch. */
  more(): void {
    const x = this.x
    if (x === null || x.step !== Step.Rows || (this.flags & (EXECUTING | CLOSING | SETTLED)) !== 0) return
    this.flags |= EXECUTING
    const size = this.consumer.batchSize
    x.ctx.writeNow((w) => {
      writeExecute(w, '', size)
      writeFlush(w)
    })
  }

  /** Closes the portal before its end. Close goes right behind an Execute still running; its rows are dropped. */
  closeCursor(): void {
    if ((this.flags & (CLOSING | SETTLED)) !== 0) return
    const x = this.x
    if (x === null) {
      // Not written yet: it never will be.
      this.abort(new AbortError('the cursor was closed before it was read'))
      return
    }
    if (x.step >= Step.CursorClosing) return
    this.flags |= CLOSING | DISCARD
    // Still being described: the deferred Bind ends it with a Sync instead.
    if ((this.flags & BIND_DEFERRED) !== 0) return
    this.flags &= ~UNSYNCED
    const ctx = x.ctx
    ctx.writeNow((w) => {
      writeClose(w, 'P', '')
      writeSync(w)
    })
    if ((this.flags & EXECUTING) === 0) x.step = Step.CursorClosing
    ctx.releaseWriter(this)
  }
}
