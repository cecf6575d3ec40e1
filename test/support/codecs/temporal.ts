// Shared by the temporal codec tests: decoding from inside a larger buffer
// (from ./type-roundtrip.ts), encoding to hex, and independent oracles for what PostgreSQL prints, built on
// bigint and the runtime's own Date (never on the code under test).

import assert from 'node:assert/strict'
import type { Codec } from '../../../src/types/codec.js'
import { Writer } from '../../../src/protocol/writer.js'
import { decodeIn } from './type-roundtrip.js'

export { decodeIn }

export const decText = (c: Codec, s: string): unknown => decodeIn(c.decodeText, Buffer.from(s))
export const decBin = (c: Codec, hex: string): unknown => decodeIn(c.decodeBinary!, Buffer.from(hex, 'hex'))

/** encodeBinary's bytes as hex, or false when it chose text (then it must have written nothing). */
export function encBin(c: Codec, value: unknown): string | false {
  const w = new Writer()
  w.u8(0xee) // something already in the buffer must stay untouched
  const ok = c.encodeBinary!(w, value)
  const out = Buffer.from(w.take())
  assert.equal(out[0], 0xee)
  if (!ok) {
    assert.equal(out.length, 1, 'returning false must write nothing')
    return false
  }
  return out.subarray(1).toString('hex')
}

export function int64Hex(n: bigint): string {
  return BigInt.asUintN(64, n).toString(16).padStart(16, '0')
}

export function int32Hex(n: number): string {
  return (n >>> 0).toString(16).padStart(8, '0')
}

export const US_PER_DAY = 86400000000n
export const MIN_TIMESTAMP = -211813488000000000n // 4714-11-24 00:00:00 BC
export const END_TIMESTAMP = 9223371331200000000n // 294277-01-01 00:00:00
export const MIN_DATE_DAY = -2451545
export const END_DATE_DAY = 2145031949 // 5874898-01-01
export const PG_EPOCH_MS = 946684800000
export const JS_DATE_MAX_MS = 8.64e15

/** [astronomical year, month, day] of a day number since 2000-01-01, by Date on a 400-year-shifted day (the calendar repeats every 146097 days). */
export function civil(day: number): [number, number, number] {
  const eras = Math.floor(day / 146097)
  const d = new Date((day - eras * 146097 + 10957) * 86400000)
  return [d.getUTCFullYear() + eras * 400, d.getUTCMonth() + 1, d.getUTCDate()]
}

const p2 = (n: number) => String(n).padStart(2, '0')

/** A date as PostgreSQL prints it (DateStyle ISO), the BC suffix left to the caller. */
export function pgDateParts(day: number): { text: string; bc: boolean } {
  const [y, m, d] = civil(day)
  const bc = y <= 0
  return { text: `${String(bc ? 1 - y : y).padStart(4, '0')}-${p2(m)}-${p2(d)}`, bc }
}

export function pgDate(day: number): string {
  const { text, bc } = pgDateParts(day)
  return bc ? text + ' BC' : text
}

/** '.ffffff' trimmed, '' for zero. */
export function fracText(us: number): string {
  return us === 0 ? '' : '.' + String(us).padStart(6, '0').replace(/0+$/, '')
}

export function timeOfDay(us: number): string {
  const s = Math.floor(us / 1e6)
  return `${p2(Math.floor(s / 3600))}:${p2(Math.floor(s / 60) % 60)}:${p2(s % 60)}${fracText(us % 1e6)}`
}

/** The offset as PostgreSQL prints it, from seconds east of UTC. */
export function pgOffset(east: number): string {
  const a = Math.abs(east)
  const [h, m, s] = [Math.floor(a / 3600), Math.floor(a / 60) % 60, a % 60]
  return (east < 0 ? '-' : '+') + p2(h) + (s ? `:${p2(m)}:${p2(s)}` : m ? `:${p2(m)}` : '')
}

function splitUs(us: bigint): [number, number] {
  let day = us / US_PER_DAY
  let rest = us % US_PER_DAY
  if (rest < 0n) {
    rest += US_PER_DAY
    day -= 1n
  }
  return [Number(day), Number(rest)]
}

/**
 * The string the 'string' mode gives for µs since 2000-01-01: ISO 8601 with a
 * 'T' (and 'Z' when zoned), years written as PostgreSQL reads them back (no
 * sign past 9999, ' BC' at the end).
 */
export function isoOf(us: bigint, zoned = false): string {
  const [day, rest] = splitUs(us)
  const { text, bc } = pgDateParts(day)
  return `${text}T${timeOfDay(rest)}${zoned ? 'Z' : ''}${bc ? ' BC' : ''}`
}

/** What PostgreSQL prints for a timestamp (µs since 2000, UTC) shown at an offset of `east` seconds (null: timestamp without time zone). */
export function pgTimestampText(us: bigint, east: number | null): string {
  const [day, rest] = splitUs(us + BigInt(east ?? 0) * 1000000n)
  const { text, bc } = pgDateParts(day)
  return `${text} ${timeOfDay(rest)}${east === null ? '' : pgOffset(east)}${bc ? ' BC' : ''}`
}

/** The Date the 'date' mode gives: milliseconds floored. */
export function dateOf(us: bigint): Date {
  let ms = us / 1000n
  if (us % 1000n < 0n) ms -= 1n
  return new Date(Number(ms) + PG_EPOCH_MS)
}

export type IntervalStyle = 'postgres' | 'postgres_verbose' | 'sql_standard' | 'iso_8601'

/** What PostgreSQL prints for an interval in each IntervalStyle, following its EncodeInterval rules, in bigint. */
export function pgIntervalText(months: number, days: number, us: bigint, style: IntervalStyle): string {
  const year = Math.trunc(months / 12)
  const mon = months % 12 || 0
  const mday = days
  const hour = us / 3600000000n
  const min = (us % 3600000000n) / 60000000n
  const sec = (us % 60000000n) / 1000000n
  const fsec = us % 1000000n
  const abs = (v: bigint) => (v < 0n ? -v : v)
  const frac = (f: bigint) => fracText(Number(abs(f)))
  const pad = (v: bigint) => String(abs(v)).padStart(2, '0')
  const timeNonZero = hour !== 0n || min !== 0n || sec !== 0n || fsec !== 0n
  switch (style) {
    case 'postgres': {
      let s = ''
      let isZero = true
      let isBefore = false
      for (const [v, unit] of [[year, 'year'], [mon, 'mon'], [mday, 'day']] as const) {
        if (v === 0) continue
        s += `${isZero ? '' : ' '}${isBefore && v > 0 ? '+' : ''}${v} ${unit}${v !== 1 ? 's' : ''}`
        isBefore = v < 0
        isZero = false
      }
      if (isZero || timeNonZero) {
        const minus = hour < 0n || min < 0n || sec < 0n || fsec < 0n
        s += `${isZero ? '' : ' '}${minus ? '-' : isBefore ? '+' : ''}${pad(hour)}:${pad(min)}:${pad(sec)}${frac(fsec)}`
      }
      return s
    }
    case 'postgres_verbose': {
      let s = '@'
      let isZero = true
      let isBefore = false
      for (const [v0, unit] of [[BigInt(year), 'year'], [BigInt(mon), 'mon'], [BigInt(mday), 'day'], [hour, 'hour'], [min, 'min']] as const) {
        let v = v0
        if (v === 0n) continue
        if (isZero) {
          isBefore = v < 0n
          v = abs(v)
        } else if (isBefore) v = -v
        s += ` ${v} ${unit}${v === 1n ? '' : 's'}`
        isZero = false
      }
      if (sec !== 0n || fsec !== 0n) {
        s += ' '
        if (sec < 0n || (sec === 0n && fsec < 0n)) {
          if (isZero) isBefore = true
          else if (!isBefore) s += '-'
        } else if (isBefore) s += '-'
        s += `${abs(sec)}${frac(fsec)} sec${abs(sec) !== 1n || fsec !== 0n ? 's' : ''}`
        isZero = false
      }
      if (isZero) s += ' 0'
      if (isBefore) s += ' ago'
      return s
    }
    case 'sql_standard': {
      const neg = year < 0 || mon < 0 || mday < 0 || hour < 0n || min < 0n || sec < 0n || fsec < 0n
      const pos = year > 0 || mon > 0 || mday > 0 || hour > 0n || min > 0n || sec > 0n || fsec > 0n
      const hasYearMonth = year !== 0 || mon !== 0
      const hasDayTime = mday !== 0 || timeNonZero
      const standard = !(neg && pos) && !(hasYearMonth && hasDayTime)
      const time = (h: bigint) => `${abs(h)}:${pad(min)}:${pad(sec)}${frac(fsec)}`
      if (!neg && !pos) return '0'
      if (!standard) {
        const ys = year < 0 || mon < 0 ? '-' : '+'
        const ds = mday < 0 ? '-' : '+'
        const ts = hour < 0n || min < 0n || sec < 0n || fsec < 0n ? '-' : '+'
        return `${ys}${Math.abs(year)}-${Math.abs(mon)} ${ds}${Math.abs(mday)} ${ts}${time(hour)}`
      }
      const sign = neg ? '-' : ''
      if (hasYearMonth) return `${sign}${Math.abs(year)}-${Math.abs(mon)}`
      if (mday !== 0) return `${sign}${Math.abs(mday)} ${time(hour)}`
      return `${sign}${time(hour)}`
    }
    case 'iso_8601': {
      if (year === 0 && mon === 0 && mday === 0 && !timeNonZero) return 'PT0S'
      let s = 'P'
      if (year !== 0) s += `${year}Y`
      if (mon !== 0) s += `${mon}M`
      if (mday !== 0) s += `${mday}D`
      if (timeNonZero) s += 'T'
      if (hour !== 0n) s += `${hour}H`
      if (min !== 0n) s += `${min}M`
      if (sec !== 0n || fsec !== 0n) s += `${sec < 0n || fsec < 0n ? '-' : ''}${abs(sec)}${frac(fsec)}S`
      return s
    }
  }
}

export const INTERVAL_STYLES: readonly IntervalStyle[] = ['postgres', 'postgres_verbose', 'sql_standard', 'iso_8601']

/**
 * Decodes `bytes` alone (nothing around them) and inside a larger buffer: both
 * must give the same value or both a CodecError, and nothing else may be thrown.
 * A decoder that read beyond its value would see different bytes in the two.
 */
export function decodeAlike(decode: (buf: Uint8Array, start: number, end: number) => unknown, bytes: Uint8Array): void {
  const outcome = (f: () => unknown): unknown => {
    try {
      return f()
    } catch (e) {
      if (e instanceof Error && e.name === 'CodecError') return { codecError: e.message }
      throw e
    }
  }
  const alone = outcome(() => decode(Uint8Array.from(bytes), 0, bytes.length))
  const inside = outcome(() => decodeIn(decode, bytes))
  assert.deepStrictEqual(inside, alone)
}

/** Every prefix of `s` and `s` with each byte replaced by a few troublesome ones. */
export function mutationsOf(s: string | Uint8Array): Uint8Array[] {
  const b = typeof s === 'string' ? Buffer.from(s) : s
  const out: Uint8Array[] = []
  for (let i = 0; i <= b.length; i++) out.push(b.subarray(0, i))
  for (let i = 0; i < b.length; i++) {
    for (const x of [0x20, 0x2d, 0x2b, 0x3a, 0x2e, 0x30, 0x39, 0x00, 0xff, 0x42]) {
      const m = Uint8Array.from(b)
      m[i] = x
      out.push(m)
    }
  }
  return out
}

/**
 * An ISO 8601 timestamp (years as ±YYYYYY past 0000–9999, 'Z' when zoned) in
 * the form the 'string' mode gives (see isoOf): the same instant, years written
 * as PostgreSQL reads them back.
 */
export function pgStyle(iso: string): string {
  const m = /^([+-]?)(\d{4,6})(-.*?)(Z?)$/.exec(iso)
  if (m === null) return iso
  const year = Number(m[1] === '-' ? -Number(m[2]) : Number(m[2]))
  if (year <= 0) return `${String(1 - year).padStart(4, '0')}${m[3]}${m[4]} BC`
  return `${String(year).padStart(4, '0')}${m[3]}${m[4]}`
}
