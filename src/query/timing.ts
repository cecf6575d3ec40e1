/**
 * When a query's life passed each point that matters for a pipelined query,
 * in milliseconds on the monotonic clock of `performance.now()`. The gaps tell
 * waiting from working:
 * - `written - queued`: waiting to be written (the socket pushing back, a
 *   transaction or a pool holding the connection);
 * - `firstByte - written`: the network both ways, plus the server working on
 *   this query and on every query pipelined before it;
 * - `completed - firstByte`: the rest of the reply arriving and being decoded.
 *
 * A query's first reply byte comes after the previous query's last one, so in
 * a pipeline `firstByte` minus the previous result's `completed` is close to
 * the server's time for this query alone.
 */
export interface QueryTiming {
  /** When the query was issued (the call that made it). */
  readonly queued: number
  /** When its messages were handed to the socket. */
  readonly written: number
  /** When the socket read that held its first reply arrived. */
  readonly firstByte: number
  /** When its result was complete (its last reply decoded). */
  readonly completed: number
}

/** The timing of a result complete now (one shape for every kind of result). */
export function timingNow(queued: number, written: number, firstByte: number): QueryTiming {
  return { queued, written, firstByte, completed: performance.now() }
}
