import dc from 'node:diagnostics_channel'
import type { ConnectionConfig } from '../config/types.js'
import { PgError } from '../errors.js'
import type { Request } from '../connection/request.js'
import { SqlLexer } from '../sql/lexer.js'

// Tracing through node:diagnostics_channel (present in Node, Bun and Deno):
// the channels' names and the fields of their context objects are public API.
// Events follow TracingChannel.tracePromise: start (run with the channel's
// bound stores, so an AsyncLocalStorage set there is current for the send and
// for the handlers of the outcome), end, then error, asyncStart and asyncEnd
// when the promise settles. While nobody subscribes, nothing is allocated: the
// callers check `active()` first and go their untraced way.

/** What a `pipegres:query` event carries. */
export interface QueryTrace {
  /** The SQL text as sent. */
  query: string
  /** The first keyword of the statement, upper-cased ('SELECT', 'INSERT', 'WITH', ...). */
  operation: string
  /**
   * How the query runs: query(), simpleQuery(), stream(), cursor(), queryRaw(),
   * a COPY, describe(), or batch() (one event for the whole batch: `query`
   * holds its statements joined by ';\n', `values` an array of each one's values).
   */
  kind: 'query' | 'simple' | 'stream' | 'cursor' | 'raw' | 'copy' | 'describe' | 'batch'
  database: string
  user: string
  /** The server's host name, address or unix socket directory. */
  serverAddress: string
  serverPort: number
  /** Queries already pending on the connection (in flight or queued) when this one was sent. */
  inflight: number
  /** The parameter values: only with the client option `traceParameters: true`. */
  values?: readonly unknown[]
  /** When it succeeded: the command tag's command and row count (null for commands without one). */
  command?: string
  rowCount?: number | null
  /**
   * With the coalesce option, when the query was coalescable: the id of the
   * execution it is part of, the same in the trace of every query that shared it.
   */
  executionId?: number
  /** With executionId: true when the query joined an execution already in flight (it sent nothing), false for the query that began it. */
  coalesced?: boolean
  /** The SQLSTATE when the server reported an error (also for a timeout or abort the server saw). */
  sqlstate?: string
  result?: unknown
  error?: unknown
}

/** What a `pipegres:connect` event carries: one attempt to open a connection (the hosts are tried in turn). */
export interface ConnectTrace {
  database: string
  user: string
  /** The first host to try; once connected, the one that answered. */
  serverAddress: string
  serverPort: number
  /** The backend process id, once connected. */
  processId?: number
  result?: unknown
  error?: unknown
}

/** What a `pipegres:pool:acquire` event carries: a pool reserving a connection (reserve(), begin(), a cursor, a COPY). */
export interface AcquireTrace {
  database: string
  user: string
  serverAddress: string
  serverPort: number
  /** The pool's size limit, and its connections and waiters when the reservation was asked for. */
  max: number
  size: number
  waiting: number
  result?: unknown
  error?: unknown
}

type Traced = QueryTrace | ConnectTrace | AcquireTrace

export const queryChannel = dc.tracingChannel<unknown, QueryTrace>('pipegres:query')
export const connectChannel = dc.tracingChannel<unknown, ConnectTrace>('pipegres:connect')
export const acquireChannel = dc.tracingChannel<unknown, AcquireTrace>('pipegres:pool:acquire')

type Channel = dc.TracingChannel<unknown, object>

/** Whether anybody listens to any event of `ch` (TracingChannel.hasSubscribers is missing in Bun). */
export function active(ch: Channel): boolean {
  const all = (ch as { hasSubscribers?: boolean }).hasSubscribers
  if (all !== undefined) return all
  return ch.start.hasSubscribers || ch.end.hasSubscribers || ch.asyncStart.hasSubscribers || ch.asyncEnd.hasSubscribers || ch.error.hasSubscribers
}

/** What a queryable knows for its traces, from its connection settings and the traceParameters option. */
export interface TraceBase {
  readonly database: string
  readonly user: string
  readonly serverAddress: string
  readonly serverPort: number
  readonly parameters: boolean
}

export function traceBase(config: ConnectionConfig, parameters: boolean): TraceBase {
  const first = config.hosts[0]
  return { database: config.database, user: config.user, serverAddress: first?.host ?? '', serverPort: first?.port ?? 0, parameters }
}

/** The statement's first keyword, past whitespace and comments. */
export function operationOf(text: string): string {
  const lexer = new SqlLexer(text)
  return lexer.nextSignificant() === 'word' ? lexer.token().toUpperCase() : ''
}


interface Outcome {
  command?: unknown
  rowCount?: unknown
}

function settled(t: QueryTrace, r: unknown): void {
  if (Array.isArray(r)) {
    // simpleQuery(): one result per statement.
    let rows: number | null = null
    for (const one of r as Outcome[]) if (typeof one.rowCount === 'number') rows = (rows ?? 0) + one.rowCount
    t.rowCount = rows
    const last = r[r.length - 1] as Outcome | undefined
    t.command = typeof last?.command === 'string' ? last.command : ''
    return
  }
  const o = r as Outcome | null
  if (typeof o?.command === 'string') t.command = o.command
  if (typeof o?.rowCount === 'number' || o?.rowCount === null) t.rowCount = o.rowCount
}

function sqlstateOf(err: unknown): string | undefined {
  if (err instanceof PgError) return err.code
  const cause = (err as { cause?: unknown } | null)?.cause
  return cause instanceof PgError ? cause.code : undefined
}

/**
 * The tracePromise pattern over a promise made by `run` (which sends the
 * request): returns the promise the caller awaits, which settles after the
 * asyncEnd event.
 */
function trace<T, C extends Traced>(ch: dc.TracingChannel<unknown, C>, ctx: C, run: () => Promise<T>, done?: (ctx: C, r: T) => void): Promise<T> {
  const { start, end, asyncStart, asyncEnd, error } = ch
  return start.runStores(ctx, () => {
    try {
      return run().then(
        (r) => {
          done?.(ctx, r)
          ctx.result = r
          asyncStart.publish(ctx)
          asyncEnd.publish(ctx)
          return r
        },
        (err: unknown) => {
          ctx.error = err
          if (ch === (queryChannel as unknown)) (ctx as QueryTrace).sqlstate = sqlstateOf(err)
          error.publish(ctx)
          asyncStart.publish(ctx)
          asyncEnd.publish(ctx)
          throw err
        },
      )
    } catch (err) {
      ctx.error = err
      error.publish(ctx)
      throw err
    } finally {
      end.publish(ctx)
    }
  })
}

/**
 * Traces one query: `send` hands the request over, `promise` is the request's
 * outcome. The trace rides on `req` (Request.sentTrace) until a connection
 * takes it and fills in where it went; null for a call that sends nothing of
 * its own (a coalesced read joining one in flight).
 * Call only when active(queryChannel).
 */
export function traceQuery<T>(
  base: TraceBase,
  kind: QueryTrace['kind'],
  text: string,
  values: readonly unknown[] | undefined,
  promise: Promise<T>,
  send: () => void,
  req: Request | null,
  coalesce?: { readonly coalesced: boolean; readonly executionId: number },
): Promise<T> {
  const ctx: QueryTrace = {
    query: text,
    operation: operationOf(text),
    kind,
    database: base.database,
    user: base.user,
    serverAddress: base.serverAddress,
    serverPort: base.serverPort,
    inflight: 0,
  }
  if (base.parameters && values !== undefined) ctx.values = values
  if (coalesce !== undefined) {
    ctx.executionId = coalesce.executionId
    ctx.coalesced = coalesce.coalesced
  }
  return trace(
    queryChannel,
    ctx,
    () => {
      if (req !== null) req.sentTrace = ctx
      send()
      return promise
    },
    settled,
  )
}

/**
 * Traces a query whose outcome nobody awaits through this promise (a stream's
 * or a cursor's, a transaction's BEGIN): its trace must not turn a failure
 * into an unhandled rejection.
 */
export function traceQueryAside(
  base: TraceBase,
  kind: QueryTrace['kind'],
  text: string,
  values: readonly unknown[] | undefined,
  promise: Promise<unknown>,
  send: () => void,
  req: Request,
): void {
  traceQuery(base, kind, text, values, promise, send, req).catch(() => undefined)
}

/** Traces one connection attempt. Call only when active(connectChannel). */
export function traceConnect<T extends { processId: number; host: { host: string; port: number } }>(config: ConnectionConfig, open: () => Promise<T>): Promise<T> {
  const first = config.hosts[0]
  const ctx: ConnectTrace = { database: config.database, user: config.user, serverAddress: first?.host ?? '', serverPort: first?.port ?? 0 }
  return trace(connectChannel, ctx, open, (c, conn) => {
    c.serverAddress = conn.host.host
    c.serverPort = conn.host.port
    c.processId = conn.processId
  })
}

/** Traces a pool reserving a connection. Call only when active(acquireChannel). */
export function traceAcquire<T>(base: TraceBase, max: number, size: number, waiting: number, reserve: () => Promise<T>): Promise<T> {
  const ctx: AcquireTrace = {
    database: base.database,
    user: base.user,
    serverAddress: base.serverAddress,
    serverPort: base.serverPort,
    max,
    size,
    waiting,
  }
  return trace(acquireChannel, ctx, reserve)
}

/** Sends a request whose promise the caller does not get from here: traced aside when anybody listens. */
export function sendTraced(
  base: TraceBase | undefined,
  kind: QueryTrace['kind'],
  text: string,
  values: readonly unknown[] | undefined,
  req: Request & { readonly promise: Promise<unknown> },
  send: () => void,
): void {
  if (base !== undefined && active(queryChannel)) traceQueryAside(base, kind, text, values, req.promise, send, req)
  else send()
}

/** Client and pool options of tracing. */
export interface TracingOptions {
  /**
   * Put each query's parameter values in its `pipegres:query` trace (as
   * `values`). Off by default: values can hold personal data or secrets, and
   * whoever subscribes gets them.
   */
  traceParameters?: boolean
}
