import { Interval, type Field, type TypeOptions } from '../../index.js'

// Drizzle's column types turn what node-postgres hands them into their
// values (mapFromDriverValue), and drizzle's node-postgres driver keeps
// timestamps, dates and intervals as the server's text. pipegres reads
// results in binary, so these forms are rebuilt here from pipegres's exact
// values: the rest (numbers, int8 and numeric as strings, json, bytea, arrays,
// enums, points) already comes as node-postgres gives it.

/** The per-query type options under which pipegres values match node-postgres's. */
export const drizzleTypes: TypeOptions = { int8: 'string', numeric: 'string', timestamps: 'string', dates: 'string' }

type Convert = (v: unknown) => unknown

const TIMESTAMP = 1114
const TIMESTAMPTZ = 1184
const INTERVAL = 1186
const LINE = 628
const TIMESTAMP_ARRAY = 1115
const TIMESTAMPTZ_ARRAY = 1185
const INTERVAL_ARRAY = 1187

/** '2024-02-29T12:34:56.5' as PostgreSQL prints a timestamp: '2024-02-29 12:34:56.5'. */
function timestamp(v: unknown): unknown {
  return typeof v === 'string' ? v.replace('T', ' ') : v
}

/**
 * '2024-02-29T12:34:56.5Z' as PostgreSQL prints a timestamptz in a session
 * whose TimeZone is UTC: '2024-02-29 12:34:56.5+00' (' BC' stays last).
 */
function timestamptz(v: unknown): unknown {
  return typeof v === 'string' ? v.replace('T', ' ').replace('Z', '+00') : v
}

function plural(n: number, unit: string, before: boolean): string {
  return `${before && n > 0 ? '+' : ''}${n} ${unit}${n === 1 ? '' : 's'}`
}

function two(n: number): string {
  return n < 10 ? '0' + n : String(n)
}

/** An interval as PostgreSQL prints it with the default IntervalStyle 'postgres': '1 year 2 mons -3 days +04:05:06.5'. */
export function intervalText(v: unknown): unknown {
  if (v === Infinity) return 'infinity'
  if (v === -Infinity) return '-infinity'
  if (!(v instanceof Interval)) return v
  const parts: string[] = []
  // Each field keeps the sign of what it is taken from, as the server's C division does.
  const year = Math.trunc(v.months / 12)
  const mon = v.months - year * 12
  let before = false
  for (const [n, unit] of [[year, 'year'], [mon, 'mon'], [v.days, 'day']] as const) {
    if (n === 0) continue
    parts.push(plural(n, unit, before))
    before = n < 0
  }
  const us = v.microseconds
  if (parts.length === 0 || us !== 0) {
    const abs = Math.abs(us)
    const hours = Math.floor(abs / 3_600_000_000)
    const minutes = Math.floor((abs % 3_600_000_000) / 60_000_000)
    const seconds = Math.floor((abs % 60_000_000) / 1_000_000)
    const fraction = abs % 1_000_000
    const sign = us < 0 ? '-' : before ? '+' : ''
    let time = `${sign}${two(hours)}:${two(minutes)}:${two(seconds)}`
    if (fraction !== 0) time += '.' + String(fraction).padStart(6, '0').replace(/0+$/, '')
    parts.push(time)
  }
  return parts.join(' ')
}

/** A line as PostgreSQL prints it, '{a,b,c}', which drizzle's line columns parse. */
function line(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v
  const l = v as { a: number; b: number; c: number }
  return `{${l.a},${l.b},${l.c}}`
}

function each(f: Convert): Convert {
  const walk = (v: unknown): unknown => (Array.isArray(v) ? v.map(walk) : v === null ? null : f(v))
  return walk
}

const converters = new Map<number, Convert>([
  [TIMESTAMP, timestamp],
  [TIMESTAMPTZ, timestamptz],
  [INTERVAL, intervalText],
  [LINE, line],
  [TIMESTAMP_ARRAY, each(timestamp)],
  [TIMESTAMPTZ_ARRAY, each(timestamptz)],
  [INTERVAL_ARRAY, each(intervalText)],
])

/** The columns whose values need rebuilding, with how; null when none do (the common case). */
export function conversions(fields: readonly Field[]): [number, Convert][] | null {
  let out: [number, Convert][] | null = null
  for (let i = 0; i < fields.length; i++) {
    const c = converters.get(fields[i]!.typeOid)
    if (c !== undefined) (out ??= []).push([i, c])
  }
  return out
}

export function convertArrayRows(rows: unknown[][], fields: readonly Field[]): unknown[][] {
  const todo = conversions(fields)
  if (todo === null) return rows
  for (const row of rows) {
    for (const [i, c] of todo) if (row[i] !== null) row[i] = c(row[i])
  }
  return rows
}

export function convertObjectRows(rows: Record<string, unknown>[], fields: readonly Field[]): Record<string, unknown>[] {
  const todo = conversions(fields)
  if (todo === null) return rows
  const named = todo.map(([i, c]) => [fields[i]!.name, c] as const)
  for (const row of rows) {
    for (const [name, c] of named) if (row[name] !== null && row[name] !== undefined) row[name] = c(row[name])
  }
  return rows
}
