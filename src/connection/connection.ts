import type { Socket } from 'node:net'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConnectionError, PgError, ProtocolError } from '../errors.js'
import type { PgErrorFields } from '../errors.js'
import {
  decodeErrorFields,
  decodeNotification,
  decodeParameterStatus,
  decodeReadyForQuery,
  type Notification,
  type TransactionStatus,
} from '../protocol/backend.js'
import { Framer, type MessageSink } from '../protocol/framer.js'
import { Backend, backendMessageName } from '../protocol/message-codes.js'
import { SqlState } from '../protocol/sql-state.js'
import { writeTerminate } from '../protocol/frontend.js'
import { Writer } from '../protocol/writer.js'
import { Queue } from './queue.js'
import type { Request, RequestContext } from './request.js'
import { cancelTimeoutOf, openCancelChannel, type CancelChannel } from './cancel.js'
import { Startup } from './startup.js'
import { describeHost, socketError, type Transport } from './transport.js'

/** What a connection tells its owner. None of these may throw. */
export interface ConnectionEvents {
  notice?(fields: PgErrorFields): void
  notification?(n: Notification): void
  parameterStatus?(name: string, value: string): void
  /**
   * The connection is gone. Requests that were in flight have been failed;
   * those never written are handed back in `unsent` for the owner to send
   * elsewhere or fail. `err` is null after a clean end().
   */
  close?(err: Error | null, unsent: Request[]): void
}

const enum State {
  Startup,
  Open,
  /** end() called: no new requests; Terminate goes out once the in-flight ones finish. */
  Ending,
  Closed,
}

// How long a cancel target must have been running, with queries in flight
// behind it, before a CancelRequest is sent (see requestCancel).
const CANCEL_DELAY_MS = 20

// A flush is forced once this much is buffered within one tick, so a caller that
// issues a million queries in a loop does not build one giant buffer first.
const FLUSH_BYTES = 128 * 1024

/**
 * One server connection: owns the socket, writes requests the moment they are
 * issued (coalesced into one write per tick), and routes every reply to the
 * request at the head of the in-flight FIFO. Knows nothing of types or queries.
 */
export class Connection implements MessageSink, RequestContext {
  private state = State.Startup
  private readonly socket: Socket
  private readonly writer = new Writer()
  private readonly framer: Framer
  private readonly inflight = new Queue<Request>()
  /** Requests not yet written because the socket is not draining (or startup is not done). */
  private readonly pending = new Queue<Request>()
  private blocked = false
  private flushScheduled = false
  /**
   * Who holds the writer: a request that must write more before anything behind
   * it may be written, or a cancellation in progress. Nothing is written while
   * any holds it.
   */
  private readonly holders = new Set<object>()
  /** Who asked for reading to stop (see pauseReading). */
  private readonly pausers = new Set<object>()
  /** Callbacks waiting for the socket to drain. */
  private drainWaiters: (() => void)[] = []
  /** Requests to cancel on the server once they are the one the server is executing. */
  private readonly cancelTargets = new Set<Request>()
  private cancelTimer: NodeJS.Timeout | null = null
  /** The request a CancelRequest was sent for, until it completes. */
  private cancelSentFor: Request | null = null
  /** CancelRequests sent whose connection the server has not closed yet. */
  private cancelInFlight = 0
  /** Whether anything was read since the last look (see watchCancelled). */
  private heard = false
  /** Whether the server ever sent a byte: a server that closes a startup unanswered may not know the protocol version asked for. */
  private received = false
  private cancelWatch: NodeJS.Timeout | null = null
  /** What the owner attached (the query layer's session for this connection). */
  attachment: unknown = null
  /** Queries that failed with query_canceled while a cancel aimed at another was outstanding: should stay 0. */
  cancelMisfires = 0
  /** Requests the server has answered in full (with a result or an error): whether the connection was of any use. */
  completedRequests = 0
  private startup: Startup | null
  private readonly startupDone: Promise<void>
  private settleStartup!: (err: Error | null) => void
  private endPromise: Promise<void> | null = null
  private closeError: Error | null = null

  /** Server settings reported by ParameterStatus, kept current. */
  readonly serverParameters: Record<string, string> = Object.create(null) as Record<string, string>
  processId = 0
  secretKey: Uint8Array | undefined
  /** Negotiated protocol minor version (3.0 or 3.2). */
  protocolMinor = 0
  transactionStatus: TransactionStatus = 'I'
  readonly tls: boolean
  private readonly tlsMode: Transport['mode']
  readonly where: string

  private readonly flushTick = (): void => {
    this.flushScheduled = false
    this.flush()
  }

  constructor(
    transport: Transport,
    readonly config: ConnectionConfig,
    readonly host: HostAddress,
    protocol: '3.0' | '3.2',
    private readonly events: ConnectionEvents,
  ) {
    this.socket = transport.socket
    this.tls = transport.tls
    this.tlsMode = transport.mode
    this.where = describeHost(host)
    this.framer = new Framer(this, config.maxMessageSize)
    this.startup = new Startup(this, config, host, transport, protocol)
    this.startupDone = new Promise((resolve, reject) => {
      this.settleStartup = (err) => (err ? reject(err) : resolve())
    })
    const socket = this.socket
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    socket.on('error', (err) => this.destroy(socketError(err, this.where)))
    socket.on('close', () => this.onSocketClose())
    socket.on('drain', () => this.onDrain())
    socket.resume()
    this.startup.begin()
  }

  /** Resolves once the server is ready for queries; rejects with the reason startup failed. */
  ready(): Promise<void> {
    return this.startupDone
  }

  /** True while the server has sent nothing at all. */
  get silent(): boolean {
    return !this.received
  }

  get closed(): boolean {
    return this.state === State.Closed
  }

  /** Why the connection closed, if it failed; null while open or after a clean end(). */
  get failure(): Error | null {
    return this.closeError
  }

  get open(): boolean {
    return this.state === State.Open || this.state === State.Startup
  }

  /** Requests written and not yet complete. */
  get inflightCount(): number {
    return this.inflight.length
  }

  /** Requests waiting to be written. */
  get pendingCount(): number {
    return this.pending.length
  }

  get inflightBehind(): number {
    return this.inflight.length - 1
  }

  /**
   * Queues a request: written now (well, this tick) unless the socket is backed
   * up. `internal` requests (ones the client makes for requests already in
   * flight, such as a type lookup) are accepted while the connection is ending.
   */
  send(req: Request, internal = false): void {
    if (this.state !== State.Open && !(internal && this.state === State.Ending)) {
      if (this.state === State.Startup) {
        this.pending.push(req)
        return
      }
      req.fail(this.closedError(), false)
      return
    }
    if (this.blocked || this.pending.length > 0 || this.holders.size > 0) {
      this.pending.push(req)
      return
    }
    this.write(req)
  }

  holdWriter(holder: object): void {
    this.holders.add(holder)
  }

  writeAhead(req: Request): void {
    if (this.state === State.Closed) {
      req.fail(this.closedError(), false)
      return
    }
    const w = this.writer
    const mark = w.length
    try {
      req.encode(w, this)
    } catch (err) {
      w.truncate(mark)
      req.fail(err instanceof Error ? err : new Error(String(err)), false)
      return
    }
    this.inflight.unshift(req)
    this.flush()
  }

  pauseReading(holder: object): void {
    if (this.state === State.Closed) return
    this.pausers.add(holder)
    if (this.pausers.size === 1) this.socket.pause()
  }

  resumeReading(holder: object): void {
    if (!this.pausers.delete(holder) || this.pausers.size > 0 || this.state === State.Closed) return
    this.socket.resume()
  }

  get writable(): boolean {
    return !this.blocked
  }

  whenWritable(fn: () => void): void {
    if (!this.blocked || this.state === State.Closed) fn()
    else this.drainWaiters.push(fn)
  }

  releaseWriter(holder: object): void {
    if (!this.holders.delete(holder) || this.holders.size > 0) return
    this.pump()
    this.flush()
  }

  private closedError(): Error {
    if (this.closeError) {
      const e = this.closeError
      if (e instanceof ConnectionError) return new ConnectionError(e.code, e.message, { cause: e })
      return new ConnectionError('PG_CONNECTION_CLOSED', `connection to ${this.where} is closed: ${e.message}`, { cause: e })
    }
    return new ConnectionError('PG_CONNECTION_ENDED', 'the connection was ended by the client')
  }

  private write(req: Request): void {
    if (req.dropped === true) return
    const w = this.writer
    const mark = w.length
    try {
      req.encode(w, this)
    } catch (err) {
      w.truncate(mark)
      req.fail(err instanceof Error ? err : new Error(String(err)), false)
      return
    }
    this.inflight.push(req)
    if (w.length >= FLUSH_BYTES) this.flush()
    else if (!this.flushScheduled) {
      this.flushScheduled = true
      process.nextTick(this.flushTick)
    }
  }

  writeNow(fn: (w: Writer) => void): void {
    if (this.state === State.Closed) return
    const w = this.writer
    const mark = w.length
    try {
      fn(w)
    } catch (err) {
      // Never send half a message.
      w.truncate(mark)
      throw err
    }
    this.flush()
  }

  private flush(): void {
    if (this.writer.length === 0 || this.state === State.Closed) return
    const chunk = this.writer.take()
    if (!this.socket.write(chunk)) this.blocked = true
  }

  private onDrain(): void {
    this.blocked = false
    if (this.drainWaiters.length > 0) {
      const waiters = this.drainWaiters
      this.drainWaiters = []
      for (const fn of waiters) fn()
    }
    this.pump()
  }

  /** Writes waiting requests until the socket pushes back again. */
  private pump(): void {
    while (!this.blocked && this.holders.size === 0 && this.pending.length > 0 && this.state !== State.Closed) {
      this.write(this.pending.shift()!)
      if (this.writer.length >= FLUSH_BYTES) this.flush()
    }
    if (this.state === State.Ending && this.pending.length === 0 && this.inflight.length === 0) this.terminate()
  }

  private onData(chunk: Buffer): void {
    if (this.state === State.Closed) return
    this.heard = true
    this.received = true
    try {
      this.framer.push(chunk)
      const head = this.inflight.peek()
      if (head?.chunkEnd !== undefined) head.chunkEnd()
    } catch (err) {
      this.destroy(err instanceof Error ? err : new Error(String(err)))
    }
  }

  onMessage(type: number, buf: Uint8Array, start: number, end: number): void {
    if (this.state === State.Closed) return
    if (type === Backend.DataRow && this.startup === null) {
      // The hot path: no lookups beyond the head of the queue.
      const head = this.inflight.peek()
      if (head === undefined) this.unexpected(type)
      head.handle(type, buf, start, end)
      return
    }
    switch (type) {
      case Backend.NoticeResponse:
        this.events.notice?.(decodeErrorFields(buf, start, end, 'NoticeResponse'))
        return
      case Backend.ParameterStatus: {
        const [name, value] = decodeParameterStatus(buf, start, end)
        this.serverParameters[name] = value
        this.events.parameterStatus?.(name, value)
        return
      }
      case Backend.NotificationResponse:
        if (this.startup !== null) this.unexpected(type)
        this.events.notification?.(decodeNotification(buf, start, end))
        return
      case Backend.ErrorResponse:
        return this.onError(decodeErrorFields(buf, start, end))
    }
    const startup = this.startup
    if (startup !== null) {
      if (startup.handle(type, buf, start, end)) this.startupComplete(startup, buf, start)
      return
    }
    const head = this.inflight.peek()
    if (head === undefined) this.unexpected(type)
    if (type === Backend.ReadyForQuery) {
      const status = decodeReadyForQuery(buf, start)
      if (status === null) throw new ProtocolError(`server sent ReadyForQuery with an invalid transaction status byte 0x${buf[start]!.toString(16)}`)
      this.transactionStatus = status
    }
    if (head.handle(type, buf, start, end)) {
      this.inflight.shift()
      this.completedRequests++
      if (this.cancelTargets.size > 0 || this.cancelSentFor !== null) this.afterCompletion(head)
      if (this.state === State.Ending && this.inflight.length === 0 && this.pending.length === 0) this.terminate()
    }
  }

  private unexpected(type: number): never {
    throw new ProtocolError(`server sent ${backendMessageName(type)} while no query was waiting for a reply`)
  }

  private onError(fields: PgErrorFields): void {
    const sev = fields.severityNonLocalized ?? fields.severity
    if (sev === 'FATAL' || sev === 'PANIC') {
      // The server is about to close the connection: report why to everything pending.
      const pgErr = new PgError(fields)
      if (this.startup !== null) {
        this.destroy(pgErr)
        return
      }
      this.destroy(new ConnectionError('PG_CONNECTION_CLOSED', `server closed the connection: ${fields.message} (SQLSTATE ${fields.code})`, { cause: pgErr }))
      return
    }
    if (this.startup !== null) {
      this.startup.error(fields)
      return
    }
    const head = this.inflight.peek()
    if (head === undefined) {
      throw new ProtocolError(`server sent an ErrorResponse while no query was waiting for a reply: ${fields.message}`)
    }
    if (fields.code === SqlState.QueryCanceled) this.noteCanceled(head)
    head.error(fields)
  }

  private startupComplete(startup: Startup, buf: Uint8Array, start: number): void {
    const status = decodeReadyForQuery(buf, start)
    if (status === null) throw new ProtocolError('server sent ReadyForQuery with an invalid transaction status byte')
    this.transactionStatus = status
    this.processId = startup.processId
    this.secretKey = startup.secretKey
    this.protocolMinor = startup.protocolMinor
    this.startup = null
    this.state = this.state === State.Startup ? State.Open : this.state
    this.settleStartup(null)
    this.pump()
    this.flush()
  }

  // --- Cancellation ---------------------------------------------------------
  //
  // A CancelRequest interrupts whatever the backend is executing when the signal
  // lands, which in a pipeline could be the query after the one meant. So:
  //  - the writer is held from the moment a cancel is asked for until the
  //    cancel is over, so no query is added behind the target meanwhile;
  //  - the CancelRequest goes out only once the target is the head of the
  //    queue, i.e. every query before it has completed;
  //  - if nothing is in flight behind the target, it goes out at once: should
  //    the target finish first, the backend is idle when the signal lands and
  //    ignores it (a backend discards a cancel that arrives while it waits for
  //    or reads its next command);
  //  - if queries were already in flight behind it, the cancel waits until the
  //    target has run for CANCEL_DELAY_MS: a target that completes within that
  //    time needs no cancel at all (its result is simply discarded). The
  //    cancel connection is opened halfway through that time, and when the
  //    time is up, whatever the server has sent meanwhile is read first
  //    (setImmediate runs after the event loop polled the socket): only if the
  //    target is still running is the CancelRequest written. What is left is
  //    the time the signal takes from that check to the backend: a fraction of
  //    a millisecond on a connection already open, against several when the
  //    connection is opened only then (the server forks a process per
  //    connection). Measured on a local PostgreSQL 18 with followers of 5 ms
  //    each and aborts timed for the worst moment: about 1 in 15 such aborts
  //    hits a follower, against 2 in 3 when the connection was opened after
  //    the check. A query the signal hits in that window fails with
  //    query_canceled and is counted in cancelMisfires.

  /** The cancel connection being opened for the head target, once its delay is over. */
  private cancelChannel: CancelChannel | null = null
  private cancelCheck: NodeJS.Immediate | null = null
  /**
   * The last request in flight when a CancelRequest was sent: until it has
   * completed, a query_canceled on a request that was not a target is a misfire
   * (the signal may land, or its error arrive, after the cancel connection
   * closed). Weak: a completed request (and its rows) must not be kept alive.
   */
  private exposedUntil: WeakRef<Request> | null = null

  /** Asks for `req` to be cancelled on the server, if and when that can be done safely. */
  requestCancel(req: Request): void {
    if (this.state === State.Closed || this.cancelTargets.has(req) || this.inflight.length === 0) return
    // A request that has been written and has not settled is in flight, except
    // one that completed and waits for a type lookup before it settles: there
    // is nothing to cancel then. A short queue is simply searched; a long one
    // is not (thousands of queries sharing a signal, or timing out together,
    // would make that quadratic: 6 s for 20,000): such a stray target never
    // becomes the head, and is let go once the queue has drained.
    if (this.inflight.length <= 64 && !this.isInFlight(req)) return
    this.cancelTargets.add(req)
    this.holdWriter(this.cancelTargets)
    if (this.inflight.peek() === req) this.cancelHead(req)
  }

  private isInFlight(req: Request): boolean {
    for (const r of this.inflight.items()) if (r === req) return true
    return false
  }

  private cancelHead(req: Request): void {
    if (this.cancelTimer !== null || this.cancelChannel !== null || this.cancelCheck !== null || this.cancelSentFor !== null) return
    if (this.inflight.length === 1) {
      this.sendCancel(req, openCancelChannel(this.config, this.host, this.tlsMode))
      return
    }
    // Halfway through the delay, a target still running gets its cancel
    // connection opened, so that the server has forked the process that will
    // read the CancelRequest by the time it is written (TCP's handshake is done
    // before the server has even accepted the connection).
    const half = CANCEL_DELAY_MS / 2
    this.cancelTimer = setTimeout(() => {
      this.cancelTimer = null
      if (this.state === State.Closed || this.inflight.peek() !== req) return
      const channel = openCancelChannel(this.config, this.host, this.tlsMode)
      this.cancelChannel = channel
      const due = performance.now() + half
      channel.ready.then(
        () => {
          if (this.cancelChannel !== channel) return
          const check = (): void => {
            this.cancelTimer = null
            // After the event loop has read whatever the server sent meanwhile.
            this.cancelCheck = setImmediate(() => {
              this.cancelCheck = null
              this.cancelChannel = null
              if (this.state !== State.Closed && this.inflight.peek() === req) this.sendCancel(req, channel)
              else channel.abandon()
            })
          }
          const wait = due - performance.now()
          if (wait > 0) this.cancelTimer = setTimeout(check, wait)
          else check()
        },
        (err: unknown) => {
          if (this.cancelChannel !== channel) return
          this.cancelChannel = null
          this.cancelFailed(req, err)
        },
      )
    }, half)
  }

  private dropCancelChannel(): void {
    this.cancelChannel?.abandon()
    this.cancelChannel = null
  }

  private sendCancel(req: Request, channel: CancelChannel): void {
    if (this.secretKey === undefined) {
      channel.abandon()
      return
    }
    this.cancelSentFor = req
    this.cancelInFlight++
    let last: Request | undefined
    for (const r of this.inflight.items()) last = r
    this.exposedUntil = last === undefined ? null : new WeakRef(last)
    channel
      .send(this.processId, this.secretKey)
      .then(
        () => this.watchCancelled(req),
        (err: unknown) => this.cancelFailed(req, err),
      )
      .finally(() => {
        this.cancelInFlight--
        this.cancelDone()
      })
  }

  /**
   * The CancelRequest for `req` could not be delivered (the cancel connection
   * was refused, or timed out opening or waiting for the server). Nothing else
   * can stop the target, and while it runs the writer stays held, so every
   * query behind it would wait for as long as it runs: forever, when the
   * connection is as unreachable as the cancel was (a black hole, which TCP
   * keepalive does not notice while the path still answers). Closing the
   * connection settles the target (with its TimeoutError or AbortError) and
   * everything behind it, and the server stops the query when it next writes.
   */
  private cancelFailed(req: Request, err: unknown): void {
    if (this.state === State.Closed || this.inflight.peek() !== req || !this.cancelTargets.has(req)) return
    const why = err instanceof Error ? err.message : String(err)
    this.destroy(
      new ConnectionError(
        'PG_CONNECTION_CLOSED',
        `closed the connection to ${this.where}: a query was to be cancelled, but the cancel request could not be delivered (${why})`,
        { cause: err },
      ),
    )
  }

  /**
   * The CancelRequest for `req` reached the server: the target's reply (its
   * error, or its completion if it finished first) is due. A connection that
   * stays silent for a whole cancel timeout after that is presumed dead (a
   * black hole that lets new connections through): closing it is the only
   * way the target and the queries behind it settle. Silence while a
   * consumer has paused reading is its own doing, and does not count.
   */
  private watchCancelled(req: Request): void {
    if (this.state === State.Closed || this.cancelSentFor !== req) return
    const limit = cancelTimeoutOf(this.config)
    this.heard = false
    const look = (): void => {
      this.cancelWatch = null
      if (this.state === State.Closed || this.cancelSentFor !== req) return
      if (this.heard || this.pausers.size > 0) {
        this.heard = false
        this.cancelWatch = setTimeout(look, limit).unref()
        return
      }
      this.destroy(
        new ConnectionError(
          'PG_CONNECTION_CLOSED',
          `closed the connection to ${this.where}: nothing was received for ${limit} ms after a cancel request reached the server`,
        ),
      )
    }
    // The socket keeps the process alive while the target is pending; this timer must not keep it alive after.
    this.cancelWatch = setTimeout(look, limit).unref()
  }

  /** A request completed: if it was a cancel target, its cancellation is over. */
  private afterCompletion(req: Request): void {
    if (req === this.exposedUntil?.deref()) this.exposedUntil = null
    if (this.cancelTargets.delete(req)) {
      if (this.cancelTimer !== null) {
        clearTimeout(this.cancelTimer)
        this.cancelTimer = null
      }
      if (this.cancelCheck !== null) {
        clearImmediate(this.cancelCheck)
        this.cancelCheck = null
      }
      this.dropCancelChannel()
      if (this.cancelSentFor === req) {
        this.cancelSentFor = null
        if (this.cancelWatch !== null) clearTimeout(this.cancelWatch)
        this.cancelWatch = null
      }
    }
    const head = this.inflight.peek()
    if (head !== undefined && this.cancelTargets.has(head)) this.cancelHead(head)
    // Nothing in flight: whatever is left were stray targets (see requestCancel).
    else if (head === undefined && this.cancelSentFor === null) this.cancelTargets.clear()
    this.cancelDone()
  }

  /** Lets writing resume once no cancel is pending or on its way to the server. */
  private cancelDone(): void {
    if (this.cancelTargets.size === 0 && this.cancelInFlight === 0) this.releaseWriter(this.cancelTargets)
  }

  /** Called for every query_canceled error: one that hits a request nobody cancelled is a misfire. */
  private noteCanceled(req: Request): void {
    if (this.cancelTargets.has(req)) return
    if (this.cancelInFlight > 0 || this.cancelSentFor !== null || this.isExposed(req)) this.cancelMisfires++
  }

  /** True when `req` (the head) was in flight when the last CancelRequest was sent. */
  private isExposed(req: Request): boolean {
    const until = this.exposedUntil?.deref()
    if (until === undefined) return false
    // Requests complete in order: the head is exposed while `until` has not completed.
    for (const r of this.inflight.items()) if (r === until) return true
    this.exposedUntil = null
    return req === until
  }

  /** Finishes what is in flight and queued, then closes. Later requests are rejected. */
  end(): Promise<void> {
    if (this.endPromise) return this.endPromise
    this.endPromise = new Promise<void>((resolve) => {
      if (this.state === State.Closed) return resolve()
      this.socket.once('close', () => resolve())
      if (this.state === State.Startup) {
        this.destroy(new ConnectionError('PG_CONNECTION_ENDED', 'the connection was ended by the client before it was ready'))
        return
      }
      this.state = State.Ending
      if (this.inflight.length === 0 && this.pending.length === 0) this.terminate()
    })
    return this.endPromise
  }

  private terminate(): void {
    if (this.state === State.Closed) return
    writeTerminate(this.writer)
    this.flush()
    this.state = State.Closed
    this.socket.end()
    // A server that never closes its side must not keep end() waiting forever.
    setTimeout(() => this.socket.destroy(), 5000).unref()
    this.events.close?.(null, [])
  }

  /** Closes at once and rejects everything pending with `err`. */
  destroy(err: Error): void {
    if (this.state === State.Closed) return
    const wasStartup = this.startup !== null
    this.state = State.Closed
    this.closeError = err
    this.holders.clear()
    this.pausers.clear()
    this.cancelTargets.clear()
    if (this.cancelTimer !== null) clearTimeout(this.cancelTimer)
    if (this.cancelWatch !== null) clearTimeout(this.cancelWatch)
    this.socket.destroy()
    // Writers waiting for a drain learn of the closing through their fail().
    this.drainWaiters = []
    for (const req of this.inflight.drain()) req.fail(err, true)
    const unsent = this.pending.drain().filter((r) => r.dropped !== true)
    // A connection that never became ready reports through ready(), not as a close.
    if (wasStartup || this.events.close === undefined) {
      const notSent = err instanceof ConnectionError ? err : new ConnectionError('PG_CONNECTION_CLOSED', `connection to ${this.where} failed: ${err.message}`, { cause: err })
      for (const req of unsent) req.fail(notSent, false)
      if (wasStartup) this.settleStartup(err)
      else this.events.close?.(err, [])
    } else this.events.close(err, unsent)
  }

  private onSocketClose(): void {
    if (this.state === State.Closed) return
    const partial = this.framer.holdsPartial ? ' in the middle of a message' : ''
    const what = this.startup !== null ? 'during startup' : this.inflight.length > 0 ? 'while queries were in flight' : 'unexpectedly'
    this.destroy(new ConnectionError('PG_CONNECTION_CLOSED', `server at ${this.where} closed the connection ${what}${partial}`))
  }
}
