import { CodecError, describeValue } from './codec.js'
import { PG_EPOCH_DAYS } from './codecs/civil.js'
import { civilDay, civilMonth, civilYear, daysFromCivil, pgDateText, toCivil, US_PER_DAY } from './codecs/date.js'
import { offsetText, timeText } from './codecs/time.js'
import { api, intervalFields, intervalIsoText, instantUs, splitWall, TemporalKind, temporalKind, wallUs, type TemporalApi, type TemporalFields } from './temporal-params.js'

// Temporal values (see temporal-params.ts) built from what the decoders read
// (day numbers since 2000-01-01 and microseconds) for the temporal type
// option, and the text of a Temporal parameter.

/** The global Temporal, which the option checks made sure of before any Temporal codec was built. */
function temporal(): TemporalApi {
  const t = api()
  if (t === undefined) throw new CodecError('the global Temporal is gone: the temporal type option needs it')
  return t
}

/** An Instant holds ±10^8 days around 1970 (as a Date does). */
const INSTANT_LIMIT_DAYS = 100_000_000
/** The last day a PlainDate or PlainDateTime holds: +275760-09-13. */
const PLAIN_MAX_DAY = daysFromCivil(275760, 9, 13)

function beyond(name: string, what: string, text: string): CodecError {
  return new CodecError(`${name} ${text} is beyond the range of ${what} (up to +275760-09-13); select it as text (::text) instead`)
}

// ---- values from what the decoders read ----

/** The Instant of a day number (since 2000-01-01) and the microseconds into it (UTC). */
export function instantOf(name: string, day: number, us: number): unknown {
  const d = day + PG_EPOCH_DAYS
  if (d > INSTANT_LIMIT_DAYS || (d === INSTANT_LIMIT_DAYS && us > 0)) throw beyond(name, 'a Temporal.Instant', pgDateText(day, 'T' + timeText(us) + 'Z'))
  // Below 2^53 whole milliseconds, so only the last step needs a bigint.
  const ms = d * 86400000 + Math.floor(us / 1000)
  return temporal().Instant.fromEpochNanoseconds(BigInt(ms) * 1000000n + BigInt((us % 1000) * 1000))
}

/** The PlainDateTime of a day number and the microseconds into it. */
export function plainDateTimeOf(name: string, day: number, us: number): unknown {
  if (day > PLAIN_MAX_DAY) throw beyond(name, 'a Temporal.PlainDateTime', pgDateText(day, 'T' + timeText(us)))
  toCivil(day)
  const secs = Math.floor(us / 1000000)
  const fsec = us - secs * 1000000
  const mins = (secs / 60) | 0
  const ms = (fsec / 1000) | 0
  return new (temporal().PlainDateTime)(civilYear, civilMonth, civilDay, (mins / 60) | 0, mins % 60, secs % 60, ms, fsec - ms * 1000)
}

export function plainDateOf(day: number): unknown {
  if (day > PLAIN_MAX_DAY) throw beyond('date', 'a Temporal.PlainDate', pgDateText(day))
  toCivil(day)
  return new (temporal().PlainDate)(civilYear, civilMonth, civilDay)
}

export function plainTimeOf(us: number): unknown {
  if (us >= US_PER_DAY) {
    throw new CodecError("time 24:00:00 has no Temporal.PlainTime (the last one is 23:59:59.999999999); select it as text (::text) instead")
  }
  const secs = Math.floor(us / 1000000)
  const fsec = us - secs * 1000000
  const mins = (secs / 60) | 0
  const ms = (fsec / 1000) | 0
  return new (temporal().PlainTime)((mins / 60) | 0, mins % 60, secs % 60, ms, fsec - ms * 1000)
}

/**
 * The Duration of an interval's three fields: years and months from its
 * months (12 to a year), its days as days, its time as hours, minutes,
 * seconds, milliseconds and microseconds. Nothing is carried between the
 * three, as PostgreSQL carries nothing (a month is not a fixed number of
 * days, nor a day 24 hours across a DST change). A Duration has one sign for
 * all its fields, so an interval whose fields differ in sign ('1 mon -1 days')
 * has none and is refused.
 */
export function durationOf(months: number, days: number, us: number | bigint): unknown {
  if ((months > 0 || days > 0 || us > 0) && (months < 0 || days < 0 || us < 0)) {
    throw new CodecError(
      `interval of ${months} months, ${days} days and ${us} microseconds mixes signs, which a Temporal.Duration cannot hold; ` +
        'select it with justify_interval() or as text (::text) instead',
    )
  }
  let hours: number
  let rest: number
  if (typeof us === 'number') {
    hours = Math.trunc(us / 3600000000)
    rest = us - hours * 3600000000
  } else {
    const h = us / 3600000000n
    hours = Number(h)
    rest = Number(us - h * 3600000000n)
  }
  const minutes = Math.trunc(rest / 60000000)
  rest -= minutes * 60000000
  const seconds = Math.trunc(rest / 1000000)
  rest -= seconds * 1000000
  const ms = Math.trunc(rest / 1000)
  const years = Math.trunc(months / 12)
  // `+ 0` turns the -0 of a negative value's zero parts into 0, which Duration's printing would otherwise keep.
  return new (temporal().Duration)(years + 0, months - years * 12 + 0, 0, days, hours + 0, minutes + 0, seconds + 0, ms + 0, rest - ms * 1000 + 0)
}

/**
 * The text of a Temporal value, for a parameter whose type the server has
 * not said yet (it parses it as the type it infers) or whose codec takes
 * text: timestamps as PostgreSQL prints them ('2024-02-29 12:34:56.123456+00',
 * a ZonedDateTime with its own offset so that a timestamp takes its wall
 * clock), years before 1 with ' BC', a Duration in ISO 8601. null for a value
 * that is not a Temporal one.
 */
export function temporalText(v: unknown, kind: TemporalKind = temporalKind(v)): string | null {
  switch (kind) {
    case TemporalKind.None:
      return null
    case TemporalKind.Instant: {
      const [day, us] = splitWall(instantUs(v))
      return pgDateText(day, ' ' + timeText(us) + '+00')
    }
    case TemporalKind.ZonedDateTime: {
      const offset = (v as TemporalFields).offsetNanoseconds!
      if (offset % 1000000000 !== 0) throw new CodecError('a Temporal.ZonedDateTime whose UTC offset has a fraction of a second cannot be sent; convert it with toInstant()')
      const [day, us] = splitWall(wallUs(v, kind))
      return pgDateText(day, ' ' + timeText(us) + offsetText(offset / 1000000000))
    }
    case TemporalKind.PlainDateTime: {
      const [day, us] = splitWall(wallUs(v, kind))
      return pgDateText(day, ' ' + timeText(us))
    }
    case TemporalKind.PlainDate:
      return pgDateText(splitWall(wallUs(v, kind))[0])
    case TemporalKind.PlainTime:
      return timeText(Number(wallUs(v, kind)))
    case TemporalKind.Duration:
      return intervalIsoText(...intervalFields(v))
    case TemporalKind.Other:
      throw new CodecError(`${describeValue(v)} has no PostgreSQL type; send a Temporal.PlainDate or a string`)
  }
}
