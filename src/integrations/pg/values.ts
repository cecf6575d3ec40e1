import { types } from './types.js'
import { parseArray, type TextParser } from './parsers.js'

// Parameters as pg sends them: every value is turned into its text form here
// (Buffers stay bytes), so the server types it exactly as it would for pg.

const int4 = (t: string): number => Number.parseInt(t, 10)

/** pg.defaults: the settings applications change globally. */
export const defaults = {
  host: 'localhost',
  user: process.env.USER,
  database: undefined as string | undefined,
  password: null as string | null,
  port: 5432,
  rows: 0,
  binary: false,
  max: 10,
  idleTimeoutMillis: 30000,
  client_encoding: '',
  ssl: false,
  application_name: undefined as string | undefined,
  fallback_application_name: undefined as string | undefined,
  options: undefined as string | undefined,
  /** Dates sent as parameters are written in UTC rather than local time. */
  parseInputDatesAsUTC: false,
  statement_timeout: false as number | false,
  lock_timeout: false as number | false,
  idle_in_transaction_session_timeout: false as number | false,
  query_timeout: false as number | false,
  connect_timeout: 0,
  keepalives: 1,
  keepalives_idle: 0,
  /** true: int8 (and int8[]) come back as JS numbers, as with pg's setting of the same name. */
  set parseInt8(on: boolean) {
    const int8: TextParser = on ? int4 : (t) => t
    const int8Array: TextParser = on ? (t) => parseArray(t, int4) : (t) => parseArray(t, (e) => e.trim())
    types.setTypeParser(20, 'text', int8)
    types.setTypeParser(1016, 'text', int8Array)
  },
}

/** A JS value as the parameter pg would send: null, a Buffer (sent in binary), or text. */
export function prepareValue(value: unknown, seen?: unknown[]): string | Buffer | null {
  if (value === null || value === undefined) return null
  if (typeof value === 'object') {
    if (Buffer.isBuffer(value)) return value
    if (ArrayBuffer.isView(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength)
    if (value instanceof Date) return defaults.parseInputDatesAsUTC ? dateToStringUTC(value) : dateToString(value)
    if (Array.isArray(value)) return arrayLiteral(value)
    const custom = value as { toPostgres?: (prepare: typeof prepareValue) => unknown }
    if (typeof custom.toPostgres === 'function') {
      const chain = seen ?? []
      if (chain.includes(value)) throw new Error(`circular reference detected while preparing "${String(value)}" for query`)
      chain.push(value)
      return prepareValue(custom.toPostgres(prepareValue), chain)
    }
    return JSON.stringify(value)
  }
  return (value as { toString(): string }).toString()
}

/** A JS array as an array literal; elements quoted, NULL for null, bytes in hex. */
function arrayLiteral(list: readonly unknown[]): string {
  let out = '{'
  for (let i = 0; i < list.length; i++) {
    if (i > 0) out += ','
    const item = list[i]
    if (item === null || item === undefined) out += 'NULL'
    else if (Array.isArray(item)) out += arrayLiteral(item)
    else if (ArrayBuffer.isView(item)) out += '\\\\x' + Buffer.from(item.buffer, item.byteOffset, item.byteLength).toString('hex')
    else {
      const text = prepareValue(item)
      out += '"' + String(text).replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"'
    }
  }
  return out + '}'
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0')

function stamp(year: number, month: number, day: number, h: number, m: number, s: number, ms: number): [string, boolean] {
  // Year 0 and before are BC years (1 BC is year 0).
  const bc = year < 1
  const y = bc ? Math.abs(year) + 1 : year
  return [`${pad(y, 4)}-${pad(month + 1)}-${pad(day)}T${pad(h)}:${pad(m)}:${pad(s)}.${pad(ms, 3)}`, bc]
}

/** A Date as local time with its offset, as pg writes it. */
export function dateToString(d: Date): string {
  const [text, bc] = stamp(d.getFullYear(), d.getMonth(), d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds(), d.getMilliseconds())
  let offset = -d.getTimezoneOffset()
  const sign = offset < 0 ? '-' : '+'
  offset = Math.abs(offset)
  return `${text}${sign}${pad(Math.floor(offset / 60))}:${pad(offset % 60)}${bc ? ' BC' : ''}`
}

export function dateToStringUTC(d: Date): string {
  const [text, bc] = stamp(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds())
  return `${text}+00:00${bc ? ' BC' : ''}`
}

/** A double-quoted identifier. */
export function escapeIdentifier(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"'
}

/** A single-quoted literal; one holding a backslash is written as an E'' string, as pg does. */
export function escapeLiteral(value: string): string {
  if (typeof value !== 'string') return "''"
  const hasBackslash = value.includes('\\')
  const quoted = "'" + value.replace(/'/g, "''").replace(/\\/g, '\\\\') + "'"
  return hasBackslash ? ' E' + quoted : quoted
}
