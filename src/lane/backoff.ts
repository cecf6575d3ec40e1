// The wait between connection attempts of a lane, or of all the lanes of a
// pool sharing one: doubled after each failure up to a cap, with jitter.

const BACKOFF_BASE_MS = 100
// A connection that lasted this long was of use, whatever it answered (see settleLostConnection).
const STABLE_MS = 1000

/** The backoff between connection attempts: a lane's own, or shared by the lanes of a pool. */
export interface Backoff {
  /** Failed attempts, and connections lost soon after opening, since the last connection that lasted. */
  failures: number
  /** performance.now() before which no attempt is made (connect() excepted). */
  nextAttemptAt: number
}

/** One more failed attempt: the next waits longer, up to `maxDelay` ms. */
export function backOff(b: Backoff, maxDelay: number): void {
  b.failures++
  const delay = Math.min(maxDelay, BACKOFF_BASE_MS * 2 ** (b.failures - 1))
  // Jitter spreads the attempts of many clients that lost the same server.
  b.nextAttemptAt = performance.now() + delay * (0.5 + Math.random() / 2)
}

/**
 * A connection was lost. One lost before it was of any use (it answered none
 * of the queries sent to it, and did not last) counts as a failed attempt:
 * were the backoff to start over whenever a connection opened, a server (or a
 * path) that accepts connections and drops them at once would be reconnected
 * to in a tight loop, hundreds of times a second, by a listening client
 * reconnecting on its own or by a pool.
 */
export function settleLostConnection(b: Backoff, maxDelay: number, answeredAny: boolean, connectedAt: number): void {
  if (answeredAny || performance.now() - connectedAt >= STABLE_MS) {
    b.failures = 0
    b.nextAttemptAt = 0
  } else backOff(b, maxDelay)
}
