import { daysFromCivil, JS_DATE_MAX_MS, monthLength, MS_PER_DAY, PG_EPOCH_MS, US_PER_DAY } from '../types/codecs/date.js'
import { WireProtocolError } from './errors.js'

// Reading dates, times and timestamps printed in DateStyle ISO ('YYYY-MM-DD'
// with ' BC' after the value for years before 1) into PostgreSQL's day numbers
// (day 0 is 2000-01-01, proleptic Gregorian for every year). A date can be
// millions of years away, far beyond what a JS Date holds, so the calendar
// arithmetic is integer arithmetic, shared with the Node client's codecs.
//
// These parsers stay separate from the codecs' own: they read the strings the
// text decoders receive (a text array hands its elements over as unescaped
// strings, not bytes), and refuse with wire's messages, which name the
// DateStyle the server must use.

/** The Date of a day number and the microseconds into it (UTC), microseconds floored. */
export function toDate(day: number, us: number, what: string): Date {
  const ms = day * MS_PER_DAY + PG_EPOCH_MS + Math.floor(us / 1000)
  if (ms > JS_DATE_MAX_MS || ms < -JS_DATE_MAX_MS) {
    throw new WireProtocolError(`${what} is beyond the range of a JavaScript Date; use the ${what.startsWith('date') ? "dates: 'string'" : "timestamps: 'string'"} option`)
  }
  return new Date(ms)
}

function bad(what: string, text: string): WireProtocolError {
  return new WireProtocolError(`malformed ${what} '${text.slice(0, 60)}' (DateStyle must be ISO)`)
}

/** Fraction digits ('5', '123456') as microseconds. */
function fractionUs(digits: string | undefined): number {
  return digits === undefined ? 0 : Number(digits.padEnd(6, '0'))
}

/** Checks a parsed date and returns its day number, or -1e15 if the date does not exist. */
function checkedDay(yearText: string, monthText: string, dayText: string, bc: boolean): number {
  const y = Number(yearText)
  const m = Number(monthText)
  const d = Number(dayText)
  // PostgreSQL prints 1 BC as '0001 BC', never a year 0.
  if (y === 0 || m < 1 || m > 12) return -1e15
  const year = bc ? 1 - y : y
  if (d < 1 || d > monthLength(year, m)) return -1e15
  return daysFromCivil(year, m, d)
}

const DATE_RE = /^(\d{4,})-(\d\d)-(\d\d)( BC)?$/

/** A date printed in DateStyle ISO as its day number; ±Infinity for 'infinity' and '-infinity'. */
export function parseDateText(text: string): number {
  if (text === 'infinity') return Infinity
  if (text === '-infinity') return -Infinity
  const m = DATE_RE.exec(text)
  const day = m ? checkedDay(m[1]!, m[2]!, m[3]!, m[4] !== undefined) : -1e15
  if (day === -1e15) throw bad('date', text)
  return day
}

/** Microseconds into the day of 'HH:MM:SS[.ffffff]', or -1 when malformed. 24:00:00 is allowed (PostgreSQL accepts it for time). */
function clockUs(h: string, m: string, s: string, frac: string | undefined, allow24: boolean): number {
  const hh = Number(h)
  const mm = Number(m)
  const ss = Number(s)
  if (mm > 59 || ss > 59) return -1
  const us = ((hh * 60 + mm) * 60 + ss) * 1_000_000 + fractionUs(frac)
  if (us > US_PER_DAY || (us === US_PER_DAY && !allow24)) return -1
  return us
}

/** Seconds east of UTC of '+HH[:MM[:SS]]'. */
function offsetSeconds(sign: string, h: string, m: string | undefined, s: string | undefined): number {
  const seconds = Number(h) * 3600 + Number(m ?? 0) * 60 + Number(s ?? 0)
  return sign === '-' ? -seconds : seconds
}

const TIMESTAMP_RE = /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:([+-])(\d\d)(?::(\d\d)(?::(\d\d))?)?)?( BC)?$/

/**
 * A timestamp or timestamptz printed in DateStyle ISO as [day, microseconds
 * into that day], in UTC (the offset applied); [±Infinity, 0] for the
 * infinities.
 */
export function parseTimestampText(text: string, zoned: boolean): [number, number] {
  if (text === 'infinity') return [Infinity, 0]
  if (text === '-infinity') return [-Infinity, 0]
  const what = zoned ? 'timestamptz' : 'timestamp'
  const m = TIMESTAMP_RE.exec(text)
  if (!m || (m[8] !== undefined) !== zoned) throw bad(what, text)
  let day = checkedDay(m[1]!, m[2]!, m[3]!, m[12] !== undefined)
  let us = clockUs(m[4]!, m[5]!, m[6]!, m[7], false)
  if (day === -1e15 || us < 0) throw bad(what, text)
  if (zoned) {
    us -= offsetSeconds(m[8]!, m[9]!, m[10], m[11]) * 1_000_000
    // An offset is less than a day, so one step normalises.
    if (us < 0) {
      us += US_PER_DAY
      day--
    } else if (us >= US_PER_DAY) {
      us -= US_PER_DAY
      day++
    }
  }
  return [day, us]
}

const TIME_RE = /^(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:([+-])(\d\d)(?::(\d\d)(?::(\d\d))?)?)?$/

/** Checks a time or timetz printed by PostgreSQL and returns it unchanged. */
export function checkTimeText(text: string, zoned: boolean): string {
  const what = zoned ? 'timetz' : 'time'
  const m = TIME_RE.exec(text)
  if (!m || (m[5] !== undefined) !== zoned || clockUs(m[1]!, m[2]!, m[3]!, m[4], true) < 0) throw bad(what, text)
  if (zoned && (Number(m[7] ?? 0) > 59 || Number(m[8] ?? 0) > 59)) throw bad(what, text)
  return text
}
