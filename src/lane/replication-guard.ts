import type { ConnectionConfig } from '../config/types.js'
import type { Request } from '../connection/request.js'
import { ArgumentError } from '../errors.js'

/**
 * Why `req` may not run on a connection opened with these settings, or null.
 * A walsender answers the extended protocol with an error only after
 * reading the whole pipeline; refusing here names the cause instead.
 */
export function replicationRefusal(config: ConnectionConfig, req: Request): Error | null {
  // By a flag, not instanceof: the COPY BOTH exchange is pipegres/replication's, which a client never loads.
  if (config.replication === undefined || req.simpleProtocol === true) return null
  return new ArgumentError(
    'a replication connection (replication=' +
      (config.replication === 'database' ? 'database' : 'true') +
      ') accepts only the simple protocol: use simpleQuery() for replication commands and SQL, and subscribe() or replicate() of pipegres/replication (given an ordinary client or settings) to stream',
  )
}
