import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConnectionError, ProtocolError, type PgErrorFields } from '../errors.js'
import { Backend } from '../protocol/message-codes.js'
import { writeSync } from '../protocol/frontend.js'
import { Writer } from '../protocol/writer.js'
import type { Request } from './request.js'
import { platform } from './platform.js'
import { unrefTimer } from './timers.js'

// Dead peers. A server that vanished without a FIN or an RST (a partition, a
// host powered off, a middlebox that dropped the connection's state) leaves a
// socket that neither reads nor fails. TCP keepalive finds some of these, but
// Node cannot set TCP_USER_TIMEOUT, and before Node 24 neither the probe
// interval nor the count; a path that still acknowledges (a proxy that stopped
// forwarding) defeats it altogether. So pipegres checks for itself, once the
// server has been silent for keepAliveIdle:
// - an idle connection someone listens on (LISTEN) gets a Sync, which a live
//   server answers at once with ReadyForQuery;
// - a connection with queries waiting cannot be asked anything (a backend
//   running a query reads nothing), so a new connection to the same server
//   shows whether the server still answers; a long query on a live server is
//   left alone;
// - a write the socket has not drained for tcpUserTimeout means nothing reads
//   at the other end, as the kernel's TCP_USER_TIMEOUT would say. Without the
//   setting the bound is the keepalive bound's, and passing it only starts the
//   check of a busy connection: a backend running a long query reads nothing
//   either, so a pipeline deeper than the socket buffers behind a lock wait
//   must not look like a dead server.
// No answer within keepAliveInterval × keepAliveCount closes the connection
// with a ConnectionError that says which check failed.
//
// Idle connections nobody listens on are not probed: nothing waits on them,
// the next query's own check finds a dead one, and a message every minute
// would keep a server's idle_session_timeout from ever firing. Nor is a
// connection inside a transaction block: each message would restart the
// server's idle_in_transaction_session_timeout.

const DEFAULT_IDLE_MS = 60_000
const DEFAULT_INTERVAL_MS = 10_000
const DEFAULT_COUNT = 3
/** Timers never fire more often than this, however small the settings. */
const MIN_TICK_MS = 10

export interface LivenessLimits {
  /** Silence before a check; 0: no checks (keepalives off). */
  readonly idle: number
  /** How long a check may go unanswered. */
  readonly window: number
  /** How long a write may stay undrained; 0: no limit. */
  readonly write: number
  /** The write bound was set (tcpUserTimeout): passing it closes the connection, with no check first. */
  readonly writeStrict: boolean
}

export function livenessLimits(config: ConnectionConfig): LivenessLimits {
  const idle = config.keepAlive ? config.keepAliveIdle || DEFAULT_IDLE_MS : 0
  const window = (config.keepAliveInterval || DEFAULT_INTERVAL_MS) * (config.keepAliveCount || DEFAULT_COUNT)
  const write = config.tcpUserTimeout || (idle > 0 ? idle + window : 0)
  return { idle, window, write, writeStrict: config.tcpUserTimeout > 0 }
}

/** What the check sees of its connection (a Connection). */
export interface LivenessHost {
  readonly where: string
  readonly config: ConnectionConfig
  readonly host: HostAddress
  readonly closed: boolean
  /** performance.now() of the last read, and of the last write handed to the socket. */
  readonly readAt: number
  readonly wroteAt: number
  readonly inflightCount: number
  readonly pendingCount: number
  /** A consumer paused reading: the server's silence is its doing. */
  readonly readingPaused: boolean
  /** Sends `req` on an idle connection that is to be watched; false when it is not (now). */
  sendIfIdle(req: Request): boolean
  destroy(err: Error): void
}

/** Starts the checks on a connection that has just become ready; null when they are off. */
export function watchLiveness(conn: LivenessHost): Liveness | null {
  const limits = livenessLimits(conn.config)
  if (limits.idle === 0 && limits.write === 0) return null
  const liveness = new Liveness(conn, limits)
  liveness.start()
  return liveness
}

export class Liveness {
  private timer: NodeJS.Timeout | null = null
  private due = 0
  /** When the Sync of an idle check went out; 0: none unanswered. */
  private syncAt = 0
  /** A new connection to the server is being opened (the check of a busy connection). */
  private reaching = false
  /** When a check last found the server answering. */
  private okAt = 0
  /** When the socket last refused to take more without draining since; 0 while it drains. */
  private blockedAt = 0
  /** When a check last found the server answering while a write stayed undrained (the default write bound). */
  private writeOkAt = 0

  constructor(
    private readonly host: LivenessHost,
    readonly limits: LivenessLimits,
  ) {}

  start(): void {
    this.okAt = performance.now()
    this.tick()
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
  }

  /** The socket did not take a write at once: its deadline may come before the next check. */
  blocked(): void {
    if (this.blockedAt > 0) return
    this.blockedAt = performance.now()
    if (this.limits.write > 0) this.schedule(this.blockedAt + this.limits.write)
  }

  drained(): void {
    this.blockedAt = 0
    this.writeOkAt = 0
  }

  private schedule(at: number): void {
    if (this.host.closed) return
    if (this.timer !== null) {
      if (this.due <= at) return
      clearTimeout(this.timer)
    }
    this.due = at
    this.timer = setTimeout(() => {
      this.timer = null
      this.tick()
    }, Math.max(MIN_TICK_MS, at - performance.now()))
    // Nothing here may keep a process alive: the socket does while queries wait.
    unrefTimer(this.timer)
  }

  private tick(): void {
    const h = this.host
    if (h.closed) return
    const { idle, window, write } = this.limits
    const now = performance.now()
    let next = Infinity
    if (write > 0 && this.blockedAt > 0) {
      const since = Math.max(this.blockedAt, this.writeOkAt)
      if (now - since < write) next = since + write
      else if (this.limits.writeStrict) {
        return this.lost(`a write to the server has not drained for ${Math.round(now - this.blockedAt)} ms (tcpUserTimeout ${write} ms): nothing reads at the other end`)
      } else if (!this.reaching) this.reach(now, true)
    }
    if (idle > 0) {
      const heard = h.readAt
      if (h.readingPaused) {
        this.syncAt = 0
        this.okAt = now
      }
      if (this.syncAt > 0) {
        if (heard >= this.syncAt) {
          this.syncAt = 0
          this.okAt = heard
        } else if (now - this.syncAt >= window) {
          return this.lost(
            `nothing came in ${Math.round(now - this.syncAt)} ms in answer to a check sent after ${idle} ms of silence ` +
              `(keepAliveIdle ${idle} ms, keepAliveInterval × keepAliveCount ${window} ms)`,
          )
        } else next = Math.min(next, this.syncAt + window)
      }
      if (this.syncAt === 0 && !this.reaching) {
        const quiet = Math.max(heard, h.wroteAt, this.okAt)
        if (now - quiet >= idle) {
          if (h.inflightCount + h.pendingCount > 0) this.reach(now)
          else if (h.sendIfIdle(new SyncProbe())) {
            this.syncAt = now
            next = Math.min(next, now + window)
          } else this.okAt = now
        }
        if (this.syncAt === 0) next = Math.min(next, Math.max(quiet, this.okAt) + idle)
      }
    }
    if (next !== Infinity) this.schedule(next)
  }

  /** A connection with queries waiting and a silent server: does the server still take new connections? */
  private reach(since: number, forWrite = false): void {
    const h = this.host
    this.reaching = true
    const { window, idle } = this.limits
    platform().reach(h.config, h.host, window).then(
      () => {
        this.reaching = false
        this.okAt = performance.now()
        // A live server that does not read (a long query): the undrained write waits another bound.
        if (forWrite) this.writeOkAt = this.okAt
        this.tick()
      },
      (err: unknown) => {
        this.reaching = false
        // An answer on the connection itself meanwhile settles the question.
        if (h.closed || h.readAt >= since) return this.tick()
        const why = err instanceof Error ? err.message : String(err)
        this.lost(
          `nothing came for ${Math.round(performance.now() - Math.max(h.readAt, h.wroteAt))} ms while queries waited, ` +
            `and a new connection to the server did not get an answer within ${window} ms (${why}) ` +
            `(keepAliveIdle ${idle} ms, keepAliveInterval × keepAliveCount ${window} ms)`,
          err,
        )
      },
    )
  }

  private lost(why: string, cause?: unknown): void {
    this.stop()
    const h = this.host
    h.destroy(new ConnectionError('PG_CONNECTION_CLOSED', `the server at ${h.where} is taken for lost: ${why}`, cause === undefined ? undefined : { cause }))
  }
}

/** The check of an idle connection: a Sync, answered by ReadyForQuery and nothing else. */
class SyncProbe implements Request {
  encode(w: Writer): void {
    writeSync(w)
  }

  handle(type: number): boolean {
    if (type === Backend.ReadyForQuery) return true
    throw new ProtocolError(`server answered a lone Sync with message type 0x${type.toString(16)} instead of ReadyForQuery`)
  }

  error(fields: PgErrorFields): void {
    throw new ProtocolError(`server answered a lone Sync with an error: ${fields.message}`)
  }

  fail(): void {
    // Nobody waits on the check; the connection's failure reaches its owner by itself.
  }
}
