import { ArgumentError, PgError, PipegresError } from '../errors.js'
import { Codes } from '../protocol/sql-state-codes.js'

/** `begin({ retry })`: run the whole transaction again when the server rolled it back for a conflict. */
export interface TransactionRetry {
  /** Attempts in all, the first included (at least 1). */
  attempts: number
  /** Wait before the second attempt, in ms; doubled for each one after, with jitter. Default 5. */
  baseDelay?: number
  /** The longest wait between attempts, in ms. Default 1000. */
  maxDelay?: number
}

interface RetryPolicy {
  attempts: number
  baseDelay: number
  maxDelay: number
}

const retryKeys = new Set(['attempts', 'baseDelay', 'maxDelay'])

/** The policy `retry` asks for, or null without one; an ArgumentError names what is wrong with it. */
export function retryPolicy(retry: unknown): RetryPolicy | null {
  if (retry === undefined) return null
  if (typeof retry !== 'object' || retry === null) throw new ArgumentError('the retry transaction option must be an object such as { attempts: 5 }')
  for (const k of Object.keys(retry)) if (!retryKeys.has(k)) throw new ArgumentError(`unknown retry option "${k}"`)
  const r = retry as TransactionRetry
  const whole = (name: string, v: unknown, min: number, fallback: number): number => {
    if (v === undefined) return fallback
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new ArgumentError(`retry.${name} must be a whole number of at least ${min}, not ${String(v)}`)
    return v
  }
  if (r.attempts === undefined) throw new ArgumentError('retry.attempts is required: how many times in all the transaction may run')
  return { attempts: whole('attempts', r.attempts, 1, 1), baseDelay: whole('baseDelay', r.baseDelay, 0, 5), maxDelay: whole('maxDelay', r.maxDelay, 0, 1000) }
}

/**
 * Conflicts the server resolves by rolling one transaction back, and which a
 * second run can get past: serialization_failure and deadlock_detected, from a
 * statement or from COMMIT. Nothing else: a transaction whose COMMIT's outcome
 * is unknown may have committed, and running it again could apply it twice.
 */
export function isRetryable(err: unknown): err is PgError {
  return err instanceof PgError && (err.code === Codes.SerializationFailure || err.code === Codes.DeadlockDetected)
}

/** Exponential, capped, with jitter taking off up to half, so that the two sides of a conflict do not meet again. */
function delayBefore(attempt: number, p: RetryPolicy): number {
  const full = Math.min(p.maxDelay, p.baseDelay * 2 ** (attempt - 2))
  return full * (0.5 + Math.random() / 2)
}

/** Runs `once(attempt)` until it succeeds, fails for a reason a retry cannot help, or the attempts are used up. */
export async function withRetry<T>(policy: RetryPolicy, once: (attempt: number) => Promise<T>, failed: (message: string, cause: Error) => Error): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await once(attempt)
    } catch (err) {
      if (!isRetryable(err)) {
        if (err instanceof PipegresError && err.code === 'PG_CONNECTION_CLOSED' && /COMMIT/.test(err.message)) {
          throw failed(`${err.message}; it is not run again, since it may have committed (attempt ${attempt} of ${policy.attempts})`, err)
        }
        throw err
      }
      if (attempt >= policy.attempts) {
        const what = err.code === Codes.DeadlockDetected ? 'deadlock_detected' : 'serialization_failure'
        throw failed(`the transaction was rolled back with ${what} (${err.code}) on every one of its ${policy.attempts} attempts: ${err.message}`, err)
      }
      await new Promise((resolve) => setTimeout(resolve, delayBefore(attempt + 1, policy)))
    }
  }
}
