import { CopyRowError, type CopyRow } from '../copy/rows.js'
import { quoteColumnName } from '../copy/statement.js'
import { ArgumentError } from '../errors.js'
import { checkOptionKeys, checkSignal, checkTimeout, copyOptionKeys, type CopyOptions } from './query-options.js'

// Argument checks of the query methods, and the row sources of copyFromRows().

export function positiveInt(v: unknown, name: string, dflt: number): number {
  if (v === undefined) return dflt
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 2147483647) throw new ArgumentError(`${name} must be a positive integer, not ${JSON.stringify(v)}`)
  return v
}

/** Rows per CopyData message are chosen to make messages of about this size. */
export const MESSAGE_BYTES = 64 * 1024

export function checkText(text: unknown, what: string): string {
  if (typeof text !== 'string') throw new ArgumentError(`${what} must be a string, not ${text === null ? 'null' : typeof text}`)
  if (text.includes('\0')) throw new ArgumentError(`${what} cannot contain a NUL character`)
  return text
}

export function copyOptions(o: CopyOptions | undefined, known: ReadonlySet<string> = copyOptionKeys, what = 'COPY'): { signal: AbortSignal | undefined; timeout: number | undefined } {
  if (o === undefined) return { signal: undefined, timeout: undefined }
  if (typeof o !== 'object' || o === null) throw new ArgumentError('COPY options must be an object')
  checkOptionKeys(o, known, what)
  return { signal: checkSignal(o.signal), timeout: checkTimeout(o.timeout) }
}

export function checkColumns(columns: unknown): void {
  if (!Array.isArray(columns) || columns.length === 0) throw new ArgumentError('columns must be a non-empty array of column names')
  for (const c of columns) quoteColumnName(c as string)
  if (new Set(columns).size !== columns.length) throw new ArgumentError('columns must not name a column twice')
}

export function checkKeys(row: CopyRow, columns: ReadonlySet<string>, rowNumber: number): void {
  if (Array.isArray(row) || row === null || typeof row !== 'object') return
  for (const key in row) {
    if (!columns.has(key) && Object.hasOwn(row, key)) {
      throw new CopyRowError(rowNumber, key, `COPY row ${rowNumber} has a property ${JSON.stringify(key)} that the first row, whose keys are the columns, does not have; pass options.columns to name the columns`)
    }
  }
}

export type RowIterator = {
  next(): IteratorResult<CopyRow> | Promise<IteratorResult<CopyRow>>
  return(): Promise<void>
}

/** One way to pull rows from an array, an iterable or an async iterable; sync sources are not awaited row by row. */
export function rowSource(rows: unknown): RowIterator {
  if (rows !== null && typeof rows === 'object') {
    const r = rows as Partial<Iterable<CopyRow> & AsyncIterable<CopyRow>>
    const sync = r[Symbol.iterator]
    if (typeof sync === 'function') {
      const it = sync.call(rows)
      return { next: () => it.next(), return: async () => void it.return?.() }
    }
    const async = r[Symbol.asyncIterator]
    if (typeof async === 'function') {
      const it = async.call(rows)
      return { next: () => it.next(), return: async () => void (await it.return?.()) }
    }
  }
  throw new ArgumentError('copyFromRows() takes rows as an array, an iterable or an async iterable')
}

