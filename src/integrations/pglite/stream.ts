import { ConnectionError } from '../../index.js'
import type { ByteStream } from '../../index.js'
import { copyCall, endsCopyIn, findCopyInResponse, isCopyData, isCopyFromStdin, isParseOfCopyFromStdin, probeMessages, queryMessage, refusal, withoutCopyInResponse } from './copy-in.js'

/** What pipegres needs of a PGlite instance (`@electric-sql/pglite` 0.4 and 0.5). */
export interface PGliteLike {
  execProtocolRaw(message: Uint8Array, options?: { syncToFs?: boolean }): Promise<Uint8Array>
  /** PGlite's own lock around its query(): taken for each exchange so the two never interleave. */
  runExclusive?<T>(fn: () => Promise<T>): Promise<T>
  readonly closed?: boolean
  /** False from `new PGlite()` until its WebAssembly instance and data directory are up. */
  readonly ready?: boolean
  /** Settles when `ready` turns true, or rejects when PGlite could not start. */
  readonly waitReady?: Promise<void>
}

/** How a stream gives PGlite's one session back when it closes. */
export interface SessionRelease {
  /**
   * Called once, when the stream closes (ended, destroyed, or failed before the
   * connection was ready), with the reset of the session that must finish
   * before the next client may start on it.
   */
  (reset: Promise<void>): void
}

type Listener = (...args: any[]) => void

/** Messages for one execProtocolRaw() call: as written, a COPY FROM STDIN to probe first, or a COPY with all its data. */
interface Segment {
  kind: 'plain' | 'probe' | 'copy' | 'refuse'
  parts: Uint8Array[]
  /** Whether a ReadyForQuery answers it: it ends with a Sync or Query (or is the startup packet), not with a Flush. */
  ready: boolean
}

// Messages the client may write that PGlite must not see: Terminate ('X')
// would not end its one session anyway, and the session outlives the client.
const TERMINATE = 0x58
const SYNC = 0x53
const QUERY = 0x51
const READY_FOR_QUERY = 0x5a

/**
 * A segment ends with at most one Sync or Query, so its answer holds at most
 * one ReadyForQuery, and none when no Sync ends it (a cursor's Execute and
 * Flush). PGlite (0.4) sends one more right after an ErrorResponse in the
 * extended protocol, before the one for the Sync if there is one; the client
 * would rightly take a reply nobody asked for as a broken server, so only the
 * last is kept, and only when the segment asked for one.
 */
function readyAsAsked(reply: Uint8Array, asked: boolean, status: (byte: number) => void): Uint8Array {
  const view = new DataView(reply.buffer, reply.byteOffset, reply.byteLength)
  const ready: number[] = []
  for (let at = 0; at + 5 <= reply.length; at += 1 + view.getInt32(at + 1)) if (reply[at] === READY_FOR_QUERY) ready.push(at)
  if (asked && ready.length > 0) status(reply[ready[ready.length - 1]! + 5]!)
  const dropped = asked ? ready.slice(0, -1) : ready
  if (dropped.length === 0) return reply
  const parts: Uint8Array[] = []
  let from = 0
  for (const at of dropped) {
    parts.push(reply.subarray(from, at))
    from = at + 6
  }
  parts.push(reply.subarray(from))
  return concat(parts)
}
// Run when a client lets go of the session: an open transaction, the client's
// prepared statements, cursors and LISTENs would otherwise be left behind in
// PGlite's only session, in the way of the next client. Settings and temporary
// tables stay (DISCARD ALL would also undo what PGlite's own API set up there).
const RESET = ['ROLLBACK', 'DEALLOCATE ALL', 'CLOSE ALL', 'UNLISTEN *']


/**
 * A byte stream into a PGlite instance, in process: what the client writes is
 * cut into whole protocol messages, grouped up to each Sync or Query, and each
 * group goes to PGlite's execProtocolRaw() in one call, in order; the answers
 * are this stream's data. Calls never overlap, so replies come back in the
 * order the client wrote its requests, as on a socket, and everything the
 * client pipelined is sent without waiting for the client to read a reply.
 */
export class PGliteStream implements ByteStream {
  private readonly listeners = new Map<string, Listener[]>()
  /** Bytes written and not yet cut into whole messages. */
  private pending: Uint8Array = new Uint8Array(0)
  /** Whole messages up to and including a Sync or Query (or the startup packet), each sent to PGlite in one call. */
  private segments: Segment[] = []
  /** A COPY FROM STDIN and the data the client sent for it so far (see copy-in.ts); null outside one. */
  private copyIn: Uint8Array[] | null = null
  /** The last probe found the COPY failing before it began: its data is dropped, as a server ignores copy data outside COPY. */
  private copyRefused = false
  /** The transaction status of the last ReadyForQuery. */
  private status = 0x49 /* I */
  /** Whole messages of the segment still open (a COPY's data, or a Flush-driven exchange). */
  private open: Uint8Array[] = []
  private running = false
  private started = false
  private paused = false
  private held: Uint8Array[] = []
  private closed = false
  private ending = false
  /** Some exchange came back: from then on the session holds this client's state, which close() resets. */
  private answered = false

  constructor(
    private readonly pglite: PGliteLike,
    private readonly release: SessionRelease,
  ) {}

  write(chunk: Uint8Array): boolean {
    if (this.closed || this.ending) return false
    // The client hands its buffer over, but copying keeps this stream safe with any writer.
    const all = new Uint8Array(this.pending.length + chunk.length)
    all.set(this.pending)
    all.set(chunk, this.pending.length)
    let at = 0
    for (;;) {
      // The first message is the startup packet: a length, no type byte.
      const head = this.started ? 1 : 0
      if (all.length - at < head + 4) break
      const len = new DataView(all.buffer, all.byteOffset + at + head, 4).getInt32(0)
      const size = head + len
      if (len < 4 || all.length - at < size) break
      const type = all[at]!
      const message = all.subarray(at, at + size)
      at += size
      this.take(message, type)
    }
    this.pending = all.subarray(at)
    this.closeOpenSegment()
    this.run()
    return true
  }

  /** Files one whole message into the segments. */
  private take(message: Uint8Array, type: number): void {
    if (this.started && type === TERMINATE) return
    if (this.copyIn !== null) {
      this.copyIn.push(message)
      if (endsCopyIn(type)) {
        this.segments.push({ kind: 'copy', parts: this.copyIn, ready: true })
        this.copyIn = null
      }
      return
    }
    this.open.push(message)
    if (!this.started || type === SYNC || type === QUERY) {
      this.started = true
      const copy = type === QUERY && isCopyFromStdin(message)
      this.segments.push({ kind: copy ? 'probe' : this.open.some(isParseOfCopyFromStdin) ? 'refuse' : 'plain', parts: this.open, ready: true })
      this.open = []
      // The client may send its data without waiting for CopyInResponse: gather it from here on.
      if (copy) this.copyIn = [message]
    }
  }

  /** Messages that no Sync follows yet (a Flush-driven exchange) go now too: the server answers them without one. */
  private closeOpenSegment(): void {
    if (this.open.length === 0) return
    this.segments.push({ kind: 'plain', parts: this.open, ready: false })
    this.open = []
  }

  /**
   * The COPY failed before it began, so the client gets no CopyInResponse and
   * sends no more data for it: what was gathered after it is filed again as
   * ordinary messages, less copy data (which a server ignores outside COPY).
   */
  private stopGathering(): void {
    const gathered = this.copyIn
    if (gathered === null) return
    this.copyIn = null
    const later = this.segments
    this.segments = []
    for (const message of gathered.slice(1)) if (!isCopyData(message[0]!)) this.take(message, message[0]!)
    this.closeOpenSegment()
    this.segments.push(...later)
  }

  private run(): void {
    if (this.running || this.segments.length === 0 || this.closed) return
    this.running = true
    void this.drain()
  }

  /** Sends the segments one call each, in order, and hands on each answer before the next call. */
  private async drain(): Promise<void> {
    try {
      while (this.segments.length > 0 && !this.closed) {
        const segment = this.segments.shift()!
        // Writing PGlite's files back (for a persistent data directory) once per burst is enough.
        const syncToFs = this.segments.length === 0
        let reply: Uint8Array
        if (segment.kind === 'probe') {
          const query = segment.parts[segment.parts.length - 1]!
          const probed = await this.exchange(concat([...segment.parts.slice(0, -1), ...probeMessages(query, this.status !== 0x49)]), false)
          const copyIn = findCopyInResponse(probed)
          if (this.closed) return
          this.copyRefused = copyIn === undefined
          if (copyIn === undefined) this.stopGathering()
          if (copyIn !== undefined) {
            // The data follows as its own segment, sent with the COPY once the client has ended it.
            this.emitData(copyIn)
            continue
          }
          // The COPY failed before it began (no such table, say): run it as it is, for its error.
          reply = await this.exchange(concat(segment.parts), syncToFs)
        } else if (segment.kind === 'copy') {
          if (this.copyRefused) continue
          reply = withoutCopyInResponse(await this.exchange(concat(copyCall(segment.parts)), syncToFs))
        } else if (segment.kind === 'refuse') {
          reply = refusal('COPY FROM STDIN cannot run through the extended protocol on PGlite (its data must reach PGlite in the same call); use copyFrom() or copyFromRows()', this.status)
        } else reply = await this.exchange(concat(segment.parts), syncToFs)
        if (this.closed) return
        const data = readyAsAsked(reply, segment.ready, (byte) => (this.status = byte))
        if (data.length > 0) this.emitData(data)
      }
      this.running = false
      if (this.ending) this.close()
    } catch (err) {
      this.running = false
      const cause = err instanceof Error ? err : new Error(String(err))
      this.destroy(new ConnectionError('PG_CONNECTION_CLOSED', `PGlite failed: ${cause.message}`, { cause }))
    }
  }

  private async exchange(message: Uint8Array, syncToFs: boolean): Promise<Uint8Array> {
    if (this.pglite.closed === true) throw new Error('the PGlite instance was closed')
    const call = () => this.pglite.execProtocolRaw(message, { syncToFs })
    const reply = await (this.pglite.runExclusive ? this.pglite.runExclusive(call) : call())
    this.answered = true
    return reply
  }

  private emitData(chunk: Uint8Array): void {
    if (this.paused) this.held.push(chunk)
    else this.emit('data', chunk)
  }

  end(): void {
    if (this.closed || this.ending) return
    this.ending = true
    if (!this.running && this.segments.length === 0) this.close()
  }

  destroy(error?: Error): void {
    if (this.closed) return
    if (error !== undefined) queueMicrotask(() => this.emit('error', error))
    this.close()
  }

  /**
   * Closes the stream once: resets the session for whoever uses PGlite next,
   * then says 'close'. The session is handed back on every way here, a
   * connection attempt that failed included; without an answer from PGlite
   * this client left nothing in the session, so there is nothing to reset (and
   * an instance that failed may never answer a reset).
   */
  private close(): void {
    if (this.closed) return
    this.closed = true
    this.held = []
    const reset = this.answered && this.pglite.closed !== true ? this.exchange(concat(RESET.map(queryMessage)), true).then(() => undefined, () => undefined) : Promise.resolve()
    this.release(reset)
    void reset.then(() => this.emit('close'))
  }

  pause(): void {
    this.paused = true
  }

  resume(): void {
    this.paused = false
    while (!this.paused && this.held.length > 0) this.emit('data', this.held.shift()!)
  }

  on(event: string, fn: Listener): this {
    const list = this.listeners.get(event)
    if (list === undefined) this.listeners.set(event, [fn])
    else list.push(fn)
    return this
  }

  once(event: string, fn: Listener): this {
    const wrapped: Listener = (...args) => {
      this.off(event, wrapped)
      fn(...args)
    }
    ;(wrapped as { inner?: Listener }).inner = fn
    return this.on(event, wrapped)
  }

  off(event: string, fn: Listener): this {
    const list = this.listeners.get(event)
    if (list === undefined) return this
    const i = list.findIndex((l) => l === fn || (l as { inner?: Listener }).inner === fn)
    if (i >= 0) list.splice(i, 1)
    return this
  }

  private emit(event: string, ...args: unknown[]): void {
    const list = this.listeners.get(event)
    if (list === undefined) return
    for (const fn of list.slice()) fn(...args)
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  let n = 0
  for (const p of parts) n += p.length
  const out = new Uint8Array(n)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}
