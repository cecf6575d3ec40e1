import type { ConnectionConfig } from '../config/types.js'
import { CopyBothExchange } from '../connection/copy-both.js'
import type { Request } from '../connection/request.js'
import { ArgumentError } from '../errors.js'
import { SimpleQuery } from '../query/simple-query.js'

/**
 * Why `req` may not run on a connection opened with these settings, or null.
 * A walsender answers the extended protocol with an error only after
 * reading the whole pipeline; refusing here names the cause instead.
 */
export function replicationRefusal(config: ConnectionConfig, req: Request): Error | null {
  if (config.replication === undefined || req instanceof SimpleQuery || req instanceof CopyBothExchange) return null
  return new ArgumentError(
    'a replication connection (replication=' +
      (config.replication === 'database' ? 'database' : 'true') +
      ') accepts only the simple protocol: use simpleQuery() for replication commands and SQL, and subscribe() or replicate() on an ordinary client to stream',
  )
}
