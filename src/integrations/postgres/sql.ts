import { readFile } from 'node:fs/promises'
import { TypedValue, type Pool, type ReservedClient } from '../../index.js'
import { Builder, Identifier } from './build.js'
import { connectionError, generic, markShaped, PostgresError, toPostgresError, type Endpoint } from './errors.js'
import { Notifications, type ListenResult } from './listen.js'
import type { ResolvedOptions } from './options.js'
import { captureOrigin, CLOSE, noOptions, PendingQuery, type Handler, type Runner, type UnsafeOptions } from './query.js'
import { arrayParam } from './types.js'
import type { Result } from './result.js'
import { largeObject, type LargeObject } from './large-object.js'
import type { SubscribeCallback, SubscribeHandle, Subscriptions } from './subscribe.js'

// The `sql` function and what hangs on it, for the whole instance (a pipegres
// pool), a reserved connection (sql.reserve()) and a transaction
// (sql.begin(), whose connection is reserved for it). Transactions send
// their own BEGIN with postgres.js's mode string, and SAVEPOINT, COMMIT,
// ROLLBACK or PREPARE TRANSACTION, on the reserved connection.

/** What every sql function of an instance shares. */
export interface Instance {
  readonly pool: Pool
  readonly options: ResolvedOptions
  readonly endpoint: Endpoint
  readonly notifications: Notifications
  /** sql.subscribe()'s replication stream, shared by the instance's subscribers. */
  readonly subscriptions: Subscriptions
  readonly copies: Handler['copies']
  /** Set once sql.end() was called: every later query fails with CONNECTION_ENDED. */
  ended: boolean
  ending: Promise<void> | undefined
  /** Set once sql.end({ timeout }) ran out and closed every connection. */
  destroyed: boolean
  /** A configuration error found when the instance was made: every query fails with it. */
  broken: unknown
  readonly files: Map<string, Promise<string>>
}

const TX_START = /^\s*(begin|start\s+transaction)\b/i

function rootHandler(inst: Instance): Handler {
  const max = inst.options.max
  return {
    runner: inst.pool,
    options: inst.options,
    transform: inst.options.transform,
    endpoint: inst.endpoint,
    copies: inst.copies,
    retries: true,
    refuse(text) {
      if (inst.broken !== undefined) return inst.broken as Error
      if (inst.ended) return connectionError('CONNECTION_ENDED', inst.endpoint)
      if (max > 1 && TX_START.test(text)) return generic('UNSAFE_TRANSACTION', 'Only use sql.begin, sql.reserved or max: 1')
      if (inst.copies.active >= max && openCopies(inst) >= max) return generic('COPY_IN_PROGRESS', 'You cannot execute queries during copy')
      return undefined
    },
  }
}

/** COPY FROM streams still being written: each holds a connection until it is ended. */
function openCopies(inst: Instance): number {
  let n = 0
  for (const w of inst.copies.streams) if (!w.writableEnded && !w.destroyed) n++
  return n
}

function childHandler(inst: Instance, runner: Runner, gone: () => Error | undefined, retries = false): Handler {
  return {
    retries,
    runner,
    options: inst.options,
    transform: inst.options.transform,
    endpoint: inst.endpoint,
    copies: { active: 0, streams: new Set() },
    refuse: () => gone(),
  }
}

type Fn<T> = (sql: Sql) => T | Promise<T>

export interface Sql {
  (strings: TemplateStringsArray, ...args: unknown[]): PendingQuery<Result<any>>
  (first: unknown, ...rest: unknown[]): Builder | Identifier
  readonly options: ResolvedOptions
  readonly parameters: Record<string, string>
  unsafe(text: string, args?: unknown[], options?: UnsafeOptions): PendingQuery<Result<any>>
  file(path: string | URL, args?: unknown[], options?: UnsafeOptions): PendingQuery<Result<any>>
  file(path: string | URL, options?: UnsafeOptions): PendingQuery<Result<any>>
  begin<T>(fn: (sql: Sql) => T | Promise<T>): Promise<T extends readonly unknown[] ? { [K in keyof T]: Awaited<T[K]> } : Awaited<T>>
  begin<T>(mode: string, fn: (sql: Sql) => T | Promise<T>): Promise<T extends readonly unknown[] ? { [K in keyof T]: Awaited<T[K]> } : Awaited<T>>
  savepoint<T>(fn: (sql: Sql) => T | Promise<T>): Promise<Awaited<T>>
  savepoint<T>(name: string, fn: (sql: Sql) => T | Promise<T>): Promise<Awaited<T>>
  prepare(name: string): void
  reserve(): Promise<Sql>
  release(): void
  listen(channel: string, fn: (payload: string) => void, onlisten?: () => void): Promise<ListenResult>
  notify(channel: string, payload: string): Promise<Result<any>>
  /**
   * Changes of the tables of the `publications` option, as they commit: `pattern` is
   * `operation[:[schema.]table[=primary key]]` ('*', 'insert', 'update:users', 'delete:public.users=1').
   */
  subscribe(pattern: string, fn: SubscribeCallback, onsubscribe?: () => void, onerror?: (err: unknown) => void): Promise<SubscribeHandle>
  end(options?: { timeout?: number | null }): Promise<void>
  /** A large object (a new one without `oid`), open in a transaction of its own until its close(). */
  largeObject(oid?: number, mode?: number): Promise<LargeObject>
  close(): Promise<void>
  array(xs: unknown[], type?: number): unknown
  json(value: unknown): TypedValue
  typed: ((value: unknown, type: number) => TypedValue) & Record<string, (value: unknown) => unknown>
  types: ((value: unknown, type: number) => TypedValue) & Record<string, (value: unknown) => unknown>
  readonly PostgresError: typeof PostgresError
  readonly CLOSE: object
  readonly END: object
}

// unsafe()'s defaults, shared: a query reads them and never changes them.
const noArgs: unknown[] = []

function isTemplate(x: unknown): x is TemplateStringsArray {
  return Array.isArray(x) && Array.isArray((x as unknown as { raw?: unknown }).raw)
}

/** The pieces common to every sql function: the tag itself, unsafe(), file(), the value helpers. */
function makeSql(inst: Instance, handler: Handler): Sql {
  const sql = function sql(first: unknown, ...rest: unknown[]): unknown {
    if (isTemplate(first)) {
      captureOrigin(first, sql)
      return new PendingQuery(handler, first, rest, 'tagged')
    }
    if (typeof first === 'string' && rest.length === 0) return new Identifier(first)
    return new Builder(first, rest)
  } as Sql
  const types = typeHelpers(inst.options)
  const userTypes = new Set<number>()
  for (const t of Object.values(inst.options.types)) {
    for (const oid of [t.to, ...(t.from === null || t.from === undefined ? [] : Array.isArray(t.from) ? t.from : [t.from])]) userTypes.add(oid)
  }
  Object.assign(sql, {
    options: inst.options,
    parameters: inst.options.parameters,
    PostgresError,
    CLOSE,
    END: CLOSE,
    types,
    typed: types,
    unsafe: (text: string, args: unknown[] = noArgs, options: UnsafeOptions = noOptions) => {
      if (!Array.isArray(args)) {
        options = args as UnsafeOptions
        args = noArgs
      }
      return new PendingQuery(handler, text, args, 'unsafe', options)
    },
    file: (path: unknown, args: unknown[] = [], options: UnsafeOptions = {}) => {
      if (!Array.isArray(args)) {
        options = args as UnsafeOptions
        args = []
      }
      const read = (p: unknown): Promise<string> => {
        const key = String(p)
        if (options.cache === false) return readFile(p as string, 'utf8')
        let cached = inst.files.get(key)
        if (cached === undefined) {
          cached = readFile(p as string, 'utf8')
          inst.files.set(key, cached)
          cached.catch(() => inst.files.delete(key))
        }
        return cached
      }
      return new PendingQuery(handler, path, args, 'file', options, read)
    },
    json: (value: unknown) => new TypedValue(value, 3802, 'jsonb'),
    array: (xs: unknown[], type?: number) => {
      if (!Array.isArray(xs)) throw new TypeError('sql.array() needs an array')
      return arrayParam(xs, type, userTypes)
    },
    listen: (channel: string, fn: (payload: string) => void, onlisten?: () => void): Promise<ListenResult> => inst.notifications.listen(channel, fn, onlisten),
    // Sent at once (an async function, as in postgres.js): code calls notify() without awaiting it.
    notify: async (channel: string, payload: string) => await sql`select pg_notify(${String(channel)}, ${String(payload)})`,
  })
  return sql
}

/** sql.types / sql.typed: typed(value, oid), and one helper per named type (the built-in ones and the `types` option's). */
function typeHelpers(options: ResolvedOptions): Sql['typed'] {
  const typed = (value: unknown, type: number): TypedValue => new TypedValue(value, type, `type ${type}`)
  const named: Record<string, number> = { string: 25, json: 3802, boolean: 16, date: 1184, bytea: 17 }
  for (const [k, t] of Object.entries(options.types)) named[k] = t.to
  for (const [k, oid] of Object.entries(named)) (typed as unknown as Record<string, unknown>)[k] = (x: unknown) => new TypedValue(x, oid, k)
  ;(typed as unknown as Record<string, unknown>).number = (x: unknown) => x
  return typed as Sql['typed']
}

/** The instance's own sql: the pool, begin(), reserve(), end(). */
export function rootSql(inst: Instance): Sql {
  const handler = rootHandler(inst)
  const sql = makeSql(inst, handler)
  Object.assign(sql, {
    begin: <T>(mode: string | Fn<T>, fn?: Fn<T>) => begin(inst, mode, fn),
    reserve: () => reserve(inst),
    end: (o?: { timeout?: number | null }) => end(inst, o),
    close: () => end(inst, { timeout: 0 }),
    largeObject: (oid?: number, mode?: number) => largeObject((fn) => sql.begin(fn as Fn<void>), oid, mode),
    subscribe: async (pattern: unknown, fn: unknown, onsubscribe?: unknown, onerror?: unknown): Promise<SubscribeHandle> => {
      await refusedWhenBroken(inst)
      return inst.subscriptions.subscribe(pattern, fn, onsubscribe, onerror)
    },
  })
  return sql
}

function refusedWhenBroken(inst: Instance): Promise<never> | undefined {
  if (inst.broken !== undefined) return Promise.reject(inst.broken)
  if (inst.ended) return Promise.reject(connectionError('CONNECTION_ENDED', inst.endpoint))
  return undefined
}

/** The raw value a failed custom socket threw, which reserve() rejects with as postgres.js does. */
export const thrownBySocket = new WeakMap<object, unknown>()

async function reserveConnection(inst: Instance): Promise<ReservedClient> {
  try {
    const conn = await inst.pool.reserve()
    // A reservation of a connection not opened yet opens it now, so that a failure to connect is reserve()'s, as in postgres.js.
    if (!conn.processId) {
      await conn.simpleQuery('').catch(async (err: unknown) => {
        await conn.release().catch(() => undefined)
        throw err
      })
    }
    return conn
  } catch (err) {
    throw toPostgresError(err, inst.endpoint, undefined)
  }
}

async function reserve(inst: Instance): Promise<Sql> {
  const refused = refusedWhenBroken(inst)
  if (refused !== undefined) return refused
  let conn: ReservedClient
  try {
    conn = await reserveConnection(inst)
  } catch (err) {
    const raw = typeof err === 'object' && err !== null ? thrownBySocket.get(err) : undefined
    throw raw !== undefined ? raw : err
  }
  let released = false
  const handler = childHandler(inst, conn, () => (released ? generic('RELEASED', 'This reserved connection was released: reserve another') : undefined), true)
  const sql = makeSql(inst, handler)
  ;(sql as { release: () => void }).release = () => {
    if (!released) {
      released = true
      void conn.release().catch(() => undefined)
    }
  }
  return sql
}

let savepoints = 0

/** What a transaction's or savepoint's function returned: an array of queries runs them all (postgres.js's implicit execution). */
function settleAll(result: unknown): Promise<unknown> {
  return Array.isArray(result) ? Promise.all(result) : Promise.resolve(result)
}

async function begin<T>(inst: Instance, mode: string | Fn<T>, fn: Fn<T> | undefined): Promise<unknown> {
  const body = typeof mode === 'function' ? mode : fn
  const how = typeof mode === 'string' ? mode.trim() : ''
  if (typeof body !== 'function') throw new TypeError('sql.begin() needs a function to run in the transaction: sql.begin(async sql => ...)')
  const refused = refusedWhenBroken(inst)
  if (refused !== undefined) return refused
  const conn = await reserveConnection(inst)
  let over = false
  let lost: Error | undefined
  const handler = childHandler(inst, conn, () => lost ?? (over ? generic('TRANSACTION_ENDED', 'This transaction is over: run the query on sql, or in a new sql.begin()') : undefined))
  const sql = makeSql(inst, handler)
  let prepared: string | undefined
  const run = (text: string): Promise<unknown> =>
    conn.simpleQuery(text).catch((err: unknown) => {
      throw toPostgresError(err, inst.endpoint, undefined)
    })
  Object.assign(sql, {
    prepare: (name: string) => {
      prepared = String(name)
    },
    savepoint: async (name: string | Fn<unknown>, f?: Fn<unknown>) => {
      const inner = typeof name === 'function' ? name : f
      if (typeof inner !== 'function') throw new TypeError('sql.savepoint() needs a function: sql.savepoint(async sql => ...)')
      const point = `s${++savepoints}${typeof name === 'string' ? '_' + name.replace(/\W/g, '') : ''}`
      await run(`savepoint ${point}`)
      try {
        const r = await settleAll(inner(sql))
        await run(`release savepoint ${point}`)
        return r
      } catch (err) {
        await run(`rollback to savepoint ${point}`)
        throw err
      }
    },
  })
  // A BEGIN without options cannot fail but with its connection: the first queries are pipelined behind it.
  const started = run(how === '' ? 'begin' : `begin ${how}`)
  if (how !== '') {
    try {
      await started
    } catch (err) {
      over = true
      await conn.release().catch(() => undefined)
      throw err
    }
  } else started.catch(() => undefined)
  let committing = false
  try {
    await started
    const result = await settleAll(body(sql))
    if (inst.destroyed) throw connectionError('CONNECTION_CLOSED', inst.endpoint)
    committing = true
    await run(prepared === undefined ? 'commit' : `prepare transaction '${prepared.replace(/'/g, "''")}'`)
    return result
  } catch (thrown) {
    // A transaction whose connection sql.end() closed under it failed with it, whatever its function made of that.
    const err = inst.destroyed ? connectionError('CONNECTION_CLOSED', inst.endpoint, thrown) : thrown
    // A failed COMMIT ended the transaction already: a ROLLBACK would only draw a warning.
    if (!committing) await run('rollback').catch(() => undefined)
    if (isLost(err)) lost = err as Error
    throw err
  } finally {
    over = true
    await conn.release().catch(() => undefined)
  }
}

function isLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === 'CONNECTION_CLOSED' || code === 'CONNECTION_DESTROYED' || code === 'CONNECTION_ENDED'
}

async function end(inst: Instance, o: { timeout?: number | null } | undefined): Promise<void> {
  inst.ended = true
  if (inst.ending !== undefined) return inst.ending
  const timeout = typeof o === 'object' && o !== null && typeof o.timeout === 'number' ? o.timeout : undefined
  const ending = Promise.all([inst.pool.end(), inst.notifications.end(), inst.subscriptions.end()]).then(() => undefined)
  inst.ending = ending
  if (timeout === undefined) return ending
  let timer: ReturnType<typeof setTimeout> | undefined
  const destroyed = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      inst.destroyed = true
      const reason = markShaped(connectionError('CONNECTION_DESTROYED', inst.endpoint))
      inst.pool.destroy(reason)
      inst.notifications.destroy(reason)
      resolve()
    }, timeout * 1000)
  })
  await Promise.race([ending.catch(() => undefined), destroyed])
  clearTimeout(timer)
}
