import { ArgumentError } from '../errors.js'
import { refuseSessionState } from './pooler-mode.js'
import { abortErrorOf } from '../query/abort.js'
import { ExtendedRequest } from '../query/extended-request.js'
import { SimpleQuery } from '../query/simple-query.js'
import { declaredTypes } from '../query/typed.js'
import { checkOptionKeys, checkRoute, checkRowMode, checkSignal, checkTimeout, queryOptionKeys, settingsOf, simpleQueryOptionKeys, type QueryDefaults, type QueryOptions, type SimpleQueryOptions } from './query-options.js'

// User calls turned into requests, with the same argument checks and option
// resolution for every queryable (and for the statements of a batch).

/** The values of query(), stream(), cursor() and queryRaw(), after checking the text and values. */
export function checkQuery(d: QueryDefaults, text: unknown, values: unknown): readonly unknown[] {
  if (typeof text !== 'string') throw new ArgumentError(`query text must be a string, not ${text === null ? 'null' : typeof text}`)
  if (values !== undefined && !Array.isArray(values)) throw new ArgumentError('query values must be an array')
  if (d.refuseSessionState === true) refuseSessionState(text)
  return (values ?? []) as unknown[]
}

/** Ties a request to its signal and timeout (checked by settingsOf). */
export function arm(req: Pick<ExtendedRequest, 'abort' | 'watch'>, d: QueryDefaults, options: { signal?: AbortSignal; timeout?: number } | undefined): void {
  const signal = options?.signal
  if (signal?.aborted) req.abort(abortErrorOf(signal))
  else req.watch(signal, options?.timeout ?? d.queryTimeout)
}

export const declaredOf = (values: readonly unknown[]): number[] | null => (values.length === 0 ? null : declaredTypes(values))

/** Builds the request for query(); throws ArgumentError for bad arguments. */
export function makeQuery(d: QueryDefaults, text: unknown, values: unknown, options: QueryOptions | undefined): ExtendedRequest {
  const vals = checkQuery(d, text, values)
  const req = ExtendedRequest.query(text as string, vals, settingsOf(d, options, queryOptionKeys, 'query', true), declaredOf(vals))
  arm(req, d, options)
  return req
}

export function makeSimpleQuery(d: QueryDefaults, text: unknown, options: SimpleQueryOptions | undefined): SimpleQuery {
  if (typeof text !== 'string') throw new ArgumentError('query text must be a string')
  if (text.includes('\0')) throw new ArgumentError('query text cannot contain a NUL character')
  if (d.refuseSessionState === true) refuseSessionState(text)
  if (options !== undefined) {
    checkOptionKeys(options, simpleQueryOptionKeys, 'simpleQuery')
    checkRoute(options)
  }
  const rowMode = options?.rowMode !== undefined ? checkRowMode(options.rowMode) : d.rowMode
  const signal = checkSignal(options?.signal)
  const timeout = options?.timeout !== undefined ? checkTimeout(options.timeout) : d.queryTimeout
  const req = new SimpleQuery(text, rowMode, d.view)
  if (signal?.aborted) req.abort(abortErrorOf(signal))
  else req.watch(signal, timeout)
  return req
}

/**
 * The statements a lane makes for itself (re-LISTEN on a new connection, the
 * pooling probe), made as its owner's queries are made, with its defaults: a
 * lane knows requests, not the options and checks of the query methods.
 */
export function laneStatements(defaults: QueryDefaults): (sql: string, options?: { readonly prepare?: boolean; readonly rowMode?: 'array' }) => ExtendedRequest {
  return (sql, options) => makeQuery(defaults, sql, undefined, options)
}

