// Leaf module: every other layer may import it, it imports nothing.

/** Stable codes of the errors pipegres raises itself (not the server's SQLSTATEs). */
export type ClientErrorCode =
  | 'PG_CONNECTION_REFUSED'
  | 'PG_CONNECTION_RESET'
  | 'PG_CONNECTION_CLOSED'
  | 'PG_CONNECTION_ENDED'
  | 'PG_CONNECT_TIMEOUT'
  | 'PG_TLS'
  | 'PG_PROTOCOL_VIOLATION'
  | 'PG_CONFIG'
  | 'PG_AUTH'
  | 'PG_PARAMETER'
  | 'PG_UNSUPPORTED'
  | 'PG_INVALID_ARGUMENT'
  | 'PG_ABORTED'
  | 'PG_QUERY_TIMEOUT'
  | 'PG_RESULT_LIMIT'
  | 'PG_TRANSACTION_ROLLED_BACK'
  | 'PG_REPLICATION'

/** Base class of every error raised by pipegres itself. */
export class PipegresError extends Error {
  readonly code: ClientErrorCode
  constructor(code: ClientErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
  // Spelled out in each class, not taken from constructor.name: a minifier renames classes.
  override get name(): string {
    return 'PipegresError'
  }
}

/**
 * The connection could not be opened, or it was lost. `code` tells which:
 * refused, reset, closed (by the server or the network), ended (by `end()`),
 * connect timeout, or TLS failure.
 */
export class ConnectionError extends PipegresError {
  /**
   * For a query that failed with its connection: true when it had been sent
   * and the server may have run it (a write may have been applied), false when
   * it provably never ran. Undefined for errors that are not about one query
   * (a failed connect, a refused call).
   */
  readonly mayHaveRun: boolean | undefined
  constructor(code: ClientErrorCode, message: string, options?: { cause?: unknown; mayHaveRun?: boolean }) {
    super(code, message, options)
    this.mayHaveRun = options?.mayHaveRun
  }
  override get name(): string {
    return 'ConnectionError'
  }
}

/**
 * The server sent something the protocol does not allow at that point. The
 * connection is closed and every pending query is rejected with this error.
 */
export class ProtocolError extends PipegresError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PG_PROTOCOL_VIOLATION', message, options)
  }
  override get name(): string {
    return 'ProtocolError'
  }
}

/** A connection setting is unknown or malformed; `setting` names it. */
export class ConfigError extends PipegresError {
  readonly setting: string
  constructor(setting: string, message: string, options?: { cause?: unknown }) {
    super('PG_CONFIG', message, options)
    this.setting = setting
  }
  override get name(): string {
    return 'ConfigError'
  }
}

/** Authentication failed on the client side; `method` names the method involved. */
export class AuthError extends PipegresError {
  readonly method: string
  constructor(method: string, message: string, options?: { cause?: unknown }) {
    super('PG_AUTH', message, options)
    this.method = method
  }
  override get name(): string {
    return 'AuthError'
  }
}

/** A parameter value could not be encoded; `index` is its 1-based `$n` number. */
export class ParameterError extends PipegresError {
  readonly index: number
  constructor(index: number, message: string, options?: { cause?: unknown }) {
    super('PG_PARAMETER', message, options)
    this.index = index
  }
  override get name(): string {
    return 'ParameterError'
  }
}

/** Every field an ErrorResponse or NoticeResponse can carry, by its protocol field code. */
export interface PgErrorFields {
  severity: string
  /** The severity, never localised (protocol field 'V'). */
  severityNonLocalized: string | undefined
  /** The SQLSTATE code, e.g. `23505` for a unique violation. */
  code: string
  message: string
  detail: string | undefined
  hint: string | undefined
  position: number | undefined
  internalPosition: number | undefined
  internalQuery: string | undefined
  where: string | undefined
  schema: string | undefined
  table: string | undefined
  column: string | undefined
  dataType: string | undefined
  constraint: string | undefined
  file: string | undefined
  line: number | undefined
  routine: string | undefined
}

/**
 * The protocol's code of each field, in the order of the protocol's
 * documentation (and of PgErrorFields), and whether its value is a number.
 * PgErrorFields names and types the fields for users; this table is the one
 * place that ties them to the protocol, and the compiler holds it to that
 * interface key for key, `numeric` included. Decoders (protocol/, wire/),
 * PgError, WireServerError and the ErrorResponse queryRaw() writes all go by
 * errorFields, derived from it.
 */
const errorFieldTable: { readonly [K in keyof PgErrorFields]-?: readonly [code: string, numeric: number extends PgErrorFields[K] ? true : false] } = {
  severity: ['S', false],
  severityNonLocalized: ['V', false],
  code: ['C', false],
  message: ['M', false],
  detail: ['D', false],
  hint: ['H', false],
  position: ['P', true],
  internalPosition: ['p', true],
  internalQuery: ['q', false],
  where: ['W', false],
  schema: ['s', false],
  table: ['t', false],
  column: ['c', false],
  dataType: ['d', false],
  constraint: ['n', false],
  file: ['F', false],
  line: ['L', true],
  routine: ['R', false],
}

/** One field of ErrorResponse and NoticeResponse: its name here, its code byte, and whether it holds a number. */
export interface ErrorField {
  readonly name: keyof PgErrorFields
  readonly code: number
  readonly numeric: boolean
}

/** Every field, in protocol order. */
export const errorFields: readonly ErrorField[] = Object.entries(errorFieldTable).map(([name, [code, numeric]]) => ({
  name: name as keyof PgErrorFields,
  code: code.charCodeAt(0),
  numeric,
}))

const fieldByCode: (ErrorField | undefined)[] = []
for (const f of errorFields) fieldByCode[f.code] = f

/**
 * The fields of one ErrorResponse or NoticeResponse, set one by one as they
 * are read (protocol/ and wire/ read the bytes, each by its own rules). Until
 * the server says otherwise, the severity is the one given, the SQLSTATE
 * XX000 (internal_error) and the message empty.
 */
export class ErrorFieldsReader {
  readonly fields: PgErrorFields
  private sawMessage = false

  constructor(severity: string) {
    const f: Record<string, unknown> = {}
    for (const { name } of errorFields) f[name] = undefined
    f.severity = severity
    f.code = 'XX000'
    f.message = ''
    this.fields = f as unknown as PgErrorFields
  }

  /**
   * One field as received. Codes this version does not know are skipped, as
   * the protocol asks; a numeric field whose text is not a whole number is
   * left absent rather than guessed.
   */
  set(code: number, text: string): void {
    const field = fieldByCode[code]
    if (field === undefined) return
    let value: string | number | undefined = text
    if (field.numeric) {
      const n = Number(text)
      value = text !== '' && Number.isInteger(n) ? n : undefined
    } else if (field.name === 'message') this.sawMessage = true
    ;(this.fields as unknown as Record<string, unknown>)[field.name] = value
  }

  /** The fields read; `kind` ('error', 'notice') words the message of one that came without any. */
  done(kind: string): PgErrorFields {
    if (!this.sawMessage) this.fields.message = `${kind} without a message (SQLSTATE ${this.fields.code})`
    return this.fields
  }
}

/**
 * Copies every field but the message onto an error that carries them as its
 * own properties (PgError, WireServerError), in protocol order: the message
 * is the one Error's constructor was given.
 */
export function assignErrorFields(target: Error, fields: PgErrorFields): void {
  const t = target as unknown as Record<string, unknown>
  for (const { name } of errorFields) if (name !== 'message') t[name] = fields[name]
}

/** An API call was made with arguments it cannot accept (a query text that is not a string, an unknown option, ...). */
export class ArgumentError extends PipegresError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PG_INVALID_ARGUMENT', message, options)
  }
  override get name(): string {
    return 'ArgumentError'
  }
}

/**
 * The query was aborted through its AbortSignal. If it had reached the server
 * it was cancelled there; it may still have completed first (a write may have
 * happened). `reason` is the signal's reason.
 */
export class AbortError extends PipegresError {
  readonly reason: unknown
  constructor(message: string, reason?: unknown, options?: { cause?: unknown }) {
    super('PG_ABORTED', message, options)
    this.reason = reason
  }
  override get name(): string {
    return 'AbortError'
  }
}

/** The query ran past its `timeout` and was cancelled (on the server, if it had reached it). */
export class TimeoutError extends PipegresError {
  readonly timeout: number
  constructor(timeout: number, options?: { cause?: unknown }) {
    super('PG_QUERY_TIMEOUT', `query timed out after ${timeout} ms`, options)
    this.timeout = timeout
  }
  override get name(): string {
    return 'TimeoutError'
  }
}

/**
 * A result grew past a query's `maxRows` or `maxBytes`: the query was
 * cancelled on the server and what it had returned dropped. `limit` names the
 * option, `max` its value, `reached` how far the result had got when it
 * passed it (rows, or bytes of row data).
 */
export class ResultLimitError extends PipegresError {
  readonly limit: 'maxRows' | 'maxBytes'
  readonly max: number
  readonly reached: number
  constructor(limit: 'maxRows' | 'maxBytes', max: number, reached: number) {
    const what = limit === 'maxRows' ? `${reached} rows` : `${reached} bytes of rows`
    super('PG_RESULT_LIMIT', `the result passed ${limit} (${max}): ${what} received; the query was cancelled`)
    this.limit = limit
    this.max = max
    this.reached = reached
  }
  override get name(): string {
    return 'ResultLimitError'
  }
}

// PgError's fields are declared once, by PgErrorFields, and merged into the class.
export interface PgError extends PgErrorFields {}
/** An error reported by the server (an ErrorResponse), with all of its fields. */
export class PgError extends Error {
  // Declared, not defined: assigned after the fields, so that they come first
  // among the error's own properties (as inspect() shows them).
  /** The text of the query that failed, when the error belongs to one. */
  declare query: string | undefined
  /** For a statement of batch(): its position in the batch, from 0. */
  declare batchIndex: number | undefined

  constructor(fields: PgErrorFields, query?: string) {
    super(fields.message)
    assignErrorFields(this, fields)
    this.query = query
    this.batchIndex = undefined
  }
  override get name(): string {
    return 'PgError'
  }
}

/** A NoticeResponse: the same fields as an error, delivered without failing anything. */
export type PgNotice = PgErrorFields

// --- errors that show the caller ------------------------------------------------
//
// A query's error is created where the reply arrives: in a socket callback,
// with no trace of the application code that awaits it. V8 (and so Node and
// Deno) appends `at async fn` frames to a stack only when it is captured in a
// microtask that continues a promise chain leading to those awaiting functions.
// So the rejection is routed through one such microtask, where the caller's
// frames are captured and appended to the error's own frames. Only failures
// pay for it: a query that succeeds is resolved as before.

/** On an error pipegres gave a caller's frames: its stack as created (where pipegres met the failure). */
const kOrigin = Symbol('pipegres.origin')
/** On such an error: the copies made of it for further callers. */
const kCopies = Symbol('pipegres.copies')
/** On an error being delivered to callers: how many (see rejectionAtCaller). */
const kDeliveries = Symbol('pipegres.deliveries')

/**
 * Callers of one shared error (a lost connection fails every query in flight
 * with it) that get a copy with their own frames. The rest get the error
 * itself, as it is: a connection lost under a million queued queries must not
 * cost a million stack captures.
 */
const MAX_COPIES = 100

/**
 * Failures given their caller's frames per turn of the event loop: a capture
 * costs microseconds, and 20,000 queries timing out (or aborted by one
 * signal) together must not stall the loop for seconds. Failures past it are
 * delivered with the frames of their origin only.
 */
const PER_TURN = 100
let spent = 0

function afford(): boolean {
  if (spent === 0) setTimeout(() => (spent = 0), 0)
  return ++spent <= PER_TURN
}

type Restacked = Error & { [kOrigin]?: string; [kCopies]?: number; [kDeliveries]?: number }

function ours(err: unknown): err is Restacked {
  return err instanceof PipegresError || err instanceof PgError || (err instanceof Error && err.name === 'CodecError')
}

function hide(target: object, key: PropertyKey, value: unknown): void {
  Object.defineProperty(target, key, { value, configurable: true, writable: true, enumerable: false })
}

/** The frame lines of a stack, without its message. */
function framesOf(stack: string): string {
  const at = stack.indexOf('\n    at ')
  return at < 0 ? '' : stack.slice(at)
}

/** A copy of `err` (same class and fields) for one more caller of an error that many requests share. */
function copyOf(err: Error): Restacked {
  const copy = Object.create(Object.getPrototypeOf(err) as object) as Restacked
  for (const key of Reflect.ownKeys(err)) {
    if (key !== 'stack' && key !== kCopies && key !== kDeliveries) Object.defineProperty(copy, key, Object.getOwnPropertyDescriptor(err, key)!)
  }
  return copy
}

/**
 * Gives one of pipegres's errors the frames of the code awaiting it, after
 * its own: call it inside an async continuation (after an `await`, or in a
 * promise reaction) that leads to the caller. `below` is dropped from the
 * captured frames, with everything it called. Errors of the application's
 * own (a row source that threw) are returned untouched. The first caller
 * gets the error itself; later callers of the same error get copies.
 */
export function withCaller<E>(err: E, below: Function = withCaller): E {
  return ours(err) && afford() ? restack(err, below) : err
}

/** Error as engines have it: captureStackTrace is V8's (and Bun's), absent from some engines and from the DOM typings. */
const engineError = Error as { captureStackTrace?: (target: object, below?: Function) => void }

function restack<E>(err: E & Restacked, below: Function): E {
  if (typeof engineError.captureStackTrace !== 'function') return err
  let target: Restacked = err
  let origin = err[kOrigin]
  if (origin === undefined) {
    origin = err.stack ?? `${err.name}: ${err.message}`
    hide(err, kOrigin, origin)
  } else {
    const copies = (err[kCopies] ?? 0) + 1
    if (copies === 1) hide(err, kCopies, copies)
    else err[kCopies] = copies
    if (copies > MAX_COPIES) return err
    target = copyOf(err)
  }
  const site: { stack?: string } = {}
  engineError.captureStackTrace(site, below)
  // Text at once: an accessor that formats on first read costs more, on an error object, than formatting.
  target.stack = origin + framesOf(site.stack ?? '')
  return target as E
}

/**
 * A thenable that rejects with `err`: resolving a promise with it rejects the
 * promise, with one job and no promise of its own (nor the bookkeeping of a
 * rejected promise that has no handler yet).
 */
function rejection(err: Error): PromiseLike<never> {
  return {
    then<A, B>(_ok?: unknown, fail?: ((reason: unknown) => B | PromiseLike<B>) | null): PromiseLike<A | B> {
      fail!(err)
      return undefined as unknown as PromiseLike<A | B>
    },
  }
}

function rethrowWithCaller(err: unknown): never {
  throw ours(err) ? restack(err, rethrowWithCaller) : err
}

/**
 * A promise that rejects with `err` as seen from the caller: resolve the
 * promise the application awaits with it (instead of rejecting that promise
 * directly). Its rejection passes through one microtask that runs once the
 * awaited promise is chained to it, so the caller's async frames are there
 * to capture. Resolve with it in the same synchronous run that creates it.
 *
 * V8 follows a chain of promises only while each has a single reaction, so
 * the awaited promise may have no handler of pipegres's own: `captured` runs
 * right after the capture, where one can be added (so that a rejection nobody
 * awaits is not reported as unhandled).
 */
export function rejectionAtCaller(err: Error, captured?: () => void): PromiseLike<never> {
  if (!ours(err) || !afford()) {
    captured?.()
    return rejection(err)
  }
  const n = (err[kDeliveries] ?? 0) + 1
  if (n === 1) hide(err, kDeliveries, n)
  else err[kDeliveries] = n
  if (n > MAX_COPIES + 1) {
    captured?.()
    return rejection(err)
  }
  let fail!: (e: Error) => void
  const source = new Promise<never>((_, reject) => (fail = reject))
  const onFail =
    captured === undefined
      ? rethrowWithCaller
      : (e: unknown): never => {
          const out = ours(e) ? restack(e, onFail) : e
          captured()
          throw out
        }
  const atCaller = source.then(undefined, onFail)
  // Later than the job that chains the awaited promise to `atCaller`.
  queueMicrotask(() => fail(err))
  return atCaller
}
