// Text-format parsers that give the values pg 8 gives by default (its pg-types
// 2 table): written from the observed behaviour, so that code written against
// pg sees the same numbers, strings, Dates, Buffers and objects.

export type TextParser = (text: string) => unknown

/** A PostgreSQL array literal ('{1,NULL,"a b"}', nested, with optional '[1:2]=' bounds) as nested JS arrays. */
export function parseArray(text: string, element?: TextParser): unknown[] {
  let i = 0
  // Non-default bounds come first and are dropped, as pg does.
  if (text.charCodeAt(0) === 0x5b /* [ */) {
    const eq = text.indexOf('=')
    i = eq < 0 ? text.length : eq + 1
  }
  if (text.charCodeAt(i) !== 0x7b /* { */) throw new Error(`malformed array literal: ${JSON.stringify(text.slice(0, 40))}`)
  const [list, end] = arrayLevel(text, i + 1, element)
  if (end !== text.length) throw new Error('array dimension not balanced')
  return list
}

/** Reads one level after its '{' and returns its entries and the index just past its '}'. */
function arrayLevel(text: string, start: number, element: TextParser | undefined): [unknown[], number] {
  const out: unknown[] = []
  let i = start
  while (i < text.length) {
    const c = text[i]!
    if (c === '}') return [out, i + 1]
    if (c === ',') {
      i++
      continue
    }
    if (c === '{') {
      const [inner, next] = arrayLevel(text, i + 1, element)
      out.push(inner)
      i = next
      continue
    }
    let value = ''
    if (c === '"') {
      i++
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\') i++
        value += text[i] ?? ''
        i++
      }
      i++
      // A quoted element is never NULL, even when it reads NULL.
      out.push(element === undefined ? value : element(value))
      continue
    }
    while (i < text.length && text[i] !== ',' && text[i] !== '}') {
      if (text[i] === '\\') i++
      value += text[i] ?? ''
      i++
    }
    out.push(value === 'NULL' ? null : element === undefined ? value : element(value))
  }
  throw new Error('array dimension not balanced')
}

const DATE_TIME = /^(\d{1,})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(\.\d+)?(.*?)( BC)?$/
const DATE_ONLY = /^(\d{1,})-(\d{2})-(\d{2})( BC)?$/

/**
 * date, timestamp and timestamptz as pg gives them: a Date in local time when
 * the text has no zone (so timestamp and date depend on the process's TZ), an
 * exact instant when it has one; 'infinity' as ±Infinity; null when unreadable.
 */
export function parseDate(text: string): Date | number | null {
  if (text === 'infinity') return Infinity
  if (text === '-infinity') return -Infinity
  const m = DATE_TIME.exec(text)
  if (m === null) {
    const d = DATE_ONLY.exec(text)
    if (d === null) return null
    const year = adYear(Number(d[1]), d[4] !== undefined)
    const date = new Date(year, Number(d[2]) - 1, Number(d[3]))
    // The Date constructor maps years 0-99 to 1900-1999.
    if (year >= 0 && year < 100) date.setFullYear(year)
    return date
  }
  const year = adYear(Number(m[1]), m[9] !== undefined)
  const month = Number(m[2]) - 1
  const day = Number(m[3])
  const hour = Number(m[4])
  const minute = Number(m[5])
  const second = Number(m[6])
  const ms = m[7] !== undefined ? 1000 * Number(m[7]) : 0
  const offset = zoneOffsetMs(m[8]!)
  if (offset === null) {
    const date = new Date(year, month, day, hour, minute, second, ms)
    if (year >= 0 && year < 100) date.setFullYear(year)
    return date
  }
  const date = new Date(Date.UTC(year, month, day, hour, minute, second, ms))
  if (year >= 0 && year < 100) date.setUTCFullYear(year)
  if (offset !== 0) date.setTime(date.getTime() - offset)
  return date
}

function adYear(year: number, bc: boolean): number {
  // 1 BC is year 0 in the proleptic calendar Date uses.
  return bc ? 1 - year : year
}

const ZONE = /^([Z+-])(\d{2})?:?(\d{2})?:?(\d{2})?/

function zoneOffsetMs(rest: string): number | null {
  const z = ZONE.exec(rest)
  if (z === null) return null
  if (z[1] === 'Z') return 0
  const seconds = Number(z[2] ?? 0) * 3600 + Number(z[3] ?? 0) * 60 + Number(z[4] ?? 0)
  return (z[1] === '-' ? -seconds : seconds) * 1000
}

const intervalUnits = ['years', 'months', 'days', 'hours', 'minutes', 'seconds'] as const
const isoLetters = ['Y', 'M', 'D', 'H', 'M', 'S'] as const

/**
 * An interval as pg gives it: only its non-zero parts as own properties
 * (years, months, days, hours, minutes, seconds, milliseconds with the
 * microseconds as a fraction), plus toPostgres() and toISO()/toISOString().
 */
export class PostgresInterval {
  // Declared only: a part that is zero must not exist as a property at all.
  declare years?: number
  declare months?: number
  declare days?: number
  declare hours?: number
  declare minutes?: number
  declare seconds?: number
  declare milliseconds?: number

  constructor(text: string) {
    parseIntervalInto(this, text)
  }

  private secondsText(trailing: RegExp): string | number {
    const s = this.seconds ?? 0
    return this.milliseconds ? (s + this.milliseconds / 1000).toFixed(6).replace(trailing, '') : s
  }

  toPostgres(): string {
    const parts: string[] = []
    for (const unit of ['seconds', 'minutes', 'hours', 'days', 'months', 'years'] as const) {
      const has = Object.prototype.hasOwnProperty.call(this, unit) || (unit === 'seconds' && !!this.milliseconds)
      if (!has) continue
      parts.push(`${unit === 'seconds' ? this.secondsText(/\.?0+$/) : (this[unit] ?? 0)} ${unit}`)
    }
    return parts.length === 0 ? '0' : parts.join(' ')
  }

  toISO(): string {
    let out = 'P'
    for (let i = 0; i < intervalUnits.length; i++) {
      if (i === 3) out += 'T'
      const unit = intervalUnits[i]!
      out += `${unit === 'seconds' ? this.secondsText(/0+$/) : (this[unit] ?? 0)}${isoLetters[i]}`
    }
    return out
  }

  toISOString(): string {
    return this.toISO()
  }
}

const INTERVAL = /^(?:([+-]?\d+)\s+years?)?\s*(?:([+-]?\d+)\s+mons?)?\s*(?:([+-]?\d+)\s+days?)?\s*(?:([+-])?(\d*):(\d\d):(\d\d)\.?(\d{1,6})?)?/

function parseIntervalInto(target: PostgresInterval, text: string): void {
  if (!text) return
  const m = INTERVAL.exec(text)!
  const negative = m[4] === '-'
  const set = (key: keyof PostgresInterval, raw: string | undefined, time: boolean, fraction = false): void => {
    if (!raw) return
    let v = fraction ? Number.parseInt(raw.padEnd(6, '0'), 10) / 1000 : Number.parseInt(raw, 10)
    if (!v) return
    if (negative && time) v = -v
    ;(target as unknown as Record<string, number>)[key] = v
  }
  set('years', m[1], false)
  set('months', m[2], false)
  set('days', m[3], false)
  set('hours', m[5], true)
  set('minutes', m[6], true)
  set('seconds', m[7], true)
  set('milliseconds', m[8], true, true)
}

/** bytea in hex ('\x0102') or the old escape format, as a Buffer. */
export function parseBytea(text: string): Buffer {
  if (text.startsWith('\\x')) return Buffer.from(text.slice(2), 'hex')
  const bytes: number[] = []
  let i = 0
  while (i < text.length) {
    if (text[i] !== '\\') {
      bytes.push(text.charCodeAt(i) & 0xff)
      i++
    } else if (/^[0-7]{3}$/.test(text.slice(i + 1, i + 4))) {
      bytes.push(Number.parseInt(text.slice(i + 1, i + 4), 8))
      i += 4
    } else {
      let run = 1
      while (i + run < text.length && text[i + run] === '\\') run++
      for (let k = 0; k < Math.floor(run / 2); k++) bytes.push(0x5c)
      i += Math.floor(run / 2) * 2
      // A lone backslash (malformed) would otherwise never advance.
      if (run === 1) i++
    }
  }
  return Buffer.from(bytes)
}

export function parseBool(text: string): boolean {
  return text === 't' || text === 'true' || text === 'TRUE' || text === 'y' || text === 'yes' || text === 'on' || text === '1'
}

export function parsePoint(text: string): { x: number; y: number } | null {
  if (text[0] !== '(') return null
  const [x, y] = text.slice(1, -1).split(',')
  return { x: Number.parseFloat(x!), y: Number.parseFloat(y!) }
}

export function parseCircle(text: string): { x: number; y: number; radius: number } | null {
  // '<(x,y),r>'
  const close = text.indexOf(')')
  if (text[0] !== '<' || close < 0) return null
  const center = parsePoint(text.slice(1, close + 1))
  if (center === null) return null
  return { ...center, radius: Number.parseFloat(text.slice(close + 2, -1)) }
}

const parseInteger: TextParser = (t) => Number.parseInt(t, 10)
const parseJson: TextParser = (t) => JSON.parse(t) as unknown
/** int8 stays the exact string, as pg gives it. */
const keepText: TextParser = (t) => t

const arrayOf =
  (element?: TextParser): TextParser =>
  (t) =>
    parseArray(t, element)

/** The text parsers pg applies by default, by type OID; every other type is its text. */
export const builtinParsers: ReadonlyMap<number, TextParser> = new Map<number, TextParser>([
  [16, parseBool],
  [17, parseBytea],
  [20, keepText],
  [21, parseInteger],
  [23, parseInteger],
  [26, parseInteger],
  [114, parseJson],
  [3802, parseJson],
  [700, Number.parseFloat],
  [701, Number.parseFloat],
  [600, parsePoint],
  [718, parseCircle],
  [1082, parseDate],
  [1114, parseDate],
  [1184, parseDate],
  [1186, (t) => new PostgresInterval(t)],
  [1000, arrayOf(parseBool)],
  [1001, arrayOf(parseBytea)],
  [1005, arrayOf(parseInteger)],
  [1007, arrayOf(parseInteger)],
  [1028, arrayOf(parseInteger)],
  [1016, arrayOf((t) => t.trim())],
  [1017, arrayOf(parsePoint)],
  [1021, arrayOf(Number.parseFloat)],
  [1022, arrayOf(Number.parseFloat)],
  [1231, arrayOf(Number.parseFloat)],
  [1115, arrayOf(parseDate)],
  [1182, arrayOf(parseDate)],
  [1185, arrayOf(parseDate)],
  [1187, arrayOf((t) => new PostgresInterval(t))],
  [199, arrayOf(parseJson)],
  [3807, arrayOf(parseJson)],
  // Arrays whose elements stay strings: char, varchar, text, regproc, cidr,
  // macaddr, inet, numrange, uuid, money, time, timetz.
  ...[1014, 1015, 1009, 1008, 651, 1040, 1041, 3907, 2951, 791, 1183, 1270].map((oid): [number, TextParser] => [oid, arrayOf()]),
])
