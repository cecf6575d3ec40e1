// Days from a proleptic Gregorian date, after Howard Hinnant's public-domain
// algorithm (400-year eras starting on March 1, so leap days fall at the end).
// Apart from date.ts, which has its inverse, for the modules that must not
// import date.ts (it imports them).

/** Days from 1970-01-01 to 2000-01-01, PostgreSQL's epoch. */
export const PG_EPOCH_DAYS = 10957

/** The day number (since 2000-01-01) of a proleptic Gregorian date (astronomical year). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = (((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) | 0) + day - 1
  const doe = yoe * 365 + ((yoe / 4) | 0) - ((yoe / 100) | 0) + doy
  return era * 146097 + doe - 719468 - PG_EPOCH_DAYS
}

