import { ConnectionError } from '../errors.js'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { cancelTimeoutOf, openCancelChannel, type CancelChannel } from './cancel.js'
import type { Request } from './request.js'
import type { TlsAttempt } from './transport.js'
import { unrefTimer } from './timers.js'

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
//    query_canceled and is counted as a misfire.
//
// That check reads what the server sent, not what it is doing: over a link
// with latency, the reply that says the target is done can still be on its
// way, and the CancelRequest takes as long again to arrive. The window is
// then a round trip wide instead of a fraction of a millisecond. It only
// matters for a target that finishes within a round trip of the check: one
// that runs for seconds is still running however stale the check was.
//
// Servers before PostgreSQL 18 deliver every CancelRequest as two SIGINTs,
// to the backend and then to its process group, sent one after the other by
// the process that read the request. Usually both arrive before the backend
// has handled either, and count as one. But when that process loses its CPU
// between the two (a busy machine), the backend can handle the first, fail
// the target, and be executing a follower when the second arrives: that
// follower fails with query_canceled too, however long the target had run
// (measured on PostgreSQL 15 with a machine loaded several times over: a
// follower of 100 ms behind a 2 s sleep was hit in almost half the cancels;
// on 18, never). No timing on this side can prevent it, since the follower
// is already on the server; it is counted as a misfire. PostgreSQL 18 sends
// one signal.

// How long a cancel target must have been running, with queries in flight
// behind it, before a CancelRequest is sent.
const CANCEL_DELAY_MS = 20

// A longer queue is not searched for the target (see request).
const SEARCH_LIMIT = 64

/** The in-flight FIFO as the scheduler sees it: it reads it, never changes it. */
export interface InFlightView {
  readonly length: number
  /** The request whose replies come next: the one the server is on. */
  peek(): Request | undefined
  /** The request written last. */
  peekLast(): Request | undefined
  items(): IterableIterator<Request>
}

/** The parts of a Connection a CancelHost is made of. */
export interface CancellableConnection {
  readonly inflight: InFlightView
  readonly closed: boolean
  readonly chunksRead: number
  readonly readingPaused: boolean
  readonly processId: number
  readonly secretKey: Uint8Array | undefined
  readonly config: ConnectionConfig
  readonly host: HostAddress
  readonly tlsMode: TlsAttempt
  readonly where: string
  holdWriter(holder: object): void
  releaseWriter(holder: object): void
  destroy(err: Error): void
}

/** What the scheduler sees of `conn`; made only when a cancel is asked for. `done` lets the connection drop its scheduler. */
export function cancelHostOf(conn: CancellableConnection, done: (scheduler: CancelScheduler) => void): CancelHost {
  return {
    inflight: conn.inflight,
    // Known once startup is over, and nothing is in flight before.
    processId: conn.processId,
    secretKey: conn.secretKey,
    cancelTimeout: cancelTimeoutOf(conn.config),
    where: conn.where,
    isClosed: () => conn.closed,
    chunksRead: () => conn.chunksRead,
    readingPaused: () => conn.readingPaused,
    openCancelChannel: () => openCancelChannel(conn.config, conn.host, conn.tlsMode),
    holdWriter: (holder) => conn.holdWriter(holder),
    releaseWriter: (holder) => conn.releaseWriter(holder),
    destroy: (err) => conn.destroy(err),
    done,
  }
}

/** What the scheduler reads of its connection, and the few things it may ask of it. */
export interface CancelHost {
  readonly inflight: InFlightView
  isClosed(): boolean
  /** Socket chunks read so far: whether the server has sent anything since a given moment. */
  chunksRead(): number
  /** True while a consumer has paused reading: the server's silence is then that consumer's doing. */
  readingPaused(): boolean
  /** The backend key data a CancelRequest carries; no key, no cancel. */
  readonly processId: number
  readonly secretKey: Uint8Array | undefined
  /** How long the server may stay silent after a CancelRequest reached it. */
  readonly cancelTimeout: number
  /** The server, as error messages name it. */
  readonly where: string
  /** Starts opening a connection for a CancelRequest, to the same server and as securely. */
  openCancelChannel(): CancelChannel
  holdWriter(holder: object): void
  releaseWriter(holder: object): void
  destroy(err: Error): void
  /** The scheduler has nothing left to do or to watch: the connection lets it go. */
  done(scheduler: CancelScheduler): void
}

/**
 * Times the CancelRequests of one connection so that each hits the request it
 * is meant for and nothing else. Exists only while a cancel is pending or its
 * signal may still land; the connection tells it of every request that
 * completes meanwhile.
 */
export class CancelScheduler {
  /** Requests to cancel on the server once they are the one the server is executing. */
  private readonly targets = new Set<Request>()
  /** The delay before the head target's CancelRequest (see cancelHead). */
  private timer: NodeJS.Timeout | null = null
  /** The cancel connection being opened for the head target, once its delay is over. */
  private channel: CancelChannel | null = null
  private check: NodeJS.Immediate | null = null
  /** The request a CancelRequest was sent for, until it completes. */
  private sentFor: Request | null = null
  /** CancelRequests sent whose connection the server has not closed yet. */
  private sending = 0
  private watch: NodeJS.Timeout | null = null
  /**
   * The last request in flight when a CancelRequest was sent: until it has
   * completed, a query_canceled on a request that was not a target is a misfire
   * (the signal may land, or its error arrive, after the cancel connection
   * closed). Dropped the moment it completes, so its rows are not kept alive.
   */
  private exposedUntil: Request | null = null

  constructor(private readonly host: CancelHost) {}

  /**
   * Asks for `req` to be cancelled on the server, if and when that can be done
   * safely. False when there is nothing to cancel (`req` is not in flight).
   */
  request(req: Request): boolean {
    const inflight = this.host.inflight
    if (this.host.isClosed() || this.targets.has(req) || inflight.length === 0) return false
    // A request that has been written and has not settled is in flight, except
    // one that completed and waits for a type lookup before it settles: there
    // is nothing to cancel then. A short queue is simply searched; a long one
    // is not (thousands of queries sharing a signal, or timing out together,
    // would make that quadratic: 6 s for 20,000): such a stray target never
    // becomes the head, and is let go once the queue has drained.
    if (inflight.length <= SEARCH_LIMIT && !this.isInFlight(req)) return false
    this.targets.add(req)
    this.host.holdWriter(this)
    if (inflight.peek() === req) this.cancelHead(req)
    return true
  }

  /** A request completed: if it was a target, its cancellation is over; the next head may be one. */
  completed(req: Request): void {
    if (req === this.exposedUntil) this.exposedUntil = null
    if (this.targets.delete(req)) {
      this.stopTimers()
      if (this.sentFor === req) {
        this.sentFor = null
        this.stopWatch()
      }
    }
    const head = this.host.inflight.peek()
    if (head !== undefined && this.targets.has(head)) this.cancelHead(head)
    // Nothing in flight: whatever is left were stray targets (see request).
    else if (head === undefined && this.sentFor === null) this.targets.clear()
    this.release()
  }

  /** Whether a query_canceled that `req` (the head) received was aimed at another request. */
  isMisfire(req: Request): boolean {
    if (this.targets.has(req)) return false
    return this.sending > 0 || this.sentFor !== null || this.exposedUntil !== null
  }

  /** The connection closed: nothing is left to cancel or to watch. */
  dispose(): void {
    this.stopTimers()
    this.stopWatch()
    this.targets.clear()
    this.sentFor = null
    this.exposedUntil = null
  }

  private isInFlight(req: Request): boolean {
    for (const r of this.host.inflight.items()) if (r === req) return true
    return false
  }

  /** Stops whatever was under way towards sending the head target's CancelRequest. */
  private stopTimers(): void {
    if (this.timer !== null) clearTimeout(this.timer)
    if (this.check !== null) clearImmediate(this.check)
    this.timer = null
    this.check = null
    this.channel?.abandon()
    this.channel = null
  }

  private stopWatch(): void {
    if (this.watch !== null) clearTimeout(this.watch)
    this.watch = null
  }

  private cancelHead(req: Request): void {
    if (this.timer !== null || this.channel !== null || this.check !== null || this.sentFor !== null) return
    const host = this.host
    if (host.inflight.length === 1) {
      this.send(req, host.openCancelChannel())
      return
    }
    // Halfway through the delay, a target still running gets its cancel
    // connection opened, so that the server has forked the process that will
    // read the CancelRequest by the time it is written (TCP's handshake is done
    // before the server has even accepted the connection).
    const half = CANCEL_DELAY_MS / 2
    this.timer = setTimeout(() => {
      this.timer = null
      if (host.isClosed() || host.inflight.peek() !== req) return
      const channel = host.openCancelChannel()
      this.channel = channel
      const due = performance.now() + half
      channel.ready.then(
        () => {
          if (this.channel !== channel) return
          const check = (): void => {
            this.timer = null
            // After the event loop has read whatever the server sent meanwhile.
            this.check = setImmediate(() => {
              this.check = null
              this.channel = null
              if (!host.isClosed() && host.inflight.peek() === req) this.send(req, channel)
              else channel.abandon()
            })
          }
          const wait = due - performance.now()
          if (wait > 0) this.timer = setTimeout(check, wait)
          else check()
        },
        (err: unknown) => {
          if (this.channel !== channel) return
          this.channel = null
          this.failed(req, err)
        },
      )
    }, half)
  }

  private send(req: Request, channel: CancelChannel): void {
    const host = this.host
    if (host.secretKey === undefined) {
      channel.abandon()
      return
    }
    this.sentFor = req
    this.sending++
    this.exposedUntil = host.inflight.peekLast() ?? null
    channel
      .send(host.processId, host.secretKey)
      .then(
        () => this.watchCancelled(req),
        (err: unknown) => this.failed(req, err),
      )
      .finally(() => {
        this.sending--
        this.release()
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
  private failed(req: Request, err: unknown): void {
    const host = this.host
    if (host.isClosed() || host.inflight.peek() !== req || !this.targets.has(req)) return
    const why = err instanceof Error ? err.message : String(err)
    host.destroy(
      new ConnectionError(
        'PG_CONNECTION_CLOSED',
        `closed the connection to ${host.where}: a query was to be cancelled, but the cancel request could not be delivered (${why})`,
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
    const host = this.host
    if (host.isClosed() || this.sentFor !== req) return
    const limit = host.cancelTimeout
    let seen = host.chunksRead()
    const look = (): void => {
      this.watch = null
      if (host.isClosed() || this.sentFor !== req) return
      if (host.chunksRead() !== seen || host.readingPaused()) {
        seen = host.chunksRead()
        this.watch = unrefTimer(setTimeout(look, limit))
        return
      }
      host.destroy(
        new ConnectionError(
          'PG_CONNECTION_CLOSED',
          `closed the connection to ${host.where}: nothing was received for ${limit} ms after a cancel request reached the server`,
        ),
      )
    }
    // The socket keeps the process alive while the target is pending; this timer must not keep it alive after.
    this.watch = unrefTimer(setTimeout(look, limit))
  }

  /**
   * Lets writing resume once no cancel is pending or on its way to the server,
   * and lets the scheduler go once no signal it sent can still land.
   */
  private release(): void {
    if (this.targets.size > 0 || this.sending > 0) return
    // Let go first: releasing the writer writes what waited, and a cancel asked
    // for meanwhile then starts a scheduler of its own.
    if (this.exposedUntil === null) this.host.done(this)
    this.host.releaseWriter(this)
  }
}
