import { EventEmitter } from 'node:events'
import type { ConnectionConfig } from '../config/types.js'
import type { CopyBothExchange } from '../connection/copy-both.js'
import { AbortError, ArgumentError, ConnectionError, ProtocolError } from '../errors.js'
import { decodePrimaryKeepalive, decodeXLogData, ReplicationMessage, writeStandbyStatusUpdate, type XLogDataHeader } from '../protocol/replication.js'
import { classifyReplicationError } from '../replication/errors.js'
import { Lsn, lsnOf } from '../types/lsn.js'
import { ReplicationConnection } from './replication-connection.js'
import { endingError, parseDuration, ReconnectPolicy } from './replication-retry.js'
import type { TypeCatalog } from '../types/catalog.js'

// The engine under subscribe() and replicate(): one replication connection at
// a time, a bounded queue between the socket and the consumer, the
// acknowledgement rules, status updates, and reconnection.
//
// What is acknowledged: a message that ends a transaction (or, for physical
// streaming, any XLogData) becomes acknowledgeable only when the consumer asks
// for the message after it: having asked is the sign it handled it. Every
// status update reports that position and nothing beyond, except that an idle
// stream (every received transaction handled, none open) may report the
// server's keepalive position, which covers no change the consumer has not
// seen. Status updates go out on a timer and whenever the server asks, even
// while reading is paused, so a slow consumer is never timed out.
//
// After a lost connection the stream resumes from the end of the last
// transaction it received whole: transactions received whole but not yet
// handed out stay in the queue and are handed out once, and the server
// skips everything before the requested start. A transaction cut off midway
// starts again with its begin.

export interface StreamOptions {
  /** Stops the stream, as close() does; the iteration ends with an AbortError. */
  signal?: AbortSignal
  /** Messages held for a slow consumer before reading from the server pauses. Default 1000. */
  highWaterMark?: number
  /**
   * Milliseconds between status updates sent on the stream's own initiative. Default 10000 (less when wal_sender_timeout is shorter).
   * A connection from which nothing comes for six intervals (5 s at least), although the updates ask for an answer, is taken for lost.
   */
  statusInterval?: number
  /** Longest wait between reconnection attempts, in milliseconds. Default 5000. */
  reconnectMaxDelay?: number
}

export interface StreamEvents {
  /** The stream's connection is open and streaming (again). */
  connect: [info: { processId: number; startLsn: Lsn }]
  /** The connection was lost; another attempt is made after `delay` ms. */
  reconnect: [info: { error: Error; attempt: number; delay: number }]
}

/** What a kind of stream decides: how to start, how to decode, what to acknowledge. */
export interface StreamDriver<T> {
  mode: 'database' | 'physical'
  /** Refuses what the server cannot do (an option of a later version), before anything is sent on the new connection. */
  check?(conn: ReplicationConnection): void
  /** Prepares the slot and returns the START_REPLICATION command for a start at `from` (null: the slot's confirmed position). */
  start(conn: ReplicationConnection, from: Lsn | null, first: boolean): Promise<string>
  /** One XLogData payload; null for a message not handed out. */
  decode(header: XLogDataHeader, buf: Uint8Array, start: number, end: number): T | null
  /** The position acknowledgeable once the consumer has handled `m` (asked for the next), or null. */
  ackOf(m: T): Lsn | null
  /** True while a transaction has been received in part (the stream is not idle). */
  open(): boolean
  /** The stream restarts after a lost connection: forget partial state. */
  reset(): void
  /**
   * The server ended the stream by itself, with the result set that follows
   * (physical: the next timeline and where it starts). True: start again at
   * once, without counting it as a failure.
   */
  ended?(rows: (string | null)[][]): boolean
}

/**
 * A connection from which nothing came for this many status intervals (but
 * never less than SILENCE_MIN_MS), not even the keepalives that status
 * updates ask for after two intervals of silence, is taken for lost: a
 * network that drops a connection without a word (a NAT or firewall timing
 * it out, a host that vanished) would otherwise leave the stream waiting
 * until TCP gave up, many minutes later, while the server ended its side long
 * before (wal_sender_timeout).
 */
const SILENT_INTERVALS = 6
const SILENCE_MIN_MS = 5000

export class ReplicationStream<T> implements AsyncIterableIterator<T> {
  private readonly emitter = new EventEmitter()
  private readonly queue: T[] = []
  private head = 0
  /** Positions acknowledgeable once the queued message at the same index is handed out; null where none. */
  private readonly acks: (Lsn | null)[] = []
  /** The position of the message just handed out, acknowledged when the consumer asks for the next. */
  private pendingAck: Lsn | null = null
  /** What status updates report as written, flushed and applied. */
  private acked = Lsn.ZERO
  /** The end of the last transaction received whole: where a resumed stream starts. */
  private received = Lsn.ZERO
  private lastServerEnd = Lsn.ZERO
  private waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: Error) => void } | null = null
  private failure: Error | null = null
  private closed = false
  private ended = false
  private conn: ReplicationConnection | null = null
  private exchange: CopyBothExchange | null = null
  private timer: NodeJS.Timeout | null = null
  private readonly highWaterMark: number
  private readonly policy: ReconnectPolicy
  private statusInterval: number
  private readonly userInterval: boolean
  /** Something came from the server since the last status timer tick. */
  private heard = false
  /** performance.now() since when nothing came (reading paused on purpose does not count). */
  private silentSince = 0
  /** Reading was paused for a slow consumer (see highWaterMark). */
  private readingPaused = false
  private running: Promise<void> | null = null
  /** Ends the wait before a reconnection attempt. */
  private wake: (() => void) | null = null
  private started = false
  /** Streams started so far (CopyBothResponse received). */
  private streams = 0

  /** @internal Made by subscribe() and replicate(). */
  constructor(
    private readonly config: ConnectionConfig,
    private readonly catalog: TypeCatalog,
    private readonly driver: StreamDriver<T>,
    options: StreamOptions,
  ) {
    const hwm = options.highWaterMark ?? 1000
    if (!Number.isInteger(hwm) || hwm < 1) throw new ArgumentError('highWaterMark must be a positive integer')
    this.highWaterMark = hwm
    const interval = options.statusInterval ?? 10_000
    if (typeof interval !== 'number' || !(interval >= 10)) throw new ArgumentError('statusInterval must be at least 10 milliseconds')
    this.statusInterval = interval
    this.userInterval = options.statusInterval !== undefined
    const delay = options.reconnectMaxDelay ?? 5000
    if (typeof delay !== 'number' || !(delay >= 0)) throw new ArgumentError('reconnectMaxDelay must be a number of milliseconds')
    this.policy = new ReconnectPolicy(delay)
    const signal = options.signal
    if (signal !== undefined) {
      if (signal.aborted) this.abort(signal.reason)
      else signal.addEventListener('abort', () => this.abort(signal.reason), { once: true })
    }
  }

  on<K extends keyof StreamEvents>(event: K, listener: (...args: StreamEvents[K]) => void): this {
    this.emitter.on(event, listener as (...a: unknown[]) => void)
    return this
  }

  off<K extends keyof StreamEvents>(event: K, listener: (...args: StreamEvents[K]) => void): this {
    this.emitter.off(event, listener as (...a: unknown[]) => void)
    return this
  }

  private emit<K extends keyof StreamEvents>(event: K, ...args: StreamEvents[K]): void {
    try {
      this.emitter.emit(event, ...args)
    } catch (err) {
      queueMicrotask(() => {
        throw err
      })
    }
  }

  /** The position last acknowledged to the server (or about to be, with the next status update). */
  get acknowledgedLsn(): Lsn {
    return this.acked
  }

  /** Messages received and not yet handed out (at most about highWaterMark plus one socket read). */
  get buffered(): number {
    return this.queue.length - this.head
  }

  /** The walsender's process id while connected, else 0. */
  get processId(): number {
    return this.conn?.processId ?? 0
  }

  /**
   * Starts the stream without taking a message: resolves once the server
   * streams (changes committed after that are delivered), rejects with the
   * reason it could not start.
   */
  ready(): Promise<void> {
    if (!this.started) this.begin()
    if (this.streams > 0) return Promise.resolve()
    if (this.failure !== null) return Promise.reject(this.failure)
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }))
  }

  private readyWaiters: { resolve: () => void; reject: (e: Error) => void }[] = []

  private settleReady(err: Error | null): void {
    const waiters = this.readyWaiters
    this.readyWaiters = []
    for (const w of waiters) if (err === null) w.resolve()
    else w.reject(err)
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  next(): Promise<IteratorResult<T>> {
    if (!this.started) this.begin()
    if (this.pendingAck !== null) {
      this.acked = Lsn.max(this.acked, this.pendingAck)
      this.pendingAck = null
    }
    if (this.head < this.queue.length) return Promise.resolve({ value: this.shift(), done: false })
    if (this.failure !== null) return Promise.reject(this.failure)
    if (this.ended) return Promise.resolve({ value: undefined, done: true })
    if (this.waiter !== null) return Promise.reject(new ArgumentError('next() called again before the previous call settled'))
    // Idle: the consumer handled everything it was given.
    this.maybeIdleAck()
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }))
  }

  /** Leaving a for-await loop: stops streaming as close() does, without acknowledging the message handed out last. */
  async return(): Promise<IteratorResult<T>> {
    this.pendingAck = null
    await this.close()
    return { value: undefined, done: true }
  }

  /**
   * Stops streaming and closes the connection; the iteration ends. The last
   * message handed out is not acknowledged: leaving the loop inside its body
   * says nothing about whether it was handled.
   */
  async close(): Promise<void> {
    if (this.closed) return this.running ?? undefined
    this.closed = true
    this.ended = true
    this.settleWaiter()
    this.wake?.()
    const ex = this.exchange
    if (ex !== null && ex.streaming) {
      this.sendStatus(false)
      ex.end()
      // A server that does not end the stream promptly is cut off.
      const cut = setTimeout(() => void this.conn?.close(), 2000)
      await this.running?.catch(() => undefined)
      clearTimeout(cut)
    } else {
      await this.conn?.close()
      await this.running?.catch(() => undefined)
    }
    await this.conn?.end().catch(() => undefined)
  }

  /** `await using sub = db.subscribe(...)`: close() when the scope exits (the last message handed out is not acknowledged). */
  [Symbol.asyncDispose](): Promise<void> {
    this.pendingAck = null
    return this.close()
  }

  private abort(reason: unknown): void {
    this.failure ??= reason instanceof Error ? reason : new AbortError('the replication stream was aborted')
    // An abort stops at once: what was received and not handed out is dropped (and was never acknowledged).
    this.queue.length = 0
    this.acks.length = 0
    this.head = 0
    void this.close()
    this.settleWaiter()
  }

  private shift(): T {
    const i = this.head++
    const m = this.queue[i]!
    this.pendingAck = this.acks[i] ?? null
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head)
      this.acks.splice(0, this.head)
      this.head = 0
    }
    if (this.readingPaused && this.queue.length - this.head <= this.highWaterMark >> 1) {
      this.readingPaused = false
      // Silence while paused was the stream's own doing.
      this.heard = true
      this.exchange?.resume()
    }
    return m
  }

  private settleWaiter(): void {
    const w = this.waiter
    if (w === null) return
    if (this.head < this.queue.length) {
      this.waiter = null
      w.resolve({ value: this.shift(), done: false })
    } else if (this.failure !== null) {
      this.waiter = null
      w.reject(this.failure)
    } else if (this.ended) {
      this.waiter = null
      w.resolve({ value: undefined, done: true })
    }
  }

  /**
   * Before a restart: queued messages after the last one with an
   * acknowledgeable position belong to a transaction received in part, which
   * the server sends again whole.
   */
  private dropPartial(): void {
    let keep = this.queue.length
    while (keep > this.head && this.acks[keep - 1] === null) keep--
    this.queue.length = keep
    this.acks.length = keep
  }

  private maybeIdleAck(): void {
    if (this.head === this.queue.length && !this.driver.open() && this.lastServerEnd > this.acked && this.received <= this.acked) {
      this.acked = this.lastServerEnd
    }
  }

  // --- the connection ---------------------------------------------------------

  private begin(): void {
    this.started = true
    this.running = this.run()
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      let err: Error | null
      const before = this.streams
      try {
        err = await this.stream(this.streams === 0)
      } catch (e) {
        err = e as Error
      }
      if (this.closed) break
      if (err === null) continue
      if (this.streams > before) this.policy.streamed()
      const error = classifyReplicationError(err, undefined)
      const next = this.policy.next(error, this.streams > 0)
      if (next === null) {
        this.failure ??= endingError(error)
        this.ended = true
        this.settleWaiter()
        this.settleReady(this.failure)
        break
      }
      this.emit('reconnect', { error, attempt: next.attempt, delay: next.delay })
      // close() cuts the wait short: a closed stream leaves no timer behind.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, next.delay)
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.wake = null
    }
    this.stopTimer()
    this.settleReady(this.failure ?? new AbortError('the replication stream was closed before it started'))
    await this.conn?.close()
  }

  /** One connection's life: resolves with why it ended. */
  private async stream(first: boolean): Promise<Error | null> {
    this.driver.reset()
    this.dropPartial()
    const conn = await ReplicationConnection.open(this.config, this.catalog, this.driver.mode)
    this.conn = conn
    this.policy.connected(conn.processId)
    if (this.closed) {
      await conn.close()
      return new AbortError('closed')
    }
    const from = this.received > this.acked ? this.received : this.acked
    let command: string
    try {
      this.driver.check?.(conn)
      await this.learnSenderTimeout(conn)
      command = await this.driver.start(conn, first && from.value === 0n ? null : from, first)
    } catch (err) {
      await conn.close()
      return err as Error
    }
    return await new Promise<Error | null>((resolve) => {
      const ex = conn.startStream(command, {
        started: (exchange) => {
          this.streams++
          this.exchange = exchange
          this.readingPaused = false
          this.startTimer()
          this.settleReady(null)
          this.emit('connect', { processId: conn.processId, startLsn: from })
          if (this.closed) exchange.end()
        },
        data: (buf, start, end) => this.onData(buf, start, end),
        finished: (err, rows) => {
          this.exchange = null
          this.stopTimer()
          void conn.close()
          if (err === null && !this.closed && this.driver.ended?.(rows) === true) resolve(null)
          else resolve(err ?? new ConnectionError('PG_CONNECTION_CLOSED', 'the server ended the replication stream'))
        },
      })
      void ex
    })
  }

  /** The server's wal_sender_timeout: status updates go well inside it (unless the interval was given). */
  private async learnSenderTimeout(conn: ReplicationConnection): Promise<void> {
    let ms: number
    try {
      const [row] = await conn.command<{ wal_sender_timeout: string }>('SHOW wal_sender_timeout')
      ms = parseDuration(row?.wal_sender_timeout ?? '')
    } catch {
      // Not fatal: the defaults suit the default 60 s timeout (a lost connection fails the next command).
      return
    }
    this.policy.senderTimeout = ms
    if (ms > 0 && !this.userInterval) this.statusInterval = Math.max(100, Math.min(10_000, Math.floor(ms / 3)))
  }

  private onData(buf: Uint8Array, start: number, end: number): void {
    this.heard = true
    if (start >= end) throw new ProtocolError('server sent an empty CopyData message in a replication stream')
    const tag = buf[start]
    if (tag === ReplicationMessage.PrimaryKeepalive) {
      const k = decodePrimaryKeepalive(buf, start, end)
      const walEnd = lsnOf(k.walEnd)
      if (walEnd > this.lastServerEnd) this.lastServerEnd = walEnd
      if (this.waiter !== null) this.maybeIdleAck()
      if (k.replyRequested) this.sendStatus(false)
      return
    }
    if (tag !== ReplicationMessage.XLogData) {
      throw new ProtocolError(`server sent replication message type 0x${tag!.toString(16)} that is neither XLogData nor a keepalive`)
    }
    const header = decodeXLogData(buf, start, end)
    const m = this.driver.decode(header, buf, header.dataStart, end)
    if (m === null) return
    const ack = this.driver.ackOf(m)
    if (ack !== null && ack > this.received) this.received = ack
    if (this.waiter !== null && this.head === this.queue.length) {
      const w = this.waiter
      this.waiter = null
      this.pendingAck = ack
      w.resolve({ value: m, done: false })
      return
    }
    this.queue.push(m)
    this.acks.push(ack)
    if (this.queue.length - this.head >= this.highWaterMark && !this.readingPaused) {
      this.readingPaused = true
      this.exchange?.pause()
    }
  }

  private startTimer(): void {
    this.stopTimer()
    this.heard = false
    this.silentSince = performance.now()
    this.timer = setInterval(() => this.tick(), this.statusInterval)
  }

  /** A status update, and the check that the server is still there. */
  private tick(): void {
    const now = performance.now()
    if (this.heard || this.readingPaused) {
      this.heard = false
      this.silentSince = now
    }
    const silent = now - this.silentSince
    if (silent >= Math.max(SILENCE_MIN_MS, SILENT_INTERVALS * this.statusInterval)) {
      this.exchange?.destroy(
        new ConnectionError('PG_CONNECTION_CLOSED', `nothing came from the server for ${Math.round(silent)} ms, not even the keepalives status updates asked for: the connection is taken for lost`),
      )
      return
    }
    // After two intervals of silence each update asks for an answer, which a live server sends at once.
    this.sendStatus(silent >= 2 * this.statusInterval)
  }

  private stopTimer(): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
  }

  private sendStatus(replyRequested: boolean): void {
    const ex = this.exchange
    if (ex === null || !ex.streaming) return
    const pos = this.acked.value
    const now = BigInt(Date.now()) * 1000n
    ex.send((w) => writeStandbyStatusUpdate(w, pos, pos, pos, now, replyRequested))
  }
}
