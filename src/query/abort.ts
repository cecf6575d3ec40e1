import { AbortError, TimeoutError } from '../errors.js'
import { addDeadline, removeDeadline, type DeadlineList, type Expiring } from './deadlines.js'

/** A request that can be abandoned: before it is written it is dropped, after that cancelled on the server. */
export interface Abortable {
  abort(err: Error): void
}

// One 'abort' listener per signal, however many queries share it: a signal
// passed to thousands of queries must not trip EventTarget's leak warning, and
// a settled query must not keep its listener (or itself) alive. The queries
// sharing a signal form a list through their watches (no set to grow and
// rehash: a signal shared by every query of a pipelined burst is common, and
// joining or leaving the list allocates nothing).
// The listener is a closure over its signal rather than reading `this`:
// Cloudflare Workers before compatibility date 2025-08-01 call EventTarget
// listeners with another `this`.
interface SignalEntry {
  head: AbortWatch | null
  readonly listener: () => void
}
const watched = new WeakMap<AbortSignal, SignalEntry>()

function onAbort(signal: AbortSignal): void {
  const entry = watched.get(signal)
  if (entry === undefined) return
  watched.delete(signal)
  // Unlinked first: aborting a request settles it, which would unlink its watch mid-walk.
  const watches: AbortWatch[] = []
  for (let w = entry.head; w !== null; w = w.signalNext) watches.push(w)
  entry.head = null
  for (const w of watches) w.signalPrev = w.signalNext = null
  // An error per query: each gets its own cause (the server's query_canceled
  // for one that was running, none for one dropped before it was sent).
  for (const w of watches) w.abortBySignal(abortErrorOf(signal))
}

export function abortErrorOf(signal: AbortSignal): Error {
  const reason: unknown = signal.reason
  if (reason instanceof TimeoutError || reason instanceof AbortError) return reason
  return new AbortError('the query was aborted', reason)
}

function watchSignal(signal: AbortSignal, w: AbortWatch): void {
  let entry = watched.get(signal)
  if (entry === undefined) {
    const created: SignalEntry = { head: null, listener: () => onAbort(signal) }
    watched.set(signal, (entry = created))
    signal.addEventListener('abort', created.listener, { once: true })
  }
  w.signalNext = entry.head
  if (entry.head !== null) entry.head.signalPrev = w
  entry.head = w
}

function unwatchSignal(signal: AbortSignal, w: AbortWatch): void {
  const entry = watched.get(signal)
  if (entry === undefined) return
  const { signalPrev: prev, signalNext: next } = w
  // Not in the list (its signal fired, which unlinked every watch): nothing to do.
  if (prev === null && entry.head !== w) return
  if (prev === null) entry.head = next
  else prev.signalNext = next
  if (next !== null) next.signalPrev = prev
  w.signalPrev = w.signalNext = null
  if (entry.head === null) {
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
  /** The other watches of queries sharing its signal (see watchSignal). */
  signalPrev: AbortWatch | null = null
  signalNext: AbortWatch | null = null

  constructor(
    private readonly req: Abortable,
    private readonly signal: AbortSignal | undefined,
    private readonly timeout: number | undefined,
  ) {
    if (signal !== undefined) watchSignal(signal, this)
    if (timeout !== undefined && timeout > 0) addDeadline(this, timeout)
  }

  abortBySignal(err: Error): void {
    this.req.abort(err)
  }

  expire(): void {
    this.req.abort(timeoutError(this.timeout!))
  }

  done(): void {
    if (this.signal !== undefined) unwatchSignal(this.signal, this)
    if (this.list !== null) removeDeadline(this)
  }
}
