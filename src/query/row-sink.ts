import type { PgErrorFields } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import type { Exchange, QuerySettings } from './exchange.js'
import { noNotices, parseCommandTag, type Result } from './result.js'
import type { Session } from './session.js'

// The two things that make one extended-protocol exchange (extended-request.ts)
// serve every way of reading a result: a row sink, which decides what becomes
// of the rows and what the request settles with, and an execution policy,
// which decides how the statement is executed. Sinks are small objects that
// know nothing of the protocol's steps: each can be fed a description, rows
// and an end by a test without a server.

/** How a statement is executed. */
export interface ExecutionPolicy {
  /**
   * The statement is described, and its types learned, before it is bound:
   * rows decoded as they arrive cannot wait for a type lookup, and typed
   * columns need binary results from the first execution on.
   */
  readonly describeFirst: boolean
  /**
   * Rows per Execute: 0 runs the portal to its end under the query's Sync; a
   * limit executes it a batch at a time (Execute, Flush), the writer held
   * until it is exhausted or closed (a cursor).
   */
  readonly rowLimit: number
  /** The portal is described after Bind, and its RowDescription (which carries the formats) handed to the sink. */
  readonly describePortal: boolean
  /** Parse and Describe only: nothing is bound or executed. */
  readonly describeOnly: boolean
}

/** query(): bound at once, run to its end. */
export const runToEnd: ExecutionPolicy = { describeFirst: false, rowLimit: 0, describePortal: false, describeOnly: false }
/** stream(), rowMode 'columns': described before it is bound, then run to its end. */
export const describedFirst: ExecutionPolicy = { describeFirst: true, rowLimit: 0, describePortal: false, describeOnly: false }
/** queryRaw(): described first, and its portal described too. */
export const rawPolicy: ExecutionPolicy = { describeFirst: true, rowLimit: 0, describePortal: true, describeOnly: false }
/** describe(). */
export const describeOnly: ExecutionPolicy = { describeFirst: false, rowLimit: 0, describePortal: false, describeOnly: true }

/** cursor(): described first, its portal executed `rowLimit` rows at a time. */
export function portalPolicy(rowLimit: number): ExecutionPolicy {
  return { describeFirst: true, rowLimit, describePortal: false, describeOnly: false }
}

/** What a sink may ask of the request it serves. */
export interface RowSource {
  readonly text: string
  readonly settings: QuerySettings
  /** Parameter types given with typed(), or null. */
  readonly declared: number[] | null
  /** When the query was issued: see QueryTiming. */
  readonly queued: number
  /** The session of the connection the request was written on. */
  readonly session: Session
  /** The query fails with `err` (unless it failed already); the rest of its rows are dropped and it is stopped on the server. */
  giveUp(x: Exchange, err: Error): void
  /** The rest of the rows are dropped (the query fails with what x.failure holds). */
  dropRows(): void
}

/**
 * Where a statement's result goes. The exchange calls begin() once the
 * columns are known (x.fields is set), row() for each DataRow it lets through
 * (not dropped, within the result limits), complete() at CommandComplete or
 * EmptyQueryResponse, and outcome() for what the request resolves with. The
 * optional members are for the few sinks that need them.
 */
export interface RowSink<T = Result<unknown>> {
  /** Rows go to a consumer as they arrive: one that gives up (an abort) has the rest dropped. */
  readonly streams: boolean
  /** Its rows are collected into one outcome (query()'s sinks): a transaction's statement cache treats it as a query's. */
  readonly collects?: boolean
  begin(q: RowSource, x: Exchange): void
  /** One DataRow, its body [start, end) in buf (valid only during the call). */
  row(q: RowSource, x: Exchange, buf: Uint8Array, start: number, end: number): void
  /** CommandComplete or EmptyQueryResponse, [start, end) in buf; not called once the rows are dropped. */
  complete(q: RowSource, x: Exchange, buf: Uint8Array, start: number, end: number): void
  /** What the request resolves with, at its end. */
  outcome(q: RowSource, x: Exchange): T

  /** The result formats to ask for in Bind (queryRaw chooses its own). */
  formats?(fields: readonly FieldDescription[]): number[]
  /** The portal's RowDescription message, after begin() (see ExecutionPolicy.describePortal). */
  description?(buf: Uint8Array, start: number, end: number): void
  /** A batch of a row-limited portal is complete (PortalSuspended); complete() ends the last. */
  suspended?(): void
  /** The server's error, while the rows are still wanted. A sink that sees it makes the query one that is never sent again. */
  errorResponse?(fields: PgErrorFields): void
  /** Set for a sink that passes bytes on: called after every socket chunk (see Request.chunkEnd) and before the request settles. */
  readonly chunkEnd?: (() => void) | undefined
  /** Rows are copied as they arrive: nothing keeps views of the socket's reads, whatever the row mode. */
  readonly copiesRows?: boolean
  /** Stops the query on the server in place of the request's own cancel (a batch's statement: the batch is cancelled). */
  halt?(x: Exchange): void
  /**
   * The end goes to the sink instead of the request's promise, which then
   * never settles: the outcome, or the error (an abort's, with what happened
   * as its cause).
   */
  ended?(outcome: T | null, err: Error | null): void
  /**
   * What the request's promise follows instead of rejecting with `err`: the
   * error as the caller reports it, or an outcome got otherwise (the query
   * run again), with no handler of the caller's between; undefined: `err`, as
   * without this member.
   */
  failed?(err: Error): PromiseLike<T> | undefined
}

/** The result of a query whose rows were gathered in x.rows: rows, command tag, columns. */
export function resultOf(q: RowSource, x: Exchange): Result<unknown> {
  const { command, rowCount } = parseCommandTag(x.tag)
  return { rows: x.rows ?? [], rowCount, command, fields: x.fields, notices: x.notices ?? noNotices, timing: x.timing(q.queued) }
}
