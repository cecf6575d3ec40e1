import type { Backoff } from '../lane/backoff.js'
import type { PoolLane } from './routing.js'
import { unrefTimer } from '../connection/timers.js'

// A pool's upkeep: closing connections idle too long, replacing those past
// their lifetime, and keeping `min` connections open once the pool is in use.
// One timer, set for the earliest moment something is due rather than ticking
// at a fixed rate, so that an idle connection closes when its idle timeout is
// up: a serverless function kept alive for exactly that long (Vercel's
// attachDatabasePool) is frozen only after its connections are closed.

/** A pool's resolved settings for its connections' life. */
export interface UpkeepSettings {
  readonly min: number
  readonly max: number
  readonly idleTimeout: number
  readonly maxLifetime: number
}

/** What upkeep needs of its pool. */
export interface UpkeepOwner {
  /** The pool's open (or opening) connections: a live array. */
  readonly lanes: readonly PoolLane[]
  readonly backoff: Backoff
  /** True once the pool was ended or destroyed. */
  stopped(): boolean
  /** Opens a connection for the pool, connecting it at once. */
  open(): void
  close(l: PoolLane): void
}

/**
 * While a connection is busy, its end is learnt from its idle report; this
 * slower check covers a connection whose queue emptied without one (queries
 * aborted before they were sent).
 */
const BUSY_RECHECK_MAX_MS = 1000
const BUSY_RECHECK_MIN_MS = 50

export class Upkeep {
  #timer: NodeJS.Timeout | null = null
  /** performance.now() the timer is set for. */
  #due = Infinity
  #warmTimer: NodeJS.Timeout | null = null
  /** Set by the first query or reservation: `min` connections open only once the pool is used. */
  #used = false

  constructor(
    readonly settings: UpkeepSettings,
    private readonly owner: UpkeepOwner,
  ) {}

  /** A query or reservation took a connection: the first one starts keeping `min` open. */
  used(): void {
    if (this.#used) return
    this.#used = true
    this.warm()
  }

  /** A connection went back to being idle (its queries answered, its reservation released). */
  idle(l: PoolLane): void {
    l.lastUsed = performance.now()
    const { idleTimeout, min } = this.settings
    if (l.retiring) this.#arm(0)
    else if (idleTimeout > 0 && this.owner.lanes.length > min) this.#arm(idleTimeout)
    else if (this.#timer === null) this.schedule()
  }

  /** Sets the timer for the earliest moment a connection is due to close or be replaced. */
  schedule(): void {
    const { idleTimeout, min } = this.settings
    const lanes = this.owner.lanes
    const now = performance.now()
    let due = Infinity
    let busy = false
    for (const l of lanes) {
      if (l.closing) continue
      due = Math.min(due, l.expiresAt)
      if (l.reserved !== null) continue
      if (l.lane.pendingQueries > 0) busy = true
      else if (idleTimeout > 0 && lanes.length > min) due = Math.min(due, l.lastUsed + idleTimeout)
    }
    if (busy && (idleTimeout > 0 || due !== Infinity)) {
      const recheck = Math.max(BUSY_RECHECK_MIN_MS, Math.min(BUSY_RECHECK_MAX_MS, (idleTimeout > 0 ? idleTimeout : BUSY_RECHECK_MAX_MS * 4) / 4))
      due = Math.min(due, now + recheck)
    }
    if (due === Infinity) return
    this.#arm(Math.max(0, due - now))
  }

  #arm(delay: number): void {
    const due = performance.now() + delay
    if (this.#timer !== null) {
      if (this.#due <= due) return
      clearTimeout(this.#timer)
    }
    this.#due = due
    this.#timer = setTimeout(() => {
      this.#timer = null
      this.#due = Infinity
      this.sweep()
    }, delay)
    // Upkeep alone must not keep the process alive.
    unrefTimer(this.#timer)
  }

  /** Closes what is due: idle too long (above `min`), or past its lifetime once idle. Then opens what `min` lacks. */
  sweep(): void {
    if (this.owner.stopped()) return
    const { idleTimeout, min } = this.settings
    const now = performance.now()
    let open = this.owner.lanes.length
    for (const l of [...this.owner.lanes]) {
      if (l.reserved !== null || l.closing) continue
      if (now >= l.expiresAt) l.retiring = true
      if (l.lane.pendingQueries > 0) continue
      if (l.retiring || (idleTimeout > 0 && now - l.lastUsed >= idleTimeout && open > min)) {
        this.owner.close(l)
        open--
      }
    }
    this.warm()
    this.schedule()
  }

  /**
   * Opens connections until `min` are open (never above `max`), once the
   * pool is in use; after failed attempts, when the pool's backoff allows.
   */
  warm(): void {
    const { min, max } = this.settings
    const lanes = this.owner.lanes
    if (min === 0 || !this.#used || this.owner.stopped() || lanes.length >= min || this.#warmTimer !== null) return
    const wait = this.owner.backoff.nextAttemptAt - performance.now()
    if (wait > 0) {
      this.#warmTimer = setTimeout(() => {
        this.#warmTimer = null
        this.warm()
      }, wait)
      unrefTimer(this.#warmTimer)
      return
    }
    while (lanes.length < min && lanes.length < max) this.owner.open()
    this.schedule()
  }

  stop(): void {
    if (this.#timer !== null) clearTimeout(this.#timer)
    if (this.#warmTimer !== null) clearTimeout(this.#warmTimer)
    this.#timer = null
    this.#warmTimer = null
  }
}
