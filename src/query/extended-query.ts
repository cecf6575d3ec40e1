import { AbortError, ArgumentError, ParameterError, PgError, ProtocolError, rejectionAtCaller, type PgErrorFields } from '../errors.js'
import { copyBytes } from '../protocol/reader.js'
import type { Request, RequestContext } from '../connection/request.js'
import { decodeCommandComplete, decodeParameterDescription, decodeRowDescription, type FieldDescription } from '../protocol/backend.js'
import { writeBind, writeClose, writeCopyFail, writeDescribe, writeExecute, writeExecuteSync, writeFlush, writeParse, writeSync } from '../protocol/frontend.js'
import { Backend, backendMessageName } from '../protocol/message-codes.js'
import { SqlState } from '../protocol/sql-state.js'
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
/** rowMode 'array'. */
const ARRAY_ROWS = 512
/** Use the connection's prepared-statement cache. */
const PREPARE = 1024

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
 * What a failed query's promise is resolved with: resolving a promise with a
 * rejecting one rejects it, so a query keeps only the resolve function of its
 * promise (the reject function V8 creates with it is garbage at once: 64 bytes
 * less per queued query), and the error gains the caller's frames on its way
 * (see rejectionAtCaller).
 */
const rejection = rejectionAtCaller

/** What few queries need, kept out of the query itself (see ExtendedQuery). */
interface Extra {
  /** The abort error, once the signal or timeout fired. */
  error: Error | null
  watch: AbortWatch | null
  /** Parameter types given with typed(), or null. */
  readonly declared: number[] | null
  /** Where rows go instead of into the result: stream(), cursor(), queryRaw(). */
  readonly sink: RowSink | null
  /** The transaction this query runs in (its token), or null. */
  tx: object | null
  /** Times this query was sent again after the server lost its statement. */
  resent: number
}

/** Sent again at most this often: a server that keeps losing statements gets its error reported. */
const MAX_RESENDS = 3
/** ReadyForQuery's status byte outside a transaction block. */
const IDLE = 0x49

/**
 * What a query needs from the moment it is written: its connection, where it
 * is in the exchange with the server, and the result being built.
 */
class Exchange {
  step = Step.Bind
  stmt: Statement | null = null
  /** Result formats requested in Bind (empty: all text). */
  formats: number[] = noFormats
  plan: RowPlan | null = null
  /** Catalog version the plan was built at, and the types it did not know then. */
  planVersion = -1
  planUnknown: readonly number[] = noOids
  fields: FieldDescription[] = noFields
  rows: unknown[] | null = null
  /** DataRows kept as bytes while the types of their columns are being looked up. */
  held: Uint8Array[] | null = null
  typesLookup: Promise<void> | null = null
  tag = ''
  failure: Error | null = null
  /** Statements evicted from the cache whose Close + Sync follow this query's Sync. */
  closes = 0
  /** Parameter types from this request's own ParameterDescription (describe-first only). */
  paramTypes: number[] = noOids as number[]
  /** The server lost or refused the named statement before anything ran: send the query again (see error()). */
  resend = false

  constructor(readonly ctx: RequestContext) {}
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
  /** Also rejects: see rejection(). */
  private resolve!: (r: Result<unknown> | PromiseLike<never>) => void
  // A query waiting in a queue a million long must stay small (about 250
  // bytes with its promise): booleans share one field, the state of the
  // exchange with the server is allocated only when the query is written, and
  // what few queries need (a signal or timeout, typed() parameters, a row
  // sink) lives in one object that is null for the rest.
  private flags = 0
  private extra: Extra | null = null
  /** The exchange with the server, from the moment the query is written. */
  private x: Exchange | null = null
  private readonly values: readonly unknown[]
  private readonly view: TypeView

  constructor(
    readonly text: string,
    values: readonly unknown[],
    rowMode: RowMode,
    prepare: boolean,
    view: TypeView,
    /** Parameter types given with typed(), or null. */
    declared: number[] | null,
    /** Where rows go instead of into the result: stream(), cursor(), queryRaw(). */
    sink: RowSink | null = null,
  ) {
    this.promise = new Promise((resolve) => {
      this.resolve = resolve
    })
    this.values = values
    this.view = view
    if (rowMode === 'array') this.flags |= ARRAY_ROWS
    if (prepare) this.flags |= PREPARE
    if (declared !== null || sink !== null) this.extra = { error: null, watch: null, declared, sink, tx: null, resent: 0 }
  }

  private get sink(): RowSink | null {
    return this.extra?.sink ?? null
  }

  /** The session of the connection this request was written on. */
  private get session(): Session {
    return this.x!.ctx.attachment as Session
  }

  /** Abandoned before being written: the connection skips it. */
  get dropped(): boolean {
    return (this.flags & DROPPED) !== 0
  }

  private get abortError(): Error | null {
    return this.extra?.error ?? null
  }

  /** For a raw pass-through: see Request.chunkEnd. */
  chunkEnd(): void {
    const sink = this.sink
    if (sink !== null && sink.kind === SinkKind.Raw) sink.chunkEnd()
  }

  /** True once the request was written to a connection (the server may have seen it). */
  get wasSent(): boolean {
    return this.x !== null
  }

  /** Ties the request to an AbortSignal and/or a timeout (ms). */
  watch(signal: AbortSignal | undefined, timeout: number | undefined): void {
    if (signal === undefined && timeout === undefined) return
    this.extras().watch = new AbortWatch(this, signal, timeout)
  }

  private extras(): Extra {
    return (this.extra ??= { error: null, watch: null, declared: null, sink: null, tx: null, resent: 0 })
  }

  /** Marks the query as part of the transaction `token` (see encode). */
  inTransaction(token: object): void {
    this.extras().tx = token
  }

  /** Aborted by its signal or timeout: dropped if not written yet, else cancelled on the server. */
  abort(err: Error): void {
    if ((this.flags & SETTLED) !== 0 || this.abortError !== null) return
    this.extras().error = err
    const x = this.x
    if (x === null) {
      this.flags |= DROPPED
      this.rejectWith(err)
      return
    }
    if (this.sink !== null) this.flags |= DISCARD
    // A cursor between batches has nothing running on the server to cancel
    // (a CancelRequest would be ignored): it is simply closed.
    if (this.sink?.kind === SinkKind.Cursor && x.step === Step.Rows && (this.flags & EXECUTING) === 0) this.closeCursor()
    else x.ctx.requestCancel(this)
  }

  private rejectWith(err: Error): void {
    if ((this.flags & SETTLED) !== 0) return
    this.flags |= SETTLED
    this.extra?.watch?.done()
    const abort = this.abortError
    if (abort !== null && abort !== err && err instanceof Error) {
      // Keep what actually happened (the server's query_canceled, a lost connection) as the cause.
      if (abort.cause === undefined) Object.defineProperty(abort, 'cause', { value: err, configurable: true, writable: true })
    }
    this.resolve(rejection(abort ?? err))
  }

  private resolveWith(r: Result<unknown>): void {
    if ((this.flags & SETTLED) !== 0) return
    if (this.abortError !== null) return this.rejectWith(this.abortError)
    this.flags |= SETTLED
    this.extra?.watch?.done()
    this.resolve(r)
  }

  encode(w: Writer, ctx: RequestContext): void {
    const x = new Exchange(ctx)
    this.x = x
    // A huge generated text is not worth keeping as a prepared statement, here or on the server.
    const cache = (this.flags & PREPARE) !== 0 && cacheableText(this.text) ? this.session.statements : null
    if (cache === null) return this.encodeUnnamed(w, ctx, x)

    const declared = this.extra?.declared ?? null
    const key = declared === null ? this.text : `${this.text}\0${declared.join(',')}`
    let stmt = cache.get(key)
    const tx = this.extra?.tx ?? null
    if (stmt !== undefined && tx !== null && stmt.preparedIn !== tx && this.session.pooling !== 'direct') {
      // Until the connection is known to reach the server directly, a
      // statement prepared before this transaction may live on another server
      // connection of a pooler: binding it could fail with 26000, and inside a
      // transaction that aborts everything. Prepare it again within this one.
      cache.retire(stmt)
      stmt = undefined
    }
    const created = stmt === undefined
    if (stmt === undefined) {
      checkText(this.text)
      stmt = cache.create(key, this.text, declared ?? noOids)
      stmt.preparedIn = tx
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
      x.formats = formats
      x.plan = shape.plan
      x.planVersion = shape.version
      x.planUnknown = shape.unknown
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
    x.stmt = stmt
    if (created) {
      this.flags |= PARSING | DESCRIBING
      x.step = Step.Parse
      cache.insert(stmt)
    } else {
      x.step = (this.flags & DESCRIBING) !== 0 ? Step.ParamDesc : Step.Bind
    }
    // Statements evicted from the cache are closed behind this query, each with
    // its own Sync so that a failure there concerns nobody. Not behind a
    // cursor: a Sync would end its portal; the next query closes them.
    if (sink !== null && sink.kind === SinkKind.Cursor) return
    for (const old of cache.takeEvicted()) {
      writeClose(w, 'S', old.name)
      writeSync(w)
      x.closes++
    }
  }

  private encodeUnnamed(w: Writer, ctx: RequestContext, x: Exchange): void {
    checkText(this.text)
    const declared = this.extra?.declared ?? noOids
    writeParse(w, '', this.text, declared)
    x.step = Step.Parse
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
    const x = this.x
    if (x === null || x.step !== Step.Rows || (this.flags & (EXECUTING | CLOSING | SETTLED)) !== 0) return
    this.flags |= EXECUTING
    const size = this.sink!.batchSize
    x.ctx.writeNow((w) => {
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
    const x = this.x
    if (x === null) {
      // Not written yet: it never will be.
      this.abort(new AbortError('the cursor was closed before it was read'))
      return
    }
    if (x.step >= Step.CursorClosing) return
    this.flags |= CLOSING | DISCARD
    // Still being described: bindDescribed() ends it with a Sync instead of a Bind.
    if ((this.flags & BIND_DEFERRED) !== 0) return
    this.flags &= ~UNSYNCED
    const ctx = x.ctx
    ctx.writeNow((w) => {
      writeClose(w, 'P', '')
      writeSync(w)
    })
    if ((this.flags & EXECUTING) === 0) x.step = Step.CursorClosing
    ctx.releaseWriter(this)
  }

  /**
   * The deferred Bind of a statement described first: parameters by their
   * types, results in the formats the view prefers. If a value does not fit
   * its type, Sync alone closes the exchange and the query fails with that.
   */
  private bindDescribed(fields: FieldDescription[], paramTypes: number[]): void {
    const x = this.x!
    const ctx = x.ctx
    this.flags &= ~(BIND_DEFERRED | UNSYNCED)
    const n = this.values.length
    const name = x.stmt?.name ?? ''
    const sink = this.sink
    try {
      if (this.abortError !== null || (this.flags & CLOSING) !== 0) {
        // Aborted or closed while being described: nothing was executed, nothing will be.
        ctx.writeNow(writeSync)
        x.step = Step.Complete
        return
      }
      if (n !== paramTypes.length) {
        throw new ArgumentError(`the query has ${paramTypes.length} parameter${paramTypes.length === 1 ? '' : 's'} but ${n} value${n === 1 ? ' was' : 's were'} given`)
      }
      const shape = x.stmt !== null ? x.stmt.shape(this.view, this.session.catalog) : makeShape(fields, paramTypes, this.view, this.session.catalog)
      const formats = sink !== null && sink.kind === SinkKind.Raw ? sink.formats(fields) : shape.resultFormats
      ctx.writeNow((w) => {
        presize(w, this.values)
        writeBind(w, '', name, n, (w, i) => this.param(w, i, paramTypes[i]!), formats)
        this.writeTail(w, ctx)
      })
      x.formats = formats
      x.plan = shape.plan
      x.planVersion = shape.version
      x.planUnknown = shape.unknown
      x.step = Step.Bind
    } catch (err) {
      if (!(err instanceof ParameterError || err instanceof ArgumentError)) throw err
      this.flags &= ~(EXECUTING | UNSYNCED)
      ctx.writeNow(writeSync)
      x.failure = err
      x.step = Step.Complete
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
    throw new ProtocolError(`server sent ${backendMessageName(type)} where a reply to Parse/Bind/Execute could not contain it (query step ${this.x?.step})`)
  }

  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    const x = this.x!
    switch (type) {
      case Backend.DataRow:
        if (x.step !== Step.Rows) {
          if (x.step === Step.CursorClosing) return false
          this.violation(type)
        }
        if (x.held !== null) x.held.push(copyBytes(buf, start, end))
        else this.row(x, buf, start, end)
        return false
      case Backend.ParseComplete:
        if (x.step !== Step.Parse) this.violation(type)
        x.step = (this.flags & DESCRIBING) !== 0 ? Step.ParamDesc : Step.Bind
        return false
      case Backend.ParameterDescription:
        if (x.step !== Step.ParamDesc) this.violation(type)
        x.paramTypes = decodeParameterDescription(buf, start, end)
        if (x.stmt !== null) x.stmt.paramTypes = x.paramTypes
        x.step = Step.StmtDesc
        return false
      case Backend.RowDescription:
        if (x.step === Step.StmtDesc) this.described(decodeRowDescription(buf, start, end))
        else if (x.step === Step.PortalDesc) {
          this.rowsBegin(decodeRowDescription(buf, start, end))
          if (this.sink !== null && this.sink.kind === SinkKind.Raw) this.sink.message(buf, start, end)
        } else this.violation(type)
        return false
      case Backend.NoData:
        if (x.step === Step.StmtDesc) this.described(noFields)
        else if (x.step === Step.PortalDesc) this.rowsBegin(noFields)
        else this.violation(type)
        return false
      case Backend.BindComplete:
        if (x.step !== Step.Bind) this.violation(type)
        // A raw pass-through described its portal: its RowDescription comes next.
        if (this.sink !== null && this.sink.kind === SinkKind.Raw) x.step = Step.PortalDesc
        else if (x.stmt === null) {
          if ((this.flags & DESCRIBING) !== 0) this.rowsBegin(x.fields)
          else x.step = Step.PortalDesc
        } else {
          // A statement parsed by an earlier request is described by now: its
          // Describe replies came before this Bind's.
          const fields = x.stmt.fields
          if (fields === null) throw new ProtocolError('server completed a Bind for a statement it never described')
          this.rowsBegin(fields)
        }
        return false
      case Backend.CommandComplete:
        if (x.step !== Step.Rows && x.step !== Step.CopyOutDone) this.violation(type)
        x.tag = decodeCommandComplete(buf, start, end)
        this.session.commandCompleted(x.tag)
        x.step = Step.Complete
        if (this.sink !== null) this.sinkDone(buf, start, end)
        return false
      case Backend.EmptyQueryResponse:
        if (x.step !== Step.Rows) this.violation(type)
        x.step = Step.Complete
        if (this.sink !== null) this.sinkDone(buf, start, end)
        return false
      case Backend.PortalSuspended:
        if (x.step !== Step.Rows || (this.flags & EXECUTING) === 0) this.violation(type)
        this.flags &= ~EXECUTING
        if ((this.flags & CLOSING) !== 0) x.step = Step.CursorClosing
        else if ((this.flags & DISCARD) !== 0) this.closeCursor()
        else this.sink!.batch(false)
        return false
      case Backend.CopyOutResponse:
        if (x.step !== Step.Rows) this.violation(type)
        x.step = Step.CopyOut
        x.failure ??= new ProtocolError('COPY TO STDOUT cannot run through query(); its data was discarded')
        return false
      case Backend.CopyData:
        if (x.step !== Step.CopyOut) this.violation(type)
        return false
      case Backend.CopyDone:
        if (x.step !== Step.CopyOut) this.violation(type)
        x.step = Step.CopyOutDone
        return false
      case Backend.CopyInResponse:
        if (x.step !== Step.Rows) this.violation(type)
        return this.refuseCopyIn()
      case Backend.CloseComplete:
        if (x.step === Step.CursorClosing) x.step = Step.Complete
        else if (x.step !== Step.CloseComplete) this.violation(type)
        else x.step = Step.CloseReady
        return false
      case Backend.ReadyForQuery:
        return this.ready(buf[start]!)
      default:
        this.violation(type)
    }
  }

  /** The description of the statement, from this request's own Describe. */
  private described(fields: FieldDescription[]): void {
    const x = this.x!
    const stmt = x.stmt
    const catalog = this.session.catalog
    if (stmt !== null) {
      stmt.fields = fields
      if (stmt.state === StatementState.Parsing) stmt.state = StatementState.Ready
    } else x.fields = fields
    x.step = Step.Bind
    if ((this.flags & BIND_DEFERRED) !== 0) {
      // The parameters are bound by their types, so unknown ones must be
      // learned first: looked up right now, ahead of everything queued (this
      // request holds the writer), then bound.
      const unknown = x.paramTypes.filter((oid) => !catalog.knows(oid))
      if (this.sink !== null) for (const f of fields) if (!catalog.knows(f.typeOid)) unknown.push(f.typeOid)
      if (unknown.length > 0 && this.abortError === null && (this.flags & CLOSING) === 0) {
        void this.session.lookupTypesAhead(unknown, x.ctx).then(() => {
          if (x.step === Step.Bind) this.bindDescribed(fields, x.paramTypes)
        })
      } else this.bindDescribed(fields, x.paramTypes)
    } else if (stmt !== null) {
      // Start learning unknown parameter and column types now, for the executions to come.
      const shape = stmt.shape(this.view, catalog)
      if (shape.unknown.length > 0) void this.session.lookupTypes(shape.unknown)
    }
  }

  /** Rows may follow: settle on the plan, or hold rows until unknown column types are learned. */
  private rowsBegin(fields: FieldDescription[]): void {
    const x = this.x!
    x.fields = fields
    x.step = Step.Rows
    const catalog = this.session.catalog
    const sink = this.sink
    if (sink !== null) {
      // Described and its types looked up before it was bound: nothing to hold.
      if (sink.kind !== SinkKind.Raw && (x.plan === null || x.planVersion !== catalog.version)) {
        x.plan = this.view.plan(fields, x.formats)
        x.planVersion = catalog.version
      }
      sink.begin(fields, x.ctx)
      return
    }
    if (x.plan === null) {
      // Bound before the description was known: the rows come in text.
      if (x.stmt !== null) {
        const shape = x.stmt.shape(this.view, catalog)
        x.plan = shape.textPlan
        x.planVersion = shape.version
        x.planUnknown = shape.unknown
      } else {
        x.plan = this.view.plan(fields, noFormats)
        x.planVersion = catalog.version
        x.planUnknown = fields.filter((f) => !catalog.knows(f.typeOid)).map((f) => f.typeOid)
      }
    }
    if (x.planVersion === catalog.version && x.planUnknown.length === 0) return
    const missing = fields.filter((f) => !catalog.knows(f.typeOid)).map((f) => f.typeOid)
    if (missing.length > 0) {
      x.typesLookup = this.session.lookupTypes(missing)
      x.held = []
    } else if (x.planVersion !== catalog.version) {
      x.plan = this.view.plan(fields, x.formats)
      x.planVersion = catalog.version
    }
  }

  private row(x: Exchange, buf: Uint8Array, start: number, end: number): void {
    const sink = this.sink
    if (sink !== null) return this.sinkRow(sink, x, buf, start, end)
    const plan = x.plan!
    try {
      const row = (this.flags & ARRAY_ROWS) !== 0 ? plan.array(buf, start, end) : plan.object(buf, start, end)
      // Most pipelined queries return one row: an array of exactly one, not push()'s first 16 slots.
      if (x.rows === null) x.rows = [row]
      else x.rows.push(row)
    } catch (err) {
      if (err instanceof ProtocolError) throw err
      // A value that fails to decode fails this query only; the stream stays in step.
      x.failure ??= err as Error
    }
  }

  private sinkRow(sink: RowSink, x: Exchange, buf: Uint8Array, start: number, end: number): void {
    if ((this.flags & DISCARD) !== 0) return
    if (sink.kind === SinkKind.Raw) {
      // Passed on undecoded, but never a row that does not fit the description.
      const n = end - start >= 2 ? (buf[start]! << 8) | buf[start + 1]! : -1
      if (n !== x.fields.length) throw new ProtocolError(`server sent a DataRow with ${n} columns where the RowDescription has ${x.fields.length}`)
      sink.message(buf, start, end)
      return
    }
    const plan = x.plan!
    let row: unknown
    try {
      row = (this.flags & ARRAY_ROWS) !== 0 ? plan.array(buf, start, end) : plan.object(buf, start, end)
    } catch (err) {
      if (err instanceof ProtocolError) throw err
      // The consumer gets this error; the rest of the result is not worth reading.
      x.failure ??= err as Error
      this.flags |= DISCARD
      if (sink.kind === SinkKind.Cursor && (this.flags & EXECUTING) === 0) this.closeCursor()
      else x.ctx.requestCancel(this)
      return
    }
    sink.row(row)
  }

  /** CommandComplete or EmptyQueryResponse of a sink's query. */
  private sinkDone(buf: Uint8Array, start: number, end: number): void {
    const x = this.x!
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
      x.step = Step.CursorClosing
      return
    }
    x.ctx.writeNow(writeSync)
    x.ctx.releaseWriter(this)
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
    const x = this.x!
    const ctx = x.ctx
    if (ctx.inflightBehind > 0) {
      ctx.destroy(new ProtocolError('COPY FROM STDIN was started through query() while other queries were in flight; use copyFrom() for COPY FROM STDIN'))
      return false
    }
    x.failure ??= new ProtocolError('COPY FROM STDIN cannot run through query(); use copyFrom()')
    ctx.writeNow((w) => {
      writeCopyFail(w, 'COPY FROM STDIN is not supported through query()')
      writeSync(w)
    })
    x.step = Step.CopyInRefused
    return false
  }

  error(fields: PgErrorFields): void {
    const x = this.x!
    const step = x.step
    if (step === Step.CopyInRefused) {
      // The answer to our CopyFail; the failure explaining why is already set.
      x.step = Step.Complete
      return
    }
    if (step === Step.CloseComplete) {
      // A failed Close of an evicted statement concerns nobody; its ReadyForQuery follows.
      x.step = Step.CloseReady
      return
    }
    if (step === Step.CloseReady || step === Step.Done || (step === Step.Complete && x.failure instanceof PgError)) {
      throw new ProtocolError(`server sent an ErrorResponse where it was not allowed: ${fields.message}`)
    }
    const stmt = x.stmt
    let err = new PgError(fields, this.text)
    if (stmt !== null) {
      const parsing = (this.flags & PARSING) !== 0
      if (parsing && step === Step.Parse && fields.code === SqlState.DuplicatePreparedStatement) {
        // Our Parse met a statement of the same name on the server: not ours,
        // since names are unique to this process. The server skips to the
        // Sync, so nothing ran.
        this.session.statements?.delete(stmt)
        this.lostStatement(x)
      } else if (parsing && (step === Step.Parse || step === Step.ParamDesc || step === Step.StmtDesc)) {
        // The statement does not exist on the server: forget it, and let later
        // executions bound to it report this error instead of "does not exist".
        stmt.parseError = err
        this.session.statements?.delete(stmt)
      } else if (fields.code === SqlState.InvalidSqlStatementName && stmt.parseError !== null) {
        err = new PgError(stmt.parseError, this.text)
      } else if (fields.code === SqlState.InvalidSqlStatementName && (step === Step.Bind || step === Step.ParamDesc)) {
        // Prepared by an earlier Sync, gone now: DEALLOCATE, or a pooler that
        // gave this Sync another server connection. Bind (or Describe) failed,
        // so the query never ran and can be sent again.
        this.session.statements?.delete(stmt)
        this.lostStatement(x)
      } else if (fields.code === SqlState.InvalidSqlStatementName || (fields.code === SqlState.FeatureNotSupported && /cached plan/.test(fields.message))) {
        // The server lost the statement (DEALLOCATE) or its result type changed
        // under it: prepare it afresh next time.
        this.session.statements?.delete(stmt)
      }
    }
    const sink = this.sink
    if (sink !== null) {
      if (sink.kind === SinkKind.Raw && (this.flags & DISCARD) === 0) sink.error(fields)
      // A decoding failure that made the query stop early is what the consumer gets.
      if ((this.flags & DISCARD) === 0 || x.failure === null) x.failure = err
      this.flags &= ~EXECUTING
    } else x.failure = err
    x.step = Step.Complete
    if ((this.flags & UNSYNCED) !== 0) {
      // Written without a Sync yet (a statement described before it is bound,
      // a cursor between batches): the server now skips to one.
      this.flags &= ~(BIND_DEFERRED | UNSYNCED)
      x.ctx.writeNow(writeSync)
      x.ctx.releaseWriter(this)
    }
  }

  private ready(status: number): boolean {
    const x = this.x!
    if (x.step === Step.CloseReady) {
      x.closes--
      x.step = x.closes > 0 ? Step.CloseComplete : Step.Done
      if (x.step !== Step.Done) return false
      if (x.resend) this.sendAgain(x)
      return true
    }
    if (x.step !== Step.Complete && x.step !== Step.CopyInRefused) this.violation(Backend.ReadyForQuery)
    this.release(x)
    // Inside a transaction block the failure aborted the transaction: sending
    // the query again would only fail with 25P02, so the error is reported.
    if (x.resend && (status !== IDLE || this.abortError !== null || this.extras().resent >= MAX_RESENDS)) x.resend = false
    if (!x.resend) {
      // A raw pass-through writes out what it gathered before its caller hears the end.
      if (this.sink !== null && this.sink.kind === SinkKind.Raw) this.sink.chunkEnd()
      if (x.typesLookup !== null) {
        const lookup = x.typesLookup
        void lookup.then(() => this.settleHeld())
      } else this.settle()
    }
    if (x.closes > 0) {
      x.step = Step.CloseComplete
      return false
    }
    x.step = Step.Done
    if (x.resend) this.sendAgain(x)
    return true
  }

  /**
   * The server lost or refused the statement before anything of this query
   * ran. Past this connection's first such failure, it stops relying on
   * named statements (unless it is known to reach the server directly), and
   * the query is sent again once its ReadyForQuery shows it was not inside a
   * transaction block. A raw pass-through is not: its consumer saw the error.
   */
  private lostStatement(x: Exchange): void {
    const session = this.session
    if (session.pooling !== 'direct') session.namedStatementsLost()
    if (this.sink === null || this.sink.kind !== SinkKind.Raw) x.resend = true
  }

  /** Starts the exchange afresh on whatever the connection now uses (the unnamed statement, after a pooler lost ours). */
  private sendAgain(x: Exchange): void {
    const session = x.ctx.attachment as Session
    this.extras().resent++
    this.x = null
    this.flags &= ARRAY_ROWS | PREPARE
    session.resend(this)
  }

  /** Decodes the rows held for a type lookup, now that the catalog knows what it could learn. */
  private settleHeld(): void {
    const x = this.x!
    const held = x.held!
    x.held = null
    try {
      x.plan = this.view.plan(x.fields, x.formats)
    } catch (err) {
      x.failure ??= err as Error
    }
    if (x.failure === null) {
      for (const raw of held) {
        try {
          this.row(x, raw, 0, raw.length)
        } catch (err) {
          x.failure ??= err as Error
        }
      }
    }
    this.settle()
  }

  private settle(): void {
    const x = this.x!
    if (x.failure !== null) this.rejectWith(x.failure)
    else {
      const { command, rowCount } = parseCommandTag(x.tag)
      this.resolveWith({ rows: x.rows ?? [], rowCount, command, fields: x.fields })
    }
  }

  fail(err: Error, _sent: boolean): void {
    const x = this.x
    if (x === null) return this.rejectWith(err)
    if (x.step === Step.Done) return
    if (x.step < Step.CloseComplete) {
      this.release(x)
      this.rejectWith(err)
    }
    x.step = Step.Done
  }

  private release(x: Exchange): void {
    const stmt = x.stmt
    if (stmt === null) return
    const cache = this.session.statements
    if (cache !== null) cache.release(stmt)
    else stmt.users--
  }
}
