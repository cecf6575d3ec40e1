import type { ClientOptions, SslMode } from '../../index.js'
import { ownProperties } from './secrets.js'
import { typeSource, type TypeParserSource } from './types.js'
import { defaults } from './values.js'

// pg's configuration names mapped onto pipegres's settings. Names pg knows
// but has no use for here are ignored, as pg ignores names it does not know.

/** The connection settings of pg's Client (and of each connection of a Pool). */
export interface PgClientConfig {
  connectionString?: string
  host?: string
  port?: number | string
  user?: string
  password?: string | (() => string | Promise<string>)
  database?: string
  ssl?: boolean | Record<string, unknown>
  application_name?: string
  fallback_application_name?: string
  options?: string
  client_encoding?: string
  statement_timeout?: number | false
  lock_timeout?: number | false
  idle_in_transaction_session_timeout?: number | false
  query_timeout?: number | false
  connectionTimeoutMillis?: number
  keepAlive?: boolean
  keepAliveInitialDelayMillis?: number
  types?: TypeParserSource
  /**
   * pipegres: true prepares and reuses every parameterized statement, false
   * uses unnamed statements as pg does; by default, prepared outside
   * transaction blocks (see Session in query.ts).
   */
  prepare?: boolean
  binary?: boolean
  stream?: unknown
  enableChannelBinding?: boolean
  /** pg's pipeline mode (see Client.pipeline). */
  pipeline?: boolean
  [key: string]: unknown
}

export interface MappedConfig {
  options: ClientOptions
  types: TypeParserSource | undefined
  /** Whether unnamed queries use pipegres's statement cache. */
  prepare: boolean | 'auto'
  /** What pg exposes on a client: client.user, client.database, ... */
  user: string | undefined
  database: string | undefined
  port: number
  host: string
  password: unknown
  /** pg's ssl setting as given (the option, else the connection string's or PGSSLMODE's). */
  ssl: PgClientConfig['ssl']
}

type Endpoint = 'host' | 'port' | 'user' | 'database' | 'password'
const ENV: Record<Endpoint, string> = { host: 'PGHOST', port: 'PGPORT', user: 'PGUSER', database: 'PGDATABASE', password: 'PGPASSWORD' }
/** pg.defaults as this module found them: a setting an application changed since is passed on, one it left is left to pipegres's own defaults. */
const initialDefaults: Record<Endpoint, unknown> = { host: defaults.host, port: defaults.port, user: defaults.user, database: defaults.database, password: defaults.password }

/** The endpoint settings a connection string gives (a URL's host, port, user, password, database; query parameters too). */
function fromString(cs: string | undefined): Partial<Record<Endpoint, string>> {
  if (cs === undefined) return {}
  const out: Partial<Record<Endpoint, string>> = {}
  if (!/^postgres(ql)?:\/\//i.test(cs)) {
    // A keyword=value string: pipegres's parser reads it fully; this only learns what it gives for these keywords.
    for (const m of cs.matchAll(/(?:^|\s)(host|port|user|dbname|password)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)/g)) {
      const key = m[1] === 'dbname' ? 'database' : (m[1] as Endpoint)
      out[key] = m[2]!.replace(/^'|'$/g, '').replace(/\\(.)/g, '$1')
    }
    return out
  }
  const dec = (v: string): string => {
    try {
      return decodeURIComponent(v)
    } catch {
      return v
    }
  }
  let url: URL
  try {
    url = new URL(cs.replace(/^postgres(ql)?:/i, 'http:'))
  } catch {
    // Several hosts (h1:5432,h2) are no URL's authority: taken apart by hand, as given.
    const rest = cs.replace(/^postgres(ql)?:\/\//i, '')
    const authority = rest.slice(0, rest.search(/[/?]|$/))
    const at = authority.lastIndexOf('@')
    if (at > 0) out.user = dec(authority.slice(0, at).split(':')[0]!)
    if (authority.length > at + 1) out.host = authority.slice(at + 1)
    return out
  }
  if (url.hostname !== '') out.host = dec(url.hostname).replace(/^\[|\]$/g, '')
  if (url.port !== '') out.port = url.port
  if (url.username !== '') out.user = dec(url.username)
  if (url.password !== '') out.password = dec(url.password)
  if (url.pathname.length > 1) out.database = dec(url.pathname.slice(1))
  for (const [k, v] of url.searchParams) {
    if (k === 'host' || k === 'port' || k === 'user' || k === 'password') out[k] = v
    else if (k === 'dbname') out.database = v
  }
  return out
}

const sslModes = new Set(['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'])

/** pg's ssl: given, or from PGSSLMODE (disable: none; no-verify: no certificate check; any other: checked). */
function sslFromEnvironment(): boolean | Record<string, unknown> {
  switch (process.env.PGSSLMODE) {
    case undefined:
    case 'disable':
    case '':
      return false
    case 'no-verify':
      return { rejectUnauthorized: false }
    default:
      return true
  }
}

/** pg-only connection string parameters (ssl=true, sslmode=no-verify) that pipegres's parser would refuse. */
function pgStringSettings(given: string): { cs: string; ssl: boolean | Record<string, unknown> | undefined; hasSslMode: boolean } {
  // pg reads any scheme ('pg://', 'socket://' aside) as postgres://.
  const cs = /^[a-z][a-z0-9+.-]*:\/\//i.test(given) && !/^socket:/i.test(given) ? given.replace(/^[^:]+/, 'postgresql') : given
  if (!/^postgres(ql)?:\/\//i.test(cs)) return { cs, ssl: undefined, hasSslMode: /(^|\s)sslmode\s*=/.test(cs) }
  const q = cs.indexOf('?')
  if (q < 0) return { cs, ssl: undefined, hasSslMode: false }
  const params = new URLSearchParams(cs.slice(q + 1))
  let ssl: boolean | Record<string, unknown> | undefined
  const s = params.get('ssl')
  if (s !== null) {
    ssl = s === 'true' || s === '1'
    params.delete('ssl')
  }
  if (params.get('sslmode') === 'no-verify') {
    ssl = { rejectUnauthorized: false }
    params.delete('sslmode')
  }
  // Rewritten with %20 for a space: pipegres reads '+' literally, as libpq does, where pg reads a space.
  const rest = [...params].map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')
  return { cs: cs.slice(0, q) + (rest === '' ? '' : '?' + rest), ssl, hasSslMode: params.has('sslmode') }
}

/** A timeout in ms as pg sends it: an integer (3000.7 and '3000' both give 3000); 0, false or nothing: none. */
function ms(v: unknown): string | undefined {
  const n = typeof v === 'number' || typeof v === 'string' ? Math.trunc(Number(v)) : NaN
  return n > 0 ? String(n) : undefined
}

export function mapConfig(input: string | PgClientConfig | undefined, extra: ClientOptions = {}): MappedConfig {
  // Read in place, not spread: Knex hands over a password as a non-enumerable property.
  const c: PgClientConfig = typeof input === 'string' ? { connectionString: input } : (input ?? {})
  if (c.binary === true) throw new TypeError('pipegres/pg does not support binary: true (results are always parsed from text, as pg does by default)')
  if (c.stream !== undefined) throw new TypeError('pipegres/pg does not support a custom stream: pipegres opens its own sockets')
  const o: ClientOptions = { ...extra }
  let ssl = c.ssl
  let hasSslMode = false
  if (typeof c.connectionString === 'string') {
    const parsed = pgStringSettings(c.connectionString)
    o.connectionString = parsed.cs
    hasSslMode = parsed.hasSslMode
    if (ssl === undefined) ssl = parsed.ssl
  }
  if (c.host !== undefined && c.host !== null) o.host = String(c.host)
  if (c.port !== undefined && c.port !== null && c.port !== '') o.port = Number(c.port)
  if (c.user !== undefined && c.user !== null) o.user = String(c.user)
  if (c.password !== undefined && c.password !== null) o.password = c.password as ClientOptions['password']
  if (c.database !== undefined && c.database !== null) o.database = String(c.database)
  if (typeof c.application_name === 'string') o.applicationName = c.application_name
  if (typeof c.fallback_application_name === 'string') o.fallbackApplicationName = c.fallback_application_name
  if (typeof c.options === 'string') o.options = c.options
  const params: Record<string, string> = {}
  for (const key of ['statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout'] as const) {
    const v = ms(c[key])
    if (v !== undefined) params[key] = v
  }
  if (typeof c.client_encoding === 'string' && c.client_encoding !== '') params.client_encoding = c.client_encoding
  if (Object.keys(params).length > 0) o.params = params
  const qt = Number(c.query_timeout)
  if (qt > 0) o.queryTimeout = qt
  if (typeof c.connectionTimeoutMillis === 'number' && c.connectionTimeoutMillis >= 0) o.connectTimeout = c.connectionTimeoutMillis
  // pg's enableChannelBinding: false keeps SCRAM from binding to the TLS channel; true is pipegres's default (bind when offered).
  if (c.enableChannelBinding === false) o.channelBinding = 'disable'
  if (typeof c.keepAlive === 'boolean') o.keepAlive = c.keepAlive
  if (typeof c.keepAliveInitialDelayMillis === 'number' && c.keepAliveInitialDelayMillis > 0) o.keepAliveIdle = c.keepAliveInitialDelayMillis
  if (ssl === undefined && !hasSslMode) ssl = sslFromEnvironment()
  applySsl(o, ssl, hasSslMode)
  // pg's order: the configuration (a connection string's settings included), then PG* variables, then pg.defaults as they are now.
  const given = fromString(o.connectionString)
  const effective = {} as Record<Endpoint, unknown>
  for (const key of ['host', 'port', 'user', 'database', 'password'] as const) {
    const own = (o as Record<string, unknown>)[key]
    if (own !== undefined) effective[key] = own
    else if (given[key] !== undefined) effective[key] = given[key]
    else if (process.env[ENV[key]] !== undefined && process.env[ENV[key]] !== '') effective[key] = process.env[ENV[key]]
    else {
      const value = (defaults as Record<string, unknown>)[key]
      effective[key] = value
      if (value !== initialDefaults[key] && value !== undefined && value !== null) {
        ;(o as Record<string, unknown>)[key] = key === 'port' ? Number(value) : key === 'password' ? value : String(value)
      }
    }
  }
  const user = effective.user === undefined || effective.user === null ? undefined : String(effective.user)
  // Without a database, the user's name (in pg and in libpq).
  if (effective.database === undefined || effective.database === null) {
    effective.database = user
  }
  return {
    options: o,
    types: typeSource(c.types, 'the types option'),
    prepare: typeof c.prepare === 'boolean' ? c.prepare : 'auto',
    user,
    database: effective.database === undefined ? undefined : String(effective.database),
    port: Number(effective.port) || 5432,
    host: effective.host === undefined || effective.host === null ? 'localhost' : String(effective.host),
    password: effective.password ?? null,
    ssl,
  }
}

/** pg's ssl: false (plaintext), true (TLS, certificate checked), or node:tls options (rejectUnauthorized: false: unchecked). */
function applySsl(o: ClientOptions, ssl: PgClientConfig['ssl'], hasSslMode: boolean): void {
  if (ssl === undefined) return
  if (ssl === false) {
    if (!hasSslMode) o.sslmode = 'disable'
    return
  }
  if (ssl === true) {
    o.sslmode = 'verify-full'
    o.sslrootcert = 'system'
    return
  }
  // pg takes any other truthy value (ssl: 'require', say) as true.
  if (typeof ssl !== 'object' || ssl === null) {
    o.sslmode = 'verify-full'
    o.sslrootcert = 'system'
    return
  }
  // Every own property: a caller may have made its key non-enumerable to keep it out of logs.
  const { rejectUnauthorized, sslmode, ...tls } = ownProperties(ssl) as { rejectUnauthorized?: boolean; sslmode?: string }
  if (sslmode !== undefined && !sslModes.has(sslmode)) throw new TypeError(`ssl.sslmode ${JSON.stringify(sslmode)} is not a known sslmode`)
  const mode: SslMode = rejectUnauthorized === false ? 'require' : 'verify-full'
  o.sslmode = mode
  if (mode === 'verify-full' && (tls as { ca?: unknown }).ca === undefined) o.sslrootcert = 'system'
  o.tls = tls as ClientOptions['tls']
}
