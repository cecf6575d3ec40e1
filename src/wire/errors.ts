import type { PgErrorFields } from '../errors.js'
import { errorFieldNames, numericFields } from '../protocol/backend.js'

// Errors of pipegres/wire: what the server reported (an ErrorResponse in the
// stream) is a WireServerError; a stream that is not a valid sequence of result
// messages is a WireProtocolError, because decoding it further could only
// produce guesses.

/** The stream is malformed, truncated, or holds a message a query result cannot contain. */
export class WireProtocolError extends Error {
  /** The same code the Node client gives its own protocol errors. */
  readonly code = 'PG_PROTOCOL_VIOLATION'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
  }
  override get name(): string {
    return 'WireProtocolError'
  }
}

/** A fetched response that did not carry a result stream (its HTTP status was not 2xx). */
export class WireHttpError extends Error {
  readonly status: number
  constructor(status: number, message: string) {
    super(message)
    this.status = status
  }
  override get name(): string {
    return 'WireHttpError'
  }
}

/** The fields an ErrorResponse or NoticeResponse may carry, named as the Node client names them (its PgError has the same). */
export type WireMessageFields = PgErrorFields

function emptyFields(): WireMessageFields {
  return {
    severity: 'ERROR',
    severityNonLocalized: undefined,
    code: 'XX000',
    message: '',
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
}

/**
 * Fills fields from (field code, value) pairs; codes this version does not
 * know are ignored, as the protocol asks. The field table is the Node
 * client's; the values are read here because wire keeps its own rules: the
 * severity defaults to the message's kind, and an empty number is absent.
 */
export function messageFields(pairs: ReadonlyArray<readonly [number, string]>, fallbackSeverity: string): WireMessageFields {
  const f = emptyFields()
  f.severity = fallbackSeverity
  let sawMessage = false
  for (const [code, value] of pairs) {
    const key = errorFieldNames[code]
    if (key === undefined) continue
    if (numericFields.has(key)) {
      const n = Number(value)
      ;(f as unknown as Record<string, unknown>)[key] = value !== '' && Number.isInteger(n) ? n : undefined
    } else {
      ;(f as unknown as Record<string, unknown>)[key] = value
      if (key === 'message') sawMessage = true
    }
  }
  if (!sawMessage) f.message = `${fallbackSeverity.toLowerCase()} without a message (SQLSTATE ${f.code})`
  return f
}

/** The query failed on the server: its ErrorResponse, field by field. */
export class WireServerError extends Error implements WireMessageFields {
  readonly severity: string
  readonly severityNonLocalized: string | undefined
  readonly code: string
  readonly detail: string | undefined
  readonly hint: string | undefined
  readonly position: number | undefined
  readonly internalPosition: number | undefined
  readonly internalQuery: string | undefined
  readonly where: string | undefined
  readonly schema: string | undefined
  readonly table: string | undefined
  readonly column: string | undefined
  readonly dataType: string | undefined
  readonly constraint: string | undefined
  readonly file: string | undefined
  readonly line: number | undefined
  readonly routine: string | undefined

  constructor(fields: WireMessageFields) {
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
  }

  override get name(): string {
    return 'WireServerError'
  }
}

/** A NoticeResponse (a warning or message the server sent along with the result). */
export type WireNotice = WireMessageFields
