// One class, whole: a connection's life is one state machine (connecting, held, sending, lost), which every part of it reads.
import type { ConnectionConfig } from '../config/types.js'
import { queryLost } from '../connection/closed-errors.js'
import { openConnection } from '../connection/connect.js'
import type { Connection } from '../connection/connection.js'
import type { Request } from '../connection/request.js'
import { ArgumentError, ConnectionError, type PgNotice } from '../errors.js'
import type { Listeners } from './notify.js'
import type { Notification, TransactionStatus } from '../protocol/backend.js'
import { Session } from '../query/session.js'
import { lookupTypeInfos } from '../query/type-lookup.js'
import type { TypeCatalog } from '../types/catalog.js'
import type { TypeView } from '../types/view.js'
import { probePooling, settlePooling, type LaneStatement } from './probe.js'
import { replicationRefusal } from './replication-guard.js'
import { backOff, settleLostConnection, type Backoff } from './backoff.js'
import { active, connectChannel, traceConnect } from '../trace/tracing.js'

// One connection's whole life: opening it (again, with backoff, after a loss),
// the requests waiting for it, who holds it exclusively, re-LISTEN on a new
// connection, the pooling probe, and handing unsent requests back to an owner
// (a pool) that can send them elsewhere. Client is a facade over one lane; a
// pool owns many.

const enum State {
  /** No connection; one is opened when a request needs it. */
  Idle,
  Connecting,
  Connected,
  /** end() or destroy(): no more requests. */
  Closed,
}

/** What a lane reports to whoever owns it. Called from the connection's reading loop: they must not throw. */
export interface LaneEvents {
  notice(notice: PgNotice): void
  notification(notification: Notification): void
  parameter(name: string, value: string): void
  /** A query failed with this SQLSTATE (the connection stays). */
  queryError?(code: string): void
  /** The connection answered everything sent on it (a pool's lane: its idle time starts). */
  idle?(): void
  /** The connection was lost (not by end() or destroy()); `processId` is the backend it had. */
  disconnect(error: Error, processId: number): void
  /** The lane was ended (`error` null) or destroyed and its connection, if any, is gone. */
  close(error: Error | null): void
}

export interface LaneSettings {
  readonly config: ConnectionConfig
  /** The catalog and view the lane's sessions decode with. */
  readonly catalog: TypeCatalog
  readonly view: TypeView
  /** Makes the lane's own statements (re-LISTEN, the pooling probe), as its owner makes its queries. */
  readonly statement: LaneStatement
  readonly backoff: Backoff
  readonly reconnectMaxDelay: number
  /** Most requests from nobody's holder accepted at once (Infinity: no limit). */
  readonly maxPending: number
  /** Channels to listen to again on every new connection; a lane with some reconnects on its own. */
  readonly listeners: Listeners | null
  readonly events: LaneEvents
  /**
   * A pool's: when the connection is lost or cannot be opened, the requests
   * that never reached the server go back to it (to send on another lane)
   * instead of waiting for this lane to reconnect.
   */
  readonly orphans?: (reqs: Request[], err: Error, afterLoss: boolean) => void
  /**
   * A pool's onConnect: runs on each new connection, holding it, before
   * anything else is sent on it. It rejects with the error the requests
   * waiting for the connection fail with, and the connection is closed.
   */
  readonly onConnect?: (holder: object) => Promise<void>
}

/** Calls a user callback so that a throwing one cannot break the connection's reading loop. */
export function safely(fn: () => void): void {
  try {
    fn()
  } catch (err) {
    queueMicrotask(() => {
      throw err
    })
  }
}

export class Lane {
  readonly config: ConnectionConfig
  private state = State.Idle
  private conn: Connection | null = null
  private connecting: Promise<void> | null = null
  /** Requests waiting for a connection. */
  private waiting: Request[] = []
  /** Requests from outside the current holder (transaction, reservation), waiting for it to finish. */
  private held: Request[] = []
  /** Who has the connection to itself, and which connection that is once known. */
  private holder: object | null = null
  private holderConn: Connection | null = null
  private holdWaiters: (() => void)[] = []
  /** Which holder issued each request; requests of nobody's are absent. */
  private readonly owners = new WeakMap<Request, object>()
  private closeError: Error | null = null
  private ending: Promise<void> | null = null
  /** Woken whenever the lane may have become quiet (see end()). */
  private quietWaiters: (() => void)[] = []
  private connectedAt = 0
  /** Requests the lane sent on its own when the current connection opened (re-LISTENs). */
  private ownRequests = 0
  /** cancelMisfires of connections already closed. */
  private pastMisfires = 0

  constructor(private readonly settings: LaneSettings) {
    this.config = settings.config
  }

  // --- the connection ---------------------------------------------------------

  /** Opens the connection (if it is not open); rejects with the attempt's own error. */
  async connect(): Promise<void> {
    if (this.state === State.Closed) throw this.closedError()
    if (this.state !== State.Connected) {
      this.startConnecting(true)
      await this.connecting
      // The attempt's own error (a PgError for a wrong password, say), not a wrapper.
      if (!this.connected) throw this.closeError ?? this.closedError()
    }
  }

  private startConnecting(now: boolean): void {
    if (this.connecting !== null || this.state === State.Closed || this.state === State.Connected) return
    this.state = State.Connecting
    const wait = now ? 0 : Math.max(0, this.settings.backoff.nextAttemptAt - performance.now())
    const events = this.settings.events
    this.connecting = (async () => {
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      if (this.state === State.Closed) {
        // destroy() came during the backoff wait.
        this.connecting = null
        this.wakeQuiet()
        return
      }
      let conn: Connection
      try {
        const open = (): Promise<Connection> =>
          openConnection(this.config, {
            notice: (n) => events.notice(n),
            notification: (n) => {
              this.settings.listeners?.deliver(n)
              events.notification(n)
            },
            parameterStatus: (k, v) => events.parameter(k, v),
            queryError: (code) => events.queryError?.(code),
            ...(events.idle !== undefined ? { idle: events.idle } : {}),
            close: (err, unsent) => this.onConnectionClosed(conn, err, unsent),
          })
        conn = await (active(connectChannel) ? traceConnect(this.config, open) : open())
        if (conn.closed) throw conn.failure ?? new ConnectionError('PG_CONNECTION_CLOSED', 'the connection closed as soon as it opened')
      } catch (err) {
        this.connecting = null
        this.connectFailed(err as Error)
        this.wakeQuiet()
        return
      }
      this.connecting = null
      this.onConnected(conn)
      this.wakeQuiet()
    })()
  }

  private onConnected(conn: Connection): void {
    if (this.state === State.Closed) {
      // destroy() came while connecting.
      conn.destroy(this.closeError ?? new ConnectionError('PG_CONNECTION_ENDED', 'the client was destroyed'))
      return
    }
    this.connectedAt = performance.now()
    this.closeError = null
    const session = new Session(
      this.settings.catalog,
      this.settings.view,
      this.config.prepare !== false,
      this.config.statementCacheSize,
      (req) => this.sendInternal(req),
      () => Number.parseInt(conn.serverParameters.server_version ?? '0', 10),
      (req) => this.resend(req),
      lookupTypeInfos,
    )
    settlePooling(session, conn, this.config)
    conn.attachment = session
    conn.watchIdle = () => this.listening
    this.conn = conn
    this.state = State.Connected
    // Channels listened to on the lost connection are listened to again first.
    const relisten = this.settings.listeners?.relistenStatements() ?? []
    this.ownRequests = relisten.length
    for (const sql of relisten) {
      const req = this.settings.statement(sql)
      req.promise.catch(() => {
        // A failed re-LISTEN shows as missing notifications; nothing waits on it.
      })
      conn.send(req)
    }
    const waiting = this.waiting
    this.waiting = []
    const onConnect = this.settings.onConnect
    if (onConnect !== undefined) {
      // Everything waits behind the hook, as behind a transaction: a reservation that took the lane before it connected too.
      const token = {}
      const prior = this.holder
      this.holder = token
      this.holderConn = conn
      this.held.push(...waiting)
      void this.runOnConnect(onConnect, token, conn, prior)
      return
    }
    for (const req of waiting) this.toConnection(req)
    if (this.ending !== null && this.waiting.length === 0) void conn.end()
  }

  private async runOnConnect(onConnect: NonNullable<LaneSettings['onConnect']>, token: object, conn: Connection, prior: object | null): Promise<void> {
    try {
      await onConnect(token)
    } catch (err) {
      const failure = err as Error
      // What waited for this connection fails with it: another connection would run the same hook.
      for (const req of this.held.splice(0)) req.fail(failure, false)
      conn.destroy(failure)
    }
    if (prior === null) return this.release(token)
    this.holder = prior
    this.holderConn = null
    for (const req of this.held.splice(0)) this.route(req)
  }

  private connectFailed(err: Error): void {
    backOff(this.settings.backoff, this.settings.reconnectMaxDelay)
    this.closeError = err
    if (this.state !== State.Closed) this.state = State.Idle
    const waiting = this.waiting.splice(0)
    const orphans = this.settings.orphans
    if (orphans !== undefined) {
      const mine = waiting.filter((req) => this.owners.get(req) === undefined)
      for (const req of waiting) if (this.owners.get(req) !== undefined) req.fail(err, false)
      orphans(mine, err, false)
      return
    }
    for (const req of waiting) req.fail(err, false)
    // Listened channels come back only with a connection: keep trying, backing off.
    if (this.listening && this.state !== State.Closed && this.ending === null) this.startConnecting(false)
  }

  private get listening(): boolean {
    return (this.settings.listeners?.size ?? 0) > 0
  }

  private onConnectionClosed(conn: Connection, err: Error | null, unsent: Request[]): void {
    if (this.conn !== conn) {
      for (const req of unsent) req.fail(err ?? this.closedError(), false)
      return
    }
    this.conn = null
    this.pastMisfires += conn.cancelMisfires
    if (this.state === State.Closed) {
      for (const req of unsent) req.fail(err ?? this.closedError(), false)
      this.settings.events.close(this.closeError)
      return
    }
    this.state = State.Idle
    this.closeError = err
    if (err !== null) {
      settleLostConnection(this.settings.backoff, this.settings.reconnectMaxDelay, conn.completedRequests > this.ownRequests, this.connectedAt)
      this.settings.events.disconnect(err, conn.processId)
    }
    // Requests that never reached the server go to the next connection, except
    // a holder's: its transaction died with the connection.
    const lost = err ?? new ConnectionError('PG_CONNECTION_CLOSED', 'the connection was closed')
    const again: Request[] = []
    for (const req of unsent) {
      const owner = this.owners.get(req)
      if (owner !== undefined && owner === this.holder) req.fail(queryLost(lost, false), false)
      else again.push(req)
    }
    if (this.settings.orphans !== undefined) {
      this.settings.orphans(again, lost, true)
      return
    }
    // A lane that only listens reconnects on its own: nothing else would
    // bring its channels back.
    if (again.length > 0 || this.listening) {
      this.waiting.unshift(...again)
      this.startConnecting(false)
    }
  }

  private closedError(): Error {
    const e = this.closeError
    if (e === null) return new ConnectionError('PG_CONNECTION_ENDED', 'the client was ended')
    if (e instanceof ConnectionError) return new ConnectionError(e.code, e.message, { cause: e })
    return new ConnectionError('PG_CONNECTION_CLOSED', `the connection is closed: ${e.message}`, { cause: e })
  }

  // --- sending ----------------------------------------------------------------

  /** Sends a request on behalf of `owner` (a transaction or reservation holding the connection), or of nobody. */
  send(req: Request, owner: object | null): void {
    const refused = replicationRefusal(this.config, req)
    if (refused !== null) return req.fail(refused, false)
    if (this.state === State.Closed || (this.ending !== null && owner === null)) {
      req.fail(this.closedError(), false)
      return
    }
    // The statements of whoever holds the connection (a transaction's COMMIT or
    // ROLLBACK, say) are never refused: that would leave its outcome in doubt.
    const max = this.settings.maxPending
    if (owner === null && max !== Infinity) {
      const pending = this.pendingQueries
      if (pending >= max) {
        req.fail(new ArgumentError(`query refused: ${pending} queries are already pending on this client (maxPending is ${max})`), false)
        return
      }
    }
    if (owner !== null) this.owners.set(req, owner)
    const trace = req.sentTrace
    if (trace != null) {
      req.sentTrace = null
      const host = this.conn?.host
      if (host !== undefined) {
        trace.serverAddress = host.host
        trace.serverPort = host.port
      }
      trace.inflight = this.pendingQueries
      // Not enumerable on a trace, which subscribers may print: the lane holds the connection's cancel key.
      if ('connection' in trace) trace.connection = this
      else Object.defineProperty(trace, 'connection', { value: this, configurable: true, writable: true })
    }
    this.route(req)
  }

  /** Sends an accepted request: held back while someone else holds the connection, queued while connecting. */
  private route(req: Request): void {
    if (this.state === State.Closed) {
      req.fail(this.closedError(), false)
      return
    }
    if (this.holder !== null && this.owners.get(req) !== this.holder) {
      this.held.push(req)
      return
    }
    if (this.state === State.Connected) this.toConnection(req)
    else {
      this.waiting.push(req)
      this.startConnecting(false)
    }
  }

  private toConnection(req: Request): void {
    const conn = this.conn!
    const owner = this.owners.get(req)
    if (owner !== undefined && owner === this.holder) {
      // A holder's requests stay on the connection its transaction began on.
      if (this.holderConn === null) this.holderConn = conn
      else if (this.holderConn !== conn) {
        req.fail(new ConnectionError('PG_CONNECTION_CLOSED', 'the connection this transaction was running on was lost'), false)
        return
      }
    }
    conn.send(req)
  }

  /** Requests the lane makes for queries already in flight (type lookups): never refused by end(). */
  private sendInternal(req: Request): void {
    if (this.conn !== null && !this.conn.closed) this.conn.send(req, true)
    else req.fail(this.closedError(), false)
  }

  /** A request sent again by its connection's session: as its owner sent it, accepted even while ending (it was issued before). */
  private resend(req: Request): void {
    const owner = this.owners.get(req)
    if (this.holder !== null && owner !== this.holder) {
      this.held.push(req)
      return
    }
    this.sendInternal(req)
  }

  // --- exclusive holders ------------------------------------------------------

  /**
   * Gives the connection to `holder` alone: requests from anybody else wait
   * until release(). Resolves once any previous holder has released it.
   */
  async hold(holder: object): Promise<void> {
    while (this.holder !== null) await new Promise<void>((r) => this.holdWaiters.push(r))
    if (this.state === State.Closed) throw this.closedError()
    this.holder = holder
    this.holderConn = null
    if (this.conn !== null) probePooling(this.conn, this.settings.statement)
  }

  release(holder: object): void {
    if (this.holder !== holder) return
    this.holder = null
    this.holderConn = null
    const next = this.holdWaiters.shift()
    if (next !== undefined) {
      // The next holder takes over before the outside requests held meanwhile.
      next()
      return
    }
    // Held requests were accepted before any end(), so end() does not refuse them.
    const held = this.held
    this.held = []
    for (const req of held) this.route(req)
    this.wakeQuiet()
  }

  /** True when `holder` holds the connection and it is the same connection its first request went on. */
  holds(holder: object): boolean {
    return this.holder === holder && (this.holderConn === null || this.holderConn === this.conn)
  }

  // --- shutdown ---------------------------------------------------------------

  /** No connection attempt under way, no holder, nothing held back: end() may close. */
  private get quiet(): boolean {
    return this.connecting === null && this.held.length === 0 && this.holder === null
  }

  private wakeQuiet(): void {
    for (const w of this.quietWaiters.splice(0)) w()
  }

  /** Finishes every request already accepted (a holder's included), then closes the connection. */
  end(): Promise<void> {
    if (this.ending !== null) return this.ending
    if (this.state === State.Closed) return Promise.resolve()
    this.ending = (async () => {
      // Woken by each change that can make the lane quiet: a connection
      // attempt settling, a holder releasing.
      while (!this.quiet) await new Promise<void>((r) => this.quietWaiters.push(r))
      const conn = this.conn
      this.state = State.Closed
      if (conn !== null) await conn.end()
      else this.settings.events.close(null)
    })()
    return this.ending
  }

  /** Closes at once: every pending request is rejected with `reason`. */
  destroy(reason: Error): void {
    if (this.state === State.Closed && this.conn === null) return
    this.state = State.Closed
    this.closeError = reason
    for (const req of [...this.waiting, ...this.held]) req.fail(reason, false)
    this.waiting = []
    this.held = []
    for (const w of this.holdWaiters.splice(0)) w()
    this.wakeQuiet()
    const conn = this.conn
    if (conn !== null) conn.destroy(reason)
    else this.settings.events.close(reason)
  }

  // --- state ------------------------------------------------------------------

  get serverParameters(): Readonly<Record<string, string>> {
    return this.conn?.serverParameters ?? {}
  }

  get processId(): number {
    return this.conn?.processId ?? 0
  }

  get secretKey(): Uint8Array | undefined {
    return this.conn?.secretKey
  }

  get transactionStatus(): TransactionStatus {
    return this.conn?.transactionStatus ?? 'I'
  }

  get protocolMinor(): number {
    return this.conn?.protocolMinor ?? 0
  }

  get tls(): boolean {
    return this.conn?.tls ?? false
  }

  get connected(): boolean {
    return this.state === State.Connected
  }

  /** True once end() or destroy() was called. */
  get closed(): boolean {
    return this.state === State.Closed || this.ending !== null
  }

  /** Requests written and not yet answered, plus those waiting to be written. */
  get pendingQueries(): number {
    return (this.conn?.inflightCount ?? 0) + (this.conn?.pendingCount ?? 0) + this.waiting.length + this.held.length
  }

  get cancelMisfires(): number {
    return this.pastMisfires + (this.conn?.cancelMisfires ?? 0)
  }
}
