import { AbortError, TimeoutError } from '../errors.js'

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
 * The signal and timeout of one request, and cleaning them up when it settles.
 * Timers measure on the monotonic clock (Node's timers do not follow the wall clock).
 */
export class AbortWatch {
  private timer: ReturnType<typeof setTimeout> | undefined

  constructor(
    private readonly req: Abortable,
    private readonly signal: AbortSignal | undefined,
    timeout: number | undefined,
  ) {
    if (signal !== undefined) watchSignal(signal, req)
    if (timeout !== undefined && timeout > 0) {
      this.timer = setTimeout(() => req.abort(new TimeoutError(timeout)), timeout)
    }
  }

  done(): void {
    if (this.signal !== undefined) unwatchSignal(this.signal, this.req)
    if (this.timer !== undefined) clearTimeout(this.timer)
  }
}
