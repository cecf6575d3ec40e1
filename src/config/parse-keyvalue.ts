// libpq keyword/value strings: `host=db port = 5432 password='it''s'` with
// libpq's exact rules (conninfo_parse): whitespace around '=', unquoted values
// end at whitespace, single-quoted values may hold anything, and in both a
// backslash makes the next character literal.

import { ConfigError } from '../errors.js'
import { type ConnPair, foldPairs } from './conn-pair.js'
import { isSecretKeyword } from './keywords.js'

/** Parse a key=value connection string (later settings winning). */
export function parseKeyValue(s: string): Record<string, string> {
  return foldPairs(keyValuePairs(s))
}

/** Settings of a key=value string in the order written. */
export function keyValuePairs(s: string): ConnPair[] {
  const pairs: ConnPair[] = []
  const n = s.length
  let i = 0
  // Set after an unquoted password: a following "key" may be its tail.
  let secretBefore: string | undefined
  while (i < n) {
    if (isSpace(s.charCodeAt(i))) {
      i++
      continue
    }
    const keyStart = i
    while (i < n && s[i] !== '=' && !isSpace(s.charCodeAt(i))) i++
    const key = s.slice(keyStart, i)
    while (i < n && isSpace(s.charCodeAt(i))) i++
    if (s[i] !== '=') {
      if (secretBefore !== undefined) {
        throw new ConfigError(
          secretBefore,
          `malformed connection string: text after the ${secretBefore} value is not a key=value setting (single-quote values that contain spaces)`,
        )
      }
      throw new ConfigError('connectionString', `malformed connection string: missing "=" after "${key}"`)
    }
    i++
    while (i < n && isSpace(s.charCodeAt(i))) i++

    let value = ''
    const quoted = s[i] === "'"
    if (quoted) {
      i++
      for (;;) {
        if (i >= n) {
          // The value is not shown: it may be a password.
          throw new ConfigError(key, `malformed connection string: unterminated quoted value for "${key}"`)
        }
        const c = s[i]
        if (c === '\\') {
          i++
          if (i < n) value += s[i++]
          continue
        }
        i++
        if (c === "'") break
        value += c
      }
    } else {
      while (i < n && !isSpace(s.charCodeAt(i))) {
        if (s[i] === '\\') {
          i++
          if (i < n) value += s[i++]
        } else {
          value += s[i++]
        }
      }
    }
    pairs.push({ key, value, afterSecret: secretBefore !== undefined, plain: false })
    secretBefore = !quoted && isSecretKeyword(key) ? key : undefined
  }
  return pairs
}

/** C isspace() in the "C" locale, which is what libpq uses. */
function isSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d)
}
