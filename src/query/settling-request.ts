import { rejectionAtCaller } from '../errors.js'
import { AbortWatch, type Abortable } from './abort.js'
import { DROPPED, SETTLED, type Exchange, type Extra } from './exchange.js'

/**
 * What a failed query's promise is resolved with: resolving a promise with a
 * rejecting one rejects it, so a query keeps only the resolve function of its
 * promise (the reject function V8 creates with it is garbage at once: 64 bytes
 * less per queued query), and the error gains the caller's frames on its way
 * (see rejectionAtCaller).
 */
const rejection = rejectionAtCaller

/** @internal The key of an OwnPromise's resolve function. */
export const settleOwn = Symbol('settleOwn')

/**
 * @internal A promise its maker already holds, with the function that
 * resolves it: pipegres/postgres's query, which is the promise its caller
 * awaits. A request that settles it saves a promise, and a turn of the
 * microtask queue, per query.
 */
export interface OwnPromise<T> extends Promise<T> {
  readonly [settleOwn]: (r: T | PromiseLike<T>) => void
}

/**
 * A request's life apart from the protocol (T is what it resolves with): its
 * promise, settled once, rejected through the caller's frames; its signal and
 * timeout; being dropped before it is written or stopped after. Every request
 * of the query layer is one: extended-protocol queries and batches (S, what
 * they keep once written, is their Exchange), simple queries and COPY (S is
 * the connection's RequestContext: they keep no more).
 */
export abstract class SettlingRequest<T, S extends object = Exchange> implements Abortable {
  readonly promise: Promise<T>
  /** Also rejects: see rejection. */
  private resolve!: (r: T | PromiseLike<T>) => void
  // A query waiting in a queue a million long must stay small (about 250
  // bytes with its promise): booleans share one field, the state of the
  // exchange with the server is allocated only when the query is written, and
  // what few queries need (a signal or timeout, typed() parameters) lives in
  // one object that is null for the rest.
  protected flags = 0
  protected extra: Extra | null = null
  /** What the request keeps from the moment it is written (see S); null before. */
  protected x: S | null = null
  /** When the query was issued: see QueryTiming. */
  readonly queued = performance.now()

  /** `own`: a promise the caller made and settles through it, which the request settles instead of making one (see OwnPromise). */
  constructor(declared: number[] | null, own: OwnPromise<T> | null = null) {
    if (own === null) {
      this.promise = new Promise((resolve) => {
        this.resolve = resolve
      })
    } else {
      this.promise = own
      this.resolve = own[settleOwn]
    }
    if (declared !== null) this.extra = { error: null, watch: null, declared, tx: null, resent: 0 }
  }

  /** Abandoned while written: the server is asked to stop it. */
  protected abstract stop(x: S): void

  /** Abandoned before being written: the connection skips it. */
  get dropped(): boolean {
    return (this.flags & DROPPED) !== 0
  }

  /** Its promise is settled (or about to be, through the caller's frames). */
  protected get settled(): boolean {
    return (this.flags & SETTLED) !== 0
  }

  protected get abortError(): Error | null {
    return this.extra?.error ?? null
  }

  /** True once the request was written to a connection (the server may have seen it). */
  get wasSent(): boolean {
    return this.x !== null
  }

  /**
   * See Request.rewind: the connection asks only for a request that has seen
   * no reply, so the exchange is simply forgotten (its statement belonged to
   * the lost connection's cache, which goes with it).
   */
  rewind(): boolean {
    if (this.settled || this.abortError !== null) return false
    this.x = null
    this.flags = 0
    return true
  }

  /** Ties the request to an AbortSignal and/or a timeout (ms). */
  watch(signal: AbortSignal | undefined, timeout: number | undefined): void {
    if (signal === undefined && timeout === undefined) return
    this.extras().watch = new AbortWatch(this, signal, timeout)
  }

  protected extras(): Extra {
    return (this.extra ??= { error: null, watch: null, declared: null, tx: null, resent: 0 })
  }

  /** Marks the query as part of the transaction `token` (see StatementCache.find). */
  inTransaction(token: object): void {
    this.extras().tx = token
  }

  /** Aborted by its signal or timeout: dropped if not written yet, else cancelled on the server. */
  abort(err: Error): void {
    if (this.settled || this.abortError !== null) return
    this.extras().error = err
    const x = this.x
    if (x === null) {
      this.flags |= DROPPED
      this.rejectWith(err)
      return
    }
    this.stop(x)
  }

  protected rejectWith(err: Error): void {
    if (this.settled) return
    this.flags |= SETTLED
    this.extra?.watch?.done()
    const abort = this.abortError
    if (abort !== null && abort !== err && err instanceof Error) {
      // Keep what actually happened (the server's query_canceled, a lost connection) as the cause.
      if (abort.cause === undefined) Object.defineProperty(abort, 'cause', { value: err, configurable: true, writable: true })
    }
    this.resolve(this.follow(abort ?? err))
  }

  /** What the promise follows when the request fails with `err`: by default, the error on its way through the caller's frames. */
  protected follow(err: Error): PromiseLike<T> {
    return rejection(err)
  }

  protected resolveWith(r: T): void {
    if (this.settled) return
    if (this.abortError !== null) return this.rejectWith(this.abortError)
    this.flags |= SETTLED
    this.extra?.watch?.done()
    this.resolve(r)
  }
}
