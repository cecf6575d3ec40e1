import type { SqlState } from './sql-state.js'

/**
 * The SQLSTATEs pipegres itself tells apart, by the names of the generated
 * table (sql-state.ts), which the compiler checks them against. The table is
 * the public API's: code that only imports this module leaves it out of a
 * bundle that does not import SqlState (about 8 KiB minified).
 */
export const Codes = {
  DeadlockDetected: '40P01',
  DuplicatePreparedStatement: '42P05',
  FeatureNotSupported: '0A000',
  InFailedSqlTransaction: '25P02',
  InternalError: 'XX000',
  InvalidSqlStatementName: '26000',
  ProtocolViolation: '08P01',
  QueryCanceled: '57014',
  SerializationFailure: '40001',
} as const satisfies Partial<typeof SqlState>
