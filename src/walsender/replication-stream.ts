import { EventEmitter } from 'node:events'
import type { ConnectionConfig } from '../config/types.js'
import type { CopyBothExchange } from '../connection/copy-both.js'
import { AbortError, ArgumentError, ConnectionError, PgError, ProtocolError } from '../errors.js'
import { decodePrimaryKeepalive, decodeXLogData, ReplicationMessage, writeStandbyStatusUpdate, type XLogDataHeader } from '../protocol/replication.js'
import { classifyReplicationError, ReplicationError } from '../replication/errors.js'
import { Lsn, lsnOf } from '../replication/lsn.js'
import { ReplicationConnection } from './replication-connection.js'
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
  /** Milliseconds between status updates sent on the stream's own initiative. Default 10000 (less when wal_sender_timeout is shorter). */
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

const BACKOFF_BASE_MS = 100
/** A slot still held by the walsender of the lost connection is retried this long before it is an error. */
const SLOT_IN_USE_RETRY_MS = 30_000

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
  private readonly reconnectMaxDelay: number
  private statusInterval: number
  private readonly userInterval: boolean
  private running: Promise<void> | null = null
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
    this.reconnectMaxDelay = delay
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
    if (this.queue.length - this.head <= this.highWaterMark >> 1) this.exchange?.resume()
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
    let attempt = 0
    let inUseSince = 0
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
      if (this.streams > before) {
        attempt = 0
        inUseSince = 0
      }
      const error = classifyReplicationError(err, undefined)
      // Until a stream has run once, every failure is the caller's to see: wrong settings must not retry forever.
      let retry = this.streams > 0 && isTransient(error)
      if (error instanceof ReplicationError && error.reason === 'slot-in-use' && this.streams > 0) {
        // The walsender of the lost connection may still hold the slot for a moment.
        inUseSince ||= performance.now()
        retry = performance.now() - inUseSince < SLOT_IN_USE_RETRY_MS
      }
      if (!retry) {
        this.failure ??= error
        this.ended = true
        this.settleWaiter()
        this.settleReady(this.failure)
        break
      }
      attempt++
      const delay = Math.min(this.reconnectMaxDelay, BACKOFF_BASE_MS * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2)
      this.emit('reconnect', { error, attempt, delay })
      await new Promise((r) => setTimeout(r, delay))
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
    if (this.closed) {
      await conn.close()
      return new AbortError('closed')
    }
    const from = this.received > this.acked ? this.received : this.acked
    let command: string
    try {
      if (!this.userInterval) await this.fitInterval(conn)
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

  /** Keeps status updates well inside the server's wal_sender_timeout. */
  private async fitInterval(conn: ReplicationConnection): Promise<void> {
    try {
      const [row] = await conn.command<{ wal_sender_timeout: string }>('SHOW wal_sender_timeout')
      const ms = parseDuration(row?.wal_sender_timeout ?? '')
      if (ms > 0) this.statusInterval = Math.max(100, Math.min(10_000, Math.floor(ms / 3)))
    } catch {
      // Not fatal: the default interval suits the default 60 s timeout.
    }
  }

  private onData(buf: Uint8Array, start: number, end: number): void {
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
    if (this.queue.length - this.head >= this.highWaterMark) this.exchange?.pause()
  }

  private startTimer(): void {
    this.stopTimer()
    this.timer = setInterval(() => this.sendStatus(false), this.statusInterval)
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

/** A connection problem (lost, refused, server restarting) rather than a refusal that retrying cannot fix. */
function isTransient(err: Error): boolean {
  if (err instanceof ReplicationError) return false
  if (err instanceof ConnectionError) return true
  if (err instanceof PgError) {
    const cls = err.code.slice(0, 2)
    // 57: operator intervention (shutdown, terminated, starting up); 08: connection exception; 53: too many connections.
    return cls === '57' || cls === '08' || err.code === '53300'
  }
  return false
}

/** A GUC duration as SHOW prints it ('60s', '500ms', '1min', '0') in milliseconds. */
function parseDuration(s: string): number {
  const m = /^(\d+)\s*(ms|s|min|h|d)?$/.exec(s.trim())
  if (m === null) return 0
  const n = Number(m[1])
  const unit = m[2] ?? 'ms'
  return n * ({ ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 } as Record<string, number>)[unit]!
}
