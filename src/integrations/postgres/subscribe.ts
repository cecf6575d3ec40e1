import { PgError, type Pool } from '../../index.js'
import type { ChangeMessage, ChangeRow, Relation, Subscription } from '../../replication.js'
import { connectionError, PostgresError, type Endpoint } from './errors.js'
import type { ResolvedOptions } from './options.js'
import type { ColumnInfo, Transform } from './transform.js'
import { parsePattern, publicationNames } from './subscribe-pattern.js'

// sql.subscribe(): postgres.js's realtime events (insert, update, delete)
// over pipegres/replication's logical subscription. Every subscriber of an
// instance shares one replication connection, streaming the publications of
// the `publications` option from a temporary slot: started by the first
// subscribe(), stopped when the last subscriber leaves or sql.end() is called.
// A temporary slot is dropped with its connection, so after a lost connection
// the stream starts over on a new slot from the server's current position
// (what changed in between is not delivered, as in postgres.js) and every
// subscriber's onsubscribe is called again.
//
// pipegres/replication is loaded on the first subscribe(): an application
// that never subscribes does not load the walsender and the pgoutput decoder.

type ReplicationEntry = typeof import('../../replication.js')

let entry: Promise<ReplicationEntry> | undefined
const loadReplication = (): Promise<ReplicationEntry> =>
  (entry ??= import('../../replication.js').catch((err: unknown) => {
    // Tried again by the next subscribe(), rather than failing it for good.
    entry = undefined
    throw err
  }))

/** A column as postgres.js describes it in `info.relation` (`key` is 1 for a column of the replica identity, else 0). */
export interface SubscribeColumn extends ColumnInfo {
  key: number
  atttypmod: number
}

export interface SubscribeRelation {
  schema: string
  table: string
  columns: SubscribeColumn[]
  /** The columns of the replica identity (the primary key by default; every column under REPLICA IDENTITY FULL). */
  keys: SubscribeColumn[]
}

export type SubscribeRow = Record<string, unknown>

/** The second argument of a subscriber: what changed, in postgres.js's shape. */
export type SubscribeEvent =
  | { command: 'insert'; relation: SubscribeRelation }
  /** key: the row given is only the replica identity's columns (the others null), not the whole old row. */
  | { command: 'delete'; relation: SubscribeRelation; key: boolean }
  /** old: the old row (REPLICA IDENTITY FULL) or the old key (when the key changed), else null. */
  | { command: 'update'; relation: SubscribeRelation; key: boolean; old: SubscribeRow | null }

export type SubscribeCallback = (row: SubscribeRow | null, info: SubscribeEvent) => void

export interface SubscribeHandle {
  /** Stops this subscriber; the shared replication connection closes with the last one. Never rejects. */
  unsubscribe(): Promise<void>
  /** The replication connection's server process id (undefined while it reconnects). */
  readonly state: { pid: number | undefined }
  /**
   * The replication connection itself, as postgres.js's `sql` of a subscription:
   * close() closes it (the subscription reconnects and calls onsubscribe again);
   * end() ends it and every subscription sharing it.
   */
  readonly sql: { close(): Promise<void>; end(): Promise<void> }
}

interface Subscriber {
  fn: SubscribeCallback
  onsubscribe: (() => void) | undefined
  onerror: ((err: unknown) => void) | undefined
  /** Its subscribe() resolved: onsubscribe was called, and is called again after each reconnect. */
  live: boolean
}

function checkCallback(f: unknown, what: string): void {
  if (f !== undefined && f !== null && typeof f !== 'function') throw new TypeError(`sql.subscribe(): ${what} must be a function, not ${typeof f}`)
}

/** A server error under a replication failure, as postgres.js reports the server's errors; anything else as it is. */
function shaped(err: unknown): unknown {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof PgError) return new PostgresError(e, { cause: err })
  }
  return err
}

/** What a subscriber's callback threw: its onerror's, else thrown where nothing catches it, as an event listener's would be. */
function report(sub: Subscriber, err: unknown): void {
  if (sub.onerror !== undefined) {
    try {
      sub.onerror(err)
      return
    } catch (again) {
      err = again
    }
  }
  queueMicrotask(() => {
    throw err
  })
}

/** Longest wait between attempts to start the stream again while the server cannot be reached. */
const MAX_RESTART_DELAY_MS = 5000

/** The instance's subscriptions: at most one running feed at a time. */
export class Subscriptions {
  #feed: Feed | undefined
  #ended = false

  constructor(
    private readonly pool: Pool,
    private readonly options: ResolvedOptions,
    private readonly endpoint: Endpoint,
  ) {}

  /** Bad arguments reject (as postgres.js's async subscribe() does) with a TypeError naming the cause. */
  async subscribe(pattern: unknown, fn: unknown, onsubscribe?: unknown, onerror?: unknown): Promise<SubscribeHandle> {
    const key = parsePattern(pattern)
    if (typeof fn !== 'function') throw new TypeError(`sql.subscribe(pattern, fn): fn, called with each change, must be a function, not ${fn === null ? 'null' : typeof fn}`)
    checkCallback(onsubscribe, 'onsubscribe (the third argument)')
    checkCallback(onerror, 'onerror (the fourth argument)')
    const publications = publicationNames(this.options.publications)
    if (this.#ended) throw connectionError('CONNECTION_ENDED', this.endpoint)
    const sub: Subscriber = {
      fn: fn as SubscribeCallback,
      onsubscribe: (onsubscribe ?? undefined) as Subscriber['onsubscribe'],
      onerror: (onerror ?? undefined) as Subscriber['onerror'],
      live: false,
    }
    let feed = this.#feed
    if (feed === undefined) {
      const made: Feed = new Feed(this.pool, publications, this.options.transform, this.endpoint, () => {
        if (this.#feed === made) this.#feed = undefined
      })
      feed = this.#feed = made
    }
    return feed.add(key, sub)
  }

  /** sql.end(): every subscription stops; later subscribe() calls fail with CONNECTION_ENDED. */
  end(): Promise<void> {
    this.#ended = true
    const feed = this.#feed
    this.#feed = undefined
    return feed === undefined ? Promise.resolve() : feed.stop()
  }
}

/** One shared replication stream and the subscribers it delivers to, by pattern key. */
class Feed {
  readonly #subscribers = new Map<string, Set<Subscriber>>()
  readonly state: { pid: number | undefined } = { pid: undefined }
  readonly #handleSql: SubscribeHandle['sql']
  #stream: Subscription | undefined
  #stopped = false
  #running: Promise<void> | undefined
  /** Settled by the first start: subscribe() calls made before it wait for it. */
  readonly #firstStart: Promise<void>
  readonly #settleFirst: (err: unknown) => void
  #streamedOnce = false
  /** Cuts the wait before another start short (stop()). */
  #wake: (() => void) | undefined
  readonly #relations = new WeakMap<Relation, { info: SubscribeRelation; raw: string[] }>()
  #unchanged: symbol | undefined

  constructor(
    private readonly pool: Pool,
    private readonly publications: string[],
    private readonly transform: Transform,
    private readonly endpoint: Endpoint,
    private readonly gone: () => void,
  ) {
    let settle: (err: unknown) => void = () => undefined
    this.#firstStart = new Promise<void>((resolve, reject) => {
      settle = (err) => (err === undefined ? resolve() : reject(err))
    })
    this.#settleFirst = settle
    // Awaited by every subscribe() before the first start; this one only keeps a failure nobody waits for quiet.
    this.#firstStart.catch(() => undefined)
    this.#handleSql = {
      close: async () => {
        // The stream ends without an error: run() starts a new one at once, as after a lost connection.
        await this.#stream?.close()
      },
      end: async () => {
        this.gone()
        await this.stop()
      },
    }
  }

  async add(key: string, sub: Subscriber): Promise<SubscribeHandle> {
    let set = this.#subscribers.get(key)
    if (set === undefined) this.#subscribers.set(key, (set = new Set()))
    set.add(sub)
    this.#running ??= this.#run()
    if (!this.#streamedOnce) {
      try {
        await this.#firstStart
      } catch (err) {
        void this.#remove(key, sub)
        throw err
      }
    }
    if (this.#stopped) {
      void this.#remove(key, sub)
      throw connectionError('CONNECTION_ENDED', this.endpoint)
    }
    sub.live = true
    if (sub.onsubscribe !== undefined) {
      try {
        sub.onsubscribe()
      } catch (err) {
        report(sub, err)
      }
    }
    return { unsubscribe: () => this.#remove(key, sub), state: this.state, sql: this.#handleSql }
  }

  /** Removes a subscriber; the last one stops the stream. */
  #remove(key: string, sub: Subscriber): Promise<void> {
    const set = this.#subscribers.get(key)
    if (set === undefined || !set.delete(sub)) return Promise.resolve()
    if (set.size === 0) this.#subscribers.delete(key)
    if (this.#subscribers.size > 0) return Promise.resolve()
    this.gone()
    return this.stop()
  }

  async stop(): Promise<void> {
    if (!this.#stopped) {
      this.#stopped = true
      this.#settleFirst(connectionError('CONNECTION_ENDED', this.endpoint))
      this.#wake?.()
    }
    await this.#stream?.close().catch(() => undefined)
    await this.#running?.catch(() => undefined)
  }

  #live(): Subscriber[] {
    const out: Subscriber[] = []
    for (const set of this.#subscribers.values()) for (const sub of set) if (sub.live) out.push(sub)
    return out
  }

  /** The stream's life, over as many connections as it takes; never rejects (what fails is told to subscribe() or onerror). */
  async #run(): Promise<void> {
    try {
      await this.#streamLoop()
    } catch (err) {
      // Only loading pipegres/replication can fail here.
      this.#settleFirst(err)
      this.#stopped = true
      this.gone()
    }
    this.#stream = undefined
    this.state.pid = undefined
  }

  async #streamLoop(): Promise<void> {
    const replication = await loadReplication()
    this.#unchanged = replication.unchangedToast
    let failures = 0
    while (!this.#stopped) {
      if (failures > 0) await this.#pause(Math.min(MAX_RESTART_DELAY_MS, 100 * 2 ** (failures - 1)))
      if (this.#stopped) break
      const slot = `pipegres_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}`
      const stream = replication.subscribe(this.pool, { slot, publications: this.publications, temporary: true })
      this.#stream = stream
      let lost: unknown
      // The stream's own reconnect cannot resume a temporary slot: close it, and start over on a new slot here.
      const onReconnect = ({ error }: { error: Error }): void => {
        lost ??= error
        void stream.close().catch(() => undefined)
      }
      try {
        await stream.ready()
      } catch (err) {
        await stream.close().catch(() => undefined)
        if (this.#stopped) break
        if (!this.#streamedOnce) {
          // A first start that fails is subscribe()'s failure (no such publication, no replication rights, wal_level): nothing retries it.
          this.#settleFirst(shaped(err))
          this.#stopped = true
          this.gone()
          break
        }
        failures++
        this.#failed(err)
        continue
      }
      if (this.#stopped) {
        await stream.close().catch(() => undefined)
        break
      }
      stream.on('reconnect', onReconnect)
      failures = 0
      this.state.pid = stream.processId || undefined
      const again = this.#streamedOnce
      this.#streamedOnce = true
      this.#settleFirst(undefined)
      if (again) {
        for (const sub of this.#live()) {
          try {
            sub.onsubscribe?.()
          } catch (err) {
            report(sub, err)
          }
        }
      }
      try {
        for await (const m of stream) {
          try {
            this.#dispatch(m)
          } catch (err) {
            // The transform's functions are the application's: what they throw is its error, not the stream's.
            this.#userError(err)
          }
        }
      } catch (err) {
        lost ??= err
      }
      stream.off('reconnect', onReconnect)
      this.state.pid = undefined
      if (this.#stopped) break
      // A stream closed by the handle's sql.close() ends without an error: nothing to report.
      if (lost !== undefined) this.#failed(lost)
    }
  }

  /** A lost connection or a failed restart: told to the subscribers that gave onerror, else logged, as postgres.js does. */
  #failed(err: unknown): void {
    const e = shaped(err)
    const listening = this.#live().filter((s) => s.onerror !== undefined)
    if (listening.length === 0) console.error('Unexpected error during logical streaming - reconnecting', e)
    for (const sub of listening) report(sub, e)
  }

  /** An error of the application's code met on behalf of every subscriber: told to those that gave onerror, else thrown uncaught. */
  #userError(err: unknown): void {
    const listening = this.#live().filter((s) => s.onerror !== undefined)
    if (listening.length === 0) {
      queueMicrotask(() => {
        throw err
      })
    }
    for (const sub of listening) report(sub, err)
  }

  #pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms)
      this.#wake = () => {
        clearTimeout(timer)
        resolve()
      }
    }).finally(() => (this.#wake = undefined))
  }

  /** postgres.js's description of a relation, made once per Relation message (the column names transformed). */
  #relation(r: Relation): { info: SubscribeRelation; raw: string[] } {
    let known = this.#relations.get(r)
    if (known === undefined) {
      const rename = this.transform.column.from
      const columns = r.columns.map(
        (c, i): SubscribeColumn => ({ key: c.key ? 1 : 0, name: rename === undefined ? c.name : rename(c.name), type: c.typeOid, atttypmod: c.typeModifier, table: r.id, number: i + 1 }),
      )
      known = { info: { schema: r.schema || 'pg_catalog', table: r.table, columns, keys: columns.filter((c) => c.key === 1) }, raw: r.columns.map((c) => c.name) }
      this.#relations.set(r, known)
    }
    return known
  }

  /**
   * A tuple as postgres.js gives it: every column of the relation (those a key
   * tuple lacks are null), a TOASTed value the update left unchanged undefined,
   * through the transform's value and row functions.
   */
  #row(tuple: ChangeRow, rel: { info: SubscribeRelation; raw: string[] }): { row: SubscribeRow; keyed: SubscribeRow } {
    const keyed: SubscribeRow = {}
    const valueFrom = this.transform.value.from
    const cols = rel.info.columns
    for (let i = 0; i < cols.length; i++) {
      const raw = rel.raw[i]!
      let v = Object.hasOwn(tuple, raw) ? tuple[raw] : null
      if (v === this.#unchanged) v = undefined
      keyed[cols[i]!.name] = valueFrom === undefined ? v : valueFrom(v, cols[i]!)
    }
    const rowFrom = this.transform.row.from
    return { row: rowFrom === undefined ? keyed : (rowFrom(keyed) as SubscribeRow), keyed }
  }

  #dispatch(m: ChangeMessage): void {
    if (m.type !== 'insert' && m.type !== 'update' && m.type !== 'delete') return
    const rel = this.#relation(m.relation)
    let row: SubscribeRow | null
    let keyed: SubscribeRow | null
    let info: SubscribeEvent
    if (m.type === 'insert') {
      ;({ row, keyed } = this.#row(m.row, rel))
      info = { command: 'insert', relation: rel.info }
    } else if (m.type === 'update') {
      ;({ row, keyed } = this.#row(m.row, rel))
      const before = m.old ?? m.key
      info = { command: 'update', relation: rel.info, key: m.key !== undefined, old: before === undefined ? null : this.#row(before, rel).row }
    } else {
      const before = m.old ?? m.key
      const t = before === undefined ? null : this.#row(before, rel)
      row = t?.row ?? null
      keyed = t?.keyed ?? null
      info = { command: 'delete', relation: rel.info, key: m.key !== undefined }
    }
    const path = `${rel.info.schema}.${rel.info.table}`
    // postgres.js's key: the replica identity's values joined with commas ('=1', '=1,a').
    const id = keyed !== null && rel.info.keys.length > 0 ? '=' + String(rel.info.keys.map((k) => keyed[k.name])) : undefined
    for (const op of ['*', m.type]) {
      this.#call(op, row, info)
      this.#call(`${op}:${path}`, row, info)
      if (id !== undefined) this.#call(`${op}:${path}${id}`, row, info)
    }
  }

  #call(key: string, row: SubscribeRow | null, info: SubscribeEvent): void {
    const set = this.#subscribers.get(key)
    if (set === undefined) return
    for (const sub of set) {
      try {
        sub.fn(row, info)
      } catch (err) {
        report(sub, err)
      }
    }
  }
}
