// Where each setting's value comes from, highest first: the options object, the
// connection string, the connection service file, the PG* environment. This is
// libpq's order (conninfo_add_defaults reads the service file before it looks
// at the environment, and fills only what the string left unset), with the
// options object on top. Only the winning value of a setting is parsed.

import { ConfigError } from '../errors.js'
import { parseConnectionString } from './connection-string.js'
import type { EnvSettings } from './env.js'
import type { Keyword } from './keywords.js'
import { type OptionField, typeName } from './options.js'
import { type Service, type ServiceLookup, findService } from './service-file.js'
import { MAX_TIMER_MS, type Origin, checkNoNul, invalid, parseBool, parseInteger } from './values.js'

const MAX_INT32 = 2 ** 31 - 1
/** connect_timeout and keepalives_idle are seconds; this many still fit Node's timers in ms. */
const MAX_SECONDS = Math.floor(MAX_TIMER_MS / 1000)

/** A setting's winning value: typed from the options object, or text from a string, a service file or the environment. */
export type Found = { kind: 'option'; value: unknown; origin: Origin } | { kind: 'text'; value: string; origin: Origin }

export class Sources {
  readonly options: Map<OptionField, unknown>
  readonly str: Record<string, string>
  readonly env: EnvSettings
  /** The service section read, if a service was named. */
  readonly service: Service | undefined

  constructor(options: Map<OptionField, unknown>, env: EnvSettings, lookup: Omit<ServiceLookup, 'servicefile'>) {
    this.options = options
    this.env = env
    const cs = options.get('connectionString')
    if (cs !== undefined && typeof cs !== 'string') throw typeError({ setting: 'connectionString', where: 'in the options' }, cs, 'a string')
    this.str = cs === undefined ? Object.create(null) : parseConnectionString(cs)
    this.service = undefined
    // A service file cannot name a service or a service file itself, so these come from the other sources only.
    const name = this.find('service', 'service')
    if (name !== undefined) {
      // PGSERVICEFILE is read by findService, after the servicefile setting.
      const fileFound = this.findExplicit('servicefile', 'servicefile')
      this.service = findService(text(name), name.origin.setting, {
        ...lookup,
        servicefile: fileFound === undefined ? undefined : text(fileFound),
      })
    }
  }

  find(field: OptionField | undefined, keyword: Keyword | undefined): Found | undefined {
    const explicit = this.findExplicit(field, keyword)
    if (explicit !== undefined || keyword === undefined) return explicit
    const fromService = this.service?.settings.get(keyword)
    if (fromService !== undefined) {
      // As in libpq, an empty value in the service file is still a value: the
      // setting takes its default, and the environment is not consulted.
      if (fromService.value === '') return undefined
      const { name, file } = this.service!
      return { kind: 'text', value: fromService.value, origin: { setting: keyword, where: `in service "${name}" (file "${file}", line ${fromService.line})` } }
    }
    const fromEnv = this.env.get(keyword)
    if (fromEnv !== undefined) {
      return { kind: 'text', value: fromEnv.value, origin: { setting: fromEnv.name, where: 'in the environment' } }
    }
    return undefined
  }

  /** The value from the options object or the connection string only. */
  private findExplicit(field: OptionField | undefined, keyword: Keyword | undefined): Found | undefined {
    if (field !== undefined && this.options.has(field)) {
      return { kind: 'option', value: this.options.get(field), origin: { setting: field, where: 'in the options' } }
    }
    if (keyword === undefined) return undefined
    // An empty value counts as unset, as libpq does for PQconnectdbParams and the environment.
    const value = this.str[keyword]
    if (value !== undefined && value !== '') {
      return { kind: 'text', value, origin: { setting: keyword, where: 'in the connection string' } }
    }
    return undefined
  }
}

export function typeError(o: Origin, value: unknown, expected: string): ConfigError {
  return new ConfigError(o.setting, `${o.setting} ${o.where} must be ${expected}, got ${typeName(value)}`)
}

export function text(found: Found): string {
  if (found.kind === 'text') return found.value
  if (typeof found.value !== 'string') throw typeError(found.origin, found.value, 'a string')
  return found.value
}

export function optionalText(found: Found | undefined): string | undefined {
  return found === undefined ? undefined : text(found)
}

/** Text that goes into the startup packet. */
export function optionalStartupText(found: Found | undefined): string | undefined {
  return found === undefined ? undefined : checkNoNul(text(found), found.origin)
}

export function bool(found: Found | undefined, fallback: boolean): boolean {
  if (found === undefined) return fallback
  if (found.kind === 'text') return parseBool(found.value, found.origin)
  if (typeof found.value !== 'boolean') throw typeError(found.origin, found.value, 'a boolean')
  return found.value
}

/**
 * The prepare setting: a boolean (as bool()) or 'always', which keeps named
 * statements even behind a recognised transaction-mode pooler (one that keeps
 * them itself, such as PgBouncer 1.21+ with max_prepared_statements).
 */
export function prepareMode(found: Found | undefined): boolean | 'always' {
  if (found === undefined) return true
  if (found.kind === 'text') {
    const word = found.value.trim().toLowerCase()
    if (word === 'always') return 'always'
    if (!/^(1|0|true|false|on|off|yes|no)$/.test(word)) invalid(found.origin, found.value, 'expected always, or 1 or 0 (or true/false, on/off, yes/no)')
    return parseBool(word, found.origin)
  }
  if (found.value === 'always' || typeof found.value === 'boolean') return found.value
  throw typeError(found.origin, found.value, "a boolean or 'always'")
}

/**
 * Milliseconds from the options object, or whole seconds from a string or the
 * environment (libpq's unit). For connect_timeout libpq turns 1 into 2, since
 * rounding could make a 1-second timeout fire almost at once.
 */
export function duration(found: Found | undefined, fallback: number, isConnectTimeout: boolean): number {
  if (found === undefined) return fallback
  if (found.kind === 'text') {
    const seconds = parseInteger(found.value, found.origin, 0, MAX_SECONDS, ' (seconds)')
    return (isConnectTimeout && seconds === 1 ? 2 : seconds) * 1000
  }
  const ms = found.value
  if (typeof ms !== 'number') throw typeError(found.origin, ms, 'a number of milliseconds')
  if (!(ms >= 0 && ms <= MAX_TIMER_MS)) invalid(found.origin, String(ms), `must be from 0 to ${MAX_TIMER_MS} milliseconds`)
  return ms
}

/** Milliseconds in every source (libpq's tcp_user_timeout is in milliseconds); 0 when not given. */
export function milliseconds(found: Found | undefined): number {
  if (found === undefined) return 0
  if (found.kind === 'text') return parseInteger(found.value, found.origin, 0, MAX_TIMER_MS, ' (milliseconds)')
  const ms = found.value
  if (typeof ms !== 'number') throw typeError(found.origin, ms, 'a number of milliseconds')
  if (!(ms >= 0 && ms <= MAX_TIMER_MS)) invalid(found.origin, String(ms), `must be from 0 to ${MAX_TIMER_MS} milliseconds`)
  return ms
}

/** A non-negative integer count, at least `min`. */
export function count(found: Found | undefined, fallback: number, min: number): number {
  if (found === undefined) return fallback
  if (found.kind === 'text') return parseInteger(found.value, found.origin, min, MAX_INT32)
  const n = found.value
  if (typeof n !== 'number') throw typeError(found.origin, n, 'a number')
  if (!Number.isInteger(n) || n < min || n > MAX_INT32) invalid(found.origin, String(n), `must be an integer from ${min} to ${MAX_INT32}`)
  return n
}
