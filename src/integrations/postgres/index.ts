// pipegres/postgres: postgres.js 3.4's API over pipegres. `import postgres
// from 'pipegres/postgres'` where code imports postgres: the same `sql`
// tagged template, helpers, transactions, cursors, COPY streams,
// LISTEN/NOTIFY and errors, on pipegres's pipelined pool.

import { createPool, type ClientOptions, type CustomType, type PgNotice, type Pool, type PoolOptions } from '../../index.js'
import { markShaped, PostgresError, type Endpoint } from './errors.js'
import { Notifications } from './listen.js'
import { poolOptions, resolveOptions, type PostgresOptions, type ResolvedOptions } from './options.js'
import { rootSql, thrownBySocket, type Instance, type Sql } from './sql.js'
import { Subscriptions } from './subscribe.js'
import { camel, fromCamel, fromKebab, fromPascal, kebab, pascal, toCamel, toKebab, toPascal } from './transform.js'
import { arrayOf, customTypes, parseArray, serializeArray, typeOptions, type PostgresType } from './types.js'

export { PostgresError, toPascal, fromPascal, pascal, toCamel, fromCamel, camel, toKebab, fromKebab, kebab }
export type { PostgresOptions, ResolvedOptions, Sql, PostgresType }
export type { PendingQuery } from './query.js'
export type { Result, Statement, Column } from './result.js'
export type { SubscribeCallback, SubscribeColumn, SubscribeEvent, SubscribeHandle, SubscribeRelation, SubscribeRow } from './subscribe.js'

/** postgres.BigInt: int8 as a JS bigint (pipegres decodes it so itself, exactly). */
export const BigInt: PostgresType = {
  to: 20,
  from: [20],
  parse: (x: string) => globalThis.BigInt(x),
  serialize: (x: never) => String(x as unknown as bigint),
}

/** postgres.js's own parsers of the built-in types, for a serializer changed without its parser. */
const defaultParsers: Record<number, (x: string) => unknown> = {
  16: (x) => x === 't',
  17: (x) => Buffer.from(x.slice(2), 'hex'),
  21: (x) => +x,
  23: (x) => +x,
  26: (x) => +x,
  700: (x) => +x,
  701: (x) => +x,
  114: (x) => JSON.parse(x),
  3802: (x) => JSON.parse(x),
  1082: (x) => new Date(x),
  1114: (x) => new Date(x),
  1184: (x) => new Date(x),
}

/** A notice with postgres.js's field names, as onnotice gets it. */
function noticeOf(n: PgNotice): Record<string, unknown> {
  const e = new PostgresError(n)
  return { ...e, message: n.message }
}

/**
 * sql.options.parsers and .serializers: changing an entry (Drizzle sets
 * those of the date types to pass text through) registers the type with
 * pipegres, which decodes it from then on with that function.
 */
function liveTables(opts: ResolvedOptions, register: (t: CustomType) => void): void {
  const parsers: Record<string, (x: string) => unknown> = {}
  const serializers: Record<string, (x: never) => unknown> = {}
  const apply = (key: string): void => {
    const oid = Number(key)
    if (!Number.isInteger(oid) || oid <= 0) return
    const parse = parsers[key] ?? defaultParsers[oid]
    const serialize = serializers[key]
    // An array type passed through as text keeps its text; the element types' arrays are parsed element by element.
    register({ oid, parse, serialize: serialize === undefined ? undefined : (v) => String(serialize(v as never)) })
    const array = arrayOf.get(oid)
    if (array !== undefined && array !== 0 && parsers[String(array)] === undefined && parse !== undefined) {
      register({ oid: array, parse: (t) => parseArray(t, parse, oid === 603 ? ';' : ','), serialize: serialize === undefined ? undefined : (v) => serializeArray(v, serialize) })
    }
  }
  const table = <F>(target: Record<string, F>): Record<string, F> =>
    new Proxy(target, {
      set(t, key, value) {
        if (typeof key !== 'string') return false
        t[key] = value as F
        apply(key)
        return true
      },
    })
  opts.parsers = table(parsers)
  opts.serializers = table(serializers)
}

function endpointOf(o: ResolvedOptions): Endpoint {
  return o.path ? { host: o.host[0]!, port: o.port[0]!, path: String(o.path) } : { host: o.host[0]!, port: o.port[0]! }
}

/** A socket option's failure as postgres.js reports it: an Error with the thrown value's text (reserve() rejects with the value itself). */
function socketFailure(thrown: unknown): Error {
  const e = markShaped(thrown instanceof Error ? thrown : new Error(String(thrown)))
  thrownBySocket.set(e, thrown)
  return e
}

function makePool(o: ResolvedOptions, inst: { parameters: Record<string, string> }): Pool {
  const base = poolOptions(o)
  const onnotice = o.onnotice ?? ((n: Record<string, unknown>) => console.log(n))
  const opts: PoolOptions = {
    ...base,
    types: typeOptions,
    customTypes: customTypes(o.types),
    onNotice: (n) => onnotice(noticeOf(n)),
    onConnect: (c) => {
      // The server's parameters as this connection was told them (ParameterStatus), for sql.parameters and onparameter.
      const params = (c as unknown as { lane?: { serverParameters?: Record<string, string> } }).lane?.serverParameters
      if (params === undefined) return
      for (const [k, v] of Object.entries(params)) {
        inst.parameters[k] = v
        o.onparameter?.(k, v)
      }
    },
  }
  const socket = o.socket
  if (typeof socket === 'function') {
    opts.stream = async () => {
      try {
        return (await socket(o)) as never
      } catch (err) {
        throw socketFailure(err)
      }
    }
  }
  // postgres.BigInt asks for int8 as bigint: pipegres's own decoding, exact and faster than parsing text.
  const int8 = o.types.bigint
  if (int8 !== undefined && int8.parse === BigInt.parse) {
    opts.types = { ...typeOptions, int8: 'bigint' }
    opts.customTypes = customTypes({ ...o.types, bigint: { to: 20, from: null, serialize: BigInt.serialize } })
  }
  return createPool(opts)
}

/** What a broken configuration leaves: an instance whose every query fails with the error. */
function brokenPool(err: unknown): Pool {
  const pool = createPool({ max: 1, host: 'localhost', sslmode: 'disable' })
  void pool.end()
  void err
  return pool
}

function listenOptions(o: ResolvedOptions): () => ClientOptions {
  return () => {
    const { max: _max, idleTimeout: _i, maxLifetime: _l, ...rest } = poolOptions(o)
    return { ...rest, types: typeOptions, customTypes: customTypes(o.types) }
  }
}

/** postgres(url?, options?): an sql instance over a pipegres pool of up to `max` connections. */
function postgres(url?: string | PostgresOptions, options?: PostgresOptions): Sql {
  const o = resolveOptions(url, options)
  const parameters = o.parameters
  let pool: Pool
  let broken: unknown
  try {
    pool = makePool(o, { parameters })
    liveTables(o, (t) => pool.registerType(t))
  } catch (err) {
    broken = err
    pool = brokenPool(err)
    liveTables(o, () => undefined)
  }
  const endpoint = endpointOf(o)
  const inst: Instance = {
    pool,
    options: o,
    endpoint,
    notifications: new Notifications(listenOptions(o), endpoint),
    subscriptions: new Subscriptions(pool, o, endpoint),
    copies: { active: 0, streams: new Set() },
    ended: false,
    ending: undefined,
    destroyed: false,
    broken,
    files: new Map(),
  }
  return rootSql(inst)
}

Object.assign(postgres, { PostgresError, toPascal, fromPascal, pascal, toCamel, fromCamel, camel, toKebab, fromKebab, kebab, BigInt })

export default postgres as typeof postgres & {
  PostgresError: typeof PostgresError
  toPascal: typeof toPascal
  fromPascal: typeof fromPascal
  pascal: typeof pascal
  toCamel: typeof toCamel
  fromCamel: typeof fromCamel
  camel: typeof camel
  toKebab: typeof toKebab
  fromKebab: typeof fromKebab
  kebab: typeof kebab
  BigInt: PostgresType
}
