import { CodecError } from './codec.js'
import { daysFromCivil, PG_EPOCH_DAYS } from './codecs/civil.js'

// Temporal values (the JS Temporal API: the global `Temporal`, Node 26 and
// later) given as parameters, whatever the type options: which kind a value
// is, and the microseconds or interval fields it stands for. The global is
// read when a value is looked at, never at load time, so this module loads on
// runtimes without it (and sees a polyfill installed later). The types are
// declared here, as much of them as is used: the compiler's library may not
// have Temporal, and the published types must not depend on it.
//
// PostgreSQL keeps microseconds. Nanoseconds beyond them are rounded to the
// nearest microsecond, ties to even, as the server rounds fractional digits
// beyond the sixth; the text sent for a value (temporal-values.ts) and its
// binary form are rounded alike, so the first execution of a statement
// (parameters in text) and later ones (in binary) store the same value.

/** The fields read of a Temporal date/time value (in the ISO calendar). */
export interface TemporalFields {
  readonly year: number
  readonly month: number
  readonly day: number
  readonly hour: number
  readonly minute: number
  readonly second: number
  readonly millisecond: number
  readonly microsecond: number
  readonly nanosecond: number
  readonly calendarId?: string
  readonly offsetNanoseconds?: number
  readonly epochNanoseconds?: bigint
  withCalendar?(id: string): TemporalFields
}

export interface DurationFields {
  readonly years: number
  readonly months: number
  readonly weeks: number
  readonly days: number
  readonly hours: number
  readonly minutes: number
  readonly seconds: number
  readonly milliseconds: number
  readonly microseconds: number
  readonly nanoseconds: number
}

type Ctor<T> = new (...args: number[]) => T
type Class = abstract new (...args: never[]) => unknown

export interface TemporalApi {
  Instant: Class & { fromEpochNanoseconds(ns: bigint): unknown }
  ZonedDateTime: Class
  PlainDateTime: Ctor<TemporalFields>
  PlainDate: Ctor<TemporalFields>
  PlainTime: Ctor<TemporalFields>
  Duration: Ctor<DurationFields>
  PlainYearMonth: Class
  PlainMonthDay: Class
}

export function api(): TemporalApi | undefined {
  return (globalThis as { Temporal?: TemporalApi }).Temporal
}

const US_PER_DAY_N = 86400000000n
const PG_EPOCH_US_N = BigInt(PG_EPOCH_DAYS) * US_PER_DAY_N

/** What a parameter is, of the Temporal types; None for anything else (and always where there is no Temporal). */
export const enum TemporalKind {
  None,
  Instant,
  ZonedDateTime,
  PlainDateTime,
  PlainDate,
  PlainTime,
  Duration,
  /** PlainYearMonth, PlainMonthDay: no PostgreSQL type holds them. */
  Other,
}

export function temporalKind(v: unknown): TemporalKind {
  if (typeof v !== 'object' || v === null) return TemporalKind.None
  const t = api()
  if (t === undefined) return TemporalKind.None
  if (v instanceof t.Instant) return TemporalKind.Instant
  if (v instanceof t.PlainDateTime) return TemporalKind.PlainDateTime
  if (v instanceof t.PlainDate) return TemporalKind.PlainDate
  if (v instanceof t.ZonedDateTime) return TemporalKind.ZonedDateTime
  if (v instanceof t.PlainTime) return TemporalKind.PlainTime
  if (v instanceof t.Duration) return TemporalKind.Duration
  if (v instanceof t.PlainYearMonth || v instanceof t.PlainMonthDay) return TemporalKind.Other
  return TemporalKind.None
}

/** Whether a value is a Temporal one: its text fits any type the server infers (or it is refused before anything is sent). */
export function isTemporalParam(v: unknown): boolean {
  return temporalKind(v) !== TemporalKind.None
}

/** ns / 1000 rounded to the nearest integer, ties to even. */
function roundToUs(ns: bigint): bigint {
  let q = ns / 1000n
  let r = ns - q * 1000n
  if (r < 0n) {
    r += 1000n
    q -= 1n
  }
  return r > 500n || (r === 500n && (q & 1n) === 1n) ? q + 1n : q
}

/** Microseconds since 2000-01-01 00:00:00 UTC of an Instant or ZonedDateTime. */
export function instantUs(v: unknown): bigint {
  return roundToUs((v as { epochNanoseconds: bigint }).epochNanoseconds) - PG_EPOCH_US_N
}

/** Its fields in the ISO calendar, whatever calendar a date/time value carries. */
function isoFields(v: TemporalFields): TemporalFields {
  return v.calendarId === undefined || v.calendarId === 'iso8601' ? v : v.withCalendar!('iso8601')
}

/**
 * Microseconds since 2000-01-01 00:00:00 of the wall-clock time a value
 * shows: a PlainDateTime's, a ZonedDateTime's in its zone, a PlainDate's
 * midnight, an Instant's in UTC. A PlainTime shows no day: it is the
 * microseconds since midnight (up to 24:00:00, where rounding carries it).
 */
export function wallUs(v: unknown, kind: TemporalKind): bigint {
  if (kind === TemporalKind.Instant) return instantUs(v)
  const f = isoFields(v as TemporalFields)
  let day = 0n
  if (kind !== TemporalKind.PlainTime) day = BigInt(daysFromCivil(f.year, f.month, f.day)) * US_PER_DAY_N
  if (kind === TemporalKind.PlainDate) return day
  const ns = BigInt(((f.hour * 60 + f.minute) * 60 + f.second) * 1000 + f.millisecond) * 1000000n + BigInt(f.microsecond * 1000 + f.nanosecond)
  return day + roundToUs(ns)
}

/** A wall-clock time (µs since 2000-01-01) split into a day number and the microseconds into it. */
export function splitWall(us: bigint): [day: number, us: number] {
  let day = us / US_PER_DAY_N
  let rest = us - day * US_PER_DAY_N
  if (rest < 0n) {
    rest += US_PER_DAY_N
    day -= 1n
  }
  return [Number(day), Number(rest)]
}

/** The three fields of a Duration as an interval stores them: weeks are 7 days, and nothing else is converted. */
export function intervalFields(v: unknown): [months: number, days: number, us: bigint] {
  const d = v as DurationFields
  const months = d.years * 12 + d.months
  const days = d.weeks * 7 + d.days
  const ns =
    ((BigInt(d.hours) * 60n + BigInt(d.minutes)) * 60n + BigInt(d.seconds)) * 1000000000n +
    BigInt(d.milliseconds) * 1000000n +
    BigInt(d.microseconds) * 1000n +
    BigInt(d.nanoseconds)
  const us = roundToUs(ns)
  if (!Number.isSafeInteger(months) || months > 2147483647 || months < -2147483648 || !Number.isSafeInteger(days) || days > 2147483647 || days < -2147483648) {
    throw new CodecError(`a Temporal.Duration of ${months} months and ${days} days is beyond interval's range (32-bit months and days)`)
  }
  if (us >= 2n ** 63n || us < -(2n ** 63n)) throw new CodecError(`a Temporal.Duration of ${us} microseconds is beyond interval's range (64-bit microseconds)`)
  return [months, days, us]
}

/** An interval's fields in ISO 8601 ('P14M3DT4H5M6.5S'), which the server reads in every IntervalStyle. */
export function intervalIsoText(months: number, days: number, us: bigint): string {
  if (months === 0 && days === 0 && us === 0n) return 'PT0S'
  let s = 'P'
  if (months !== 0) s += months + 'M'
  if (days !== 0) s += days + 'D'
  if (us === 0n) return s
  const neg = us < 0n
  const a = neg ? -us : us
  const hours = a / 3600000000n
  const rest = Number(a - hours * 3600000000n)
  const minutes = Math.floor(rest / 60000000)
  const secUs = rest - minutes * 60000000
  const sec = Math.floor(secUs / 1000000)
  const m = neg ? '-' : ''
  s += 'T'
  if (hours !== 0n) s += m + hours + 'H'
  if (minutes !== 0) s += m + minutes + 'M'
  if (secUs !== 0) s += m + sec + (secUs === sec * 1000000 ? '' : '.' + String(secUs - sec * 1000000).padStart(6, '0').replace(/0+$/, '')) + 'S'
  return s
}

