import type { RequestContext, WriteStamp } from '../connection/request.js'
import { ProtocolError, ResultLimitError, type PgNotice } from '../errors.js'
import { writeCopyFail, writeSync } from '../protocol/frontend.js'
import { Backend } from '../protocol/message-codes.js'
import { timingNow, type QueryTiming } from './timing.js'
import type { FieldDescription } from '../protocol/backend.js'
import type { ColumnBuilder } from '../types/columns.js'
import type { RowPlan } from '../types/row-plan.js'
import type { TypeView } from '../types/view.js'
import type { QueryRowMode } from './result.js'
import type { AbortWatch } from './abort.js'
import { StatementState, type Shape, type Statement } from './statement-cache.js'
import { Step } from './step.js'

// The state an extended-protocol request keeps while it talks to the server,
// shared by every way of consuming a result (see extended-request.ts), and the
// two rules of the exchange that need nothing but that state: a COPY started
// through a query, and result limits.

/** A query's options, resolved once: its own over its queryable's defaults. */
export interface QuerySettings {
  readonly rowMode: QueryRowMode
  readonly prepare: boolean
  readonly view: TypeView
  /** maxRows and maxBytes, or undefined when the result may grow without bound. */
  readonly limits?: ResultLimits | undefined
  /** query() may share the execution of an identical read in flight (see queryable/coalesce.ts). */
  readonly coalesce?: boolean | undefined
}

/** How large a result may grow before the query is cancelled (Infinity: no bound). */
export interface ResultLimits {
  readonly maxRows: number
  readonly maxBytes: number
}

export const noFormats: number[] = []
export const noFields: FieldDescription[] = []
export const noOids: readonly number[] = []

// Bits of ExtendedRequest.flags.
/** This request wrote the Parse of its statement. */
export const PARSING = 1
/** Describe S was sent: its replies come before BindComplete. */
export const DESCRIBING = 2
/** Bind, Execute and Sync wait for the description (the writer is held meanwhile). */
export const BIND_DEFERRED = 4
export const SETTLED = 8
/** Abandoned before being written: the connection skips it. */
export const DROPPED = 16
/** Messages were written without their Sync: after an error the server skips to one, which must be sent. */
export const UNSYNCED = 32
/** A cursor's Execute is out: its rows, then PortalSuspended or CommandComplete, are coming. */
export const EXECUTING = 64
/** Rows of a consumer that gave up (closed early, or a value failed to decode) are dropped. */
export const DISCARD = 128
/** Closed early (a cursor's Close + Sync was written, or it is abandoned while being described). */
export const CLOSING = 256
/**
 * The unnamed statement is parsed again before its deferred Bind: a type
 * lookup sent ahead of it in the meantime replaced it (every unnamed Parse does).
 */
export const REPARSE = 512

export { Step } from './step.js'

/** What few requests need, kept out of the request itself (see ExtendedRequest). */
export interface Extra {
  /** The abort error, once the signal or timeout fired. */
  error: Error | null
  watch: AbortWatch | null
  /** Parameter types given with typed(), or null. */
  readonly declared: number[] | null
  /** The transaction this query runs in (its token), or null. */
  tx: object | null
  /** Times this query was sent again after the server lost its statement. */
  resent: number
}

/**
 * What a request needs from the moment it is written: its connection, where it
 * is in the exchange with the server, and the result being built.
 */
export class Exchange {
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
  /** The server lost or refused the named statement before anything ran: send the query again (see ExtendedRequest.error). */
  resend = false
  /** rowMode 'columns': the result being built column by column. */
  columnar: ColumnBuilder | null = null
  /** NoticeResponses raised while this request ran, or null for none. */
  notices: PgNotice[] | null = null
  /** Rows and bytes of row data received, counted only under a result limit. */
  received = 0
  receivedBytes = 0

  /** The write this exchange's messages went out with, and when its first reply arrived (0: not yet): see QueryTiming. */
  readonly written: WriteStamp
  firstByte = 0

  constructor(readonly ctx: RequestContext) {
    this.written = ctx.writeStamp
  }

  /** The statement's description arrived: it goes on the named statement (ready from now on), or on the exchange. */
  describedAs(fields: FieldDescription[]): void {
    const stmt = this.stmt
    if (stmt === null) {
      this.fields = fields
      return
    }
    stmt.fields = fields
    if (stmt.state === StatementState.Parsing) stmt.state = StatementState.Ready
  }

  /** The timing of a result complete now, of a query issued at `queued`. */
  timing(queued: number): QueryTiming {
    return timingNow(queued, this.written.at, this.firstByte)
  }

  /** Binds with `formats`, decoding rows by the shape's plan. */
  useShape(formats: number[], shape: Shape): void {
    this.formats = formats
    this.plan = shape.plan
    this.planVersion = shape.version
    this.planUnknown = shape.unknown
  }
}

/**
 * The COPY replies of a statement run through query(): false when `type`
 * cannot come at this step (a protocol violation). COPY TO STDOUT is read to
 * its end and discarded. COPY FROM STDIN belongs to copyFrom(): if nothing
 * was written behind this query, CopyFail + Sync ends the copy cleanly (the
 * server ignores the Sync sent with Execute while in copy mode). If other
 * requests were written already, the server has taken their messages as the
 * copy's end and skipped them: the stream can no longer be matched to
 * requests, so the connection is closed rather than risk a misattributed result.
 */
export function refuseCopy(x: Exchange, type: number): boolean {
  switch (type) {
    case Backend.CopyOutResponse:
      if (x.step !== Step.Rows) return false
      x.step = Step.CopyOut
      x.failure ??= new ProtocolError('COPY TO STDOUT cannot run through query(); its data was discarded')
      return true
    case Backend.CopyData:
      return x.step === Step.CopyOut
    case Backend.CopyDone:
      if (x.step !== Step.CopyOut) return false
      x.step = Step.CopyOutDone
      return true
    case Backend.CopyInResponse: {
      if (x.step !== Step.Rows) return false
      const ctx = x.ctx
      if (ctx.inflightBehind > 0) {
        ctx.destroy(new ProtocolError('COPY FROM STDIN was started through query() while other queries were in flight; use copyFrom() for COPY FROM STDIN'))
        return true
      }
      x.failure ??= new ProtocolError('COPY FROM STDIN cannot run through query(); use copyFrom()')
      ctx.writeNow((w) => {
        writeCopyFail(w, 'COPY FROM STDIN is not supported through query()')
        writeSync(w)
      })
      x.step = Step.CopyInRefused
      return true
    }
    default:
      return false
  }
}

/** Counts one more row of `size` bytes; the error to fail with once the result has passed a limit, else null. */
export function passedLimit(x: Exchange, limits: ResultLimits, size: number): ResultLimitError | null {
  const rows = ++x.received
  const bytes = (x.receivedBytes += size)
  if (rows <= limits.maxRows && bytes <= limits.maxBytes) return null
  return rows > limits.maxRows ? new ResultLimitError('maxRows', limits.maxRows, rows) : new ResultLimitError('maxBytes', limits.maxBytes, bytes)
}
