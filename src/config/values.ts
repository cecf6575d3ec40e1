// Parsers for single setting values, shared by every source. Each error names
// the setting as the user wrote it (keyword, option field or PG* variable)
// and the offending value, except for secrets, which are never echoed.

import { ConfigError } from '../errors.js'
import type { AuthMethodName, ProtocolVersion, RequireAuth } from './types.js'

/** Where a value came from, for errors. */
export interface Origin {
  /** Reported as ConfigError.setting: the keyword, the option field, or the PG* variable. */
  setting: string
  /** Completes "invalid port "x" ...": "in the connection string", "in the options", "in the environment". */
  where: string
}

/** The default port; also what an empty item in a port list means, as in libpq. */
export const DEFAULT_PORT = 5432

/** Largest delay Node's timers accept; beyond it setTimeout fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1

export function invalid(o: Origin, value: string, why: string): never {
  throw new ConfigError(o.setting, `invalid ${o.setting} ${JSON.stringify(value)} ${o.where}: ${why}`)
}

export function parseEnum<T extends string>(text: string, allowed: readonly T[], o: Origin): T {
  if ((allowed as readonly string[]).includes(text)) return text as T
  return invalid(o, text, `expected one of ${allowed.join(', ')}`)
}

const TRUE_WORDS = new Set(['1', 'true', 'on', 'yes'])
const FALSE_WORDS = new Set(['0', 'false', 'off', 'no'])

/** libpq's 0/1 flags, plus the spellings PostgreSQL accepts for booleans. */
export function parseBool(text: string, o: Origin): boolean {
  const word = text.trim().toLowerCase()
  if (TRUE_WORDS.has(word)) return true
  if (FALSE_WORDS.has(word)) return false
  return invalid(o, text, 'expected 1 or 0 (or true/false, on/off, yes/no)')
}

/** A decimal integer; surrounding whitespace is allowed, as libpq's parser does. */
export function parseInteger(text: string, o: Origin, min: number, max: number, unit = ''): number {
  const trimmed = text.trim()
  if (!/^[+-]?\d+$/.test(trimmed)) return invalid(o, text, `not an integer${unit}`)
  const n = Number(trimmed)
  if (n < min || n > max) return invalid(o, text, `must be from ${min} to ${max}${unit}`)
  return n
}

/** Comma-separated list items, trimmed; empty items stay (they mean "the default"). */
export function splitList(text: string): string[] {
  return text.split(',').map((item) => item.trim())
}

export function parsePort(text: string, o: Origin): number {
  if (text.trim() === '') return DEFAULT_PORT
  const trimmed = text.trim()
  const n = /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN
  if (!(n >= 1 && n <= 65535)) return invalid(o, text, 'a port must be an integer from 1 to 65535')
  return n
}

export function parsePortList(text: string, o: Origin): number[] {
  return splitList(text).map((item) => parsePort(item, o))
}

/** hostaddr items: numeric addresses, or '' for "resolve the host name". */
export function parseHostaddrList(items: readonly string[], o: Origin): string[] {
  for (const item of items) {
    if (item !== '' && !isNumericAddress(item)) invalid(o, item, 'hostaddr must be a numeric IPv4 or IPv6 address')
  }
  return [...items]
}

const IPV4_OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]\\d|\\d)'
const IPV4 = new RegExp(`^${IPV4_OCTET}(?:\\.${IPV4_OCTET}){3}$`)
/** A zone after '%' (fe80::1%eth0), as getaddrinfo takes it. */
const ZONE = /%[0-9A-Za-z.:_-]+$/

/**
 * What node:net's isIP accepts, without node:net (config/ loads in Workers):
 * dotted-quad IPv4 without leading zeros, or IPv6 (with an optional zone),
 * whose syntax the URL parser checks.
 */
export function isNumericAddress(text: string): boolean {
  if (IPV4.test(text)) return true
  if (!text.includes(':')) return false
  const address = text.replace(ZONE, '')
  if (!/^[0-9A-Fa-f:.]+$/.test(address)) return false
  try {
    new URL(`http://[${address}]/`)
    return true
  } catch {
    return false
  }
}

const AUTH_METHODS: readonly AuthMethodName[] = ['password', 'md5', 'scram-sha-256', 'oauth', 'gss', 'sspi', 'none']

/**
 * libpq's require_auth: a comma list of methods, either all plain (the server
 * must use one of them) or all negated with '!' (it must use none of them).
 * Mixing and repeating are errors, with libpq's wording.
 */
export function parseRequireAuth(text: string, o: Origin): RequireAuth | undefined {
  if (text === '') return undefined
  const methods = new Set<AuthMethodName>()
  let negated = false
  const items = text.split(',')
  for (const [index, item] of items.entries()) {
    const isNegated = item.startsWith('!')
    if (index === 0) negated = isNegated
    else if (isNegated && !negated) {
      throw new ConfigError(o.setting, `negative require_auth method "${item}" cannot be mixed with non-negative methods ${o.where}`)
    } else if (!isNegated && negated) {
      throw new ConfigError(o.setting, `require_auth method "${item}" cannot be mixed with negative methods ${o.where}`)
    }
    const name = isNegated ? item.slice(1) : item
    if (!(AUTH_METHODS as readonly string[]).includes(name)) {
      invalid(o, text, `unknown method "${name}" (expected ${AUTH_METHODS.join(', ')}, each optionally prefixed with "!")`)
    }
    const method = name as AuthMethodName
    if (methods.has(method)) {
      throw new ConfigError(o.setting, `require_auth method "${item}" is specified more than once ${o.where}`)
    }
    methods.add(method)
  }
  return { methods, negated }
}

/** '3.0', '3.2', or libpq 18's 'latest' (3.2 for this client). */
export function parseProtocolVersion(text: string, o: Origin): ProtocolVersion {
  if (text === '3.0' || text === '3.2') return text
  if (text === 'latest') return '3.2'
  return invalid(o, text, 'expected 3.0, 3.2 or latest')
}

/** Startup-packet strings are NUL-terminated on the wire, so a NUL inside would truncate or corrupt them. */
export function checkNoNul(text: string, o: Origin, secret = false): string {
  if (text.includes('\0')) {
    if (secret) throw new ConfigError(o.setting, `${o.setting} ${o.where} must not contain a NUL character`)
    invalid(o, text, 'must not contain a NUL character')
  }
  return text
}
