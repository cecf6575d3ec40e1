import type { ConnectionConfig } from '../config/types.js'
import type { Connection } from '../connection/connection.js'
import { InflightBound } from '../connection/inflight-bound.js'
import type { Session } from '../query/session.js'
import type { Request } from '../connection/request.js'
import type { Result } from '../query/result.js'

/** Makes one of a lane's own statements (re-LISTEN, this probe): see LaneSettings.statement. */
export type LaneStatement = (sql: string, options?: { readonly prepare?: boolean; readonly rowMode?: 'array' }) => Request & { readonly promise: Promise<Result<unknown>> }

/**
 * Learns whether the connection reaches the server itself or a pooler: the
 * backend's own pid equals the one from BackendKeyData only on a direct
 * connection (a pooler makes up its own cancel key). Asked once, the first
 * time the connection is held for a transaction or reservation, where it
 * matters (see ExtendedRequest.encode).
 */
export function probePooling(conn: Connection, statement: LaneStatement): void {
  const session = conn.attachment as Session | undefined
  if (conn.closed || session === undefined || session === null || session.pooling !== 'unknown' || session.probing) return
  session.probing = true
  const req = statement('SELECT pg_backend_pid() AS pid', { prepare: false, rowMode: 'array' })
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

/** Linux's highest possible pid (pid_max is at most 2^22); other systems stay lower. */
const MAX_PLAUSIBLE_PID = 4_194_304

/**
 * What a pooled connection keeps in flight: at most this many requests (each
 * ends with its own Sync), and more only while fewer than POOLED_MAX_BYTES
 * are unanswered; the rest wait in the client.
 *
 * PgBouncer before 1.21 in transaction mode gives a server connection back to
 * its pool when that server has answered every Sync it was sent, even when
 * it has forwarded only the beginning of the client's next message: the rest
 * then goes to whichever client gets that server connection next, which ends
 * the session with 08P01 (invalid frontend message type), or replies go
 * missing. That happens when the client's socket holds more than PgBouncer
 * reads in one turn (sbuf_loopcnt reads of pkt_buf bytes: 5 x 4 KiB by
 * default) and a message straddles the end of a turn. With at most 8 KiB
 * unanswered before a request is written, everything PgBouncer has not read
 * yet fits in one turn for requests of up to about 12 KiB. (16 KiB still broke
 * 1.18 in our tests, with requests of up to 6 KiB.) A larger request still
 * goes, behind what is in flight, and can still meet that bug. The bound
 * narrows the bug's window and does not close it: PgBouncer's reads fill only
 * the free part of its buffer, so a turn can take in less; with PgBouncer's
 * malloc on transparent huge pages, 2 of 3 runs of 50 deep pipelines
 * (test/integration/lane/pgbouncer-deep-118) still met it. PgBouncer 1.21+
 * keeps the server connection while any forwarded message is unanswered.
 */
export const POOLED_MAX_REQUESTS = 100
export const POOLED_MAX_BYTES = 8 * 1024

/**
 * What a new connection knows, before any query, of the way to the server.
 * A backend's pid is a real process id: on Linux at most 2^22, and positive.
 * Poolers (PgBouncer, Supavisor) make up a random 32-bit key instead, nearly
 * always outside that range: such a connection uses unnamed statements from
 * the start (finding out from a lost statement instead costs an error in a
 * pipeline, and PgBouncer before 1.21 can drop replies that follow an error in
 * transaction mode), and bounds what it has in flight. A pooler declared with
 * the pooler setting counts too.
 */
export function settlePooling(session: Session, conn: Connection, config: ConnectionConfig): void {
  const pooler = config.pooler
  const pooled = pooler !== undefined || !(conn.processId > 0 && conn.processId <= MAX_PLAUSIBLE_PID)
  // A session-mode pooler keeps one server connection per client, so statements stay prepared there.
  if (pooler === 'session') session.pooling = 'direct'
  // prepare: 'always' says the pooler keeps named statements itself; a lost one still falls back to unnamed.
  else if (pooled && config.prepare === 'always') session.pooling = 'keeping'
  else if (pooled) session.namedStatementsLost()
  if (pooled) conn.bound = new InflightBound(POOLED_MAX_REQUESTS, POOLED_MAX_BYTES)
}
