import { AbortError, ConnectionError, PgError, PipegresError, ParameterError, type PgErrorFields } from '../../index.js'

// postgres.js's errors: PostgresError for the server's errors (its field
// names: severity_local, schema_name, ...), plain Errors with a `code` for
// its own (UNDEFINED_VALUE, NOT_TAGGED_CALL, ...), and connection errors
// whose code and message say what happened to which server
// ('write CONNECT_TIMEOUT 127.0.0.1:5432'). pipegres's error stays reachable
// as `cause`.

/** An error the server sent, with postgres.js's field names. */
export class PostgresError extends Error {
  severity_local!: string
  severity!: string
  code!: string
  detail?: string
  hint?: string
  position?: string
  internal_position?: string
  internal_query?: string
  where?: string
  schema_name?: string
  table_name?: string
  column_name?: string
  data_type_name?: string
  constraint_name?: string
  file?: string
  line?: string
  routine?: string
  declare query: string
  declare parameters: unknown[]
  declare args: unknown[]
  declare types: number[]

  constructor(fields: PgErrorFields, options?: { cause?: unknown }) {
    super(fields.message, options)
    this.name = 'PostgresError'
    this.severity_local = fields.severity
    this.severity = fields.severityNonLocalized ?? fields.severity
    this.code = fields.code
    const set = (k: keyof PostgresError, v: unknown): void => {
      if (v !== undefined) (this as Record<string, unknown>)[k] = typeof v === 'number' ? String(v) : v
    }
    set('detail', fields.detail)
    set('hint', fields.hint)
    set('position', fields.position)
    set('internal_position', fields.internalPosition)
    set('internal_query', fields.internalQuery)
    set('where', fields.where)
    set('schema_name', fields.schema)
    set('table_name', fields.table)
    set('column_name', fields.column)
    set('data_type_name', fields.dataType)
    set('constraint_name', fields.constraint)
    set('file', fields.file)
    set('line', fields.line)
    set('routine', fields.routine)
  }
}

/** postgres.js's errors of its own: `CODE: message`, with the code as `code`. */
/** The server's error for a cancelled query, made here for a query cancelled before it was sent. */
export const CANCELED: PgErrorFields = {
  severity: 'ERROR',
  severityNonLocalized: 'ERROR',
  code: '57014',
  message: 'canceling statement due to user request',
  detail: undefined,
  hint: undefined,
  position: undefined,
  internalPosition: undefined,
  internalQuery: undefined,
  where: undefined,
  schema: undefined,
  table: undefined,
  column: undefined,
  dataType: undefined,
  constraint: undefined,
  file: undefined,
  line: undefined,
  routine: undefined,
}

export function generic(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(`${code}: ${message}`), { code })
}

/** Where a connection error happened, as postgres.js names it: the socket path, or host:port. */
export interface Endpoint {
  host: string
  port: number
  path?: string
}

/** postgres.js's connection errors: 'write CODE host:port', with code, errno, address and port. */
export function connectionError(code: string, at: Endpoint, cause?: unknown): Error & { code: string } {
  const where = at.path ?? `${at.host}:${at.port}`
  const e = new Error(`write ${code} ${where}`, cause === undefined ? undefined : { cause })
  return Object.assign(e, at.path === undefined ? { code, errno: code, address: at.host, port: at.port } : { code, errno: code, address: at.path })
}

/** The pipegres codes of lost and ended connections, and postgres.js's for each. */
const connectionCodes: Record<string, string> = {
  PG_CONNECT_TIMEOUT: 'CONNECT_TIMEOUT',
  PG_CONNECTION_CLOSED: 'CONNECTION_CLOSED',
  PG_CONNECTION_ENDED: 'CONNECTION_ENDED',
  PG_CONNECTION_RESET: 'CONNECTION_CLOSED',
}

/** The OS error (ECONNREFUSED, ENOTFOUND, ...) under a failed connect, when there is one. */
function systemError(err: unknown): (Error & { code: string }) | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return e as Error & { code: string }
  }
  return undefined
}

/** Marks an error as being postgres.js-shaped already: passed through unchanged. */
const shaped = new WeakSet<object>()
export function markShaped<T extends object>(e: T): T {
  shaped.add(e)
  return e
}

/** What a query carries for its error: the text, the values as sent and as given. */
export interface ErrorContext {
  query: string
  parameters: unknown[]
  args: unknown[]
  /** Stack frames of the code that made the query ('at ...' lines), added to the error's. */
  origin: string | undefined
  debug: boolean
}

/**
 * pipegres's error as postgres.js reports it. A server error becomes a
 * PostgresError (query and parameters attached, enumerable only with
 * `debug`); a lost, ended or timed-out connection a connection error with
 * postgres.js's code; an error thrown by a type's parse or serialize is
 * given back as thrown.
 */
export function toPostgresError(err: unknown, at: Endpoint, ctx: ErrorContext | undefined): unknown {
  if (typeof err !== 'object' || err === null) return err
  // An error of this module's own (a destroyed instance, a custom socket's failure) under pipegres's: given back as it is.
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (shaped.has(e)) return e
  }
  let out: Error
  if (err instanceof PgError) {
    out = new PostgresError(err, { cause: err })
  } else if (err instanceof ConnectionError) {
    const sys = err.code === 'PG_CONNECTION_REFUSED' || err.code === 'PG_TLS' ? systemError(err) : undefined
    if (sys !== undefined) {
      out = sys
    } else if (err.cause instanceof PgError && err.code === 'PG_CONNECTION_CLOSED' && !/FATAL|termin/i.test(err.message)) {
      // A FATAL during startup (a wrong password, a missing database): the server's error, as postgres.js gives it.
      out = new PostgresError(err.cause, { cause: err })
    } else if (err.cause instanceof PgError && err.code === 'PG_CONNECTION_CLOSED' && err.mayHaveRun === undefined) {
      out = new PostgresError(err.cause, { cause: err })
    } else {
      const code = connectionCodes[err.code] ?? (err.code === 'PG_CONNECTION_REFUSED' ? 'ECONNREFUSED' : 'CONNECTION_CLOSED')
      out = connectionError(code, at, err)
    }
  } else if (err instanceof AbortError) {
    // query.cancel(): the server's query_canceled when it was running, else the same error made here, as postgres.js does.
    out = err.cause instanceof PgError ? new PostgresError(err.cause, { cause: err }) : new PostgresError(CANCELED, { cause: err })
  } else if (err instanceof ParameterError && err.cause instanceof Error) {
    out = err.cause
  } else if (!(err instanceof PipegresError) && (err as Error).cause instanceof Error && (err as Error).name === 'CodecError') {
    out = (err as Error).cause as Error
  } else {
    return err
  }
  if (ctx !== undefined && out instanceof PostgresError) {
    const enumerable = ctx.debug
    Object.defineProperties(out, {
      query: { value: ctx.query, enumerable, writable: true, configurable: true },
      parameters: { value: ctx.parameters, enumerable, writable: true, configurable: true },
      args: { value: ctx.args, enumerable, writable: true, configurable: true },
    })
  }
  if (ctx?.origin !== undefined && out !== err) out.stack = `${out.name}: ${out.message}\n${ctx.origin}`
  return markShaped(out)
}
