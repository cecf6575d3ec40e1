import type { PoolOptions, SslMode, TargetSessionAttrs } from '../../index.js'
import { normalizeTransform, type Transform, type TransformOption } from './transform.js'
import type { PostgresType } from './types.js'

// postgres.js's options, read as postgres.js reads them (a URL and/or an
// object, then the PG* variables, then its defaults), and the pipegres pool
// settings they come to. `sql.options` shows the outcome, as in postgres.js.

export interface PostgresOptions {
  host?: string | string[]
  hostname?: string
  port?: number | string | number[]
  path?: string
  database?: string
  db?: string
  user?: string
  username?: string
  password?: string | (() => string | Promise<string>)
  pass?: string | (() => string | Promise<string>)
  ssl?: boolean | 'require' | 'allow' | 'prefer' | 'verify-full' | Record<string, unknown>
  sslnegotiation?: 'direct' | 'postgres' | null
  max?: number
  idle_timeout?: number | null
  max_lifetime?: number | null
  connect_timeout?: number
  prepare?: boolean
  no_prepare?: boolean
  types?: Record<string, PostgresType>
  transform?: TransformOption
  connection?: Record<string, string | number | boolean>
  target_session_attrs?: string
  fetch_types?: boolean
  publications?: string
  onnotice?: (notice: Record<string, unknown>) => void
  onparameter?: (key: string, value: string) => void
  onclose?: (connectionId: number) => void
  debug?: boolean | ((connection: number, query: string, parameters: unknown[], types: number[]) => void)
  keep_alive?: number | null
  backoff?: number | ((attempt: number) => number)
  socket?: (options: unknown) => unknown
  [key: string]: unknown
}

/** What sql.options holds: postgres.js's resolved options. */
export interface ResolvedOptions {
  host: string[]
  port: number[]
  path: string | false
  database: string
  user: string
  pass: PostgresOptions['pass'] | ''
  max: number
  ssl: PostgresOptions['ssl']
  sslnegotiation: string | null
  idle_timeout: number | null
  connect_timeout: number
  max_lifetime: number | null
  max_pipeline: number
  backoff: PostgresOptions['backoff']
  keep_alive: number | null
  prepare: boolean
  debug: PostgresOptions['debug']
  fetch_types: boolean
  publications: string
  target_session_attrs: string | null
  connection: Record<string, string>
  types: Record<string, PostgresType>
  transform: Transform
  onnotice: PostgresOptions['onnotice']
  onparameter: PostgresOptions['onparameter']
  onclose: PostgresOptions['onclose']
  socket: PostgresOptions['socket']
  parameters: Record<string, string>
  /** Type OID → parser and serializer: postgres.js's tables, which drivers (Drizzle's) change. */
  parsers: Record<string, (x: string) => unknown>
  serializers: Record<string, (x: never) => unknown>
}

function parseUrl(url: string): { params: URLSearchParams; host?: string; port?: string; user?: string; pass?: string; database?: string; multihost?: string } {
  // Several hosts (h1:5432,h2:5433) are no URL authority: set aside and put back by hand.
  const m = /^[a-z][a-z0-9+.-]*:\/\/(?:([^@/?#]*)@)?([^/?#]*)(.*)$/i.exec(url)
  if (m === null) throw new TypeError('the connection URL must look like postgres://user:password@host:port/database')
  const [, auth, hosts, rest] = m
  const parsed = new URL(`http://x${rest ?? ''}`)
  const dec = (v: string): string => {
    try {
      return decodeURIComponent(v)
    } catch {
      return v
    }
  }
  const out: ReturnType<typeof parseUrl> = { params: parsed.searchParams }
  if (auth !== undefined) {
    const colon = auth.indexOf(':')
    out.user = dec(colon < 0 ? auth : auth.slice(0, colon))
    if (colon >= 0) out.pass = dec(auth.slice(colon + 1))
  }
  if (hosts !== undefined && hosts !== '') {
    if (hosts.includes(',')) out.multihost = hosts
    else {
      const hp = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(hosts)
      if (hp?.[1]) out.host = dec(hp[1].replace(/^\[|\]$/g, ''))
      if (hp?.[2]) out.port = hp[2]
    }
  }
  if (parsed.pathname.length > 1) out.database = dec(parsed.pathname.slice(1))
  return out
}

const osUser = (): string => process.env.USER ?? process.env.USERNAME ?? process.env.LOGNAME ?? 'postgres'

/** postgres.js's default lifetime: 30 to 60 minutes, at random, so that connections do not all end together. */
const defaultLifetime = (): number => 60 * (30 + Math.random() * 30)

/** Reads a URL and/or options the way postgres.js does. Throws a TypeError naming a setting it cannot take. */
export function resolveOptions(a: string | PostgresOptions | undefined, b: PostgresOptions | undefined): ResolvedOptions {
  const env = process.env
  const o: PostgresOptions = (typeof a === 'string' || a === undefined ? b : a) ?? {}
  const url = typeof a === 'string' ? parseUrl(a) : { params: new URLSearchParams() }
  const query: Record<string, string> = {}
  for (const [k, v] of url.params) query[k] = v
  if (query.sslmode !== undefined) {
    query.ssl = query.sslmode
    delete query.sslmode
  }
  if (query.sslrootcert === 'system') query.ssl = 'verify-full'
  const host = String(o.hostname ?? o.host ?? url.multihost ?? url.host ?? env.PGHOST ?? 'localhost')
  const port = o.port ?? url.port ?? env.PGPORT ?? 5432
  const user = (o.user ?? o.username ?? url.user ?? env.PGUSERNAME ?? env.PGUSER ?? osUser()) as string
  if (o.no_prepare) o.prepare = false
  const hosts = host.split(',').map((h) => h.split(':')[0]!)
  const ports = Array.isArray(port) ? port.map(Number) : host.split(',').map((h) => Number.parseInt(h.split(':')[1] || String(port), 10))
  const pick = <T>(k: string, d: T, int = false): T => {
    let v: unknown = k in o ? o[k] : k in query ? (query[k] === 'disable' || query[k] === 'false' ? false : query[k]) : (env[`PG${k.toUpperCase()}`] ?? d)
    if (int && typeof v === 'string') v = Number(v)
    return v as T
  }
  const connection: Record<string, string> = { application_name: env.PGAPPNAME ?? 'postgres.js' }
  for (const [k, v] of Object.entries(o.connection ?? {})) connection[k] = String(v)
  const known = new Set(['max', 'ssl', 'sslnegotiation', 'idle_timeout', 'connect_timeout', 'max_lifetime', 'max_pipeline', 'backoff', 'keep_alive', 'prepare', 'debug', 'fetch_types', 'publications', 'target_session_attrs', 'sslrootcert'])
  for (const [k, v] of Object.entries(query)) if (!known.has(k)) connection[k] = v
  const tsa = o.target_session_attrs ?? url.params.get('target_session_attrs') ?? env.PGTARGETSESSIONATTRS ?? null
  if (tsa !== null && !['read-write', 'read-only', 'primary', 'standby', 'prefer-standby'].includes(tsa)) {
    throw new TypeError(`target_session_attrs ${tsa} is not supported: use read-write, read-only, primary, standby or prefer-standby`)
  }
  return {
    host: hosts,
    port: ports,
    path: o.path ?? (host.includes('/') ? `${host}/.s.PGSQL.${ports[0]}` : false),
    database: String(o.database ?? o.db ?? url.database ?? env.PGDATABASE ?? user),
    user,
    pass: o.pass ?? o.password ?? url.pass ?? env.PGPASSWORD ?? '',
    max: pick('max', 10, true),
    ssl: pick<PostgresOptions['ssl']>('ssl', false),
    sslnegotiation: pick<string | null>('sslnegotiation', null),
    idle_timeout: pick<number | null>('idle_timeout', null, true),
    connect_timeout: pick('connect_timeout', 30, true),
    max_lifetime: pick<number | null>('max_lifetime', defaultLifetime(), true),
    max_pipeline: pick('max_pipeline', 100, true),
    backoff: pick<PostgresOptions['backoff']>('backoff', undefined, true),
    keep_alive: pick<number | null>('keep_alive', 60, true),
    prepare: pick('prepare', true),
    debug: pick<PostgresOptions['debug']>('debug', false),
    fetch_types: pick('fetch_types', true),
    publications: pick('publications', 'alltables'),
    target_session_attrs: tsa,
    connection,
    types: o.types ?? {},
    transform: normalizeTransform(o.transform),
    onnotice: o.onnotice,
    onparameter: o.onparameter,
    onclose: o.onclose,
    socket: o.socket,
    parameters: {},
    parsers: {},
    serializers: {},
  }
}

const tsaMap: Record<string, TargetSessionAttrs> = {
  'read-write': 'read-write',
  'read-only': 'read-only',
  primary: 'primary',
  standby: 'standby',
  'prefer-standby': 'prefer-standby',
}

/** The pipegres pool settings for postgres.js's resolved options. */
export function poolOptions(r: ResolvedOptions): PoolOptions {
  const o: PoolOptions = {
    user: String(r.user),
    database: r.database,
    max: r.max,
    // postgres.js's times are seconds; 0 or null: never.
    idleTimeout: r.idle_timeout ? Math.max(1, Math.round(Number(r.idle_timeout) * 1000)) : 0,
    maxLifetime: r.max_lifetime ? Math.max(1, Math.round(Number(r.max_lifetime) * 1000)) : 0,
    connectTimeout: Math.max(1, Math.round(Number(r.connect_timeout) * 1000)),
    params: { ...r.connection },
  }
  if (r.connection.application_name !== undefined) {
    o.applicationName = r.connection.application_name
    delete o.params!.application_name
  }
  if (r.pass !== '' && r.pass !== undefined && r.pass !== null) o.password = r.pass as PoolOptions['password']
  if (r.path) {
    const path = String(r.path)
    const m = /^(.*)\/\.s\.PGSQL\.(\d+)$/.exec(path)
    o.host = m ? m[1]! : path
    o.port = m ? Number(m[2]) : r.port[0]
  } else {
    o.host = r.host.length === 1 ? r.host[0]! : r.host
    o.port = r.port.length === 1 ? r.port[0]! : r.port
  }
  if (r.keep_alive === null || r.keep_alive === 0 || (r.keep_alive as unknown) === false) o.keepAlive = false
  else o.keepAliveIdle = Math.max(1, Number(r.keep_alive)) * 1000
  if (r.target_session_attrs !== null) o.targetSessionAttrs = tsaMap[r.target_session_attrs]
  if (r.sslnegotiation === 'direct') o.sslnegotiation = 'direct'
  applySsl(o, r.ssl)
  return o
}

/** postgres.js's ssl: false (plaintext), 'prefer', 'allow', 'require' (TLS, unchecked), true or 'verify-full' (checked), or node:tls options. */
function applySsl(o: PoolOptions, ssl: PostgresOptions['ssl']): void {
  if (ssl === false || ssl === undefined || ssl === null || (ssl as unknown) === 'disable') {
    o.sslmode = 'disable'
    return
  }
  if (ssl === 'prefer' || ssl === 'allow' || ssl === 'require') {
    o.sslmode = ssl as SslMode
    return
  }
  if (ssl === true || ssl === 'verify-full') {
    o.sslmode = 'verify-full'
    o.sslrootcert = 'system'
    return
  }
  if (typeof ssl !== 'object') throw new TypeError(`ssl ${JSON.stringify(ssl)} is not one of false, true, 'prefer', 'allow', 'require', 'verify-full' or node:tls options`)
  const { rejectUnauthorized, ...tls } = ssl as { rejectUnauthorized?: boolean }
  o.sslmode = rejectUnauthorized === false ? 'require' : 'verify-full'
  if (o.sslmode === 'verify-full' && (tls as { ca?: unknown }).ca === undefined) o.sslrootcert = 'system'
  o.tls = tls as PoolOptions['tls']
}
