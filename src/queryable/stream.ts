import type { Request, RequestContext } from '../connection/request.js'
import { AbortError, rejectionAtCaller } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import { FirstRead } from './first-read.js'
import type { Field, Row } from '../query/result.js'

const noop = (): void => {}

/** What a RowStream learns at the end of its request. */
interface StreamOutcome {
  fields: Field[]
  command: string
  rowCount: number | null
}

/** What a RowStream reads from: a query, or a COPY TO STDOUT whose data is decoded into rows. */
export interface StreamRequest extends Request {
  readonly promise: Promise<StreamOutcome>
  abort(err: Error): void
}

const enum State {
  /** Not iterated yet: the query is sent on the first next(). */
  Idle,
  Running,
  /** The query completed; rows may still be queued. */
  Ended,
  Failed,
  /** The consumer stopped early (break, return()). */
  Closed,
}

/**
 * The rows of one query as an async iterable: `for await (const row of
 * db.stream(sql, values))`. Rows are handed over as they arrive; when more
 * than `highWaterMark` wait unread, the connection stops reading from the
 * socket, so the server is held back by TCP flow control and memory stays flat
 * however large the result. Leaving the loop early cancels the query.
 */
export class RowStream<R = Row> implements AsyncIterable<R>, AsyncIterator<R> {
  /** The result columns, once the first row (or the end) has arrived. */
  fields: Field[] = []
  /** The command tag's command ('SELECT'), once the stream has ended. */
  command = ''
  /** Rows the server reported, once the stream has ended. */
  rowCount: number | null = null
  private state = State.Idle
  private queue: R[] = []
  private head = 0
  private waiter: { resolve: (r: IteratorResult<R> | PromiseLike<never>) => void } | null = null
  private failure: Error | null = null
  private ctx: RequestContext | null = null
  private paused = false
  private source = new FirstRead<StreamRequest>(null, noop)

  /** Made by stream() and copyToRows(): a stream is useful only with the query that feeds it. */
  private constructor(private readonly highWaterMark: number) {}

  /** @internal */
  static create<R>(highWaterMark: number): RowStream<R> {
    return new RowStream<R>(highWaterMark)
  }

  /** @internal The request to send on the first next(), and how; or the error to report there. */
  bind<Q extends StreamRequest>(req: Q | null, send: (req: Q) => void, error: Error | null): void {
    this.source = new FirstRead<StreamRequest>(req, send as (req: StreamRequest) => void)
    this.failure = error
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  next(): Promise<IteratorResult<R>> {
    if (this.head < this.queue.length) {
      const value = this.queue[this.head++]!
      if (this.head === this.queue.length) {
        this.queue = []
        this.head = 0
      }
      if (this.paused && this.queue.length - this.head <= this.highWaterMark >> 1) this.resume()
      return Promise.resolve({ value, done: false })
    }
    switch (this.state) {
      case State.Idle:
        this.start()
        // The request may have failed at once (bad arguments, aborted signal).
        if ((this.state as State) === State.Failed) return this.next()
        break
      case State.Failed: {
        const err = this.failure!
        this.state = State.Closed
        return Promise.resolve(rejectionAtCaller(err))
      }
      case State.Ended:
      case State.Closed:
        return Promise.resolve({ value: undefined, done: true })
    }
    return new Promise((resolve) => {
      this.waiter = { resolve }
    })
  }

  /** Stops early (what `break` in a for-await loop calls): the query is cancelled, queued rows are dropped. */
  return(): Promise<IteratorResult<R>> {
    if (this.state === State.Running || this.state === State.Idle) {
      this.source.req?.abort(new AbortError('the stream was closed before its end'))
    }
    this.state = State.Closed
    this.queue = []
    this.head = 0
    this.resume()
    this.finishWaiter()
    return Promise.resolve({ value: undefined, done: true })
  }

  /**
   * `await using rows = db.stream(...)`: as return() (a query still running
   * is cancelled), resolving once the query has ended on its connection.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    const sent = this.state !== State.Idle ? this.source.req : null
    await this.return()
    await sent?.promise.then(noop, noop)
  }

  throw(err?: unknown): Promise<IteratorResult<R>> {
    void err
    return this.return()
  }

  private start(): void {
    this.state = State.Running
    if (!this.source.start((r) => this.ended(r), (e) => this.failed(e))) this.state = State.Failed
  }

  private ended(result: StreamOutcome): void {
    this.fields = result.fields
    this.command = result.command
    this.rowCount = result.rowCount
    if (this.state !== State.Running) return
    this.state = State.Ended
    this.finishWaiter()
  }

  private failed(err: Error): void {
    if (this.state !== State.Running) return
    this.failure = err
    this.state = State.Failed
    this.queue = []
    this.head = 0
    this.resume()
    this.finishWaiter()
  }

  /** A waiting next() learns of the end or the failure. */
  private finishWaiter(): void {
    const w = this.waiter
    if (w === null) return
    this.waiter = null
    if (this.state === State.Failed) {
      const err = this.failure!
      this.state = State.Closed
      // Through the caller's frames: see rejectionAtCaller.
      w.resolve(rejectionAtCaller(err))
    } else w.resolve({ value: undefined, done: true })
  }

  private resume(): void {
    if (!this.paused) return
    this.paused = false
    this.ctx?.resumeReading(this)
  }

  // --- What the request feeds in (see RowConsumer) --------------------------

  /** @internal Rows follow, in these columns. */
  begin(fields: FieldDescription[], ctx: RequestContext): void {
    this.fields = fields
    this.ctx = ctx
  }

  /** @internal One decoded row. */
  row(row: unknown): void {
    if (this.state !== State.Running) return
    const w = this.waiter
    if (w !== null) {
      this.waiter = null
      w.resolve({ value: row as R, done: false })
      return
    }
    this.queue.push(row as R)
    if (!this.paused && this.queue.length - this.head >= this.highWaterMark) {
      this.paused = true
      this.ctx!.pauseReading(this)
    }
  }

}
