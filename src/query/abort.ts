import { AbortError, TimeoutError } from '../errors.js'

/** A request that can be abandoned: before it is written it is dropped, after that cancelled on the server. */
export interface Abortable {
  abort(err: Error): void
}

// One 'abort' listener per signal, however many queries share it: a signal
// passed to thousands of queries must not trip EventTarget's leak warning, and
// a settled query must not keep its listener (or itself) alive.
const watched = new WeakMap<AbortSignal, Set<Abortable>>()

function onAbort(this: AbortSignal): void {
  const set = watched.get(this)
  if (set === undefined) return
  watched.delete(this)
  // An error per query: each gets its own cause (the server's query_canceled
  // for one that was running, none for one dropped before it was sent).
  for (const req of set) req.abort(abortErrorOf(this))
}

export function abortErrorOf(signal: AbortSignal): Error {
  const reason: unknown = signal.reason
  if (reason instanceof TimeoutError || reason instanceof AbortError) return reason
  return new AbortError('the query was aborted', reason)
}

export function watchSignal(signal: AbortSignal, req: Abortable): void {
  let set = watched.get(signal)
  if (set === undefined) {
    set = new Set()
    watched.set(signal, set)
    signal.addEventListener('abort', onAbort, { once: true })
  }
  set.add(req)
}

export function unwatchSignal(signal: AbortSignal, req: Abortable): void {
  const set = watched.get(signal)
  if (set === undefined) return
  set.delete(req)
  if (set.size === 0) {
    watched.delete(signal)
    signal.removeEventListener('abort', onAbort)
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
