import { EventEmitter } from 'node:events'
import { Pool as CorePool, type ReservedClient, type PgNotice } from '../../index.js'
import { ClientBase } from './client-base.js'
import { mapConfig, type PgClientConfig } from './config.js'
import { pgQuery, promiseWrapper, refuseQuery, Session, type PrepareMode, type QueryHost } from './query.js'
import { lossError, toPgError, toPgNotice } from './result.js'
import { TypeOverrides, type TypeParserSource } from './types.js'
import { safeConfig } from './secrets.js'

/** pg-pool's settings, on top of a client's. */
export interface PgPoolConfig extends PgClientConfig {
  max?: number
  min?: number
  idleTimeoutMillis?: number
  maxLifetimeSeconds?: number
  allowExitOnIdle?: boolean
}

type ConnectCallback = (err: Error | undefined, client?: PoolClient, done?: (release?: unknown) => void) => void

/**
 * A connection handed out by pool.connect(): to this caller alone until
 * release(). The same object stands for the same server connection each time
 * it is handed out, as with pg.
 */
export class PoolClient extends ClientBase {
  /** The reservation while checked out. */
  reserved: ReservedClient | null = null
  /** Its connection was lost while checked out: as with pg, it takes no more queries. */
  lost = false
  /** The last release() under way: the pool's clean-up (a ROLLBACK, its hooks) of the connection. */
  private releasing: Promise<void> = Promise.resolve()
  readonly session: Session
  protected readonly overrides: TypeOverrides

  constructor(
    private readonly pool: Pool,
    readonly processID: number,
    base: TypeParserSource,
    prepare: PrepareMode,
  ) {
    super()
    this.overrides = new TypeOverrides(base)
    this.session = new Session(this.overrides, prepare, true)
  }

  query(...args: unknown[]): any {
    const r = this.reserved
    if (r === null) return refuseQuery(args, new Error('Client was released to the pool and is not queryable'))
    if (this.lost) return refuseQuery(args, new Error('Client has encountered a connection error and is not queryable'))
    this.active++
    return pgQuery(this.session, r, args, undefined, this.host)
  }

  private active = 0
  /** pg's 'drain' on a checked-out client too: code that releases it on 'drain' relies on it. */
  private readonly host: QueryHost = {
    settled: () => {
      if (--this.active === 0) this.emit('drain')
    },
  }

  /**
   * Gives the connection back. With an error (or true), pg would close the
   * connection; pipegres keeps it if it still works, rolling back any open
   * transaction, and drops it by itself when it is broken.
   */
  release(err?: unknown): void {
    const r = this.reserved
    if (r === null) throw new Error('Release called on client which has already been released to the pool.')
    this.reserved = null
    this.session.reset()
    this.releasing = r.release().catch(() => undefined)
    this.pool.released(this, err)
  }

  /**
   * `await using client = await pool.connect()`: release() when the scope
   * exits, unless released already; resolves once the pool has it back.
   */
  [Symbol.asyncDispose](): Promise<void> {
    if (this.reserved !== null) this.release()
    return this.releasing
  }

  /** pg closes a checked-out client this way; here it goes back to the pool (see release). */
  end(callback?: (err?: Error) => void): Promise<void> | undefined {
    if (this.reserved !== null) this.release(true)
    if (callback === undefined) return Promise.resolve()
    process.nextTick(callback)
    return undefined
  }
}

// Wrappers of connections that may be gone are forgotten past this many per pool connection.
const CLIENTS_PER_SLOT = 4

/**
 * pg's Pool over a pipegres pool: pool.query() is pipelined over shared
 * connections (no checkout per query); pool.connect() reserves one
 * connection for its caller until release().
 */
export class Pool extends EventEmitter {
  readonly options: PgPoolConfig & { max: number; idleTimeoutMillis: number }
  private readonly core: CorePool
  private readonly session: Session
  private readonly types: TypeParserSource
  private readonly prepare: PrepareMode
  private readonly clients = new Map<number, PoolClient>()
  private readonly connectTimeout: number
  private endPromise: Promise<void> | null = null
  /** pg-pool's Promise option (see Client). */
  private readonly wrap: <T>(v: T) => T
  ending = false
  ended = false

  constructor(config?: PgPoolConfig | string) {
    super()
    const c: PgPoolConfig = typeof config === 'string' ? { connectionString: config } : (config ?? {})
    this.wrap = promiseWrapper(c.Promise)
    const max = c.max ?? 10
    const idleTimeoutMillis = c.idleTimeoutMillis ?? 10000
    // A copy with the password and TLS key kept out of inspect() and JSON (pg-pool hides them too); read by name as usual.
    this.options = Object.assign(safeConfig(c), { max, idleTimeoutMillis })
    const mapped = mapConfig(c, { textResults: true, rowMode: 'array' })
    this.types = mapped.types ?? new TypeOverrides()
    this.prepare = mapped.prepare
    this.session = new Session(this.types, mapped.prepare, false)
    this.connectTimeout = typeof c.connectionTimeoutMillis === 'number' ? c.connectionTimeoutMillis : 0
    this.core = new CorePool({
      ...mapped.options,
      max,
      ...(c.min !== undefined ? { min: c.min } : {}),
      idleTimeout: idleTimeoutMillis,
      maxLifetime: typeof c.maxLifetimeSeconds === 'number' ? c.maxLifetimeSeconds * 1000 : 0,
    })
    this.core.on('notice', (n: PgNotice) => this.emit('notice', toPgNotice(n)))
    // A connection lost while checked out is reported on that checkout, one lost while idle on the pool, as pg-pool
    // does; only to listeners: pipegres replaces the connection, so nobody listening is no reason to crash.
    this.core.on('lost', (err: Error, processId: number, reserved: boolean) => {
      const client = this.clients.get(processId)
      this.clients.delete(processId)
      const e = lossError(err)
      if (reserved) {
        if (client !== undefined && client.reserved !== null) client.lost = true
        if (client !== undefined && client.reserved !== null && client.listenerCount('error') > 0) client.emit('error', e)
      } else if (this.listenerCount('error') > 0) this.emit('error', e, client)
    })
    // pool.query() checks nothing out, but listeners of 'release' (Vercel's
    // attachDatabasePool) learn from it when the pool's connections go idle:
    // they hear it too when a query leaves its connection idle. Asked of the
    // core pool only once somebody listens.
    const forward = (reservation: boolean): void => {
      if (!reservation) this.emit('release', undefined, undefined)
    }
    this.on('newListener', (event: string | symbol) => {
      if (event === 'release' && this.listenerCount('release') === 0) this.core.on('release', forward)
    })
    this.on('removeListener', (event: string | symbol) => {
      if (event === 'release' && this.listenerCount('release') === 0) this.core.off('release', forward)
    })
  }

  get totalCount(): number {
    return this.core.totalCount
  }

  get idleCount(): number {
    return this.core.idleCount
  }

  get waitingCount(): number {
    return this.core.waitingCount
  }

  get expiredCount(): number {
    return 0
  }

  /** pg's pool.query(text | config, values?, callback?), pipelined over the pool's connections. */
  query(...args: unknown[]): any {
    if (this.ending) return this.wrap(refuseQuery(args, new Error('Cannot use a pool after calling end on the pool')))
    return this.wrap(pgQuery(this.session, this.core, args, undefined))
  }

  connect(): Promise<PoolClient>
  connect(callback: ConnectCallback): undefined
  connect(callback?: ConnectCallback): Promise<PoolClient> | undefined {
    const p = this.acquire()
    if (callback === undefined) return this.wrap(p)
    p.then(
      (client) => callback(undefined, client, (err) => client.release(err)),
      // pg-pool hands a release function even with an error, so that callers may call it unconditionally.
      (err: Error) => callback(err, undefined, () => {}),
    )
    return undefined
  }

  private async acquire(): Promise<PoolClient> {
    if (this.ending) throw new Error('Cannot use a pool after calling end on the pool')
    const reserving = this.core.reserve()
    let r: ReservedClient
    if (this.connectTimeout > 0) {
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout exceeded when trying to connect')), this.connectTimeout)
      })
      try {
        r = await Promise.race([reserving, timeout])
      } catch (err) {
        // A reservation granted after the timeout goes straight back.
        reserving.then((late) => late.release(), () => undefined)
        throw toPgError(err)
      } finally {
        clearTimeout(timer)
      }
    } else {
      r = await reserving.catch((err: unknown) => Promise.reject(toPgError(err)))
    }
    // A new connection opens on its first query: open it now, as pg does on checkout, to know which it is.
    if (r.processId === 0) {
      try {
        await r.simpleQuery('')
      } catch (err) {
        await r.release()
        throw toPgError(err)
      }
    }
    let client = this.clients.get(r.processId)
    const fresh = client === undefined
    if (client === undefined) {
      client = new PoolClient(this, r.processId, this.types, this.prepare)
      if (this.clients.size >= this.options.max * CLIENTS_PER_SLOT) this.clients.delete(this.clients.keys().next().value!)
      this.clients.set(r.processId, client)
    }
    client.reserved = r
    if (fresh) this.emit('connect', client)
    this.emit('acquire', client)
    return client
  }

  /** @internal */
  released(client: PoolClient, err: unknown): void {
    this.emit('release', err, client)
    if (err) {
      this.clients.delete(client.processID)
      this.emit('remove', client)
    }
  }

  /** `await using pool = new Pool(...)`: end() when the scope exits, unless it was ended already. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.endPromise ?? this.end()
  }

  end(): Promise<void>
  end(callback: (err?: Error) => void): undefined
  end(callback?: (err?: Error) => void): Promise<void> | undefined {
    if (this.endPromise !== null) {
      const err = new Error('Called end on pool more than once')
      if (callback !== undefined) {
        process.nextTick(() => callback(err))
        return undefined
      }
      return this.wrap(Promise.reject(err))
    }
    this.ending = true
    this.endPromise = this.core.end().then(() => {
      this.ended = true
    })
    if (callback !== undefined) {
      this.endPromise.then(
        () => callback(),
        (err: Error) => callback(err),
      )
      return undefined
    }
    return this.wrap(this.endPromise)
  }
}
