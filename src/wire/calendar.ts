import { WireProtocolError } from './errors.js'

// Calendar arithmetic for date, time and timestamp values. PostgreSQL counts
// days from 2000-01-01 in the proleptic Gregorian calendar for every year, and
// prints dates in DateStyle ISO as 'YYYY-MM-DD' with ' BC' after the value for
// years before 1. Day numbers here are always PostgreSQL's (day 0 is
// 2000-01-01); a date can be millions of years away, far beyond what a JS Date
// holds, so the conversions are done with integer arithmetic rather than Date.

export const US_PER_DAY = 86_400_000_000
const MS_PER_DAY = 86_400_000
/** Days from 1970-01-01 to 2000-01-01. */
const UNIX_TO_PG_DAYS = 10_957
/** Days from 0000-03-01 (the start of the 400-year cycles counted below) to 1970-01-01. */
const CYCLE_TO_UNIX_DAYS = 719_468
/** A Date holds ±8.64e15 ms around 1970. */
const DATE_LIMIT_MS = 8.64e15

function two(n: number): string {
  return n < 10 ? '0' + n : String(n)
}

function four(n: number): string {
  return n < 1000 ? String(n).padStart(4, '0') : String(n)
}

/**
 * The calendar date of a day number: [year, month, day], the year counted
 * astronomically (0 is 1 BC). Works in 400-year cycles that start on March 1,
 * so that a leap day is the last day of its cycle year.
 */
export function civilOf(day: number): [number, number, number] {
  const z = day + UNIX_TO_PG_DAYS + CYCLE_TO_UNIX_DAYS
  const cycle = Math.floor(z / 146_097)
  const dayOfCycle = z - cycle * 146_097
  const yearOfCycle = Math.floor((dayOfCycle - Math.floor(dayOfCycle / 1460) + Math.floor(dayOfCycle / 36_524) - Math.floor(dayOfCycle / 146_096)) / 365)
  const dayOfYear = dayOfCycle - (365 * yearOfCycle + Math.floor(yearOfCycle / 4) - Math.floor(yearOfCycle / 100))
  // Months counted from March, so February's variable length comes last.
  const m = Math.floor((5 * dayOfYear + 2) / 153)
  const dayOfMonth = dayOfYear - Math.floor((153 * m + 2) / 5) + 1
  const month = m < 10 ? m + 3 : m - 9
  return [yearOfCycle + cycle * 400 + (month <= 2 ? 1 : 0), month, dayOfMonth]
}

/** The day number of a date (astronomical year); the inverse of civilOf. */
export function dayOf(year: number, month: number, dayOfMonth: number): number {
  const y = month <= 2 ? year - 1 : year
  const cycle = Math.floor(y / 400)
  const yearOfCycle = y - cycle * 400
  const m = month > 2 ? month - 3 : month + 9
  const dayOfYear = Math.floor((153 * m + 2) / 5) + dayOfMonth - 1
  const dayOfCycle = yearOfCycle * 365 + Math.floor(yearOfCycle / 4) - Math.floor(yearOfCycle / 100) + dayOfYear
  return cycle * 146_097 + dayOfCycle - CYCLE_TO_UNIX_DAYS - UNIX_TO_PG_DAYS
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31
}

/** The date as PostgreSQL prints it; `time` (a timestamp's 'T12:00:00Z', say) goes before any ' BC'. */
export function dateText(day: number, time = ''): string {
  const [y, m, d] = civilOf(day)
  const ymd = '-' + two(m) + '-' + two(d) + time
  return y > 0 ? four(y) + ymd : four(1 - y) + ymd + ' BC'
}

/** 'HH:MM:SS' and the fraction of a second without trailing zeros, as PostgreSQL prints a time. */
export function timeText(us: number): string {
  const seconds = Math.floor(us / 1_000_000)
  const frac = us - seconds * 1_000_000
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds - h * 3600) / 60)
  const s = seconds - h * 3600 - m * 60
  return two(h) + ':' + two(m) + ':' + two(s) + fractionText(frac)
}

/** '.5' for 500000 µs, '' for 0. */
export function fractionText(us: number): string {
  if (us === 0) return ''
  return '.' + String(us).padStart(6, '0').replace(/0+$/, '')
}

/** A UTC offset as PostgreSQL prints it: '+05:30', '-08', '+00:19:32'. */
export function offsetText(eastSeconds: number): string {
  const a = Math.abs(eastSeconds)
  const h = Math.floor(a / 3600)
  const m = Math.floor((a % 3600) / 60)
  const s = a % 60
  let out = (eastSeconds < 0 ? '-' : '+') + two(h)
  if (m !== 0 || s !== 0) out += ':' + two(m)
  if (s !== 0) out += ':' + two(s)
  return out
}

/** The Date of a day number and the microseconds into it (UTC), microseconds floored. */
export function toDate(day: number, us: number, what: string): Date {
  const ms = day * MS_PER_DAY + UNIX_TO_PG_DAYS * MS_PER_DAY + Math.floor(us / 1000)
  if (ms > DATE_LIMIT_MS || ms < -DATE_LIMIT_MS) {
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
  if (d < 1 || d > daysInMonth(year, m)) return -1e15
  return dayOf(year, m, d)
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
