import { ConnectionError, PgError, type PgErrorFields } from '../errors.js'
import type { Queue } from './queue.js'
import type { Request } from './request.js'

/**
 * The error for a request that meets a connection already closed: a fresh
 * one each time (every request keeps its own stack), with why it closed as
 * the cause. `closeError` is null after a clean end().
 */
export function closedError(closeError: Error | null, where: string): ConnectionError {
  if (closeError === null) return new ConnectionError('PG_CONNECTION_ENDED', 'the connection was ended by the client')
  if (closeError instanceof ConnectionError) return new ConnectionError(closeError.code, closeError.message, { cause: closeError })
  return new ConnectionError('PG_CONNECTION_CLOSED', `connection to ${where} is closed: ${closeError.message}`, { cause: closeError })
}

/**
 * A FATAL or PANIC ErrorResponse: the server is about to close the
 * connection. During startup it is the server's answer itself (a wrong
 * password, an unknown database); afterwards, why every pending query failed.
 */
export function fatalError(fields: PgErrorFields, duringStartup: boolean): Error {
  const pgErr = new PgError(fields)
  if (duringStartup) return pgErr
  return new ConnectionError('PG_CONNECTION_CLOSED', `server closed the connection: ${fields.message} (SQLSTATE ${fields.code})`, { cause: pgErr })
}

/**
 * A connection's failure as one query sees it: whether the server may have
 * run that query. One such error serves every query in the same situation.
 * Errors other than ConnectionError (a protocol violation, the caller's own
 * reason for destroy()) are passed on as they are.
 */
export function queryLost(err: Error, mayHaveRun: boolean): Error {
  if (!(err instanceof ConnectionError) || err.mayHaveRun === mayHaveRun) return err
  const note = mayHaveRun ? 'the query had been sent and may have run' : 'the query never ran'
  return new ConnectionError(err.code, `${err.message} (${note})`, err.cause === undefined ? { mayHaveRun } : { cause: err.cause, mayHaveRun })
}

/**
 * After a FATAL outside a transaction block: the server was working on the
 * request at the head, and ends the connection before reading on, so none of
 * the requests pipelined behind it had started. Those that can be written
 * again leave the in-flight queue, to go to another connection as if never
 * sent. (Inside a transaction block they stay and fail: they belonged to a
 * transaction that is gone.) A request holding the writer (one whose type
 * lookup runs ahead of it) has seen replies already and stays too.
 */
export function notStarted(inflight: Queue<Request>, holders: ReadonlySet<object>): Request[] {
  if (inflight.length < 2) return []
  const head = inflight.shift()!
  const again: Request[] = []
  const stay: Request[] = [head]
  for (const req of inflight.drain()) {
    if (!holders.has(req) && req.rewind?.() === true) again.push(req)
    else stay.push(req)
  }
  for (const req of stay) inflight.push(req)
  return again
}

/** Fails the requests in flight: each may have run, except after a FATAL only the head can have (see notStarted). */
export function failInflight(inflight: Queue<Request>, err: Error, fatal: boolean): void {
  if (inflight.length === 0) return
  const ran = queryLost(err, true)
  const behind = fatal ? queryLost(err, false) : ran
  const requests = inflight.drain()
  for (let i = 0; i < requests.length; i++) requests[i]!.fail(i === 0 ? ran : behind, true)
}
