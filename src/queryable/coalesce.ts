import { rejectionAtCaller } from '../errors.js'
import { AbortWatch, type Abortable } from '../query/abort.js'
import type { QuerySettings } from '../query/exchange.js'
import type { Result } from '../query/result.js'
import type { ExtendedRequest } from '../query/extended-request.js'
import { sharedRead, SharedSink, type SharedOutcome } from '../query/shared-read.js'
import { TypedValue } from '../query/typed.js'
import type { TypeView } from '../types/view.js'
import type { QueryDefaults, QueryOptions } from './query-options.js'
import { active, queryChannel, traceQuery } from '../trace/tracing.js'
import { isPlainRead } from './read-statement.js'

// The coalesce option: a read identical to one still in flight on the same
// client or pool is not sent again; its caller waits for that execution and
// gets a result of its own from its reply (see SharedSink). Identical means
// the same text, the same parameter values as they would be sent, the same
// declared types, row mode, type options, prepare and result limits, and the
// same routing. Each caller keeps its own signal and timeout: one that gives
// up leaves, and the execution is cancelled only once every caller has.

/** Parameters longer than this (in characters of their key) are not compared: such a read runs alone. */
const MAX_KEY = 16 * 1024

/** Statements whose scan is remembered: a hot read is scanned once, not per call. */
const MAX_SCANNED = 1024

/** What a traced coalesced query says of its execution. */
export interface CoalesceMark {
  readonly coalesced: boolean
  readonly executionId: number
}

let nextExecution = 1
const viewIds = new WeakMap<TypeView, number>()
let nextView = 1

function viewId(view: TypeView): number {
  let id = viewIds.get(view)
  if (id === undefined) viewIds.set(view, (id = nextView++))
  return id
}

/**
 * Appends to `out` a key of `v` such that two values with the same key are
 * sent the same way whatever the parameter's type: by the kind of JS value
 * and its content (two Dates of the same instant, two equal arrays or
 * Buffers), not by object identity. False for a value of a kind that is not
 * compared (a class instance, whose encoding its type decides): the read
 * then runs alone.
 */
function valueKey(v: unknown, out: string[]): boolean {
  switch (typeof v) {
    case 'string':
      out.push(`s${v.length}:`, v)
      return true
    case 'number':
      out.push(Object.is(v, -0) ? 'n-0;' : `n${v};`)
      return true
    case 'bigint':
      out.push(`i${v};`)
      return true
    case 'boolean':
      out.push(v ? 'T' : 'F')
      return true
    case 'undefined':
      out.push('N')
      return true
    case 'object': {
      if (v === null) {
        out.push('N')
        return true
      }
      if (v instanceof Date) {
        out.push(`d${v.getTime()};`)
        return true
      }
      if (v instanceof Uint8Array) {
        if (v.length > MAX_KEY) return false
        out.push(`b${v.length}:`, String.fromCharCode.apply(null, v as unknown as number[]))
        return true
      }
      if (v instanceof TypedValue) {
        out.push(`t${v.oid}:`)
        return valueKey(v.value, out)
      }
      if (Array.isArray(v)) {
        out.push(`a${v.length}[`)
        for (const e of v) if (!valueKey(e, out)) return false
        out.push(']')
        return true
      }
      if (!plainData(v)) return false
      const json = JSON.stringify(v)
      out.push(`o${json.length}:`, json)
      return true
    }
    default:
      return false
  }
}

/** An object of JSON data only (plain objects, arrays, strings, finite numbers, booleans, null): its JSON text is all that is sent of it. */
function plainData(v: unknown): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true
  if (typeof v === 'number') return Number.isFinite(v)
  if (typeof v !== 'object') return false
  if (Array.isArray(v)) return v.every(plainData)
  const proto = Object.getPrototypeOf(v) as unknown
  if (proto !== Object.prototype && proto !== null) return false
  for (const k in v) if (!plainData((v as Record<string, unknown>)[k])) return false
  return true
}

/** A copy of `err` for one more caller: same class, fields and stack, so that giving it this caller's frames changes no other's. */
function ownCopy(err: Error): Error {
  const copy = Object.create(Object.getPrototypeOf(err) as object) as Error
  for (const key of Reflect.ownKeys(err)) {
    const d = Object.getOwnPropertyDescriptor(err, key)!
    // Newer V8 (Node 26) makes `stack` an own accessor that reads a slot only real errors
    // have: on the copy it would read undefined. Its value is copied instead.
    if (d.get !== undefined) Object.defineProperty(copy, key, { value: (err as unknown as Record<PropertyKey, unknown>)[key], writable: true, configurable: true, enumerable: d.enumerable ?? false })
    else Object.defineProperty(copy, key, d)
  }
  return copy
}

/** One caller of a shared execution: its own promise, signal and timeout. */
class Caller implements Abortable {
  readonly promise: Promise<Result<unknown>>
  private resolve!: (r: Result<unknown> | PromiseLike<never>) => void
  private watch: AbortWatch | null = null
  done = false
  readonly queued = performance.now()

  constructor(private readonly execution: Execution) {
    this.promise = new Promise((resolve) => {
      this.resolve = resolve
    })
  }

  arm(signal: AbortSignal | undefined, timeout: number | undefined): void {
    if (signal !== undefined || timeout !== undefined) this.watch = new AbortWatch(this, signal, timeout)
  }

  /** This caller gives up (its signal or timeout): it alone fails, unless it was the last one waiting. */
  abort(err: Error): void {
    if (this.done) return
    this.settle(rejectionAtCaller(err))
    this.execution.leave(err)
  }

  settle(r: Result<unknown> | PromiseLike<never>): void {
    this.done = true
    this.watch?.done()
    this.resolve(r)
  }
}

/** One read sent to the server for every caller that joins it while it is in flight. */
class Execution {
  readonly id = nextExecution++
  readonly callers: Caller[] = []
  /** Callers that have not given up. */
  waiting = 0
  over = false
  readonly req: SharedReadRequest

  constructor(
    private readonly owner: Coalescer,
    readonly key: string,
    text: string,
    values: readonly unknown[],
    settings: QuerySettings,
    declared: number[] | null,
  ) {
    // A copy: a caller that reuses its array for its next call would otherwise change what its joiners asked for.
    this.req = sharedRead(text, values.slice(), settings, declared, (outcome, err) => this.end(outcome, err))
  }

  join(): Caller {
    const c = new Caller(this)
    this.callers.push(c)
    this.waiting++
    return c
  }

  leave(err: Error): void {
    if (--this.waiting > 0 || this.over) return
    // Nobody waits any more: nobody may join it either, and the server stops it.
    this.owner.forget(this)
    this.req.abort(err)
  }

  private end(outcome: SharedOutcome | null, err: Error | null): void {
    this.over = true
    this.owner.forget(this)
    let first = true
    for (const c of this.callers) {
      if (c.done) continue
      if (err !== null) {
        c.settle(rejectionAtCaller(first ? err : ownCopy(err)))
        first = false
        continue
      }
      let result: Result<unknown>
      try {
        result = outcome!.resultFor(c.queued)
      } catch (e) {
        // A value that fails to decode fails each caller with an error of its own, as its own query would.
        c.settle(rejectionAtCaller(e as Error))
        continue
      }
      c.settle(result)
    }
  }
}

/** A coalesced query(): the caller's promise, what its trace says, and `start`, which sends the execution if this caller began it. */
export interface CoalescedCall {
  readonly promise: Promise<Result<unknown>>
  readonly mark: CoalesceMark
  readonly start: () => void
  /** The request start() sends, whose trace learns where it went; null for a caller that joined one in flight. */
  readonly req: SharedReadRequest | null
}

const noop = (): void => {}

/** The request of a shared read (see SharedSink). */
type SharedReadRequest = ExtendedRequest<SharedOutcome>

function isSharedRead(req: object): boolean {
  return (req as Partial<SharedReadRequest>).sink instanceof SharedSink
}

/**
 * The reads in flight of one client or pool that later identical reads may
 * join. A request sent through the same client or pool that is not a read
 * (a write, a session change, a transaction) seals them: reads issued after
 * it never join reads issued before it, so a client's reads still see its
 * own earlier writes.
 */
export class Coalescer {
  /** By statement text, then by the rest of the key. */
  private readonly open = new Map<string, Map<string, Execution>>()
  private readonly scanned = new Map<string, boolean>()

  /** Whether `text` is a read the scanner lets several callers share (remembered per text). */
  isRead(text: string): boolean {
    let read = this.scanned.get(text)
    if (read === undefined) {
      if (this.scanned.size >= MAX_SCANNED) this.scanned.clear()
      read = isPlainRead(text)
      this.scanned.set(text, read)
    }
    return read
  }

  /**
   * The caller's share of an execution of this read: of one in flight, or of
   * a new one that `send` sends when the call starts. Null when the read
   * cannot be coalesced (not a read, parameters not compared, a signal
   * already aborted): it then runs alone, as without the option.
   */
  call(
    text: string,
    values: readonly unknown[],
    settings: QuerySettings,
    declared: number[] | null,
    options: QueryOptions | undefined,
    timeout: number | undefined,
    send: (req: SharedReadRequest) => void,
  ): CoalescedCall | null {
    if (options?.signal?.aborted === true || !this.isRead(text)) return null
    const parts = [
      `${viewId(settings.view)}|${settings.rowMode}|${settings.prepare ? 'p' : 'u'}|${settings.limits?.maxRows ?? ''}|${settings.limits?.maxBytes ?? ''}|${options?.readOnly === true ? 'r' : ''}|${options?.after === undefined ? '' : String(options.after)}|${declared?.join(',') ?? ''}|`,
    ]
    for (const v of values) if (!valueKey(v, parts)) return null
    const key = parts.join('')
    if (key.length > MAX_KEY) return null
    let byText = this.open.get(text)
    let execution = byText?.get(key)
    let start = noop
    if (execution === undefined) {
      const shared = new Execution(this, key, text, values, settings, declared)
      execution = shared
      if (byText === undefined) this.open.set(text, (byText = new Map()))
      byText.set(key, shared)
      start = () => send(shared.req)
    }
    const caller = execution.join()
    caller.arm(options?.signal, timeout)
    return { promise: caller.promise, mark: { coalesced: start === noop, executionId: execution.id }, start, req: start === noop ? null : execution.req }
  }

  /**
   * query() with coalesce: the caller's promise, traced as a query of its own
   * marked with the execution it is part of; null when it runs alone (see call()).
   */
  query(
    d: QueryDefaults,
    text: string,
    given: readonly unknown[] | undefined,
    values: readonly unknown[],
    settings: QuerySettings,
    declared: number[] | null,
    options: QueryOptions | undefined,
    send: (req: SharedReadRequest) => void,
  ): Promise<Result<unknown>> | null {
    const call = this.call(text, values, settings, declared, options, options?.timeout ?? d.queryTimeout, send)
    if (call === null) return null
    if (d.trace !== undefined && active(queryChannel)) return traceQuery(d.trace, 'query', text, given, call.promise, call.start, call.req, call.mark)
    call.start()
    return call.promise
  }

  /** The execution can no longer be joined: it ended, or every caller gave up. */
  forget(e: Execution): void {
    const byText = this.open.get(e.req.text)
    if (byText?.get(e.key) !== e) return
    byText.delete(e.key)
    if (byText.size === 0) this.open.delete(e.req.text)
  }

  /** A request is being sent through the client or pool: unless it is a read, later reads join nothing in flight now. */
  sent(req: object): void {
    if (this.open.size === 0 || isSharedRead(req)) return
    const text = (req as { text?: unknown }).text
    if (typeof text !== 'string' || !this.isRead(text)) this.seal()
  }

  /** Later reads join nothing in flight now (the executions go on for their callers). */
  seal(): void {
    this.open.clear()
  }
}
