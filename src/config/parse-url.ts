// Connection URLs in libpq's dialect:
//   postgres[ql]://[user[:password]@][host][:port][,host[:port]...][/dbname][?keyword=value&...]
// Hand-written rather than the WHATWG URL class, which rejects or rewrites
// multi-host authorities, percent-encoded socket paths and bracketed IPv6 lists.

import { ConfigError } from '../errors.js'
import { type ConnPair, foldPairs } from './conn-pair.js'
import { isSecretKeyword } from './keywords.js'

const SCHEME = /^postgres(?:ql)?:\/\//i

/** True for a string starting with `postgres://` or `postgresql://` (any case). */
export function isConnectionUrl(s: string): boolean {
  return SCHEME.test(s)
}

/** Parse a connection URL into libpq keywords (values percent-decoded, later settings winning). */
export function parseUrl(url: string): Record<string, string> {
  return foldPairs(urlPairs(url))
}

/** The URL with its password (in the authority or the query) replaced by `***`. */
export function redactUrl(url: string): string {
  const scheme = SCHEME.exec(url)?.[0]
  if (scheme === undefined) return '***'
  const rest = url.slice(scheme.length)
  const authorityEnd = authorityLength(rest)
  let authority = rest.slice(0, authorityEnd)
  const at = authority.lastIndexOf('@')
  if (at >= 0) {
    const colon = authority.indexOf(':')
    if (colon >= 0 && colon < at) authority = `${authority.slice(0, colon + 1)}***${authority.slice(at)}`
  }
  return scheme + authority + redactQuery(rest.slice(authorityEnd))
}

function redactQuery(tail: string): string {
  return tail.replace(/([?&](?:ssl)?password=)[^&]*/gi, '$1***')
}

/** Settings of a URL in the order written; ssl=true becomes sslmode=require as in libpq. */
export function urlPairs(url: string): ConnPair[] {
  const scheme = SCHEME.exec(url)?.[0]
  if (scheme === undefined) {
    throw new ConfigError('connectionString', 'a connection URL must start with "postgres://" or "postgresql://"')
  }
  const ctx = new UrlContext(url, scheme.length)
  const rest = url.slice(scheme.length)
  const authorityEnd = authorityLength(rest)
  const authority = rest.slice(0, authorityEnd)
  const pairs: ConnPair[] = []
  const push = (key: string, value: string, plain = false): void => {
    pairs.push({ key, value, afterSecret: false, plain })
  }

  // The last '@' ends the user info, so an unencoded '@' in a password still works.
  const at = authority.lastIndexOf('@')
  const hostPart = at >= 0 ? authority.slice(at + 1) : authority
  if (at >= 0) {
    const userInfo = authority.slice(0, at)
    const colon = userInfo.indexOf(':')
    const user = colon >= 0 ? userInfo.slice(0, colon) : userInfo
    if (user !== '') push('user', percentDecode(user, 'user', 'the user name', ctx))
    if (colon >= 0) {
      const password = userInfo.slice(colon + 1)
      if (password !== '') push('password', percentDecode(password, 'password', 'the password', ctx))
    }
  }

  const { hosts, ports } = parseHostList(hostPart, ctx)
  // libpq keeps a list of empty hosts when there is more than one, so that a
  // port list like ":5433,:5434" still lines up with (default) hosts.
  if (hosts.length > 1 || hosts[0] !== '') push('host', hosts.join(','))
  if (ports.some((p) => p !== '')) push('port', ports.join(','))

  let i = authorityEnd
  if (rest[i] === '/') {
    const queryStart = rest.indexOf('?', i)
    const end = queryStart < 0 ? rest.length : queryStart
    const dbname = rest.slice(i + 1, end)
    // An empty path leaves dbname unset, so PGDATABASE and the default still apply.
    if (dbname !== '') push('dbname', percentDecode(dbname, 'dbname', 'the database name', ctx), true)
    i = end
  }
  if (rest[i] === '?') pairs.push(...queryPairs(rest.slice(i + 1), ctx))
  return pairs
}

function authorityLength(rest: string): number {
  const m = /[/?]/.exec(rest)
  return m === null ? rest.length : m.index
}

/** What a message may show of the URL. */
class UrlContext {
  readonly url: string
  /**
   * An '@' (or an encoded one, or an encoded password keyword) after the
   * authority means the authority may have been split inside a password that
   * contains an unencoded '/' or '?': then nothing from the URL is echoed.
   */
  readonly suspicious: boolean
  constructor(url: string, schemeLength: number) {
    this.url = url
    const rest = url.slice(schemeLength)
    this.suspicious = /@|%40|password%3d/i.test(redactQuery(rest.slice(authorityLength(rest))))
  }
  /** The URL for a message, password masked, or a note saying why it is not shown. */
  describe(): string {
    return this.suspicious
      ? '(not shown: it may contain a password; percent-encode "/", "?", "@" and ":" in passwords)'
      : `"${redactUrl(this.url)}"`
  }
  /** A fragment of the authority to quote in a message, or nothing when fragments may hold a password. */
  quote(fragment: string): string {
    return this.suspicious ? '' : ` "${fragment}"`
  }
}

function parseHostList(part: string, ctx: UrlContext): { hosts: string[]; ports: string[] } {
  const hosts: string[] = []
  const ports: string[] = []
  let i = 0
  for (;;) {
    let host: string
    if (part[i] === '[') {
      const close = part.indexOf(']', i)
      if (close < 0) {
        throw new ConfigError('host', `malformed connection URL ${ctx.describe()}: missing "]" after the IPv6 address${ctx.quote(part.slice(i))}`)
      }
      host = part.slice(i + 1, close)
      if (host === '') throw new ConfigError('host', `malformed connection URL ${ctx.describe()}: empty IPv6 address "[]"`)
      i = close + 1
      const next = part[i]
      if (next !== undefined && next !== ':' && next !== ',') {
        throw new ConfigError(
          'host',
          `malformed connection URL ${ctx.describe()}: unexpected character${ctx.quote(next)} after the IPv6 address (expected ":" or ",")`,
        )
      }
    } else {
      const start = i
      while (i < part.length && part[i] !== ':' && part[i] !== ',') i++
      host = part.slice(start, i)
    }
    let port = ''
    if (part[i] === ':') {
      const start = i + 1
      i = start
      while (i < part.length && part[i] !== ',') i++
      port = percentDecode(part.slice(start, i), 'port', 'a port', ctx)
      if (!/^\d*$/.test(port)) {
        throw new ConfigError('port', ctx.suspicious
            ? `invalid port in the connection URL ${ctx.describe()}`
            : `invalid port "${port}" in the connection URL: not a number`)
      }
    }
    hosts.push(percentDecode(host, 'host', 'a host', ctx))
    ports.push(port)
    if (part[i] !== ',') return { hosts, ports }
    i++
  }
}

function queryPairs(query: string, ctx: UrlContext): ConnPair[] {
  const pairs: ConnPair[] = []
  const parts = query.split('&')
  // A trailing '&' ends the query, as in libpq; an empty part elsewhere is an error below.
  if (parts[parts.length - 1] === '') parts.pop()
  let afterSecret = false
  for (const part of parts) {
    const eq = part.indexOf('=')
    if (eq < 0) {
      if (afterSecret) {
        throw new ConfigError(
          'password',
          'malformed connection URL: a query parameter after the password has no "=" (percent-encode "&" in passwords as %26)',
        )
      }
      if (part === '') throw new ConfigError('connectionString', 'malformed connection URL: empty query parameter (missing "=")')
      throw new ConfigError(part, `malformed query parameter "${part}" in the connection URL: missing "="`)
    }
    const rawKey = part.slice(0, eq)
    if (part.indexOf('=', eq + 1) >= 0) {
      // Only the key is shown: the value may be a password.
      throw new ConfigError(
        rawKey,
        `malformed query parameter "${rawKey}" in the connection URL: extra "=" in its value (percent-encode it as %3D)`,
      )
    }
    const key = percentDecode(rawKey, 'connectionString', 'a query parameter name', ctx)
    let value = percentDecode(part.slice(eq + 1), key, `query parameter "${key}"`, ctx)
    let name = key
    // JDBC compatibility, as libpq: ssl=true means sslmode=require. Other ssl values stay unknown.
    if (key === 'ssl' && value === 'true') {
      name = 'sslmode'
      value = 'require'
    }
    pairs.push({ key: name, value, afterSecret, plain: false })
    afterSecret = isSecretKeyword(key)
  }
  return pairs
}

const utf8 = new TextDecoder('utf-8', { fatal: true })
const encoder = new TextEncoder()

/**
 * libpq's URI decoding: %XX escapes (never %00), the bytes then read as UTF-8;
 * '+' stays '+'. `setting` names the part for errors; a secret part's bad
 * escape is not echoed.
 */
function percentDecode(s: string, setting: string, where: string, ctx: UrlContext): string {
  if (!s.includes('%')) return s
  const bytes: number[] = []
  for (let i = 0; i < s.length; ) {
    if (s[i] === '%') {
      const hex = s.slice(i + 1, i + 3)
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) {
        const shown = isSecretKeyword(setting) || ctx.suspicious ? '' : ` "${s.slice(i, i + 3)}"`
        throw new ConfigError(setting, `invalid percent-encoding${shown} in ${where} of the connection URL`)
      }
      const byte = Number.parseInt(hex, 16)
      if (byte === 0) throw new ConfigError(setting, `forbidden value %00 in ${where} of the connection URL`)
      bytes.push(byte)
      i += 3
    } else {
      const ch = String.fromCodePoint(s.codePointAt(i) ?? 0)
      for (const b of encoder.encode(ch)) bytes.push(b)
      i += ch.length
    }
  }
  try {
    return utf8.decode(Uint8Array.from(bytes))
  } catch {
    throw new ConfigError(setting, `percent-encoded bytes in ${where} of the connection URL are not valid UTF-8`)
  }
}
