// Leaf module: every other layer may import it, it imports nothing.

/** Stable codes of the errors pipegres raises itself (not the server's SQLSTATEs). */
export type ClientErrorCode =
  | 'PG_CONNECTION_REFUSED'
  | 'PG_CONNECTION_RESET'
  | 'PG_CONNECTION_CLOSED'
  | 'PG_CONNECTION_ENDED'
  | 'PG_CONNECT_TIMEOUT'
  | 'PG_TLS'
  | 'PG_PROTOCOL_VIOLATION'
  | 'PG_CONFIG'
  | 'PG_AUTH'
  | 'PG_PARAMETER'
  | 'PG_UNSUPPORTED'
  | 'PG_INVALID_ARGUMENT'
  | 'PG_ABORTED'
  | 'PG_QUERY_TIMEOUT'
  | 'PG_TRANSACTION_ROLLED_BACK'

/** Base class of every error raised by pipegres itself. */
export class PipegresError extends Error {
  readonly code: ClientErrorCode
  constructor(code: ClientErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
  override get name(): string {
    return this.constructor.name
  }
}

/**
 * The connection could not be opened, or it was lost. `code` tells which:
 * refused, reset, closed (by the server or the network), ended (by `end()`),
 * connect timeout, or TLS failure.
 */
export class ConnectionError extends PipegresError {}

/**
 * The server sent something the protocol does not allow at that point. The
 * connection is closed and every pending query is rejected with this error.
 */
export class ProtocolError extends PipegresError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PG_PROTOCOL_VIOLATION', message, options)
  }
}

/** A connection setting is unknown or malformed; `setting` names it. */
export class ConfigError extends PipegresError {
  readonly setting: string
  constructor(setting: string, message: string, options?: { cause?: unknown }) {
    super('PG_CONFIG', message, options)
    this.setting = setting
  }
}

/** Authentication failed on the client side; `method` names the method involved. */
export class AuthError extends PipegresError {
  readonly method: string
  constructor(method: string, message: string, options?: { cause?: unknown }) {
    super('PG_AUTH', message, options)
    this.method = method
  }
}

/** A parameter value could not be encoded; `index` is its 1-based `$n` number. */
export class ParameterError extends PipegresError {
  readonly index: number
  constructor(index: number, message: string, options?: { cause?: unknown }) {
    super('PG_PARAMETER', message, options)
    this.index = index
  }
}

/** Every field an ErrorResponse or NoticeResponse can carry, by its protocol field code. */
export interface PgErrorFields {
  severity: string
  /** The severity, never localised (protocol field 'V'). */
  severityNonLocalized: string | undefined
  code: string
  message: string
  detail: string | undefined
  hint: string | undefined
  position: number | undefined
  internalPosition: number | undefined
  internalQuery: string | undefined
  where: string | undefined
  schema: string | undefined
  table: string | undefined
  column: string | undefined
  dataType: string | undefined
  constraint: string | undefined
  file: string | undefined
  line: number | undefined
  routine: string | undefined
}

/** An API call was made with arguments it cannot accept (a query text that is not a string, an unknown option, ...). */
export class ArgumentError extends PipegresError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PG_INVALID_ARGUMENT', message, options)
  }
}

/**
 * The query was aborted through its AbortSignal. If it had reached the server
 * it was cancelled there; it may still have completed first (a write may have
 * happened). `reason` is the signal's reason.
 */
export class AbortError extends PipegresError {
  readonly reason: unknown
  constructor(message: string, reason?: unknown, options?: { cause?: unknown }) {
    super('PG_ABORTED', message, options)
    this.reason = reason
  }
}

/** The query ran past its `timeout` and was cancelled (on the server, if it had reached it). */
export class TimeoutError extends PipegresError {
  readonly timeout: number
  constructor(timeout: number, options?: { cause?: unknown }) {
    super('PG_QUERY_TIMEOUT', `query timed out after ${timeout} ms`, options)
    this.timeout = timeout
  }
}

/** An error reported by the server (an ErrorResponse), with all of its fields. */
export class PgError extends Error implements PgErrorFields {
  severity: string
  severityNonLocalized: string | undefined
  /** The SQLSTATE code, e.g. `23505` for a unique violation. */
  code: string
  detail: string | undefined
  hint: string | undefined
  position: number | undefined
  internalPosition: number | undefined
  internalQuery: string | undefined
  where: string | undefined
  schema: string | undefined
  table: string | undefined
  column: string | undefined
  dataType: string | undefined
  constraint: string | undefined
  file: string | undefined
  line: number | undefined
  routine: string | undefined
  /** The text of the query that failed, when the error belongs to one. */
  query: string | undefined

  constructor(fields: PgErrorFields, query?: string) {
    super(fields.message)
    this.severity = fields.severity
    this.severityNonLocalized = fields.severityNonLocalized
    this.code = fields.code
    this.detail = fields.detail
    this.hint = fields.hint
    this.position = fields.position
    this.internalPosition = fields.internalPosition
    this.internalQuery = fields.internalQuery
    this.where = fields.where
    this.schema = fields.schema
    this.table = fields.table
    this.column = fields.column
    this.dataType = fields.dataType
    this.constraint = fields.constraint
    this.file = fields.file
    this.line = fields.line
    this.routine = fields.routine
    this.query = query
  }
  override get name(): string {
    return 'PgError'
  }
}

/** A NoticeResponse: the same fields as an error, delivered without failing anything. */
export type PgNotice = PgErrorFields
