import { DriverAdapterError, type Error as AdapterError, type MappedError } from '@prisma/driver-adapter-utils'
import { AbortError, ConnectionError, PgError, TimeoutError, TransactionError } from '../../index.js'

// Prisma turns the error kinds of its adapters into its own error codes
// (P2002 for a unique violation, P1008 for a timeout, ...). Server errors are
// mapped by SQLSTATE, a timeout, an abort and a lost connection to their
// kinds; other errors pass through unchanged.

/** The columns named in a constraint error's detail: 'Key (a, b)=(1, 2) already exists.' */
function keyColumns(detail: string | undefined): string[] | undefined {
  const m = detail === undefined ? null : /Key \(([^)]*)\)/.exec(detail)
  return m === null ? undefined : m[1]!.split(', ').map((c) => c.replace(/^"(.*)"$/, '$1'))
}

function constraintOf(e: PgError): { fields: string[] } | { index: string } | undefined {
  const fields = keyColumns(e.detail)
  if (fields !== undefined) return { fields }
  if (e.column !== undefined) return { fields: [e.column] }
  if (e.constraint !== undefined) return { index: e.constraint }
  return undefined
}

function mapPgError(e: PgError): MappedError {
  switch (e.code) {
    case '22001':
      return { kind: 'LengthMismatch', ...(e.column !== undefined && { column: e.column }) }
    case '22003':
      return { kind: 'ValueOutOfRange', cause: e.message }
    case '22P02':
      return { kind: 'InvalidInputValue', message: e.message }
    case '23505': {
      const constraint = constraintOf(e)
      return { kind: 'UniqueConstraintViolation', ...(constraint !== undefined && { constraint }), ...(e.table !== undefined && { table: e.table }) }
    }
    case '23502':
      return { kind: 'NullConstraintViolation', ...(e.column !== undefined && { constraint: { fields: [e.column] } }) }
    case '23503': {
      const constraint = e.constraint !== undefined ? { index: e.constraint } : constraintOf(e)
      return { kind: 'ForeignKeyConstraintViolation', ...(constraint !== undefined && { constraint }) }
    }
    case '23001':
      return { kind: 'RestrictViolation', ...(e.constraint !== undefined && { constraint: { index: e.constraint } }) }
    case '3D000':
      return { kind: 'DatabaseDoesNotExist' }
    case '28000':
      return { kind: 'DatabaseAccessDenied' }
    case '28P01':
      return { kind: 'AuthenticationFailed' }
    case '40001':
    case '40P01':
      return { kind: 'TransactionWriteConflict' }
    case '42P01':
      return { kind: 'TableDoesNotExist', ...(quoted(e.message) !== undefined && { table: quoted(e.message)! }) }
    case '42703':
      return { kind: 'ColumnNotFound', ...(quoted(e.message) !== undefined && { column: quoted(e.message)! }) }
    case '42P04':
      return { kind: 'DatabaseAlreadyExists' }
    case '53300':
      return { kind: 'TooManyConnections', cause: e.message }
    default:
      return { kind: 'postgres', code: e.code, severity: e.severity, message: e.message, detail: e.detail, column: e.column, hint: e.hint }
  }
}

/** The first double-quoted name in a server message ('relation "users" does not exist'). */
function quoted(message: string): string | undefined {
  return /"([^"]*)"/.exec(message)?.[1]
}

/**
 * The error Prisma should see for `err`: server and connection errors as a
 * DriverAdapterError of Prisma's kinds, anything else unchanged. Prisma reads
 * only the mapped fields, so the pipegres error rides along as
 * `originalError` (not enumerable: it is no part of Prisma's shape).
 */
export function toPrismaError(err: unknown): unknown {
  let payload: AdapterError | null = null
  if (err instanceof PgError) payload = { ...mapPgError(err), originalCode: err.code, originalMessage: err.message }
  else if (err instanceof TimeoutError) payload = { kind: 'SocketTimeout' }
  else if (err instanceof AbortError) {
    const pg = err.cause instanceof PgError ? err.cause : null
    payload = { kind: 'postgres', code: pg?.code ?? '57014', severity: pg?.severity ?? 'ERROR', message: err.message, detail: pg?.detail, column: undefined, hint: undefined }
  } else if (err instanceof ConnectionError || (err instanceof TransactionError && err.code === 'PG_CONNECTION_CLOSED')) payload = { kind: 'ConnectionClosed' }
  if (payload === null) return err
  if (err instanceof Error && payload.originalCode === undefined) {
    payload.originalCode = (err as { code?: string }).code ?? err.name
    payload.originalMessage = err.message
  }
  Object.defineProperty(payload, 'originalError', { value: err, enumerable: false })
  const wrapped = new DriverAdapterError(payload)
  Object.defineProperty(wrapped, 'originalError', { value: err, enumerable: false })
  return wrapped
}
