import { AbortError, ArgumentError, ConnectionError, PgError, ProtocolError } from '../errors.js'
import { ReplicationError } from '../replication/errors.js'

// When a replication stream whose connection was lost, or that could not
// start, tries again, how long it waits first, and what it ends with when
// it gives up. A lost connection (the walsender terminated, the connection
// reset or gone silent) is tried again with backoff, also while the first
// stream starts once a connection has opened (or the server itself ended one
// while it opened): the settings reach the server. Before that every failure
// is the caller's to see, so that wrong settings never retry forever. Whatever ends a stream is a ReplicationError naming
// why, the caller's own doing (an abort, an option) aside.

const BACKOFF_BASE_MS = 100
/**
 * A walsender of a lost connection can outlive it for a moment, holding the
 * slot or its place among max_wal_senders: a start refused for that is tried
 * again for this long (longer when the server's wal_sender_timeout is: a
 * walsender whose client vanished without a word holds on until then).
 */
const HELD_RETRY_MS = 30_000
/** Process ids of the stream's own walsenders remembered, to know a slot held by one of them. */
const OWN_PIDS_KEPT = 32

export class ReconnectPolicy {
  private attempt = 0
  private heldSince = 0
  /** A connection was opened at least once: the settings reach the server, so losing one is no sign they are wrong. */
  private opened = false
  /** The walsenders of the stream's connections, newest last. */
  private readonly ownPids: number[] = []
  /** The server's wal_sender_timeout in ms (0: off or unknown). */
  senderTimeout = 0

  constructor(private readonly maxDelay: number) {}

  /** A connection opened, served by the walsender `pid`. */
  connected(pid: number): void {
    this.opened = true
    if (pid <= 0) return
    this.ownPids.push(pid)
    if (this.ownPids.length > OWN_PIDS_KEPT) this.ownPids.shift()
  }

  /** A stream started: the next failure starts the backoff over. */
  streamed(): void {
    this.attempt = 0
    this.heldSince = 0
  }

  /**
   * After a failure (classified: see classifyReplicationError), with
   * `streamed` telling whether any stream ran so far: the wait before the next
   * attempt, or null when the stream gives up (see endingError).
   */
  next(error: Error, streamed: boolean): { attempt: number; delay: number } | null {
    if (this.heldByOwnWalsender(error, streamed)) {
      const now = performance.now()
      this.heldSince ||= now
      if (now - this.heldSince >= Math.max(HELD_RETRY_MS, this.senderTimeout + 10_000)) return null
    } else if (!isTransient(error) || !(streamed || this.opened || endedByServer(error))) return null
    this.attempt++
    const delay = Math.min(this.maxDelay, BACKOFF_BASE_MS * 2 ** (this.attempt - 1)) * (0.5 + Math.random() / 2)
    return { attempt: this.attempt, delay }
  }

  /**
   * A start refused because a walsender of one of the stream's lost
   * connections still holds the slot, or its place among max_wal_senders: it
   * lets go once it has exited. Before the first stream only a slot held by
   * one of the stream's own walsenders (the server names the process) counts:
   * a slot in use by someone else is the caller's to see at once.
   */
  private heldByOwnWalsender(error: Error, streamed: boolean): boolean {
    if (!(error instanceof ReplicationError)) return false
    if (error.reason === 'slot-in-use') {
      if (streamed) return true
      const pid = /\bPID (\d+)/.exec(error.message)
      return pid !== null && this.ownPids.includes(Number(pid[1]))
    }
    // "number of requested standby connections exceeds max_wal_senders": the walsenders of lost connections count until they exit.
    return error.reason === 'limit' && this.opened && error.cause instanceof PgError && error.cause.code === '53300'
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

/**
 * Whether the server itself ended the connection while it opened: an operator
 * or a shutdown terminated its backend, or the server was still starting. The
 * server was reached and took the settings this far, so, as after an open,
 * that is no sign they are wrong (a server that goes away for good then
 * refuses the next connection, which ends the stream).
 */
function endedByServer(err: Error): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e instanceof PgError) return e.code === '57P01' || e.code === '57P02' || e.code === '57P03'
  }
  return false
}

/**
 * What a stream that gives up ends with: a ReplicationError naming why (the
 * original error as its cause), except for the caller's own doing (an
 * abort, an option the server cannot honour).
 */
export function endingError(err: Error): Error {
  if (err instanceof ReplicationError || err instanceof AbortError || err instanceof ArgumentError) return err
  if (err instanceof PgError || err instanceof ProtocolError) {
    return new ReplicationError('server', `the server refused or broke off the replication stream: ${err.message}`, { cause: err })
  }
  return new ReplicationError('connection', `the replication connection could not be opened or was lost: ${err.message}`, { cause: err })
}

/** A GUC duration as SHOW prints it ('60s', '500ms', '1min', '0') in milliseconds. */
export function parseDuration(s: string): number {
  const m = /^(\d+)\s*(ms|s|min|h|d)?$/.exec(s.trim())
  if (m === null) return 0
  const n = Number(m[1])
  const unit = m[2] ?? 'ms'
  return n * ({ ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 } as Record<string, number>)[unit]!
}
