import type { PgErrorFields } from '../errors.js'
import type { Writer } from '../protocol/writer.js'

/**
 * What the connection knows of a request: the messages it writes, and a state
 * machine that accepts exactly the replies that request can legally receive, in
 * order. The connection routes every reply to the request at the head of its
 * in-flight FIFO and nothing else; a reply that request cannot accept is a
 * protocol violation that closes the connection, never a result shifted onto
 * another request.
 */
export interface Request {
  /**
   * Appends this request's messages to `w`. Called once, when the request's
   * turn to be written comes (requests wait unencoded while the socket is not
   * draining). If it throws, the connection discards what it wrote and rejects
   * the request through fail() without sending anything.
   */
  encode(w: Writer, conn: RequestContext): void
  /**
   * A reply for this request, other than ErrorResponse. Returns true when the
   * request is complete (normally on its ReadyForQuery). Throws ProtocolError
   * when the message is not legal in the request's current state.
   */
  handle(type: number, buf: Uint8Array, start: number, end: number): boolean
  /** An ErrorResponse for this request. Throws ProtocolError when one is not legal now. */
  error(fields: PgErrorFields): void
  /** A NoticeResponse (RAISE NOTICE, a warning) that arrived while this request was at the head of the queue. */
  notice?(fields: PgErrorFields): void
  /** The connection failed or closed: settle with `err`. `sent` tells whether the request had been written. */
  fail(err: Error, sent: boolean): void
  /**
   * The connection ended with a FATAL while an earlier request was running,
   * so the server never started this one: make it ready to be written again,
   * on another connection, as if it never had been. False when it cannot be
   * (it is settled or aborted). Asked only of a request that has seen no reply.
   */
  rewind?(): boolean
  /** True once the request was abandoned before being written (aborted): it is skipped, not written. */
  readonly dropped?: boolean
  /**
   * True for a request that speaks only the simple protocol (a simple query,
   * a replication command's COPY BOTH): the only kind a replication
   * connection takes (lane/replication-guard.ts).
   */
  readonly simpleProtocol?: boolean
  /**
   * Called after every chunk read from the socket while this request is at the
   * head of the queue: for a request that passes the server's bytes on and
   * gathers the messages of one chunk into one write.
   */
  chunkEnd?(): void
  /**
   * True when what the request makes of the server's bytes may keep views of
   * them after the read they came in (rows of rowMode 'lazy'). Plain sockets
   * read into one buffer shared by every connection, so while such a request
   * is in flight each read is copied first.
   */
  readonly keepsReads?: boolean
  /**
   * Set only while queries are traced: the trace waiting to learn which
   * server the request went to and how many were ahead of it. The client that
   * takes the request fills it in and clears it.
   */
  sentTrace?: SentTrace | null
}

/** What a query's trace learns when its request is handed to a connection (see Request.sentTrace). */
export interface SentTrace {
  serverAddress: string
  /** The connection (its lane, the same object across reconnections) that took the request. */
  connection?: ConnectionState
  serverPort: number
  inflight: number
}

/** What a lane tells of its current connection (0 and undefined while it has none). */
export interface ConnectionState {
  readonly processId: number
  /** The cancel key, 4 bytes (protocol 3.0) up to 256 (3.2). */
  readonly secretKey: Uint8Array | undefined
}

/** Whether reads must be copied while `req` is in flight: see Request.keepsReads; what chunkEnd passes on may be kept too. */
export function keepsReads(req: Request): boolean {
  return req.keepsReads === true || req.chunkEnd !== undefined
}

/** What a request may ask of the connection while it is in flight. */
export interface RequestContext {
  /** Requests written after the one asking (still waiting for replies). */
  readonly inflightBehind: number
  /**
   * Writes extra messages right away (e.g. CopyFail + Sync in answer to an
   * unexpected COPY), then `tail` as it is, if given: a large payload (COPY
   * data) goes to the socket without being copied into the write buffer. The
   * caller must not change `tail` afterwards, as with any stream write.
   */
  writeNow(fn: (w: Writer) => void, tail?: Uint8Array): void
  /** Closes the connection, failing every request with `err`. */
  destroy(err: Error): void
  /**
   * Stops writing the requests queued behind the caller until it calls
   * releaseWriter(): for a request that must see a reply before it can write
   * the rest of its messages (a statement described before it is bound).
   */
  holdWriter(holder: object): void
  releaseWriter(holder: object): void
  /**
   * Writes `req` at once and routes the next replies to it before the caller's.
   * Only for the head request while it holds the writer and has received every
   * reply it asked for so far (e.g. a type lookup between a statement's
   * description and its Bind).
   */
  writeAhead(req: Request): void
  /**
   * Cancels `req` on the server, if it is in flight, without hitting any other
   * request: see CancelScheduler.
   */
  requestCancel(req: Request): void
  /**
   * Stops reading from the socket until every holder has resumed: a consumer
   * that cannot keep up makes the server wait (TCP flow control) instead of
   * the client buffering without bound. Messages already read still arrive.
   */
  pauseReading(holder: object): void
  resumeReading(holder: object): void
  /** False while the socket is backed up (writes are still taken, and buffered). */
  readonly writable: boolean
  /** Calls `fn` once the socket has drained, or right away if it is not backed up. */
  whenWritable(fn: () => void): void
  /** What the owner attached to this connection (the query layer's session). */
  readonly attachment: unknown
  /** The write the request's messages go out with: stamped when it is handed to the socket. */
  readonly writeStamp: WriteStamp
  /** When the socket read being handled now arrived (performance.now()). */
  readonly readAt: number
}

/**
 * The moment one write of a connection was handed to the socket: every
 * request encoded into the same write shares the object, so stamping the
 * write costs one clock read for all of them, not one per request.
 */
export interface WriteStamp {
  at: number
}
