// A connection string in either libpq form, detected the way libpq does: a
// URL if it starts with the scheme, key=value otherwise. Keywords are checked
// here, where we still know which ones follow a password.

import { ConfigError } from '../errors.js'
import type { ConnPair } from './conn-pair.js'
import { KEYWORDS, UNSUPPORTED_KEYWORDS, closest, isKeyword } from './keywords.js'
import { keyValuePairs } from './parse-keyvalue.js'
import { isConnectionUrl, urlPairs } from './parse-url.js'

/**
 * Parse a URL or key=value connection string into libpq keywords, rejecting
 * unknown and unsupported ones. The first `dbname` whose value is itself a
 * connection string (contains '=' or starts with a URL scheme) is expanded in
 * place, as libpq's expand_dbname does: settings written before it can be
 * overridden by the nested string, settings after it override the nested
 * string. A database name in a URL path is never expanded.
 */
export function parseConnectionString(s: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null)
  let sawDbname = false
  for (const pair of connectionPairs(s)) {
    checkKeyword(pair)
    if (pair.key === 'dbname' && !sawDbname) {
      sawDbname = true
      if (!pair.plain && looksLikeConnectionString(pair.value)) {
        // Nested strings are not expanded again (libpq expands only once).
        for (const inner of connectionPairs(pair.value)) {
          checkKeyword(inner)
          out[inner.key] = inner.value
        }
        continue
      }
    }
    out[pair.key] = pair.value
  }
  return out
}

function connectionPairs(s: string): ConnPair[] {
  if (isConnectionUrl(s)) return urlPairs(s)
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(s)
  if (scheme !== null) {
    throw new ConfigError(
      'connectionString',
      `unsupported URL scheme "${scheme[1]}:" in the connection string (use "postgres://" or "postgresql://")`,
    )
  }
  return keyValuePairs(s)
}

function looksLikeConnectionString(value: string): boolean {
  return isConnectionUrl(value) || value.includes('=')
}

function checkKeyword(pair: ConnPair): void {
  const { key } = pair
  if (isKeyword(key)) return
  if (pair.afterSecret) {
    // The "key" is most likely the tail of a password that contains a space.
    throw new ConfigError(
      'password',
      'malformed connection string: unexpected text after the password (single-quote or percent-encode passwords that contain spaces or "&")',
    )
  }
  const hint = UNSUPPORTED_KEYWORDS.get(key)
  if (hint !== undefined) {
    throw new ConfigError(key, `pipegres does not support the connection setting "${key}": ${hint}`)
  }
  const suggestion = closest(key, KEYWORDS)
  throw new ConfigError(
    key,
    `unknown connection setting "${key}"${suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`}`,
  )
}
