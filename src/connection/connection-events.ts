import type { PgErrorFields } from '../errors.js'
import type { Notification } from '../protocol/backend.js'
import type { Request } from './request.js'

/** What a connection tells its owner. None of these may throw. */
export interface ConnectionEvents {
  notice?(fields: PgErrorFields): void
  notification?(n: Notification): void
  parameterStatus?(name: string, value: string): void
  /** A query failed with this SQLSTATE (an ErrorResponse that does not end the connection). */
  queryError?(code: string): void
  /** The last request in flight was answered and nothing waits to be written: the connection is idle. */
  idle?(): void
  /**
   * The connection is gone. Requests that were in flight have been failed;
   * those never written are handed back in `unsent` for the owner to send
   * elsewhere or fail. `err` is null after a clean end().
   */
  close?(err: Error | null, unsent: Request[]): void
}
