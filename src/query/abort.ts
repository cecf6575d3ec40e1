import { AbortError, TimeoutError } from '../errors.js'
import { addDeadline, removeDeadline, type DeadlineList, type Expiring } from './deadlines.js'

/** A request that can be abandoned: before it is written it is dropped, after that cancelled on the server. */
export interface Abortable {
  abort(err: Error): void
}

// One 'abort' listener per signal, however many queries share it: a signal
// passed to thousands of queries must not trip EventTarget's leak warning, and
// a settled query must not keep its listener (or itself) alive.
// The listener is a closure over its signal rather than reading `this`:
// Cloudflare Workers before compatibility date 2025-08-01 call EventTarget
// listeners with another `this`.
const watched = new WeakMap<AbortSignal, { requests: Set<Abortable>; listener: () => void }>()

function onAbort(signal: AbortSignal): void {
  const entry = watched.get(signal)
  if (entry === undefined) return
  watched.delete(signal)
  // An error per query: each gets its own cause (the server's query_canceled
  // for one that was running, none for one dropped before it was sent).
  for (const req of entry.requests) req.abort(abortErrorOf(signal))
}

export function abortErrorOf(signal: AbortSignal): Error {
  const reason: unknown = signal.reason
  if (reason instanceof TimeoutError || reason instanceof AbortError) return reason
  return new AbortError('the query was aborted', reason)
}

export function watchSignal(signal: AbortSignal, req: Abortable): void {
  let entry = watched.get(signal)
  if (entry === undefined) {
    entry = { requests: new Set(), listener: () => onAbort(signal) }
    watched.set(signal, entry)
    signal.addEventListener('abort', entry.listener, { once: true })
  }
  entry.requests.add(req)
}

export function unwatchSignal(signal: AbortSignal, req: Abortable): void {
  const entry = watched.get(signal)
  if (entry === undefined) return
  entry.requests.delete(req)
  if (entry.requests.size === 0) {
    watched.delete(signal)
    signal.removeEventListener('abort', entry.listener)
  }
}

/**
 * A timeout's error, made without capturing a stack: its frames would be the
 * timer's, never the caller's (who gets their own frames appended when the
 * rejection reaches them, errors.ts), and capturing them cost most of the time
 * of a million queries timing out together.
 */
function timeoutError(timeout: number): TimeoutError {
  const limit = Error.stackTraceLimit
  try {
    Error.stackTraceLimit = 0
  } catch {
    return new TimeoutError(timeout)
  }
  try {
    return new TimeoutError(timeout)
  } finally {
    Error.stackTraceLimit = limit
  }
}

/**
 * The signal and timeout of one request, and cleaning them up when it settles.
 * The timeout is measured on the monotonic clock; its watch is a node of the
 * deadline list of its timeout value (deadlines.ts), not a timer of its own.
 */
export class AbortWatch implements Expiring {
  deadline = 0
  prev: Expiring | null = null
  next: Expiring | null = null
  list: DeadlineList | null = null

  constructor(
    private readonly req: Abortable,
    private readonly signal: AbortSignal | undefined,
    private readonly timeout: number | undefined,
  ) {
    if (signal !== undefined) watchSignal(signal, req)
    if (timeout !== undefined && timeout > 0) addDeadline(this, timeout)
  }

  expire(): void {
    this.req.abort(timeoutError(this.timeout!))
  }

  done(): void {
    if (this.signal !== undefined) unwatchSignal(this.signal, this.req)
    if (this.list !== null) removeDeadline(this)
  }
}
