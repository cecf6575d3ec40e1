import type { Writer } from '../../protocol/writer.js'
import { CodecError, describeValue, type Codec, type Decoder, type ResolvedTypeOptions } from '../codec.js'
import { utf8Read } from '../../protocol/utf8.js'
import { readInt32 } from './binary.js'
import { splitWall, TemporalKind, temporalKind, wallUs } from '../temporal-params.js'
import { daysFromCivil } from './civil.js'

export { daysFromCivil }

// date: int32 days since 2000-01-01 in binary, 'YYYY-MM-DD[ BC]' in text
// (DateStyle ISO). Also the calendar arithmetic the other date/time codecs share:
// day numbers here always count from PostgreSQL's epoch, 2000-01-01, in the
// proleptic Gregorian calendar PostgreSQL uses for every year.

export const MS_PER_DAY = 86400000
export const US_PER_DAY = 86400000000
/** Milliseconds from the Unix epoch to 2000-01-01. */
export const PG_EPOCH_MS = 946684800000
/** Days from 1970-01-01 to 2000-01-01. */
const PG_EPOCH_DAYS = 10957

/** Julian day 0 (4714-11-24 BC), the first day of every PostgreSQL date/time type. */
export const MIN_DAY = -2451545
/** The first day past date's range (5874898-01-01). */
export const DATE_END_DAY = 2145031949
/** A Date holds ±8.64e15 ms around 1970 (about 271821 BC to 275760 AD). */
export const JS_DATE_MAX_MS = 8.64e15

const INT32_MAX = 2147483647
const INT32_MIN = -2147483648

/** '00'..'99', so formatting appends constants instead of converting numbers. */
export const TWO_DIGITS: readonly string[] = Array.from({ length: 100 }, (_, i) => (i < 10 ? '0' : '') + i)

// Civil-from-days after Howard Hinnant's public-domain algorithm: 400-year
// eras starting on March 1, so leap days fall at the end. Its inverse,
// daysFromCivil, is in civil.ts (re-exported here), where the modules this one
// imports can reach it.

export let civilYear = 0
export let civilMonth = 0
export let civilDay = 0

/** Splits a day number into civilYear (astronomical: 0 is 1 BC), civilMonth, civilDay. */
export function toCivil(day: number): void {
  const z = day + PG_EPOCH_DAYS + 719468
  const era = Math.floor(z / 146097)
  // Within an era everything is a small non-negative integer: `| 0` floors.
  const doe = z - era * 146097
  const yoe = ((doe - ((doe / 1460) | 0) + ((doe / 36524) | 0) - ((doe / 146096) | 0)) / 365) | 0
  const doy = doe - (365 * yoe + ((yoe / 4) | 0) - ((yoe / 100) | 0))
  const mp = ((5 * doy + 2) / 153) | 0
  civilDay = doy - (((153 * mp + 2) / 5) | 0) + 1
  civilMonth = mp < 10 ? mp + 3 : mp - 9
  civilYear = yoe + era * 400 + (civilMonth <= 2 ? 1 : 0)
}

/** Days in a month of an astronomical year. */
export function monthLength(year: number, month: number): number {
  if (month !== 2) return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28
}

function pad4(n: number): string {
  return n < 10000 ? TWO_DIGITS[(n / 100) | 0]! + TWO_DIGITS[n % 100]! : String(n)
}

/**
 * A day as PostgreSQL prints it in DateStyle ISO: '2024-02-29', '0044-03-15 BC',
 * '10000-01-01'; `rest` (a timestamp's time and offset) goes before the ' BC'.
 */
export function pgDateText(day: number, rest = ''): string {
  toCivil(day)
  const y = civilYear
  if (rest === '' && y > 0 && y < 10000) {
    // A plain date in one string from its ten character codes, rather than
    // four concatenations that each make an intermediate string.
    const m = civilMonth
    const d = civilDay
    return String.fromCharCode(
      48 + ((y / 1000) | 0),
      48 + (((y / 100) | 0) % 10),
      48 + (((y / 10) | 0) % 10),
      48 + (y % 10),
      45,
      48 + ((m / 10) | 0),
      48 + (m % 10),
      45,
      48 + ((d / 10) | 0),
      48 + (d % 10),
    )
  }
  const md = '-' + TWO_DIGITS[civilMonth]! + '-' + TWO_DIGITS[civilDay]! + rest
  return civilYear > 0 ? pad4(civilYear) + md : pad4(1 - civilYear) + md + ' BC'
}

/** A day in ISO 8601: 'YYYY-MM-DD' for years 0000..9999, else the extended '+YYYYYY-MM-DD' / '-YYYYYY-MM-DD'. */
export function isoDateText(day: number): string {
  toCivil(day)
  const y = civilYear
  let ys: string
  if (y >= 0 && y <= 9999) ys = pad4(y)
  else ys = (y < 0 ? '-' : '+') + String(Math.abs(y)).padStart(6, '0')
  return ys + '-' + TWO_DIGITS[civilMonth]! + '-' + TWO_DIGITS[civilDay]!
}

/**
 * floor(n / d) for integers n, d > 0 with |n| < 2^53. The quotient of the
 * division can round up to the next integer when n is large; the remainder
 * check corrects that. (Avoids %, which V8 computes with a slow fmod call once
 * the operands are not small integers.)
 */
export function floorDiv(n: number, d: number): number {
  const q = Math.floor(n / d)
  const r = n - q * d
  return r < 0 ? q - 1 : r >= d ? q + 1 : q
}

/** The day number of a Date's time value (its UTC calendar day). */
export function dayOfMs(ms: number): number {
  return floorDiv(ms, MS_PER_DAY) - PG_EPOCH_DAYS
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39
}

/** Two ASCII digits at `at` (the caller has checked they are digits). */
export function digits2(buf: Uint8Array, at: number): number {
  return (buf[at]! - 0x30) * 10 + buf[at + 1]! - 0x30
}

/** Whether [start, end) holds exactly the ASCII bytes of `word`. */
export function isWord(buf: Uint8Array, start: number, end: number, word: string): boolean {
  if (end - start !== word.length) return false
  for (let i = 0; i < word.length; i++) if (buf[start + i] !== word.charCodeAt(i)) return false
  return true
}

// What parseDateText read: module state rather than a result object, so that
// decoding a value allocates nothing but the value.
let parsedYear = 0
let parsedMonth = 0
let parsedDay = 0
/** Where parseDateText stopped. */
export let parsedEnd = 0

/**
 * Reads 'YYYY-MM-DD' (four or more year digits, as DateStyle ISO prints) at
 * `start` into parsedYear/Month/Day and parsedEnd; returns false when the bytes
 * are not such a date. The year is as printed (AD, or BC with a ' BC' suffix
 * that the caller looks for); checkedDay() then validates the day of the month.
 */
export function parseDateText(buf: Uint8Array, start: number, end: number): boolean {
  let p = start
  let year = 0
  while (p < end && isDigit(buf[p]) && p - start < 8) year = year * 10 + buf[p++]! - 0x30
  if (p - start < 4 || p + 6 > end || buf[p] !== 0x2d || buf[p + 3] !== 0x2d) return false
  if (!isDigit(buf[p + 1]) || !isDigit(buf[p + 2]) || !isDigit(buf[p + 4]) || !isDigit(buf[p + 5])) return false
  parsedYear = year
  parsedMonth = digits2(buf, p + 1)
  parsedDay = digits2(buf, p + 4)
  parsedEnd = p + 6
  return year !== 0
}

/** The day number of the parsed date, its year read as BC when `bc`; NaN when that day does not exist. */
export function checkedDay(bc: boolean): number {
  const year = bc ? 1 - parsedYear : parsedYear
  const month = parsedMonth
  const day = parsedDay
  if (month < 1 || month > 12 || day < 1 || (day > 28 && day > monthLength(year, month))) return NaN
  return daysFromCivil(year, month, day)
}

/** Whether [at, end) is ' BC'. */
export function isBc(buf: Uint8Array, at: number, end: number): boolean {
  return end - at === 3 && buf[at] === 0x20 && buf[at + 1] === 0x42 && buf[at + 2] === 0x43
}

function malformed(buf: Uint8Array, start: number, end: number): CodecError {
  return new CodecError(`malformed date value '${utf8Read(buf, start, Math.min(end, start + 40))}' (DateStyle must be ISO)`)
}

/** The day number of a text date, or ±Infinity. */
export function readTextDate(buf: Uint8Array, start: number, end: number): number {
  const c = end > start ? buf[start] : -1
  if (c === 0x69 /* i */ && isWord(buf, start, end, 'infinity')) return Infinity
  if (c === 0x2d /* - */ && isWord(buf, start, end, '-infinity')) return -Infinity
  if (!parseDateText(buf, start, end)) throw malformed(buf, start, end)
  const bc = parsedEnd !== end
  if (bc && !isBc(buf, parsedEnd, end)) throw malformed(buf, start, end)
  const day = checkedDay(bc)
  if (day !== day) throw malformed(buf, start, end)
  if (day < MIN_DAY || day >= DATE_END_DAY) throw new CodecError(`date out of range: ${pgDateText(day)}`)
  return day
}

/** The day number of a binary date, or ±Infinity. */
export function readBinaryDate(buf: Uint8Array, start: number, end: number): number {
  if (end - start !== 4) throw new CodecError(`malformed binary date: ${end - start} bytes where 4 were expected`)
  const day = readInt32(buf, start)
  if (day === INT32_MAX) return Infinity
  if (day === INT32_MIN) return -Infinity
  if (day < MIN_DAY || day >= DATE_END_DAY) throw new CodecError(`binary date out of range: day ${day}`)
  return day
}

function dayAsString(day: number): string {
  if (day === Infinity) return 'infinity'
  if (day === -Infinity) return '-infinity'
  return pgDateText(day)
}

function dayAsDate(day: number): Date | number {
  if (day === Infinity || day === -Infinity) return day
  const ms = (day + PG_EPOCH_DAYS) * MS_PER_DAY
  if (ms > JS_DATE_MAX_MS) throw new CodecError(`date ${pgDateText(day)} is beyond the range of a JavaScript Date; use the dates: 'string' option`)
  return new Date(ms)
}

// The string-mode text decoder returns the server's own bytes once they are
// known to be a well-formed ISO date: that is exactly what pgDateText prints.
const decodeTextString: Decoder = (buf, start, end) => {
  readTextDate(buf, start, end)
  return utf8Read(buf, start, end)
}
const decodeTextDate: Decoder = (buf, start, end) => dayAsDate(readTextDate(buf, start, end))
const decodeBinaryString: Decoder = (buf, start, end) => dayAsString(readBinaryDate(buf, start, end))
const decodeBinaryDate: Decoder = (buf, start, end) => dayAsDate(readBinaryDate(buf, start, end))

function wrongValue(value: unknown): CodecError {
  return new CodecError(`date needs a Date, a Temporal.PlainDate, a string or ±Infinity; got ${describeValue(value)}`)
}

/**
 * The day of a Temporal value: a PlainDate's, the date part of a
 * PlainDateTime's or ZonedDateTime's wall clock, an Instant's in UTC (the
 * day the server takes from the text of each); null for a PlainTime or a
 * value that is not a Temporal one.
 */
function temporalDay(value: unknown): number | null {
  const kind = temporalKind(value)
  if (kind === TemporalKind.None || kind === TemporalKind.PlainTime || kind === TemporalKind.Duration || kind === TemporalKind.Other) return null
  const day = splitWall(wallUs(value, kind))[0]
  if (day < MIN_DAY) throw new CodecError(`${describeValue(value)} is out of range for date (before 4714-11-24 BC)`)
  return day
}

/** The day number of a Date's UTC calendar day; throws for an invalid Date or one before 4714-11-24 BC. */
function dayOfDate(value: Date): number {
  const ms = value.getTime()
  if (ms !== ms) throw new CodecError('date cannot be an invalid Date')
  const day = dayOfMs(ms)
  // A Date reaches 275760 AD at most, well inside date's range; only the early end can be exceeded.
  if (day < MIN_DAY) throw new CodecError(`Date ${value.toISOString()} is out of range for date (before 4714-11-24 BC)`)
  return day
}

const encodeBinary = (w: Writer, value: unknown): boolean => {
  if (typeof value === 'string') return false
  if (value instanceof Date) w.i32(dayOfDate(value))
  else if (value === Infinity) w.i32(INT32_MAX)
  else if (value === -Infinity) w.i32(INT32_MIN)
  else w.i32(temporalDay(value) ?? throwWrong(value))
  return true
}

function throwWrong(value: unknown): never {
  throw wrongValue(value)
}

const encodeText = (value: unknown): string => {
  if (typeof value === 'string') return value
  if (value instanceof Date) return pgDateText(dayOfDate(value))
  if (value === Infinity) return 'infinity'
  if (value === -Infinity) return '-infinity'
  return pgDateText(temporalDay(value) ?? throwWrong(value))
}

export const dateStringCodec: Codec = {
  name: 'date',
  decodeText: decodeTextString,
  decodeBinary: decodeBinaryString,
  encodeText,
  encodeBinary,
}

export const dateDateCodec: Codec = {
  name: 'date',
  decodeText: decodeTextDate,
  decodeBinary: decodeBinaryDate,
  encodeText,
  encodeBinary,
}

/** The date codec for a `dates` option. */
export function dateCodec(mode: ResolvedTypeOptions['dates']): Codec {
  return mode === 'date' ? dateDateCodec : dateStringCodec
}

export function registerDateCodecs(table: Map<number, Codec>, options: ResolvedTypeOptions): void {
  table.set(1082 /* date */, dateCodec(options.dates))
}
