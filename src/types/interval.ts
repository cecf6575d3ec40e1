import { fractionText } from './codecs/time.js'

const US_PER_HOUR = 3600000000
const US_PER_MINUTE = 60000000
const US_PER_SECOND = 1000000

/**
 * A PostgreSQL interval: exactly the three fields the server stores, which do
 * not convert into each other (a month is not a fixed number of days, nor a day
 * a fixed number of hours across a DST change). Infinite intervals (PostgreSQL
 * 17+) are the numbers Infinity and -Infinity instead.
 */
export class Interval {
  readonly months: number
  readonly days: number
  /** A safe integer: values beyond ±2^53 are refused rather than rounded. */
  readonly microseconds: number

  constructor(months = 0, days = 0, microseconds = 0) {
    this.months = months
    this.days = days
    this.microseconds = microseconds
  }

  /** ISO 8601, exactly as PostgreSQL prints it with IntervalStyle iso_8601: 'P1Y2M3DT4H5M6.5S', 'P-1DT2H3M', 'PT0S'. */
  toString(): string {
    const months = this.months
    const us = this.microseconds
    // Every field keeps the sign of what it is taken from, as C's / and % do.
    const mon = months % 12
    const year = (months - mon) / 12
    const fsec = us % US_PER_SECOND
    let rest = us - fsec
    const hour = (rest - (rest % US_PER_HOUR)) / US_PER_HOUR
    rest -= hour * US_PER_HOUR
    const min = (rest - (rest % US_PER_MINUTE)) / US_PER_MINUTE
    const sec = (rest - min * US_PER_MINUTE) / US_PER_SECOND
    if (year === 0 && mon === 0 && this.days === 0 && us === 0) return 'PT0S'
    let s = 'P'
    if (year !== 0) s += year + 'Y'
    if (mon !== 0) s += mon + 'M'
    if (this.days !== 0) s += this.days + 'D'
    if (us === 0) return s
    s += 'T'
    if (hour !== 0) s += hour + 'H'
    if (min !== 0) s += min + 'M'
    if (sec !== 0 || fsec !== 0) s += (us < 0 ? '-' : '') + Math.abs(sec) + fractionText(Math.abs(fsec)) + 'S'
    return s
  }

  toJSON(): string {
    return this.toString()
  }
}
