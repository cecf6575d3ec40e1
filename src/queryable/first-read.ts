const noop = (): void => {}

/** A request a stream or cursor sends: it settles its promise, and may be dropped (aborted) before it is sent. */
export interface SentOnRead<T> {
  readonly promise: Promise<T>
  readonly dropped?: boolean
}

/**
 * The request behind a RowStream or a Cursor, made (its arguments checked)
 * when the stream or cursor is, but sent only on its first read: one that is
 * never read costs its connection nothing. Null when the call failed; the
 * stream or cursor then reports that error on its first read.
 */
export class FirstRead<Q extends SentOnRead<T>, T = Q extends SentOnRead<infer R> ? R : never> {
  constructor(
    readonly req: Q | null,
    private readonly send: (req: Q) => void,
  ) {
    // Its timeout may fire before the first read: the reader learns of it then.
    req?.promise.catch(noop)
  }

  /**
   * Sends the request (unless it was aborted before), the reader being told
   * how it ends; false when there is none to send.
   */
  start(onResult: (result: T) => void, onError: (err: Error) => void): boolean {
    const req = this.req
    if (req === null) return false
    req.promise.then(onResult, onError)
    if (!req.dropped) this.send(req)
    return true
  }
}
