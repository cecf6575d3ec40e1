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

/** The fields an ErrorResponse or NoticeResponse may carry, named as the Node client names them. */
export interface WireMessageFields {
  /** Possibly localised: 'ERROR', 'FEHLER', 'NOTICE', ... */
  severity: string
  /** Never localised (absent before PostgreSQL 9.6). */
  severityNonLocalized: string | undefined
  /** The SQLSTATE, e.g. '22012'. */
  code: string
  message: string
  detail: string | undefined
  hint: string | undefined
  /** 1-based character position in the query text. */
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

const FIELD_KEYS: Record<string, keyof WireMessageFields> = {
  S: 'severity',
  V: 'severityNonLocalized',
  C: 'code',
  M: 'message',
  D: 'detail',
  H: 'hint',
  P: 'position',
  p: 'internalPosition',
  q: 'internalQuery',
  W: 'where',
  s: 'schema',
  t: 'table',
  c: 'column',
  d: 'dataType',
  n: 'constraint',
  F: 'file',
  L: 'line',
  R: 'routine',
}

const NUMERIC_KEYS = new Set<keyof WireMessageFields>(['position', 'internalPosition', 'line'])

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

/** Fills fields from (code letter, value) pairs; codes this version does not know are ignored, as the protocol asks. */
export function messageFields(pairs: ReadonlyArray<readonly [string, string]>, fallbackSeverity: string): WireMessageFields {
  const f = emptyFields()
  f.severity = fallbackSeverity
  let sawMessage = false
  for (const [letter, value] of pairs) {
    const key = FIELD_KEYS[letter]
    if (key === undefined) continue
    if (NUMERIC_KEYS.has(key)) {
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
