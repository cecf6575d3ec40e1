import { INT64_MAX, INT64_MIN } from '../types/codecs/binary.js'
import { Interval } from '../types/interval.js'
import { WireProtocolError } from './errors.js'

// interval: three independent fields, as PostgreSQL stores it (a month is not
// a fixed number of days, nor a day a fixed number of hours across a DST
// change). Binary: int64 microseconds, int32 days, int32 months. Text depends
// on IntervalStyle; the 'postgres' default and 'iso_8601' are read.

/**
 * An interval value: the Node client's Interval (its ISO 8601 toString() and
 * toJSON() included) under the name pipegres/wire has always exported.
 * Infinite intervals (PostgreSQL 17+) decode to the numbers Infinity and
 * -Infinity instead.
 */
export class WireInterval extends Interval {
  // Every field is required here, as it always was for this class.
  constructor(months: number, days: number, microseconds: number) {
    super(months, days, microseconds)
  }
}

const INT32_MAX = 2147483647
const INT32_MIN = -2147483648

function safeMicroseconds(us: bigint, text: () => string): number {
  if (us > BigInt(Number.MAX_SAFE_INTEGER) || us < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new WireProtocolError(`interval ${text()} has more microseconds than a JavaScript number holds exactly`)
  }
  return Number(us)
}

/** The value of binary fields; ±Infinity for PostgreSQL 17's infinite intervals. */
export function intervalOf(us: bigint, days: number, months: number): WireInterval | number {
  if (months === INT32_MAX && days === INT32_MAX && us === INT64_MAX) return Infinity
  if (months === INT32_MIN && days === INT32_MIN && us === INT64_MIN) return -Infinity
  return new WireInterval(months, days, safeMicroseconds(us, () => `of ${months} months, ${days} days and ${us} µs`))
}

/** '[-]H:MM:SS[.f]' or '[-]S[.f]' as signed microseconds; the sign applies to every part. */
function clockMicroseconds(sign: string, hours: string, minutes: string, seconds: string, frac: string | undefined): bigint {
  const us = (BigInt(hours) * 3600n + BigInt(minutes) * 60n + BigInt(seconds)) * 1_000_000n + BigInt((frac ?? '').padEnd(6, '0'))
  return sign === '-' ? -us : us
}

// IntervalStyle postgres: '1 year 2 mons -3 days +04:05:06.5', '-00:00:01', '00:00:00'.
const POSTGRES_PART = /^([+-]?\d+) (year|years|mon|mons|day|days)$/
const POSTGRES_CLOCK = /^([+-]?)(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?$/
// IntervalStyle iso_8601: 'P1Y2M3DT4H5M6.5S', 'P-1Y-2M', 'PT-0.5S', 'PT0S'.
const ISO = /^P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)D)?(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?(?:(-?)(\d+)(?:\.(\d{1,6}))?S)?)?$/

/**
 * An interval printed with IntervalStyle postgres or iso_8601. Not the codec's
 * parser (types/codecs/interval-text.ts), which reads bytes and also accepts
 * sql_standard and postgres_verbose: wire reads strings (array elements) and
 * refuses the two styles whose text it cannot tell apart from other values.
 */
export function parseIntervalText(text: string): WireInterval | number {
  const f = parseIntervalFields(text)
  return typeof f === 'number' ? f : new WireInterval(f[0], f[1], safeMicroseconds(f[2], () => `'${text}'`))
}

/** The same text's three fields, microseconds in a bigint; ±Infinity for the infinite intervals. */
export function parseIntervalFields(text: string): [months: number, days: number, us: bigint] | number {
  if (text === 'infinity') return Infinity
  if (text === '-infinity') return -Infinity
  let months = 0
  let days = 0
  let us = 0n
  const iso = ISO.exec(text)
  if (iso) {
    if (text === 'P' || text.endsWith('T')) throw badInterval(text)
    months = Number(iso[1] ?? 0) * 12 + Number(iso[2] ?? 0)
    days = Number(iso[3] ?? 0)
    us = BigInt(iso[4] ?? 0) * 3_600_000_000n + BigInt(iso[5] ?? 0) * 60_000_000n
    if (iso[7] !== undefined) us += clockMicroseconds(iso[6]!, '0', '0', iso[7], iso[8])
  } else {
    const words = text.split(' ')
    let i = 0
    const seen = new Set<string>()
    // Parts come in a fixed order, each at most once, the clock last.
    for (; i + 1 < words.length; i += 2) {
      const m = POSTGRES_PART.exec(words[i] + ' ' + words[i + 1])
      if (!m) break
      const unit = m[2]!.replace(/s$/, '')
      if (seen.has(unit) || (unit === 'year' && seen.size > 0) || (unit === 'mon' && seen.has('day'))) throw badInterval(text)
      seen.add(unit)
      const n = Number(m[1])
      if (unit === 'year') months += n * 12
      else if (unit === 'mon') months += n
      else days = n
    }
    if (i === words.length - 1) {
      const c = POSTGRES_CLOCK.exec(words[i]!)
      if (!c) throw badInterval(text)
      us = clockMicroseconds(c[1]!, c[2]!, c[3]!, c[4]!, c[5])
    } else if (i !== words.length || i === 0) {
      throw badInterval(text)
    }
  }
  if (!Number.isSafeInteger(months) || months > INT32_MAX || months < INT32_MIN || days > INT32_MAX || days < INT32_MIN) throw badInterval(text)
  return [months, days, us]
}

function badInterval(text: string): WireProtocolError {
  return new WireProtocolError(`malformed interval '${text.slice(0, 60)}' (IntervalStyle must be postgres or iso_8601)`)
}
