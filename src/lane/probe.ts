import type { Connection } from '../connection/connection.js'
import type { Session } from '../query/session.js'
import { makeQuery, type QueryDefaults } from '../queryable/queryable.js'

/**
 * Learns whether the connection reaches the server itself or a pooler: the
 * backend's own pid equals the one from BackendKeyData only on a direct
 * connection (a pooler makes up its own cancel key). Asked once, the first
 * time the connection is held for a transaction or reservation, where it
 * matters (see ExtendedRequest.encode).
 */
export function probePooling(conn: Connection, defaults: QueryDefaults): void {
  const session = conn.attachment as Session | undefined
  if (conn.closed || session === undefined || session === null || session.pooling !== 'unknown' || session.probing) return
  session.probing = true
  const req = makeQuery(defaults, 'SELECT pg_backend_pid() AS pid', undefined, { prepare: false, rowMode: 'array' })
  req.promise.then(
    (r) => {
      if (session.pooling === 'unknown') session.pooling = Number((r.rows[0] as unknown[] | undefined)?.[0]) === conn.processId ? 'direct' : 'pooled'
    },
    () => {
      session.probing = false
    },
  )
  conn.send(req, true)
}
