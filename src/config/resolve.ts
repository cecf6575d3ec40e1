// Every way of describing a connection -> one validated ConnectionConfig.
// Precedence per setting, highest first: options object, connection string,
// connection service file, PG* environment, defaults (see sources.ts). Only the
// winning value of a setting is parsed, so a bad PGPORT does not matter when
// the options give a port (as in libpq, which never looks at the variable then).

import path from 'node:path'
import { ConfigError } from '../errors.js'
import { readEnv, settingsFromEnv } from './env.js'
import { type ConnectOptions, type OptionField, collectOptions, typeName } from './options.js'
import type { StreamFactory } from './byte-stream.js'
import { resolveOAuth } from './oauth-settings.js'
import { homeDirectory } from './service-file.js'
import { system } from './system.js'
import { type Found, Sources, bool, count, prepareMode, duration, milliseconds, optionalStartupText, optionalText, text, typeError } from './sources.js'
import type {
  ChannelBinding,
  ConnectionConfig,
  HostAddress,
  PasswordSource,
  ProtocolVersion,
  SslMode,
  SslNegotiation,
  TargetSessionAttrs,
} from './types.js'
import {
  DEFAULT_PORT,
  checkNoNul,
  invalid,
  parseBool,
  parseEnum,
  parseHostaddrList,
  parsePort,
  parsePortList,
  parseProtocolVersion,
  parseRequireAuth,
  splitList,
} from './values.js'

export interface ResolveOptions {
  /** Environment to read PG* variables (and HOME, APPDATA) from. Default process.env. */
  env?: Record<string, string | undefined>
  /** Option-object keys handled by other layers, not to be reported as unknown. */
  ignoreKeys?: readonly string[]
  /** Home directory for the default password file. Default: HOME from `env`, else the operating system's (see system.ts). */
  homedir?: string
  /** User name to default to. Default: the operating system's (see system.ts). */
  osUser?: string
}

/** Default of `maxMessageSize`: the largest field PostgreSQL can send (1 GiB) plus room for the row around it. */
export const DEFAULT_MAX_MESSAGE_SIZE = 2 ** 30 + 2 ** 16
export const DEFAULT_STATEMENT_CACHE_SIZE = 256
export const DEFAULT_KEEPALIVE_IDLE_MS = 60_000
// A server (or a path) that never answers must not hang the caller forever; 0 still means no limit, as in libpq.
export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000

const SSL_MODES: readonly SslMode[] = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full']
const CHANNEL_BINDINGS: readonly ChannelBinding[] = ['disable', 'prefer', 'require']
const SSL_NEGOTIATIONS: readonly SslNegotiation[] = ['postgres', 'direct']
const TARGET_SESSION_ATTRS: readonly TargetSessionAttrs[] = [
  'any',
  'read-write',
  'read-only',
  'primary',
  'standby',
  'prefer-standby',
]
const LOAD_BALANCE: readonly ('disable' | 'random')[] = ['disable', 'random']
const POOLER_MODES: readonly ('session' | 'transaction')[] = ['session', 'transaction']
const GSSENC_MODES = ['disable', 'prefer', 'require'] as const

/** Startup parameters the client sets itself; a `params` entry must not fight them. */
const RESERVED_PARAMS = new Set(['user', 'database', 'application_name', 'options', 'client_encoding', 'replication'])

/**
 * Resolve a connection string or options object (or nothing: environment and
 * defaults only) into the config a connection is opened from. Throws
 * ConfigError, naming the setting, for anything unknown or malformed.
 */
export function resolveConfig(input?: string | ConnectOptions, opts: ResolveOptions = {}): ConnectionConfig {
  const env = opts.env ?? process.env
  const src = new Sources(collectInput(input, opts.ignoreKeys ?? []), settingsFromEnv(env), { env, homedir: opts.homedir })

  const hosts = resolveHosts(src)

  const userFound = src.find('user', 'user')
  const user = userFound === undefined ? osUserName(opts.osUser) : checkNoNul(text(userFound), userFound.origin)
  const databaseFound = src.find('database', 'dbname')
  const database = databaseFound === undefined ? user : checkNoNul(text(databaseFound), databaseFound.origin)

  const sslmodeFound = src.find('sslmode', 'sslmode')
  let sslmode: SslMode = sslmodeFound === undefined ? 'prefer' : parseEnum(text(sslmodeFound), SSL_MODES, sslmodeFound.origin)
  const sslrootcert = optionalText(src.find('sslrootcert', 'sslrootcert'))
  if (sslrootcert === 'system') {
    // libpq 16+: the system store makes verify-full the default and forbids weaker modes,
    // since anyone can get a publicly trusted certificate for a name they control.
    if (sslmodeFound === undefined) sslmode = 'verify-full'
    else if (sslmode !== 'verify-full') {
      throw new ConfigError(
        sslmodeFound.origin.setting,
        `weak sslmode "${sslmode}" may not be used with sslrootcert=system (use "verify-full")`,
      )
    }
  }
  const negotiationFound = src.find('sslnegotiation', 'sslnegotiation')
  const sslnegotiation =
    negotiationFound === undefined ? 'postgres' : parseEnum(text(negotiationFound), SSL_NEGOTIATIONS, negotiationFound.origin)
  if (negotiationFound !== undefined && sslnegotiation === 'direct' && !['require', 'verify-ca', 'verify-full'].includes(sslmode)) {
    // libpq 17: a weak mode could fall back to plaintext against a server without direct TLS.
    throw new ConfigError(
      negotiationFound.origin.setting,
      `weak sslmode "${sslmode}" may not be used with sslnegotiation=direct (use "require", "verify-ca", or "verify-full")`,
    )
  }

  const minFound = src.find('minProtocolVersion', 'min_protocol_version')
  const maxFound = src.find('maxProtocolVersion', 'max_protocol_version')
  const minProtocolVersion: ProtocolVersion = minFound === undefined ? '3.0' : parseProtocolVersion(text(minFound), minFound.origin)
  const maxProtocolVersion: ProtocolVersion = maxFound === undefined ? '3.2' : parseProtocolVersion(text(maxFound), maxFound.origin)
  if (minProtocolVersion > maxProtocolVersion) {
    const blame = (minFound ?? maxFound)?.origin.setting ?? 'minProtocolVersion'
    throw new ConfigError(
      blame,
      `min_protocol_version ${minProtocolVersion} is greater than max_protocol_version ${maxProtocolVersion}`,
    )
  }

  checkIgnoredKeywords(src)

  const requireAuthFound = src.find('requireAuth', 'require_auth')
  const channelBindingFound = src.find('channelBinding', 'channel_binding')
  const targetFound = src.find('targetSessionAttrs', 'target_session_attrs')
  const loadBalanceFound = src.find('loadBalanceHosts', 'load_balance_hosts')
  const poolerFound = src.find('pooler', 'pooler')

  return hideSecrets({
    hosts,
    user,
    database,
    password: resolvePassword(src.find('password', 'password')),
    passfile: optionalText(src.find('passfile', 'passfile')) ?? defaultPassfile(opts.homedir, env),
    applicationName: optionalStartupText(src.find('applicationName', 'application_name')),
    fallbackApplicationName: optionalStartupText(src.find('fallbackApplicationName', 'fallback_application_name')),
    options: optionalStartupText(src.find('options', 'options')),
    runtimeParams: resolveParams(src.find('params', undefined)),
    sslmode,
    sslrootcert,
    sslcert: optionalText(src.find('sslcert', 'sslcert')),
    sslkey: optionalText(src.find('sslkey', 'sslkey')),
    sslpassword: resolveSecret(src.find('sslpassword', 'sslpassword')),
    sslcrl: optionalText(src.find('sslcrl', 'sslcrl')),
    sslsni: bool(src.find('sslsni', 'sslsni'), true),
    sslnegotiation,
    sslkeylogfile: optionalText(src.find('sslkeylogfile', 'sslkeylogfile')),
    tls: resolveTls(src.find('tls', undefined)),
    stream: resolveStream(src.find('stream', undefined)),
    channelBinding:
      channelBindingFound === undefined ? 'prefer' : parseEnum(text(channelBindingFound), CHANNEL_BINDINGS, channelBindingFound.origin),
    requireAuth: requireAuthFound === undefined ? undefined : parseRequireAuth(text(requireAuthFound), requireAuthFound.origin),
    ...resolveOAuth(src),
    minProtocolVersion,
    maxProtocolVersion,
    connectTimeout: duration(src.find('connectTimeout', 'connect_timeout'), DEFAULT_CONNECT_TIMEOUT_MS, true),
    keepAlive: bool(src.find('keepAlive', 'keepalives'), true),
    keepAliveIdle: duration(src.find('keepAliveIdle', 'keepalives_idle'), DEFAULT_KEEPALIVE_IDLE_MS, false),
    keepAliveInterval: duration(src.find('keepAliveInterval', 'keepalives_interval'), 0, false),
    keepAliveCount: count(src.find('keepAliveCount', 'keepalives_count'), 0, 0),
    tcpUserTimeout: milliseconds(src.find('tcpUserTimeout', 'tcp_user_timeout')),
    targetSessionAttrs: targetFound === undefined ? 'any' : parseEnum(text(targetFound), TARGET_SESSION_ATTRS, targetFound.origin),
    loadBalanceHosts: loadBalanceFound === undefined ? 'disable' : parseEnum(text(loadBalanceFound), LOAD_BALANCE, loadBalanceFound.origin),
    replication: resolveReplication(src.find('replication', 'replication')),
    prepare: prepareMode(src.find('prepare', 'prepare')),
    pooler: poolerFound === undefined ? undefined : parseEnum(text(poolerFound), POOLER_MODES, poolerFound.origin),
    statementCacheSize: count(src.find('statementCacheSize', 'statement_cache_size'), DEFAULT_STATEMENT_CACHE_SIZE, 0),
    maxMessageSize: count(src.find('maxMessageSize', undefined), DEFAULT_MAX_MESSAGE_SIZE, 1),
    service: src.service === undefined ? undefined : { name: src.service.name, file: src.service.file },
  })
}

/**
 * Makes the fields that can hold secrets (passwords, tokens, TLS keys and passphrases)
 * non-enumerable, so that logging a config or a client, util.inspect and
 * JSON.stringify never print them; code reads them by name as usual.
 */
function hideSecrets(config: ConnectionConfig): ConnectionConfig {
  for (const key of ['password', 'sslpassword', 'oauthBearerToken', 'tls'] as const) {
    Object.defineProperty(config, key, { value: config[key], enumerable: false, writable: false, configurable: false })
  }
  return config
}

function collectInput(input: unknown, ignoreKeys: readonly string[]): Map<OptionField, unknown> {
  if (input === undefined || input === null || input === '') return new Map()
  if (typeof input === 'string') return new Map([['connectionString', input]])
  if (typeof input === 'object' && !Array.isArray(input)) return collectOptions(input, ignoreKeys)
  throw new ConfigError('connectionString', `expected a connection string or an options object, got ${typeName(input)}`)
}

function resolveHosts(src: Sources): HostAddress[] {
  const hostFound = src.find('host', 'host')
  const addrFound = src.find('hostaddr', 'hostaddr')
  const portFound = src.find('port', 'port')
  const names = hostFound === undefined ? undefined : listItems(hostFound)
  const addrs = addrFound === undefined ? undefined : parseHostaddrList(listItems(addrFound), addrFound.origin)

  // As in libpq: a hostaddr list, when given, decides how many servers there are.
  let n = names?.length ?? 1
  if (addrs !== undefined && addrFound !== undefined) {
    if (names !== undefined && names.length !== addrs.length) {
      throw new ConfigError(addrFound.origin.setting, `could not match ${names.length} host names to ${addrs.length} hostaddr values`)
    }
    n = addrs.length
  }
  const ports = portFound === undefined ? [DEFAULT_PORT] : portList(portFound)
  if (ports.length !== 1 && ports.length !== n && portFound !== undefined) {
    throw new ConfigError(portFound.origin.setting, `could not match ${ports.length} port numbers to ${n} hosts`)
  }

  const hosts: HostAddress[] = []
  for (let i = 0; i < n; i++) {
    const name = names?.[i] ?? ''
    const hostaddr = addrs?.[i] ?? ''
    // With only an address, the address also names the server (for TLS and .pgpass), as in libpq.
    const host = name !== '' ? name : hostaddr !== '' ? hostaddr : 'localhost'
    const port = (ports.length === 1 ? ports[0] : ports[i]) ?? DEFAULT_PORT
    hosts.push({ host, port, hostaddr: hostaddr === '' ? undefined : hostaddr })
  }
  return hosts
}

/** A host or hostaddr setting as list items: a comma-separated string or, from the options, an array. */
function listItems(found: Found): string[] {
  if (found.kind === 'option' && Array.isArray(found.value)) {
    return found.value.map((item: unknown, i) => {
      if (typeof item !== 'string') throw typeError({ ...found.origin, setting: `${found.origin.setting}[${i}]` }, item, 'a string')
      return item.trim()
    })
  }
  return splitList(text(found))
}

function portList(found: Found): number[] {
  if (found.kind === 'text') return parsePortList(found.value, found.origin)
  const value = found.value
  const one = (item: unknown): number => {
    if (typeof item === 'string') return parsePort(item, found.origin)
    if (typeof item !== 'number') throw typeError(found.origin, item, 'a number, a string or an array of numbers')
    if (!Number.isInteger(item) || item < 1 || item > 65535) invalid(found.origin, String(item), 'a port must be an integer from 1 to 65535')
    return item
  }
  if (typeof value === 'string') return parsePortList(value, found.origin)
  if (Array.isArray(value)) return value.map(one)
  return [one(value)]
}

function resolvePassword(found: Found | undefined): PasswordSource | undefined {
  if (found === undefined) return undefined
  if (found.kind === 'option' && typeof found.value === 'function') return found.value as () => string | Promise<string>
  if (found.kind === 'option' && typeof found.value !== 'string') {
    throw typeError(found.origin, found.value, 'a string or a function')
  }
  return checkNoNul(text(found), found.origin, true)
}

function resolveSecret(found: Found | undefined): string | undefined {
  if (found === undefined) return undefined
  return checkNoNul(text(found), found.origin, true)
}

function resolveParams(found: Found | undefined): Record<string, string> {
  // Null prototype: a key such as "__proto__" must stay an ordinary entry.
  const out: Record<string, string> = Object.create(null)
  if (found === undefined) return out
  const params = found.value
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    throw typeError(found.origin, params, 'an object of strings')
  }
  for (const [key, value] of Object.entries(params)) {
    if (key === '') throw new ConfigError('params', 'params has an empty parameter name')
    checkNoNul(key, { setting: 'params', where: 'in the options (a parameter name)' })
    if (RESERVED_PARAMS.has(key.toLowerCase())) {
      throw new ConfigError(
        'params',
        `params must not set "${key}": pipegres sets it itself (use the ${reservedHint(key.toLowerCase())} instead)`,
      )
    }
    if (key.startsWith('_pq_.')) {
      throw new ConfigError('params', `params must not set "${key}": names starting with _pq_. are protocol extensions`)
    }
    if (typeof value !== 'string') {
      throw new ConfigError('params', `params.${key} must be a string, got ${typeName(value)}`)
    }
    out[key] = checkNoNul(value, { setting: 'params', where: `in the options (params.${key})` })
  }
  return out
}

function reservedHint(key: string): string {
  switch (key) {
    case 'user':
      return 'user option'
    case 'database':
      return 'database option'
    case 'application_name':
      return 'applicationName option'
    case 'options':
      return 'options option'
    case 'client_encoding':
      return 'default UTF8; no other encoding is supported'
    default:
      return 'replication option'
  }
}

/** libpq's replication setting: 'database' (logical), or a boolean (true: physical). */
function resolveReplication(found: Found | undefined): 'database' | 'physical' | undefined {
  if (found === undefined) return undefined
  if (found.kind === 'option' && typeof found.value === 'boolean') return found.value ? 'physical' : undefined
  if (found.kind === 'option' && found.value !== 'database') throw typeError(found.origin, found.value, "true, false or 'database'")
  const word = text(found).trim()
  if (word.toLowerCase() === 'database') return 'database'
  try {
    return parseBool(word, found.origin) ? 'physical' : undefined
  } catch {
    return invalid(found.origin, text(found), "expected 'database' or a boolean (1 or 0, true/false, on/off, yes/no)")
  }
}

function resolveTls(found: Found | undefined): Record<string, unknown> | undefined {
  if (found === undefined) return undefined
  const tls = found.value
  if (typeof tls !== 'object' || tls === null || Array.isArray(tls)) throw typeError(found.origin, tls, 'an object')
  return tls as Record<string, unknown>
}

function resolveStream(found: Found | undefined): StreamFactory | undefined {
  if (found === undefined) return undefined
  const stream = found.value
  if (typeof stream === 'function') return stream as StreamFactory
  // pg takes a stream object too; one stream serves one connection, and a client reconnects and cancels.
  const what = typeof stream === 'object' && stream !== null && typeof (stream as { write?: unknown }).write === 'function' ? 'a stream object' : typeName(stream)
  throw new ConfigError(found.origin.setting, `stream must be a function that opens a new byte stream for each connection and cancel request, got ${what} (wrap it: stream: () => makeStream())`)
}

/**
 * libpq keywords accepted only with the value pipegres behaves as anyway, so
 * strings written for libpq keep working and nothing is silently weaker.
 */
function checkIgnoredKeywords(src: Sources): void {
  const gss = src.find(undefined, 'gssencmode')
  if (gss !== undefined) {
    const mode = parseEnum(gss.value as string, GSSENC_MODES, gss.origin)
    if (mode === 'require') {
      throw new ConfigError(
        gss.origin.setting,
        `pipegres does not support GSSAPI encryption: ${gss.origin.setting} "require" ${gss.origin.where} cannot be satisfied (use disable or prefer)`,
      )
    }
  }
  // Compression is ignored by libpq 14+ servers too; any valid flag is accepted.
  const compression = src.find(undefined, 'sslcompression')
  if (compression !== undefined) parseBool(compression.value as string, compression.origin)
  const encoding = src.find(undefined, 'client_encoding')
  if (encoding !== undefined && !/^(utf-?8|unicode)$/i.test((encoding.value as string).trim())) {
    invalid(encoding.origin, encoding.value as string, 'pipegres always uses UTF8')
  }
}

function osUserName(given: string | undefined): string {
  if (given !== undefined && given !== '') return given
  let name = ''
  try {
    name = system().userName()
  } catch {
    // No passwd entry, e.g. an arbitrary uid in a container.
  }
  if (name === '') {
    throw new ConfigError('user', 'no user given and the operating system user name could not be determined (set user or PGUSER)')
  }
  return name
}

function defaultPassfile(homedir: string | undefined, env: Record<string, string | undefined>): string | undefined {
  if (process.platform === 'win32') {
    const appdata = readEnv(env, 'APPDATA')
    return appdata ? path.join(appdata, 'postgresql', 'pgpass.conf') : undefined
  }
  const home = homeDirectory(homedir, env)
  return home === undefined ? undefined : path.join(home, '.pgpass')
}
