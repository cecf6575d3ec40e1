import type { ByteStream } from '../config/byte-stream.js'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConnectionError, ProtocolError, type PgErrorFields } from '../errors.js'
import { decodeErrorFields, decodeNotification, decodeParameterStatus, decodeReadyForQuery, type TransactionStatus } from '../protocol/backend.js'
import { Framer, type MessageSink } from '../protocol/framer.js'
import { Backend, backendMessageName } from '../protocol/message-codes.js'
import { Codes } from '../protocol/sql-state-codes.js'
import { writeTerminate } from '../protocol/frontend.js'
import { Writer } from '../protocol/writer.js'
import type { InflightBound } from './inflight-bound.js'
import { Queue } from './queue.js'
import { keepsReads, type Request, type RequestContext, type WriteStamp } from './request.js'
import { CancelScheduler, cancelHostOf } from './cancel-scheduler.js'
import { type Liveness, watchLiveness } from './liveness.js'
import { closedError, failInflight, fatalError, notStarted, queryLost } from './closed-errors.js'
import type { ConnectionEvents } from './connection-events.js'
import { Startup } from './startup.js'
import { describeHost, endSocket, readFrom, socketError, type Transport } from './transport.js'

const enum State {
  Startup,
  Open,
  /** end() called: no new requests; Terminate goes out once the in-flight ones finish. */
  Ending,
  Closed,
}

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
  private readonly socket: ByteStream
  private readonly writer = new Writer()
  private readonly framer: Framer
  /** Requests written, awaiting their replies; only the connection changes it. */
  readonly inflight = new Queue<Request>()
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
  /** Times cancels on the server; exists only while one is pending or its signal may still land. */
  private canceller: CancelScheduler | null = null
  /** Socket chunks read so far: whether the server ever sent a byte (see silent), and anything since a cancel reached it. */
  chunksRead = 0
  /** Requests in flight that may keep views of the server's bytes past a read (see keepsReads): while any do, a read into the shared buffer is copied first. */
  private keepers = 0
  /** See RequestContext.writeStamp and readAt. */
  writeStamp: WriteStamp = { at: 0 }
  readAt = 0
  /** What the owner attached (the query layer's session for this connection). */
  attachment: unknown = null
  /** Queries that failed with query_canceled while a cancel aimed at another was outstanding: should stay 0. */
  cancelMisfires = 0
  /** What may be in flight at once; the rest waits in `pending`. null (unbounded) on a direct connection. */
  bound: InflightBound | null = null
  /** Requests the server has answered in full (with a result or an error): whether the connection was of any use. */
  completedRequests = 0
  private startup: Startup | null
  private readonly startupDone: Promise<void>
  private settleStartup!: (err: Error | null) => void
  private endPromise: Promise<void> | null = null
  private closeError: Error | null = null
  /** The server ended the connection with a FATAL (or PANIC) ErrorResponse. */
  private fatal = false
  /** The dead-peer checks (see liveness.ts); null with keepalives off and no tcpUserTimeout. */
  private liveness: Liveness | null = null
  /** When the last write was handed to the socket. */
  wroteAt = 0
  /** Set by the owner: whether the connection is to be checked while idle (it listens for notifications). */
  watchIdle: () => boolean = () => false

  /** Server settings reported by ParameterStatus, kept current. */
  readonly serverParameters: Record<string, string> = Object.create(null) as Record<string, string>
  processId = 0
  secretKey: Uint8Array | undefined
  /** Negotiated protocol minor version (3.0 or 3.2). */
  protocolMinor = 0
  transactionStatus: TransactionStatus = 'I'
  readonly tls: boolean
  readonly tlsMode: Transport['mode']
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
    readFrom(transport, (chunk, n) => this.onData(chunk, n), () => this.keepers > 0)
    this.socket.on('error', (err) => this.destroy(socketError(err, this.where)))
    this.socket.on('close', () => this.onSocketClose())
    this.socket.on('drain', () => this.onDrain())
    this.socket.resume()
    this.startup.begin()
  }

  /** Resolves once the server is ready for queries; rejects with the reason startup failed. */
  ready(): Promise<void> {
    return this.startupDone
  }

  /** True while the server has sent nothing at all: one that closes a startup unanswered may not know the protocol version asked for. */
  get silent(): boolean {
    return this.chunksRead === 0
  }

  get closed(): boolean {
    return this.state === State.Closed
  }

  /** Why the connection closed, if it failed; null while open or after a clean end(). */
  get failure(): Error | null {
    return this.closeError
  }

  get readingPaused(): boolean {
    return this.pausers.size > 0
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
      req.fail(closedError(this.closeError, this.where), false)
      return
    }
    if (this.blocked || this.pending.length > 0 || this.holders.size > 0 || !(this.bound?.admits(this.inflight.length) ?? true)) {
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
      req.fail(closedError(this.closeError, this.where), false)
      return
    }
    if (!this.encode(req, true)) return
    this.inflight.unshift(req)
    if (keepsReads(req)) this.keepers++
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

  private write(req: Request): void {
    if (req.dropped === true || !this.encode(req, false)) return
    this.inflight.push(req)
    if (keepsReads(req)) this.keepers++
    if (this.writer.length >= FLUSH_BYTES) this.flush()
    else if (!this.flushScheduled) {
      this.flushScheduled = true
      process.nextTick(this.flushTick)
    }
  }

  /**
   * Appends `req`'s messages to the write buffer. A request whose encoding
   * throws leaves nothing behind (never half a message on the wire) and fails
   * unsent; false then.
   */
  private encode(req: Request, ahead: boolean): boolean {
    const w = this.writer
    const mark = w.length
    try {
      req.encode(w, this)
      this.bound?.written(w.length - mark, ahead)
      return true
    } catch (err) {
      w.truncate(mark)
      req.fail(err instanceof Error ? err : new Error(String(err)), false)
      return false
    }
  }

  writeNow(fn: (w: Writer) => void, tail?: Uint8Array): void {
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
    if (tail === undefined) return this.flush()
    // One writev for the buffer and the tail: two writes would be two syscalls, and two packets without Nagle.
    this.socket.cork?.()
    this.flush()
    if (!this.socket.write(tail)) this.block()
    this.socket.uncork?.()
  }

  private flush(): void {
    if (this.writer.length === 0 || this.state === State.Closed) return
    const chunk = this.writer.take()
    this.writeStamp.at = this.wroteAt = performance.now()
    this.writeStamp = { at: 0 }
    if (!this.socket.write(chunk)) this.block()
  }

  private block(): void {
    this.blocked = true
    this.liveness?.blocked()
  }

  private onDrain(): void {
    this.blocked = false
    this.liveness?.drained()
    if (this.drainWaiters.length > 0) {
      const waiters = this.drainWaiters
      this.drainWaiters = []
      for (const fn of waiters) fn()
    }
    this.pump()
  }

  /** Writes waiting requests until the socket pushes back again. */
  private pump(): void {
    while (!this.blocked && this.holders.size === 0 && this.pending.length > 0 && this.state !== State.Closed && (this.bound?.admits(this.inflight.length) ?? true)) {
      this.write(this.pending.shift()!)
      if (this.writer.length >= FLUSH_BYTES) this.flush()
    }
    if (this.state === State.Ending && this.pending.length === 0 && this.inflight.length === 0) this.terminate()
  }

  private onData(chunk: Uint8Array, n: number): void {
    if (this.state === State.Closed) return
    this.chunksRead++
    this.readAt = performance.now()
    try {
      this.framer.push(chunk, n)
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
      case Backend.NoticeResponse: {
        const notice = decodeErrorFields(buf, start, end, 'NoticeResponse')
        // The backend runs one statement at a time: a notice belongs to the request at the head.
        if (this.startup === null) this.inflight.peek()?.notice?.(notice)
        this.events.notice?.(notice)
        return
      }
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
      if (keepsReads(head)) this.keepers--
      this.completedRequests++
      if (this.canceller !== null) this.canceller.completed(head)
      this.bound?.completed()
      if (this.bound !== null && this.pending.length > 0) this.pump()
      if (this.inflight.length === 0 && this.pending.length === 0) {
        if (this.state === State.Ending) this.terminate()
        else this.events.idle?.()
      }
    }
  }

  private unexpected(type: number): never {
    throw new ProtocolError(`server sent ${backendMessageName(type)} while no query was waiting for a reply`)
  }

  private onError(fields: PgErrorFields): void {
    const sev = fields.severityNonLocalized ?? fields.severity
    if (sev === 'FATAL' || sev === 'PANIC') {
      this.fatal = true
      this.destroy(this.startup?.fatalError(fields) ?? fatalError(fields, this.startup !== null))
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
    if (fields.code === Codes.QueryCanceled && this.canceller?.isMisfire(head) === true) this.cancelMisfires++
    head.error(fields)
    this.events.queryError?.(fields.code)
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
    this.liveness = watchLiveness(this)
    this.pump()
    this.flush()
  }

  /** Sends `req` (a liveness check) if the connection is idle outside a transaction and its owner wants it watched. */
  sendIfIdle(req: Request): boolean {
    if (this.inflight.length + this.pending.length + this.holders.size > 0 || this.state !== State.Open || this.transactionStatus !== 'I' || !this.watchIdle()) return false
    this.send(req, true)
    return true
  }

  /** Asks for `req` to be cancelled on the server, if and when that can be done safely: see CancelScheduler. */
  requestCancel(req: Request): void {
    if (this.state === State.Closed || this.inflight.length === 0) return
    const scheduler = this.canceller ?? new CancelScheduler(cancelHostOf(this, (done) => this.cancelDone(done)))
    if (scheduler.request(req)) this.canceller = scheduler
  }

  private cancelDone(scheduler: CancelScheduler): void {
    if (this.canceller === scheduler) this.canceller = null
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
    this.liveness?.stop()
    endSocket(this.socket)
    this.events.close?.(null, [])
  }

  /** Closes at once and rejects everything pending with `err`. */
  destroy(err: Error): void {
    if (this.state === State.Closed) return
    const wasStartup = this.startup !== null
    this.state = State.Closed
    this.closeError = err
    const again = this.fatal && !wasStartup && this.transactionStatus === 'I' ? notStarted(this.inflight, this.holders) : []
    this.holders.clear()
    this.pausers.clear()
    this.canceller?.dispose()
    this.canceller = null
    this.liveness?.stop()
    this.socket.destroy()
    // Writers waiting for a drain learn of the closing through their fail().
    this.drainWaiters = []
    failInflight(this.inflight, err, this.fatal)
    const unsent = [...again, ...this.pending.drain().filter((r) => r.dropped !== true)]
    // A connection that never became ready reports through ready(), not as a close.
    if (wasStartup || this.events.close === undefined) {
      const notSent = queryLost(err instanceof ConnectionError ? err : new ConnectionError('PG_CONNECTION_CLOSED', `connection to ${this.where} failed: ${err.message}`, { cause: err }), false)
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
