import { ArgumentError } from '../errors.js'
import { Batch } from '../query/batch.js'
import { BatchStatement } from '../query/batch-statement.js'
import type { QueryRowMode } from '../query/result.js'
import { buildQuery } from '../query/sql-template.js'
import { batchOptionKeys, batchQueryOptionKeys, checkOptionKeys, checkRoute, checkSignal, checkTimeout, settingsOf, type QueryDefaults, type RouteOptions } from './query-options.js'
import { arm, checkQuery, declaredOf } from './query-requests.js'
import { operationOf } from '../trace/tracing.js'
import type { TypeOptions } from '../types/codec.js'

/** Options of batch(), for the batch as a whole. */
export interface BatchOptions extends RouteOptions {
  /** Aborts the batch: dropped if not sent yet, cancelled on the server (and so rolled back) if running. */
  signal?: AbortSignal
  /** Milliseconds after which the batch is cancelled and rejects with a TimeoutError. */
  timeout?: number
}

/** Options of one statement of a batch: how its result is built. */
export interface BatchQueryOptions {
  rowMode?: QueryRowMode
  /** false: the unnamed statement, parsed again each time, instead of the prepared-statement cache. */
  prepare?: boolean
  types?: TypeOptions
  /** As for query(): one row more, and the batch is cancelled (and rolled back) and rejects with a ResultLimitError. */
  maxRows?: number
  maxBytes?: number
}

/** What the function given to batch() adds statements with. */
export interface BatchBuilder {
  /** Adds a statement; its result takes this position in the batch's results. */
  query(text: string, values?: readonly unknown[], options?: BatchQueryOptions): void
  /** Adds a statement written as a tagged template, every interpolated value a parameter. */
  sql(strings: TemplateStringsArray, ...values: unknown[]): void
}

/**
 * The request for batch(), or null for a batch without statements (nothing
 * to send). Throws ArgumentError for wrong arguments, and whatever `fn` throws.
 */
export function makeBatch(d: QueryDefaults, fn: unknown, options: BatchOptions | undefined): Batch | null {
  if (typeof fn !== 'function') throw new ArgumentError(`batch() takes a function that adds the statements, (b) => { b.query(...) }, not ${fn === null ? 'null' : typeof fn}`)
  if (options !== undefined) {
    checkOptionKeys(options, batchOptionKeys, 'batch')
    checkSignal(options.signal)
    checkTimeout(options.timeout)
    checkRoute(options)
  }
  const statements: BatchStatement[] = []
  let open = true
  const add = (text: string, values: readonly unknown[] | undefined, opts: BatchQueryOptions | undefined): void => {
    const index = statements.length
    if (!open) throw new ArgumentError('a batch takes statements only while its function runs: add them before it returns')
    try {
      const vals = checkQuery(d, text, values)
      if (text.includes('\0')) throw new ArgumentError('query text cannot contain a NUL character')
      // The statements behind a COPY would be taken for its data: COPY has calls of its own.
      if (operationOf(text) === 'COPY') throw new ArgumentError('COPY cannot run in a batch; use copyFrom(), copyTo() or copyToRows()')
      statements.push(new BatchStatement(index, text, vals, settingsOf(d, opts, batchQueryOptionKeys, 'batch query', true), declaredOf(vals)))
    } catch (err) {
      if (err instanceof ArgumentError) throw new ArgumentError(`batch statement ${index}: ${err.message}`)
      throw err
    }
  }
  const builder: BatchBuilder = {
    query: (text, values, opts) => add(text, values, opts),
    sql: (strings, ...values) => {
      const built = buildQuery(strings, values)
      add(built.text, built.values, undefined)
    },
  }
  let returned: unknown
  try {
    returned = (fn as (b: BatchBuilder) => unknown)(builder)
  } finally {
    open = false
  }
  if (typeof (returned as PromiseLike<unknown> | null)?.then === 'function') {
    // Statements added after an await would be lost: refused instead, and the promise's own failure with it.
    void Promise.resolve(returned).catch(() => undefined)
    throw new ArgumentError('the function given to batch() must add its statements synchronously, but it returned a promise: compute the values first, then call batch()')
  }
  if (statements.length === 0) return null
  const req = new Batch(statements)
  arm(req, d, options)
  return req
}
