import { ConnectionError, PgError, type PgErrorFields } from '../errors.js'

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
