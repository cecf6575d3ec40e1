import { assignErrorFields, type PgErrorFields } from '../errors.js'

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

// WireServerError's fields are declared once, by PgErrorFields, and merged
// into the class (read-only; its message is Error's own).
export interface WireServerError extends Readonly<Omit<WireMessageFields, 'message'>> {}
/** The query failed on the server: its ErrorResponse, field by field. */
export class WireServerError extends Error {
  constructor(fields: WireMessageFields) {
    super(fields.message)
    assignErrorFields(this, fields)
  }

  override get name(): string {
    return 'WireServerError'
  }
}

/** A NoticeResponse (a warning or message the server sent along with the result). */
export type WireNotice = WireMessageFields
