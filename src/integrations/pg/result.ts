import { ConnectionError, PgError, ProtocolError, TimeoutError, type Field, type PgNotice, type Result as CoreResult } from '../../index.js'
import type { TextParser } from './parsers.js'
import type { TypeParserSource } from './types.js'

// pipegres results (every column in text, rows as arrays) turned into pg's
// Result: its field descriptions, its command tag split, and each value run
// through the parser pg would pick for its type.

/** A column as pg describes it. */
export interface FieldDef {
  name: string
  tableID: number
  columnID: number
  dataTypeID: number
  dataTypeSize: number
  dataTypeModifier: number
  format: 'text' | 'binary'
}

export class Result {
  command: string | null = null
  rowCount: number | null = null
  oid: number | null = null
  rows: unknown[] = []
  fields: FieldDef[] = []
  readonly rowAsArray: boolean
  /** The parsers used for this result, in column order (pg keeps them here too). */
  _parsers: TextParser[] | undefined = undefined

  constructor(rowMode?: string) {
    this.rowAsArray = rowMode === 'array'
  }
}

/** pipegres's description of a column in pg's words, `format` the one its values come in. */
export function fieldDef(f: Field, format: FieldDef['format']): FieldDef {
  return {
    name: f.name,
    tableID: f.tableOid,
    columnID: f.columnNumber,
    dataTypeID: f.typeOid,
    dataTypeSize: f.typeSize,
    dataTypeModifier: f.typeModifier,
    format,
  }
}

// A statement's description is shared by its executions: the converted fields are kept with it.
const fieldCache = new WeakMap<readonly Field[], FieldDef[]>()

function pgFields(fields: readonly Field[]): FieldDef[] {
  let out = fieldCache.get(fields)
  if (out === undefined) {
    out = fields.map((f) => fieldDef(f, f.format === 1 ? 'binary' : 'text'))
    fieldCache.set(fields, out)
  }
  // Each result gets its own array, as in pg, so callers may change it.
  return out.map((f) => ({ ...f }))
}

/** pg splits the tag on its first word: 'CREATE TABLE' is the command 'CREATE'. */
function commandOf(command: string): string | null {
  const m = /^[A-Za-z]+/.exec(command)
  return m === null ? null : m[0]
}

/** Converts one pipegres result (rows as arrays of text) in place into pg's shape. */
export function toPgResult(core: CoreResult<unknown[]>, types: TypeParserSource, rowMode: string | undefined): Result {
  const r = new Result(rowMode)
  r.command = commandOf(core.command)
  r.rowCount = core.rowCount
  // pipegres keeps only the row count of 'INSERT oid count'; the oid is always 0 since PostgreSQL 12.
  if (r.command === 'INSERT') r.oid = 0
  const fields = core.fields
  r.fields = pgFields(fields)
  const n = fields.length
  const parsers = new Array<TextParser>(n)
  for (let i = 0; i < n; i++) parsers[i] = types.getTypeParser(fields[i]!.typeOid, 'text')
  r._parsers = parsers
  const rows = core.rows as unknown[][]
  if (r.rowAsArray) {
    for (const row of rows) {
      for (let i = 0; i < n; i++) {
        const v = row[i]
        if (v !== null) row[i] = parsers[i]!(v as string)
      }
    }
    r.rows = rows
    return r
  }
  const names = fields.map((f) => f.name)
  const out = new Array<Record<string, unknown>>(rows.length)
  for (let j = 0; j < rows.length; j++) {
    const row = rows[j]!
    const obj: Record<string, unknown> = {}
    for (let i = 0; i < n; i++) {
      const v = row[i]
      obj[names[i]!] = v === null ? null : parsers[i]!(v as string)
    }
    out[j] = obj
  }
  r.rows = out
  return r
}

type Constructor = new (...args: any[]) => object

/**
 * The fields pg declares on both DatabaseError and NoticeMessage, each an own
 * property from the start (undefined until copyFields fills it), over
 * whichever base the class has: Error for the one, a plain object for the other.
 */
function withServerFields<B extends Constructor>(Base: B) {
  return class extends Base {
    length = 0
    severity: string | undefined
    code: string | undefined
    detail: string | undefined
    hint: string | undefined
    position: string | undefined
    internalPosition: string | undefined
    internalQuery: string | undefined
    where: string | undefined
    schema: string | undefined
    table: string | undefined
    column: string | undefined
    dataType: string | undefined
    constraint: string | undefined
    file: string | undefined
    line: string | undefined
    routine: string | undefined
  }
}

/** An error from the server, with pg's field names (position, internalPosition and line as strings). */
export class DatabaseError extends withServerFields(Error) {
  constructor(message: string, length = 0, name = 'error') {
    super(message)
    this.length = length
    this.name = name
  }
}

/** A notice as pg emits it: the fields of an error, on a plain object (not an Error). */
export class NoticeMessage extends withServerFields(class {}) {
  readonly name = 'notice'
  message: string | undefined
}

/**
 * Copies the fields pg's class has (it declares each as a property) from
 * pipegres's error or notice (each field an own enumerable property): no
 * list of fields is kept here, so pg's shape decides which are copied, and
 * pipegres's numbers become the strings pg gives.
 */
function copyFields<T extends DatabaseError | NoticeMessage>(target: T, e: PgError | PgNotice): T {
  const t = target as unknown as Record<string, unknown>
  const from = e as unknown as Record<string, unknown>
  for (const key of Object.keys(e)) {
    if (!Object.hasOwn(target, key)) continue
    const v = from[key]
    t[key] = typeof v === 'number' ? String(v) : v
  }
  return target
}

/** The server errors already reported for a lost connection: each of its queries gets a copy of the loss, with the same cause. */
const reported = new WeakSet<PgError>()

/** How pg reports a lost connection in an 'error' event: the server's reason when it gave one (57P01...). */
export function lossError(err: unknown): Error {
  if (!(err instanceof ConnectionError && err.cause instanceof PgError)) return toPgError(err) as Error
  const out = copyFields(new DatabaseError(err.cause.message), err.cause)
  Object.defineProperty(out, 'cause', { value: err, enumerable: false, writable: true, configurable: true })
  return out
}

/** The error with pg's phrase added to its message, once. */
function withPhrase(err: Error, phrase: string): Error {
  if (!err.message.includes(phrase)) err.message = `${err.message} (${phrase})`
  return err
}

/** A server error as pg's DatabaseError (its stack kept); anything else unchanged. */
export function toPgError(err: unknown): unknown {
  // pg's client-side query_timeout gives this message (pipegres also cancels the query on the server).
  if (err instanceof TimeoutError) return new Error('Query read timeout', { cause: err })
  // The server said why before it closed the connection (57P01 from pg_terminate_backend, a shutdown): pg reports that error.
  if (err instanceof ConnectionError && err.cause instanceof PgError) {
    // pg gives it to the query that was running; those queued behind it get 'Connection terminated unexpectedly'.
    if (reported.has(err.cause)) return new Error('Connection terminated unexpectedly', { cause: err })
    reported.add(err.cause)
    return lossError(err)
  }
  // pg's words that applications match on, after pipegres's own account of what happened.
  if (err instanceof ConnectionError && err.code === 'PG_CONNECT_TIMEOUT') return withPhrase(err, 'timeout expired')
  if (err instanceof ProtocolError) return withPhrase(err, 'invalid response')
  // pg's messages for a connection ended by end() and for one lost; pipegres's error is the cause.
  if (err instanceof ConnectionError && (err.code === 'PG_CONNECTION_ENDED' || err.code === 'PG_CONNECTION_CLOSED' || err.code === 'PG_CONNECTION_RESET')) {
    return new Error(err.code === 'PG_CONNECTION_ENDED' ? 'Connection terminated' : 'Connection terminated unexpectedly', { cause: err })
  }
  if (!(err instanceof PgError)) return err
  const out = copyFields(new DatabaseError(err.message), err)
  if (err.stack !== undefined) out.stack = err.stack.replace(/^PgError/, 'error')
  return out
}

/** A NoticeResponse in the shape pg emits for 'notice'. */
export function toPgNotice(n: PgNotice): NoticeMessage {
  return copyFields(new NoticeMessage(), n)
}
