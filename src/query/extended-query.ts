import { AbortError, ArgumentError, ParameterError, PgError, ProtocolError, type PgErrorFields } from '../errors.js'
import { copyBytes } from '../protocol/reader.js'
import type { Request, RequestContext } from '../connection/request.js'
import { decodeCommandComplete, decodeParameterDescription, decodeRowDescription, type FieldDescription } from '../protocol/backend.js'
import { writeBind, writeClose, writeCopyFail, writeDescribe, writeExecute, writeExecuteSync, writeFlush, writeParse, writeSync } from '../protocol/frontend.js'
import { Backend, backendMessageName } from '../protocol/message-codes.js'
import type { Writer } from '../protocol/writer.js'
import { CodecError } from '../types/codec.js'
import type { RowPlan } from '../types/row-plan.js'
import { toText } from '../types/text-params.js'
import type { TypeView } from '../types/view.js'
import { parseCommandTag, type Result } from './result.js'
import type { Session } from './session.js'
import { cacheableText, makeShape, StatementState, type Statement } from './statement-cache.js'
import { TypedValue } from './typed.js'
import { AbortWatch, type Abortable } from './abort.js'
import { SinkKind, type RowSink } from './row-sink.js'

export type RowMode = 'object' | 'array'

const noFormats: number[] = []
const noFields: FieldDescription[] = []
const noOids: readonly number[] = []

// Bits of ExtendedQuery.flags.
/** This request wrote the Parse of its statement. */
const PARSING = 1
/** Describe S was sent: its replies come before BindComplete. */
const DESCRIBING = 2
/** Bind, Execute and Sync wait for the description (the writer is held meanwhile). */
const BIND_DEFERRED = 4
const SETTLED = 8
/** Abandoned before being written: the connection skips it. */
const DROPPED = 16
/** Messages were written without their Sync: after an error the server skips to one, which must be sent. */
const UNSYNCED = 32
/** A cursor's Execute is out: its rows, then PortalSuspended or CommandComplete, are coming. */
const EXECUTING = 64
/** Rows of a sink that gave up (closed early, or a value failed to decode) are dropped. */
const DISCARD = 128
/** A cursor's Close + Sync was written. */
const CLOSING = 256

/**
 * True when some value cannot be sent as untyped text without knowing its
 * parameter's type: a plain object could be json, a point, a composite; an
 * Interval or Range needs its type's text form. Strings, numbers, bigints,
 * booleans, Dates, bytes and arrays of those have one text form for any type.
 */
function needsTypes(values: readonly unknown[], declared: readonly number[]): boolean {
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    if (typeof v === 'object' && v !== null && (declared[i] ?? 0) === 0 && !(v instanceof TypedValue) && !plainText(v)) return true
  }
  return false
}

/** Bytes beyond this go in binary, after a describe: as text they would take twice the room (`\x` hex). */
const MAX_TEXT_BYTEA = 64 * 1024

function plainText(v: object): boolean {
  if (v instanceof Date) return true
  if (v instanceof Uint8Array) return v.length <= MAX_TEXT_BYTEA
  if (!Array.isArray(v)) return false
  for (const e of v) if (typeof e === 'object' && e !== null && !plainText(e)) return false
  return true
}

/**
 * Makes room for a big parameter set at once: growing the message value by
 * value would leave a trail of ever larger discarded buffers.
 */
function presize(w: Writer, values: readonly unknown[]): void {
  if (values.length < 8) return
  let total = 0
  for (const v of values) {
    if (typeof v === 'string') total += v.length
    else if (v instanceof Uint8Array) total += v.length
  }
  if (total > 1024 * 1024) w.ensure(total + 4 * values.length + 64)
}

/** Query text goes out as a C string: a NUL would silently cut it short. */
function checkText(text: string): void {
  if (text.includes('\0')) throw new ArgumentError('query text cannot contain a NUL character')
}

// Where an extended-protocol query is in its exchange. Each step accepts only
// the replies the protocol allows next; anything else is a protocol violation.
const enum Step {
  /** Waiting for ParseComplete. */
  Parse,
  /** Waiting for ParameterDescription (named statement being described). */
  ParamDesc,
  /** Waiting for RowDescription or NoData of the statement. */
  StmtDesc,
  /** Waiting for BindComplete. */
  Bind,
  /** Waiting for RowDescription or NoData of the portal (unnamed statements). */
  PortalDesc,
  /** DataRows, then CommandComplete or EmptyQueryResponse (or a COPY). */
  Rows,
  /** Inside a COPY TO STDOUT started by this query. */
  CopyOut,
  /** After CopyDone: CommandComplete comes next. */
  CopyOutDone,
  /** COPY FROM STDIN was refused with CopyFail; the server answers with an error. */
  CopyInRefused,
  /** A cursor closed early: what is left of its batch, then CloseComplete. */
  CursorClosing,
  /** Command complete (or failed): ReadyForQuery comes next. */
  Complete,
  /** Closing statements evicted from the cache: CloseComplete, then ReadyForQuery. */
  CloseComplete,
  CloseReady,
  Done,
}

/**
 * One query in the extended protocol, as a request the connection can pipeline:
 * [Parse + Describe S the first time] Bind, [Describe P without a named
 * statement], Execute, Sync — then, behind its own Sync, Close + Sync for any
 * statements the cache evicted.
 *
 * Parameters are encoded by the types the server gave in ParameterDescription
 * (binary where the codec can), except on the first execution, which is bound
 * before that description arrives: its parameters go as untyped text and its
 * results come back in text. When a value cannot be written without knowing its
 * type (a plain object could be json, a point or a composite), the first
 * execution is described before it is bound: it holds back the requests behind
 * it for that one round trip. A column of a type the catalog does not know yet
 * makes the query keep its rows as bytes until the type has been looked up,
 * so every execution decodes the same type the same way.
 */
export class ExtendedQuery implements Request, Abortable {
  readonly promise: Promise<Result<unknown>>
  private resolve!: (r: Result<unknown>) => void
  private reject!: (e: Error) => void
  // Booleans share one field, and the rarely needed state (abort, type lookup,
  // describe-first) lives in fields that stay null: a query waiting in a queue
  // a million long must stay small.
  private flags = 0
  /** The signal/timeout watch and the abort error, once either matters. */
  private aborting: { error: Error | null; watch: AbortWatch | null } | null = null

  private step = Step.Bind
  private stmt: Statement | null = null
  /** Result formats requested in Bind (empty: all text). */
  private formats: number[] = noFormats
  private plan: RowPlan | null = null
  /** Catalog version the plan was built at, and the types it did not know then. */
  private planVersion = -1
  private planUnknown: readonly number[] = noOids
  private fields: FieldDescription[] = noFields
  private rows: unknown[] | null = null
  /** DataRows kept as bytes while the types of their columns are being looked up. */
  private held: Uint8Array[] | null = null
  private typesLookup: Promise<void> | null = null
  private tag = ''
  private failure: Error | null = null
  private closes = 0
  private ctx: RequestContext | null = null
  /** Parameter types from this request's own ParameterDescription (describe-first only). */
  private paramTypes: number[] = noOids as number[]
  /** Set only for a raw pass-through: see Request.chunkEnd. */
  chunkEnd?: () => void

  constructor(
    readonly text: string,
    private readonly values: readonly unknown[],
    private readonly rowMode: RowMode,
    private readonly prepare: boolean,
    private readonly view: TypeView,
    /** Parameter types given with typed(), or null. */
    private readonly declared: number[] | null,
    /** Where rows go instead of into the result: stream(), cursor(), queryRaw(). */
    private readonly sink: RowSink | null = null,
  ) {
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
    if (sink !== null && sink.kind === SinkKind.Raw) this.chunkEnd = () => sink.chunkEnd()
  }

  /** The session of the connection this request was written on. */
  private get session(): Session {
    return this.ctx!.attachment as Session
  }

  /** Abandoned before being written: the connection skips it. */
  get dropped(): boolean {
    return (this.flags & DROPPED) !== 0
  }

  private get abortError(): Error | null {
    return this.aborting?.error ?? null
  }

  /** True once the request was written to a connection (the server may have seen it). */
  get wasSent(): boolean {
    return this.ctx !== null
  }

  /** Ties the request to an AbortSignal and/or a timeout (ms). */
  watch(signal: AbortSignal | undefined, timeout: number | undefined): void {
    if (signal === undefined && timeout === undefined) return
    ;(this.aborting ??= { error: null, watch: null }).watch = new AbortWatch(this, signal, timeout)
  }

  /** Aborted by its signal or timeout: dropped if not written yet, else cancelled on the server. */
  abort(err: Error): void {
    if ((this.flags & SETTLED) !== 0 || this.abortError !== null) return
    ;(this.aborting ??= { error: null, watch: null }).error = err
    if (this.ctx === null) {
      this.flags |= DROPPED
      this.rejectWith(err)
      return
    }
    if (this.sink !== null) this.flags |= DISCARD
    // A cursor between batches has nothing running on the server to cancel
    // (a CancelRequest would be ignored): it is simply closed.
    if (this.sink?.kind === SinkKind.Cursor && this.step === Step.Rows && (this.flags & EXECUTING) === 0) this.closeCursor()
    else this.ctx.requestCancel(this)
  }

  private rejectWith(err: Error): void {
    if ((this.flags & SETTLED) !== 0) return
    this.flags |= SETTLED
    this.aborting?.watch?.done()
    const abort = this.abortError
    if (abort !== null && abort !== err && err instanceof Error) {
      // Keep what actually happened (the server's query_canceled, a lost connection) as the cause.
      if (abort.cause === undefined) Object.defineProperty(abort, 'cause', { value: err, configurable: true, writable: true })
    }
    this.reject(abort ?? err)
  }

  private resolveWith(r: Result<unknown>): void {
    if ((this.flags & SETTLED) !== 0) return
    if (this.abortError !== null) return this.rejectWith(this.abortError)
    this.flags |= SETTLED
    this.aborting?.watch?.done()
    this.resolve(r)
  }

  encode(w: Writer, ctx: RequestContext): void {
    this.ctx = ctx
    // A huge generated text is not worth keeping as a prepared statement, here or on the server.
    const cache = this.prepare && cacheableText(this.text) ? this.session.statements : null
    if (cache === null) return this.encodeUnnamed(w, ctx)

    const declared = this.declared
    const key = declared === null ? this.text : `${this.text}\0${declared.join(',')}`
    let stmt = cache.get(key)
    const created = stmt === undefined
    if (stmt === undefined) {
      checkText(this.text)
      stmt = cache.create(key, this.text, declared ?? noOids)
      writeParse(w, stmt.name, this.text, stmt.declaredTypes)
      writeDescribe(w, 'S', stmt.name)
    }
    const n = this.values.length
    const sink = this.sink
    // A sink's rows are decoded as they arrive and cannot wait for a type
    // lookup, so its statement must be described, and its types known, first.
    const shape = stmt.state === StatementState.Ready ? stmt.shape(this.view, this.session.catalog) : null
    if (shape !== null && (sink === null || shape.unknown.length === 0)) {
      const types = stmt.paramTypes!
      if (n !== types.length) {
        throw new ArgumentError(`the query has ${types.length} parameter${types.length === 1 ? '' : 's'} but ${n} value${n === 1 ? ' was' : 's were'} given`)
      }
      const formats = sink !== null && sink.kind === SinkKind.Raw ? sink.formats(stmt.fields!) : shape.resultFormats
      this.formats = formats
      this.plan = shape.plan
      this.planVersion = shape.version
      this.planUnknown = shape.unknown
      presize(w, this.values)
      writeBind(w, '', stmt.name, n, (w, i) => this.param(w, i, types[i]!), formats)
    } else if (sink !== null || needsTypes(this.values, stmt.declaredTypes)) {
      if (!created) writeDescribe(w, 'S', stmt.name)
      writeFlush(w)
      this.flags |= DESCRIBING | BIND_DEFERRED | UNSYNCED
      ctx.holdWriter(this)
    } else {
      const declaredTypes = stmt.declaredTypes
      presize(w, this.values)
      writeBind(w, '', stmt.name, n, (w, i) => this.param(w, i, declaredTypes[i] ?? 0), noFormats)
    }
    if ((this.flags & BIND_DEFERRED) === 0) this.writeTail(w, ctx)

    // Past this point nothing can throw: commit the cache changes.
    stmt.users++
    this.stmt = stmt
    if (created) {
      this.flags |= PARSING | DESCRIBING
      this.step = Step.Parse
      cache.insert(stmt)
    } else {
      this.step = (this.flags & DESCRIBING) !== 0 ? Step.ParamDesc : Step.Bind
    }
    // Statements evicted from the cache are closed behind this query, each with
    // its own Sync so that a failure there concerns nobody. Not behind a
    // cursor: a Sync would end its portal; the next query closes them.
    if (sink !== null && sink.kind === SinkKind.Cursor) return
    for (const old of cache.takeEvicted()) {
      writeClose(w, 'S', old.name)
      writeSync(w)
      this.closes++
    }
  }

  private encodeUnnamed(w: Writer, ctx: RequestContext): void {
    checkText(this.text)
    const declared = this.declared ?? noOids
    writeParse(w, '', this.text, declared)
    this.step = Step.Parse
    if (this.sink !== null || needsTypes(this.values, declared)) {
      writeDescribe(w, 'S', '')
      writeFlush(w)
      this.flags |= DESCRIBING | BIND_DEFERRED | UNSYNCED
      ctx.holdWriter(this)
      return
    }
    presize(w, this.values)
    writeBind(w, '', '', this.values.length, (w, i) => this.param(w, i, declared[i] ?? 0), noFormats)
    writeDescribe(w, 'P', '')
    writeExecuteSync(w)
  }

  /**
   * Execute and Sync; for a raw pass-through a Describe of the portal first
   * (its RowDescription, with the formats, is part of what is passed on); for a
   * cursor, Execute of one batch and Flush, the writer held until it closes.
   */
  private writeTail(w: Writer, ctx: RequestContext): void {
    const sink = this.sink
    if (sink === null) return writeExecuteSync(w)
    if (sink.kind === SinkKind.Raw) writeDescribe(w, 'P', '')
    if (sink.kind !== SinkKind.Cursor) return writeExecuteSync(w)
    writeExecute(w, '', sink.batchSize)
    writeFlush(w)
    this.flags |= EXECUTING | UNSYNCED
    ctx.holdWriter(this)
  }

  /** Cursor: asks for the next batch. */
  more(): void {
    if (this.step !== Step.Rows || (this.flags & (EXECUTING | CLOSING | SETTLED)) !== 0) return
    this.flags |= EXECUTING
    const size = this.sink!.batchSize
    this.ctx!.writeNow((w) => {
      writeExecute(w, '', size)
      writeFlush(w)
    })
  }

  /**
   * Cursor: closes the portal before its end. Close goes right behind an
   * Execute still running; its rows are dropped.
   */
  closeCursor(): void {
    if ((this.flags & (CLOSING | SETTLED)) !== 0) return
    if (this.ctx === null) {
      // Not written yet: it never will be.
      this.abort(new AbortError('the cursor was closed before it was read'))
      return
    }
    if (this.step >= Step.CursorClosing) return
    this.flags |= CLOSING | DISCARD
    // Still being described: bindDescribed() ends it with a Sync instead of a Bind.
    if ((this.flags & BIND_DEFERRED) !== 0) return
    this.flags &= ~UNSYNCED
    const ctx = this.ctx
    ctx.writeNow((w) => {
      writeClose(w, 'P', '')
      writeSync(w)
    })
    if ((this.flags & EXECUTING) === 0) this.step = Step.CursorClosing
    ctx.releaseWriter(this)
  }

  /**
   * The deferred Bind of a statement described first: parameters by their
   * types, results in the formats the view prefers. If a value does not fit
   * its type, Sync alone closes the exchange and the query fails with that.
   */
  private bindDescribed(fields: FieldDescription[], paramTypes: number[]): void {
    const ctx = this.ctx!
    this.flags &= ~(BIND_DEFERRED | UNSYNCED)
    const n = this.values.length
    const name = this.stmt?.name ?? ''
    const sink = this.sink
    try {
      if (this.abortError !== null || (this.flags & CLOSING) !== 0) {
        // Aborted or closed while being described: nothing was executed, nothing will be.
        ctx.writeNow(writeSync)
        this.step = Step.Complete
        return
      }
      if (n !== paramTypes.length) {
        throw new ArgumentError(`the query has ${paramTypes.length} parameter${paramTypes.length === 1 ? '' : 's'} but ${n} value${n === 1 ? ' was' : 's were'} given`)
      }
      const shape = this.stmt !== null ? this.stmt.shape(this.view, this.session.catalog) : makeShape(fields, paramTypes, this.view, this.session.catalog)
      const formats = sink !== null && sink.kind === SinkKind.Raw ? sink.formats(fields) : shape.resultFormats
      ctx.writeNow((w) => {
        presize(w, this.values)
        writeBind(w, '', name, n, (w, i) => this.param(w, i, paramTypes[i]!), formats)
        this.writeTail(w, ctx)
      })
      this.formats = formats
      this.plan = shape.plan
      this.planVersion = shape.version
      this.planUnknown = shape.unknown
      this.step = Step.Bind
    } catch (err) {
      if (!(err instanceof ParameterError || err instanceof ArgumentError)) throw err
      this.flags &= ~(EXECUTING | UNSYNCED)
      ctx.writeNow(writeSync)
      this.failure = err
      this.step = Step.Complete
    } finally {
      // A cursor keeps the writer until it closes.
      if ((this.flags & UNSYNCED) === 0) ctx.releaseWriter(this)
    }
  }

  /** Writes parameter i as type `oid` (0: not known yet, sent as untyped text); returns its format. */
  private param(w: Writer, i: number, oid: number): number {
    let v = this.values[i]
    if (v instanceof TypedValue) v = v.value
    if (v === null || v === undefined) {
      w.i32(-1)
      return 0
    }
    const at = w.reserve32()
    let format: number
    if (oid === 0) {
      w.str(toText(v, i + 1)!)
      format = 0
    } else {
      try {
        format = this.view.writeParam(w, v, oid)
      } catch (err) {
        if (err instanceof CodecError) {
          throw new ParameterError(i + 1, `parameter $${i + 1} (${this.view.typeName(oid)}): ${err.message}`, { cause: err })
        }
        throw err
      }
    }
    w.patch32(at, w.length - at - 4)
    return format
  }

  private violation(type: number): never {
    throw new ProtocolError(`server sent ${backendMessageName(type)} where a reply to Parse/Bind/Execute could not contain it (query step ${this.step})`)
  }

  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    switch (type) {
      case Backend.DataRow:
        if (this.step !== Step.Rows) {
          if (this.step === Step.CursorClosing) return false
          this.violation(type)
        }
        if (this.held !== null) this.held.push(copyBytes(buf, start, end))
        else this.row(buf, start, end)
        return false
      case Backend.ParseComplete:
        if (this.step !== Step.Parse) this.violation(type)
        this.step = (this.flags & DESCRIBING) !== 0 ? Step.ParamDesc : Step.Bind
        return false
      case Backend.ParameterDescription:
        if (this.step !== Step.ParamDesc) this.violation(type)
        this.paramTypes = decodeParameterDescription(buf, start, end)
        if (this.stmt !== null) this.stmt.paramTypes = this.paramTypes
        this.step = Step.StmtDesc
        return false
      case Backend.RowDescription:
        if (this.step === Step.StmtDesc) this.described(decodeRowDescription(buf, start, end))
        else if (this.step === Step.PortalDesc) {
          this.rowsBegin(decodeRowDescription(buf, start, end))
          if (this.sink !== null && this.sink.kind === SinkKind.Raw) this.sink.message(buf, start, end)
        } else this.violation(type)
        return false
      case Backend.NoData:
        if (this.step === Step.StmtDesc) this.described(noFields)
        else if (this.step === Step.PortalDesc) this.rowsBegin(noFields)
        else this.violation(type)
        return false
      case Backend.BindComplete:
        if (this.step !== Step.Bind) this.violation(type)
        // A raw pass-through described its portal: its RowDescription comes next.
        if (this.sink !== null && this.sink.kind === SinkKind.Raw) this.step = Step.PortalDesc
        else if (this.stmt === null) {
          if ((this.flags & DESCRIBING) !== 0) this.rowsBegin(this.fields)
          else this.step = Step.PortalDesc
        } else {
          // A statement parsed by an earlier request is described by now: its
          // Describe replies came before this Bind's.
          const fields = this.stmt.fields
          if (fields === null) throw new ProtocolError('server completed a Bind for a statement it never described')
          this.rowsBegin(fields)
        }
        return false
      case Backend.CommandComplete:
        if (this.step !== Step.Rows && this.step !== Step.CopyOutDone) this.violation(type)
        this.tag = decodeCommandComplete(buf, start, end)
        this.session.commandCompleted(this.tag)
        this.step = Step.Complete
        if (this.sink !== null) this.sinkDone(buf, start, end)
        return false
      case Backend.EmptyQueryResponse:
        if (this.step !== Step.Rows) this.violation(type)
        this.step = Step.Complete
        if (this.sink !== null) this.sinkDone(buf, start, end)
        return false
      case Backend.PortalSuspended:
        if (this.step !== Step.Rows || (this.flags & EXECUTING) === 0) this.violation(type)
        this.flags &= ~EXECUTING
        if ((this.flags & CLOSING) !== 0) this.step = Step.CursorClosing
        else if ((this.flags & DISCARD) !== 0) this.closeCursor()
        else this.sink!.batch(false)
        return false
      case Backend.CopyOutResponse:
        if (this.step !== Step.Rows) this.violation(type)
        this.step = Step.CopyOut
        this.failure ??= new ProtocolError('COPY TO STDOUT cannot run through query(); its data was discarded')
        return false
      case Backend.CopyData:
        if (this.step !== Step.CopyOut) this.violation(type)
        return false
      case Backend.CopyDone:
        if (this.step !== Step.CopyOut) this.violation(type)
        this.step = Step.CopyOutDone
        return false
      case Backend.CopyInResponse:
        if (this.step !== Step.Rows) this.violation(type)
        return this.refuseCopyIn()
      case Backend.CloseComplete:
        if (this.step === Step.CursorClosing) this.step = Step.Complete
        else if (this.step !== Step.CloseComplete) this.violation(type)
        else this.step = Step.CloseReady
        return false
      case Backend.ReadyForQuery:
        return this.ready()
      default:
        this.violation(type)
    }
  }

  /** The description of the statement, from this request's own Describe. */
  private described(fields: FieldDescription[]): void {
    const stmt = this.stmt
    const catalog = this.session.catalog
    if (stmt !== null) {
      stmt.fields = fields
      if (stmt.state === StatementState.Parsing) stmt.state = StatementState.Ready
    } else this.fields = fields
    this.step = Step.Bind
    if ((this.flags & BIND_DEFERRED) !== 0) {
      // The parameters are bound by their types, so unknown ones must be
      // learned first: looked up right now, ahead of everything queued (this
      // request holds the writer), then bound.
      const unknown = this.paramTypes.filter((oid) => !catalog.knows(oid))
      if (this.sink !== null) for (const f of fields) if (!catalog.knows(f.typeOid)) unknown.push(f.typeOid)
      if (unknown.length > 0 && this.abortError === null && (this.flags & CLOSING) === 0) {
        void this.session.lookupTypesAhead(unknown, this.ctx!).then(() => {
          if (this.step === Step.Bind) this.bindDescribed(fields, this.paramTypes)
        })
      } else this.bindDescribed(fields, this.paramTypes)
    } else if (stmt !== null) {
      // Start learning unknown parameter and column types now, for the executions to come.
      const shape = stmt.shape(this.view, catalog)
      if (shape.unknown.length > 0) void this.session.lookupTypes(shape.unknown)
    }
  }

  /** Rows may follow: settle on the plan, or hold rows until unknown column types are learned. */
  private rowsBegin(fields: FieldDescription[]): void {
    this.fields = fields
    this.step = Step.Rows
    const catalog = this.session.catalog
    const sink = this.sink
    if (sink !== null) {
      // Described and its types looked up before it was bound: nothing to hold.
      if (sink.kind !== SinkKind.Raw && (this.plan === null || this.planVersion !== catalog.version)) {
        this.plan = this.view.plan(fields, this.formats)
        this.planVersion = catalog.version
      }
      sink.begin(fields, this.ctx!)
      return
    }
    if (this.plan === null) {
      // Bound before the description was known: the rows come in text.
      if (this.stmt !== null) {
        const shape = this.stmt.shape(this.view, catalog)
        this.plan = shape.textPlan
        this.planVersion = shape.version
        this.planUnknown = shape.unknown
      } else {
        this.plan = this.view.plan(fields, noFormats)
        this.planVersion = catalog.version
        this.planUnknown = fields.filter((f) => !catalog.knows(f.typeOid)).map((f) => f.typeOid)
      }
    }
    if (this.planVersion === catalog.version && this.planUnknown.length === 0) return
    const missing = fields.filter((f) => !catalog.knows(f.typeOid)).map((f) => f.typeOid)
    if (missing.length > 0) {
      this.typesLookup = this.session.lookupTypes(missing)
      this.held = []
    } else if (this.planVersion !== catalog.version) {
      this.plan = this.view.plan(fields, this.formats)
      this.planVersion = catalog.version
    }
  }

  private row(buf: Uint8Array, start: number, end: number): void {
    if (this.sink !== null) return this.sinkRow(this.sink, buf, start, end)
    const plan = this.plan!
    try {
      ;(this.rows ??= []).push(this.rowMode === 'array' ? plan.array(buf, start, end) : plan.object(buf, start, end))
    } catch (err) {
      if (err instanceof ProtocolError) throw err
      // A value that fails to decode fails this query only; the stream stays in step.
      this.failure ??= err as Error
    }
  }

  private sinkRow(sink: RowSink, buf: Uint8Array, start: number, end: number): void {
    if ((this.flags & DISCARD) !== 0) return
    if (sink.kind === SinkKind.Raw) {
      // Passed on undecoded, but never a row that does not fit the description.
      const n = end - start >= 2 ? (buf[start]! << 8) | buf[start + 1]! : -1
      if (n !== this.fields.length) throw new ProtocolError(`server sent a DataRow with ${n} columns where the RowDescription has ${this.fields.length}`)
      sink.message(buf, start, end)
      return
    }
    const plan = this.plan!
    let row: unknown
    try {
      row = this.rowMode === 'array' ? plan.array(buf, start, end) : plan.object(buf, start, end)
    } catch (err) {
      if (err instanceof ProtocolError) throw err
      // The consumer gets this error; the rest of the result is not worth reading.
      this.failure ??= err as Error
      this.flags |= DISCARD
      if (sink.kind === SinkKind.Cursor && (this.flags & EXECUTING) === 0) this.closeCursor()
      else this.ctx!.requestCancel(this)
      return
    }
    sink.row(row)
  }

  /** CommandComplete or EmptyQueryResponse of a sink's query. */
  private sinkDone(buf: Uint8Array, start: number, end: number): void {
    const sink = this.sink!
    if (sink.kind === SinkKind.Raw) {
      if ((this.flags & DISCARD) === 0) sink.message(buf, start, end)
      return
    }
    if (sink.kind !== SinkKind.Cursor) return
    // The portal is exhausted: Sync ends it, and the writer is free again.
    this.flags &= ~(EXECUTING | UNSYNCED)
    if ((this.flags & CLOSING) !== 0) {
      // Close + Sync are on their way already.
      this.step = Step.CursorClosing
      return
    }
    this.ctx!.writeNow(writeSync)
    this.ctx!.releaseWriter(this)
    if ((this.flags & DISCARD) === 0) sink.batch(true)
  }

  /**
   * COPY FROM STDIN belongs to copyFrom(), not query(). If nothing was written
   * behind this query, CopyFail + Sync ends the copy cleanly (the server ignores
   * the Sync we sent with Execute while in copy mode). If other requests were
   * written already, the server has taken their messages as the copy's end and
   * skipped them: the stream can no longer be matched to requests, so the
   * connection is closed rather than risk a misattributed result.
   */
  private refuseCopyIn(): boolean {
    const ctx = this.ctx!
    if (ctx.inflightBehind > 0) {
      ctx.destroy(new ProtocolError('COPY FROM STDIN was started through query() while other queries were in flight; use copyFrom() for COPY FROM STDIN'))
      return false
    }
    this.failure ??= new ProtocolError('COPY FROM STDIN cannot run through query(); use copyFrom()')
    ctx.writeNow((w) => {
      writeCopyFail(w, 'COPY FROM STDIN is not supported through query()')
      writeSync(w)
    })
    this.step = Step.CopyInRefused
    return false
  }

  error(fields: PgErrorFields): void {
    const step = this.step
    if (step === Step.CopyInRefused) {
      // The answer to our CopyFail; the failure explaining why is already set.
      this.step = Step.Complete
      return
    }
    if (step === Step.CloseComplete) {
      // A failed Close of an evicted statement concerns nobody; its ReadyForQuery follows.
      this.step = Step.CloseReady
      return
    }
    if (step === Step.CloseReady || step === Step.Done || (step === Step.Complete && this.failure instanceof PgError)) {
      throw new ProtocolError(`server sent an ErrorResponse where it was not allowed: ${fields.message}`)
    }
    const stmt = this.stmt
    let err = new PgError(fields, this.text)
    if (stmt !== null) {
      if ((this.flags & PARSING) !== 0 && (step === Step.Parse || step === Step.ParamDesc || step === Step.StmtDesc)) {
        // The statement does not exist on the server: forget it, and let later
        // executions bound to it report this error instead of "does not exist".
        stmt.parseError = err
        this.session.statements?.delete(stmt)
      } else if (fields.code === '26000' && stmt.parseError !== null) {
        err = new PgError(stmt.parseError, this.text)
      } else if (fields.code === '26000' || (fields.code === '0A000' && /cached plan/.test(fields.message))) {
        // The server lost the statement (DEALLOCATE) or its result type changed
        // under it: prepare it afresh next time.
        this.session.statements?.delete(stmt)
      }
    }
    const sink = this.sink
    if (sink !== null) {
      if (sink.kind === SinkKind.Raw && (this.flags & DISCARD) === 0) sink.error(fields)
      // A decoding failure that made the query stop early is what the consumer gets.
      if ((this.flags & DISCARD) === 0 || this.failure === null) this.failure = err
      this.flags &= ~EXECUTING
    } else this.failure = err
    this.step = Step.Complete
    if ((this.flags & UNSYNCED) !== 0) {
      // Written without a Sync yet (a statement described before it is bound,
      // a cursor between batches): the server now skips to one.
      this.flags &= ~(BIND_DEFERRED | UNSYNCED)
      this.ctx!.writeNow(writeSync)
      this.ctx!.releaseWriter(this)
    }
  }

  private ready(): boolean {
    if (this.step === Step.CloseReady) {
      this.closes--
      this.step = this.closes > 0 ? Step.CloseComplete : Step.Done
      return this.step === Step.Done
    }
    if (this.step !== Step.Complete && this.step !== Step.CopyInRefused) this.violation(Backend.ReadyForQuery)
    this.release()
    // A raw pass-through writes out what it gathered before its caller hears the end.
    if (this.sink !== null && this.sink.kind === SinkKind.Raw) this.sink.chunkEnd()
    if (this.typesLookup !== null) {
      const lookup = this.typesLookup
      void lookup.then(() => this.settleHeld())
    } else this.settle()
    if (this.closes > 0) {
      this.step = Step.CloseComplete
      return false
    }
    this.step = Step.Done
    return true
  }

  /** Decodes the rows held for a type lookup, now that the catalog knows what it could learn. */
  private settleHeld(): void {
    const held = this.held!
    this.held = null
    try {
      this.plan = this.view.plan(this.fields, this.formats)
    } catch (err) {
      this.failure ??= err as Error
    }
    if (this.failure === null) {
      for (const raw of held) {
        try {
          this.row(raw, 0, raw.length)
        } catch (err) {
          this.failure ??= err as Error
        }
      }
    }
    this.settle()
  }

  private settle(): void {
    if (this.failure !== null) this.rejectWith(this.failure)
    else {
      const { command, rowCount } = parseCommandTag(this.tag)
      this.resolveWith({ rows: this.rows ?? [], rowCount, command, fields: this.fields })
    }
  }

  fail(err: Error, _sent: boolean): void {
    if (this.step === Step.Done) return
    if (this.step < Step.CloseComplete) {
      this.release()
      this.rejectWith(err)
    }
    this.step = Step.Done
  }

  private release(): void {
    const stmt = this.stmt
    if (stmt === null) return
    const cache = this.session.statements
    if (cache !== null) cache.release(stmt)
    else stmt.users--
  }
}
