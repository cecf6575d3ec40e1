import type { RequestContext } from '../connection/request.js'
import { rejectionAtCaller } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import type { ExtendedRequest } from '../query/extended-request.js'
import { FirstRead } from './first-read.js'
import type { Field, Result, Row } from '../query/result.js'

const noop = (): void => {}

const enum State {
  /** Not read yet: the query is sent on the first read(). */
  Idle,
  Running,
  /** The portal is exhausted or was closed. */
  Done,
}

/**
 * A query's result read in batches through a portal executed with a row
 * limit: `for await (const rows of db.cursor(sql, values, { batchSize: 1000 }))`.
 * The next batch is asked for while the current one is being used, so at most
 * two are in memory. The portal lives on its connection until it is exhausted
 * or closed, and nothing else is sent on that connection meanwhile: queries
 * issued in between wait (on a pool, they go to other connections).
 */
export class Cursor<R = Row> implements AsyncIterable<R[]> {
  /** The result columns, once the first batch has arrived. */
  fields: Field[] = []
  /** The command tag's command ('SELECT'), once the portal is exhausted. */
  command = ''
  /** Rows read in all, once the portal is exhausted (null for a command that reports no count). */
  rowCount: number | null = null
  private state = State.Idle
  private current: R[] = []
  /** Complete batches not read yet (at most one). */
  private ready: R[][] = []
  private last = false
  private waiter: { resolve: (rows: R[]) => void; reject: (e: Error) => void } | null = null
  private source = new FirstRead<ExtendedRequest>(null, noop)
  private failure: Error | null = null
  private total = 0

  /** Made by cursor(): a cursor is useful only with the query that feeds it. */
  private constructor(readonly batchSize: number) {}

  /** @internal */
  static create<R>(batchSize: number): Cursor<R> {
    return new Cursor<R>(batchSize)
  }

  /** @internal */
  bind(req: ExtendedRequest | null, send: (req: ExtendedRequest) => void, error: Error | null): void {
    this.source = new FirstRead(req, send)
    this.failure = error
  }

  private get req(): ExtendedRequest | null {
    return this.source.req
  }

  /** The next batch of rows; an empty array once every row has been read. */
  read(): Promise<R[]> {
    // Reads overlapping one another are served in order.
    if (this.waiter !== null) return this.reading.then(() => this.read())
    const p = this.readOne()
    this.reading = p.then(noop, noop)
    // A second reaction (reading) hides the caller from a failure of p: it is passed on through the caller's frames.
    return p.then(undefined, rejectionAtCaller)
  }

  private reading: Promise<void> = Promise.resolve()

  private readOne(): Promise<R[]> {
    const batch = this.ready.shift()
    if (batch !== undefined) {
      // The one in hand is being used: fetch the next meanwhile.
      if (!this.last) this.req!.more()
      return Promise.resolve(batch)
    }
    if (this.state === State.Idle) {
      this.start()
      if (this.failure !== null) return Promise.reject(this.failure)
    }
    // The query already failed (the connection was lost between reads, say).
    if (this.failure !== null) return Promise.reject(this.failure)
    if (this.state === State.Done || this.last) return this.finished()
    this.req!.more()
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject }
    })
  }

  /**
   * Closes the portal (if it is still open) and resolves once the connection
   * is free again. Rows of a batch still on its way are dropped.
   */
  async close(): Promise<void> {
    const req = this.req
    if (this.state === State.Idle) {
      this.state = State.Done
      // Never sent: nothing on the server to close; its watch is let go.
      req?.abort(new Error('cursor closed before it was read'))
      return
    }
    this.state = State.Done
    this.ready = []
    this.current = []
    if (req === null) return
    req.closeCursor()
    await req.promise.then(noop, noop)
  }

  /** `await using cursor = db.cursor(...)`: close() when the scope exits. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }

  [Symbol.asyncIterator](): AsyncIterator<R[]> {
    return {
      next: async () => {
        const rows = await this.read()
        return rows.length > 0 ? { value: rows, done: false } : { value: undefined, done: true }
      },
      return: async () => {
        await this.close()
        return { value: undefined, done: true }
      },
    }
  }

  private start(): void {
    this.state = State.Running
    if (!this.source.start((r) => this.ended(r), (e) => this.failed(e))) this.state = State.Done
  }

  private ended(result: Result<unknown>): void {
    this.fields = result.fields
    this.command = result.command
    // The tag counts only the last Execute's rows.
    this.rowCount = result.rowCount === null ? null : this.total
    this.settleWaiter()
  }

  private failed(err: Error): void {
    if (this.failure === null && this.state === State.Running) this.failure = err
    this.ready = []
    this.settleWaiter()
  }

  /** After the last batch: waits for the query's end, so a failure at its very end is not missed. */
  private finished(): Promise<R[]> {
    const req = this.req
    if (req === null || this.state === State.Idle) return Promise.resolve([])
    return req.promise.then(
      () => [],
      (err: Error) => {
        if (this.state === State.Done && this.failure === null) return []
        throw this.failure ?? err
      },
    )
  }

  private settleWaiter(): void {
    const w = this.waiter
    if (w === null) return
    this.waiter = null
    if (this.failure !== null) w.reject(this.failure)
    else w.resolve([])
  }

  // --- What the request feeds in (see BatchConsumer) ------------------------

  /** @internal Rows follow, in these columns. */
  begin(fields: FieldDescription[], _ctx: RequestContext): void {
    this.fields = fields
  }

  /** @internal One decoded row. */
  row(row: unknown): void {
    this.current.push(row as R)
    this.total++
  }

  /** @internal The batch asked for is complete; `last` when the portal is exhausted. */
  batch(last: boolean): void {
    const rows = this.current
    this.current = []
    if (last) this.last = true
    if (this.state !== State.Running) return
    const w = this.waiter
    if (w !== null && rows.length > 0) {
      this.waiter = null
      w.resolve(rows)
      // Handed straight to a reader: fetch the next while it is used.
      if (!last) this.req!.more()
      return
    }
    if (rows.length > 0) this.ready.push(rows)
    // The last batch was empty: a waiting reader learns of the end when the query settles.
  }

}
