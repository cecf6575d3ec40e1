import type { Writer } from '../../protocol/writer.js'
import { utf8Read } from '../../protocol/utf8.js'
import { CodecError, describeValue, type Codec, type Decoder, type ResolvedTypeOptions } from '../codec.js'
import { instantUs, splitWall, TemporalKind, temporalKind, wallUs } from '../temporal-params.js'
import { temporalText } from '../temporal-values.js'
import { readInt32, readUint32, writeInt64 } from './binary.js'
import {
  checkedDay,
  dayOfMs,
  floorDiv,
  isBc,
  isWord,
  JS_DATE_MAX_MS,
  MIN_DAY,
  MS_PER_DAY,
  parseDateText,
  parsedEnd,
  PG_EPOCH_MS,
  pgDateText,
  US_PER_DAY,
} from './date.js'
import { parsedTimeEnd, parseOffsetText, parseTimeText, timeText } from './time.js'

// timestamp and timestamptz: int64 microseconds since 2000-01-01 00:00:00 (UTC
// for timestamptz) in binary; DateStyle ISO text, where timestamptz is printed
// in the session TimeZone with its offset. Both decode to the same value: a
// Date (milliseconds, floored) or an exact ISO 8601 string.
//
// 64-bit microsecond counts exceed 2^53, so no number ever holds one: binary
// values are split into (day, microsecond of day) or floored to milliseconds
// with exact integer steps on the two 32-bit halves, and bigint is never needed.

/** The first microsecond past timestamp's range is 294277-01-01 00:00:00: this day. */
const END_DAY = 106751983
/** Milliseconds since 1970 of 4714-11-24 00:00:00 BC, the first timestamp. */
const MIN_MS = MIN_DAY * MS_PER_DAY + PG_EPOCH_MS

const INT32_MAX = 2147483647
const INT32_MIN = -2147483648

export function lengthError(name: string, n: number): CodecError {
  return new CodecError(`malformed binary ${name}: ${n} bytes where 8 were expected`)
}

function notADate(name: string, iso: string): CodecError {
  return new CodecError(`${name} ${iso} is beyond the range of a JavaScript Date; use the timestamps: 'string' option`)
}

// Set by splitBinary and parseText: the value as a day number and the
// microseconds into that day (UTC for timestamptz), always 0 <= splitUs < 1 day.
export let splitDay = 0
export let splitUs = 0

/** Splits 8 bytes into splitDay/splitUs; returns ±Infinity for the infinities, else 0. Throws when out of range. */
export function splitBinary(name: string, buf: Uint8Array, start: number): number {
  const hi = readInt32(buf, start)
  const lo = readUint32(buf, start + 4)
  // µs = hi·2^32 + lo = q·2^13 + (lo mod 2^13), and 86400e6 = 2^13 · 10546875:
  // q stays below 2^51, so every step below is exact.
  const q = hi * 524288 + (lo >>> 13)
  const day = floorDiv(q, 10546875)
  const r = q - day * 10546875
  if (day < MIN_DAY || day >= END_DAY) {
    if (hi === INT32_MAX && lo === 0xffffffff) return Infinity
    if (hi === INT32_MIN && lo === 0) return -Infinity
    throw new CodecError(`binary ${name} out of range: day ${day} from 2000-01-01`)
  }
  splitDay = day
  splitUs = r * 8192 + (lo & 8191)
  return 0
}

function excerpt(buf: Uint8Array, start: number, end: number): string {
  return utf8Read(buf, start, Math.min(end, start + 60))
}

/**
 * Parses DateStyle ISO text 'YYYY-MM-DD HH:MM:SS[.ffffff][±HH[:MM[:SS]]][ BC]'
 * into splitDay/splitUs (the offset applied, so UTC); returns ±Infinity for the
 * infinities, else 0. Throws on anything else.
 */
export function parseText(name: string, zoned: boolean, buf: Uint8Array, start: number, end: number): number {
  const c = end > start ? buf[start] : -1
  if (c === 0x69 /* i */ && isWord(buf, start, end, 'infinity')) return Infinity
  if (c === 0x2d /* - */ && isWord(buf, start, end, '-infinity')) return -Infinity
  if (!parseDateText(buf, start, end) || parsedEnd >= end || buf[parsedEnd] !== 0x20 /* space */) throw malformed(name, buf, start, end)
  let us = parseTimeText(buf, parsedEnd + 1, end)
  if (us !== us || us === US_PER_DAY) throw malformed(name, buf, start, end)
  let p = parsedTimeEnd
  let east = 0
  if (zoned && p < end && buf[p] !== 0x20) {
    east = parseOffsetText(buf, p, end)
    if (east !== east) throw malformed(name, buf, start, end)
    p = parsedTimeEnd
  }
  const bc = p !== end
  if (bc && !isBc(buf, p, end)) throw malformed(name, buf, start, end)
  let day = checkedDay(bc)
  if (day !== day) throw malformed(name, buf, start, end)
  us -= east * 1000000
  // Offsets are under a day, so one step normalises.
  if (us < 0) {
    us += US_PER_DAY
    day--
  } else if (us >= US_PER_DAY) {
    us -= US_PER_DAY
    day++
  }
  if (day < MIN_DAY || day >= END_DAY) throw new CodecError(`${name} out of range: '${excerpt(buf, start, end)}'`)
  splitDay = day
  splitUs = us
  return 0
}

function malformed(name: string, buf: Uint8Array, start: number, end: number): CodecError {
  return new CodecError(`malformed ${name} value '${excerpt(buf, start, end)}' (DateStyle must be ISO)`)
}

/** The Date of splitDay/splitUs, microseconds floored. */
function splitAsDate(name: string, zoned: boolean): Date {
  const ms = splitDay * MS_PER_DAY + PG_EPOCH_MS + Math.floor(splitUs / 1000)
  if (ms > JS_DATE_MAX_MS) throw notADate(name, splitAsString(zoned))
  return new Date(ms)
}

/**
 * ISO 8601 with a 'T' and, for timestamptz, 'Z'; but years as PostgreSQL writes
 * them (more than four digits without a sign, ' BC' after the value), because
 * the string must go back to the server as a parameter unchanged: PostgreSQL
 * reads neither '+010000' nor '-000043'.
 */
function splitAsString(zoned: boolean): string {
  return pgDateText(splitDay, 'T' + timeText(splitUs) + (zoned ? 'Z' : ''))
}

function makeDecoders(name: string, zoned: boolean, mode: ResolvedTypeOptions['timestamps']): { text: Decoder; binary: Decoder } {
  if (mode === 'string') {
    return {
      text: (buf, start, end) => {
        const inf = parseText(name, zoned, buf, start, end)
        return inf === 0 ? splitAsString(zoned) : inf > 0 ? 'infinity' : '-infinity'
      },
      binary: (buf, start, end) => {
        if (end - start !== 8) throw lengthError(name, end - start)
        const inf = splitBinary(name, buf, start)
        return inf === 0 ? splitAsString(zoned) : inf > 0 ? 'infinity' : '-infinity'
      },
    }
  }
  return {
    text: (buf, start, end) => {
      const inf = parseText(name, zoned, buf, start, end)
      return inf === 0 ? splitAsDate(name, zoned) : inf
    },
    binary: (buf, start, end) => {
      if (end - start !== 8) throw lengthError(name, end - start)
      // floor(µs / 1000) in exact steps: with µs = hi·2^32 + lo and
      // 2^32 = 4294967·1000 + 296, it is hi·4294967 + floor((hi·296 + lo) / 1000),
      // where hi·296 + lo stays under 2^42, far from any rounding of the floor.
      const hi = readInt32(buf, start)
      const lo = readUint32(buf, start + 4)
      const t = hi * 296 + lo
      const ms = hi * 4294967 + Math.floor(t / 1000) + PG_EPOCH_MS
      if (ms >= MIN_MS && ms <= JS_DATE_MAX_MS) return new Date(ms)
      // Infinities, and values a Date cannot hold or PostgreSQL would not send.
      const inf = splitBinary(name, buf, start)
      if (inf !== 0) return inf
      throw notADate(name, splitAsString(zoned))
    },
  }
}

/** Milliseconds since 2000-01-01 of a valid Date within PostgreSQL's range. */
function checkedMs(name: string, value: Date): number {
  const ms = value.getTime()
  if (ms !== ms) throw new CodecError(`${name} cannot be an invalid Date`)
  // A Date reaches 275760 AD at most, inside the range; only the early end can be exceeded.
  if (ms < MIN_MS) throw new CodecError(`Date ${value.toISOString()} is out of range for ${name} (before 4714-11-24 BC)`)
  return ms - PG_EPOCH_MS
}

/** Writes ms·1000 as an int64 from 32-bit pieces: the product can pass 2^53. */
function writeMsAsUs(w: Writer, ms: number): void {
  const qh = Math.floor(ms / 4294967296)
  const x = (ms - qh * 4294967296) * 1000
  const carry = Math.floor(x / 4294967296)
  w.i32(qh * 1000 + carry)
  w.i32(x - carry * 4294967296)
}

/** The first microsecond (since 2000-01-01) of timestamp's range, and the first past it. */
const MIN_US = BigInt(MIN_DAY) * 86400000000n
const END_US = BigInt(END_DAY) * 86400000000n

/**
 * The microseconds a Temporal value stands for as this type, checked against
 * its range; null for a value that is no Temporal one. timestamptz takes the
 * instant of an Instant or ZonedDateTime; a PlainDateTime or PlainDate has
 * none, and goes as text for the server to read in its TimeZone ('text'). timestamp takes the wall clock (an Instant's in UTC, as for a Date).
 */
function temporalUs(name: string, zoned: boolean, value: unknown): bigint | 'text' | null {
  const kind = temporalKind(value)
  if (kind === TemporalKind.None || kind === TemporalKind.PlainTime || kind === TemporalKind.Duration || kind === TemporalKind.Other) return null
  if (zoned && (kind === TemporalKind.PlainDateTime || kind === TemporalKind.PlainDate)) return 'text'
  const us = zoned ? instantUs(value) : wallUs(value, kind)
  if (us < MIN_US || us >= END_US) throw new CodecError(`${describeValue(value)} is out of range for ${name} (4714-11-24 BC to 294276 AD)`)
  return us
}

function makeEncoders(name: string, zoned: boolean): { text: (value: unknown) => string; binary: (w: Writer, value: unknown) => boolean } {
  const wrongValue = (value: unknown) => new CodecError(`${name} needs a Date, a ${zoned ? 'Temporal.Instant' : 'Temporal.PlainDateTime'}, a string or ±Infinity; got ${describeValue(value)}`)
  const suffix = zoned ? '+00' : ''
  return {
    binary: (w, value) => {
      if (value instanceof Date) writeMsAsUs(w, checkedMs(name, value))
      else if (typeof value === 'string') return false
      else if (value === Infinity) {
        w.i32(INT32_MAX)
        w.i32(-1)
      } else if (value === -Infinity) {
        w.i32(INT32_MIN)
        w.i32(0)
      } else {
        const us = temporalUs(name, zoned, value)
        if (us === null) throw wrongValue(value)
        if (us === 'text') return false
        writeInt64(w, us)
      }
      return true
    },
    text: (value) => {
      if (typeof value === 'string') return value
      if (value instanceof Date) {
        const ms = checkedMs(name, value) + PG_EPOCH_MS
        const day = dayOfMs(ms)
        return pgDateText(day, ' ' + timeText((ms - (day * MS_PER_DAY + PG_EPOCH_MS)) * 1000) + suffix)
      }
      if (value === Infinity) return 'infinity'
      if (value === -Infinity) return '-infinity'
      const us = temporalUs(name, zoned, value)
      if (us === null) throw wrongValue(value)
      // A plain date/time without a zone: the server reads its text in its TimeZone.
      if (us === 'text') return temporalText(value)!
      const [day, rest] = splitWall(us)
      return pgDateText(day, ' ' + timeText(rest) + suffix)
    },
  }
}

function makeCodec(name: string, zoned: boolean, mode: ResolvedTypeOptions['timestamps']): Codec {
  const d = makeDecoders(name, zoned, mode)
  const e = makeEncoders(name, zoned)
  return { name, decodeText: d.text, decodeBinary: d.binary, encodeText: e.text, encodeBinary: e.binary }
}

const codecs = {
  date: [makeCodec('timestamp', false, 'date'), makeCodec('timestamptz', true, 'date')],
  string: [makeCodec('timestamp', false, 'string'), makeCodec('timestamptz', true, 'string')],
} as const

/** The timestamp codec for a `timestamps` option. */
export function timestampCodec(mode: ResolvedTypeOptions['timestamps']): Codec {
  return codecs[mode][0]
}

/** The timestamptz codec for a `timestamps` option. */
export function timestamptzCodec(mode: ResolvedTypeOptions['timestamps']): Codec {
  return codecs[mode][1]
}

export function registerTimestampCodecs(table: Map<number, Codec>, options: ResolvedTypeOptions): void {
  table.set(1114 /* timestamp */, timestampCodec(options.timestamps))
  table.set(1184 /* timestamptz */, timestamptzCodec(options.timestamps))
}
