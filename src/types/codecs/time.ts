import type { Writer } from '../../protocol/writer.js'
import { utf8Read } from '../../protocol/utf8.js'
import { CodecError, describeValue, type Codec, type Decoder, type ResolvedTypeOptions } from '../codec.js'
import { readInt32, readUint32, writeInt64Number } from './binary.js'
import { splitWall, TemporalKind, temporalKind, wallUs } from '../temporal-params.js'
import { digits2, pgDateText, TWO_DIGITS, US_PER_DAY } from './date.js'

// time: int64 microseconds since midnight (0 to 24:00:00 inclusive); timetz adds
// an int32 zone offset in seconds WEST of UTC. Both come back as the strings
// PostgreSQL prints ('12:34:56.5', '12:34:56.5+05:30'), built from the binary
// value or from the parsed text, so the two formats agree by construction.
// Also the time-of-day and zone-offset pieces the timestamp codecs share.

/** timetz offsets must stay within ±15:59:59 (PostgreSQL's TZDISP_LIMIT). */
const TZDISP_LIMIT = 16 * 3600

/** '.ffffff' without trailing zeros for 0 < fsec < 1e6 microseconds; '' for 0. */
export function fractionText(fsec: number): string {
  if (fsec === 0) return ''
  // Two digits at a time with integer steps only: a loop dividing by 10 would
  // turn fsec into a double, and % on doubles is a slow call in V8.
  const hi = (fsec / 10000) | 0
  const rest = fsec - hi * 10000
  const mid = (rest / 100) | 0
  const lo = rest - mid * 100
  if (lo !== 0) return '.' + TWO_DIGITS[hi]! + TWO_DIGITS[mid]! + (lo % 10 === 0 ? ONE_DIGIT[(lo / 10) | 0]! : TWO_DIGITS[lo]!)
  if (mid !== 0) return '.' + TWO_DIGITS[hi]! + (mid % 10 === 0 ? ONE_DIGIT[(mid / 10) | 0]! : TWO_DIGITS[mid]!)
  return '.' + (hi % 10 === 0 ? ONE_DIGIT[(hi / 10) | 0]! : TWO_DIGITS[hi]!)
}

const ONE_DIGIT: readonly string[] = ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']

/** 'HH:MM:SS[.ffffff]' for 0 <= us <= 24:00:00, trailing fractional zeros trimmed. */
export function timeText(us: number): string {
  // Exact: us < 2^37, so the quotient is never within rounding distance of the next integer.
  const secs = Math.floor(us / 1000000)
  const fsec = us - secs * 1000000
  const mins = (secs / 60) | 0
  const h = (mins / 60) | 0
  return TWO_DIGITS[h]! + ':' + TWO_DIGITS[mins - h * 60]! + ':' + TWO_DIGITS[secs - mins * 60]! + (fsec === 0 ? '' : fractionText(fsec))
}

/** An offset as PostgreSQL prints it: '+05:30', '-08', '+00:17:30' ('+00' for UTC). */
export function offsetText(secondsEast: number): string {
  const a = secondsEast < 0 ? -secondsEast : secondsEast
  const s = a % 60
  const m = ((a - s) / 60) % 60
  const h = (a - s - m * 60) / 3600
  const hs = h < 100 ? TWO_DIGITS[h]! : String(h)
  const out = (secondsEast < 0 ? '-' : '+') + hs
  if (s !== 0) return out + ':' + TWO_DIGITS[m]! + ':' + TWO_DIGITS[s]!
  return m !== 0 ? out + ':' + TWO_DIGITS[m]! : out
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39
}

/** Where parseTimeText or parseOffsetText stopped. */
export let parsedTimeEnd = 0

/**
 * Reads 'HH:MM:SS[.f…]' (1 to 6 fractional digits) at `p` and returns the
 * microseconds since midnight, or NaN when it is not such a time or not a time
 * of day (24:00:00 is one); the position after it is left in parsedTimeEnd.
 */
export function parseTimeText(buf: Uint8Array, p: number, end: number): number {
  if (p + 8 > end || buf[p + 2] !== 0x3a || buf[p + 5] !== 0x3a) return NaN
  if (!isDigit(buf[p]) || !isDigit(buf[p + 1]) || !isDigit(buf[p + 3]) || !isDigit(buf[p + 4]) || !isDigit(buf[p + 6]) || !isDigit(buf[p + 7])) {
    return NaN
  }
  const h = digits2(buf, p)
  const m = digits2(buf, p + 3)
  const s = digits2(buf, p + 6)
  p += 8
  let fsec = 0
  if (p < end && buf[p] === 0x2e /* . */) {
    p++
    let scale = 100000
    const first = p
    while (p < end && isDigit(buf[p])) {
      fsec += (buf[p++]! - 0x30) * scale
      scale /= 10
    }
    if (p === first || p - first > 6) return NaN
  }
  parsedTimeEnd = p
  if (m > 59 || s > 59) return NaN
  const us = ((h * 60 + m) * 60 + s) * 1000000 + fsec
  return us > US_PER_DAY ? NaN : us
}

/**
 * Reads a zone offset '+HH', '+HH:MM' or '+HH:MM:SS' (or '-') at `p` and returns
 * it in seconds EAST of UTC, or NaN; the position after it is left in parsedTimeEnd.
 */
export function parseOffsetText(buf: Uint8Array, p: number, end: number): number {
  if (p + 3 > end) return NaN
  const sign = buf[p]
  if ((sign !== 0x2b && sign !== 0x2d) || !isDigit(buf[p + 1]) || !isDigit(buf[p + 2])) return NaN
  let secs = digits2(buf, p + 1) * 3600
  p += 3
  if (p + 3 <= end && buf[p] === 0x3a && isDigit(buf[p + 1]) && isDigit(buf[p + 2])) {
    const m = digits2(buf, p + 1)
    if (m > 59) return NaN
    secs += m * 60
    p += 3
    if (p + 3 <= end && buf[p] === 0x3a && isDigit(buf[p + 1]) && isDigit(buf[p + 2])) {
      const s = digits2(buf, p + 1)
      if (s > 59) return NaN
      secs += s
      p += 3
    }
  }
  parsedTimeEnd = p
  return sign === 0x2d ? -secs : secs
}

// Parsing a string parameter: only the unambiguous 'HH:MM[:SS[.ffffff]]' (and
// an explicit offset for timetz) is turned into binary; anything else (other
// spellings, 'allballs', leap seconds, more than 6 fractional digits, which the
// server rounds) goes as text for the server to parse.

let inputEnd = 0

function charDigit(s: string, i: number): number {
  const c = s.charCodeAt(i) - 0x30
  return c >= 0 && c <= 9 ? c : NaN
}

function twoDigits(s: string, i: number): number {
  return charDigit(s, i) * 10 + charDigit(s, i + 1)
}

/** Microseconds of 'HH:MM[:SS[.ffffff]]' at the start of `s` (inputEnd after it), or NaN. */
function parseTimeInput(s: string): number {
  const h = twoDigits(s, 0)
  if (s.charCodeAt(2) !== 0x3a) return NaN
  const m = twoDigits(s, 3)
  let sec = 0
  let fsec = 0
  let i = 5
  if (s.charCodeAt(5) === 0x3a) {
    sec = twoDigits(s, 6)
    i = 8
    if (s.charCodeAt(8) === 0x2e) {
      let scale = 100000
      for (i = 9; i < s.length; i++) {
        const d = charDigit(s, i)
        if (d !== d) break
        // A 7th digit: the server rounds, so it parses this one.
        if (i === 15) return NaN
        fsec += d * scale
        scale /= 10
      }
      if (i === 9) return NaN
    }
  }
  inputEnd = i
  if (!(h <= 24 && m <= 59 && sec <= 59)) return NaN
  const us = ((h * 60 + m) * 60 + sec) * 1000000 + fsec
  return us > US_PER_DAY ? NaN : us
}

/** Seconds east of UTC of a whole-string '+HH[:MM[:SS]]' offset within timetz's limit, or NaN. */
function parseOffsetInput(s: string, i: number): number {
  const sign = s.charCodeAt(i)
  if (sign !== 0x2b && sign !== 0x2d) return NaN
  let secs = twoDigits(s, i + 1) * 3600
  i += 3
  if (s.charCodeAt(i) === 0x3a) {
    const m = twoDigits(s, i + 1)
    secs += m > 59 ? NaN : m * 60
    i += 3
    if (s.charCodeAt(i) === 0x3a) {
      const sec = twoDigits(s, i + 1)
      secs += sec > 59 ? NaN : sec
      i += 3
    }
  }
  if (i !== s.length || !(secs < TZDISP_LIMIT)) return NaN
  return sign === 0x2d ? -secs : secs
}

function excerpt(buf: Uint8Array, start: number, end: number): string {
  return utf8Read(buf, start, Math.min(end, start + 40))
}

/** Microseconds since midnight of an 8-byte binary time, checked. */
export function readBinaryTime(name: string, buf: Uint8Array, start: number): number {
  const hi = readInt32(buf, start)
  const us = hi * 4294967296 + readUint32(buf, start + 4)
  if (hi < 0 || us > US_PER_DAY) throw new CodecError(`binary ${name} out of range: ${hi < 0 ? 'negative' : us} microseconds`)
  return us
}

export function timeLengthError(name: string, n: number, expected: number): CodecError {
  return new CodecError(`malformed binary ${name}: ${n} bytes where ${expected} were expected`)
}

const decodeTimeText: Decoder = (buf, start, end) => {
  const us = parseTimeText(buf, start, end)
  if (us !== us || parsedTimeEnd !== end) throw new CodecError(`malformed time value '${excerpt(buf, start, end)}'`)
  return timeText(us)
}

const decodeTimeBinary: Decoder = (buf, start, end) => {
  if (end - start !== 8) throw timeLengthError('time', end - start, 8)
  return timeText(readBinaryTime('time', buf, start))
}

const decodeTimetzText: Decoder = (buf, start, end) => {
  const us = parseTimeText(buf, start, end)
  const east = us === us ? parseOffsetText(buf, parsedTimeEnd, end) : NaN
  if (east !== east || parsedTimeEnd !== end || !(east < TZDISP_LIMIT && east > -TZDISP_LIMIT)) {
    throw new CodecError(`malformed timetz value '${excerpt(buf, start, end)}'`)
  }
  return timeText(us) + offsetText(east)
}

const decodeTimetzBinary: Decoder = (buf, start, end) => {
  if (end - start !== 12) throw timeLengthError('timetz', end - start, 12)
  const us = readBinaryTime('timetz', buf, start)
  const zone = readInt32(buf, start + 8)
  if (zone >= TZDISP_LIMIT || zone <= -TZDISP_LIMIT) throw new CodecError(`binary timetz zone offset out of range: ${zone} seconds`)
  return timeText(us) + offsetText(-zone)
}

function wrongValue(name: string, value: unknown): CodecError {
  return new CodecError(
    `${name} needs a string such as '12:34:56.789'${name === 'timetz' ? " with an offset ('+05:30')" : ''} or a Temporal.PlainTime; got ${describeValue(value)}`,
  )
}

/**
 * The time of day of a Temporal value, in microseconds: a PlainTime's
 * (24:00:00 where rounding carries it there, which time holds), the wall
 * clock of a PlainDateTime or ZonedDateTime, an Instant's in UTC (the time
 * the server takes from the text of each); null for other values.
 */
function temporalTime(value: unknown, kind: TemporalKind): number | null {
  if (kind === TemporalKind.PlainTime) return Number(wallUs(value, kind))
  if (kind === TemporalKind.Instant || kind === TemporalKind.ZonedDateTime || kind === TemporalKind.PlainDateTime) return splitWall(wallUs(value, kind))[1]
  return null
}

/**
 * timetz of a Temporal value, as text: a PlainTime or PlainDateTime has no
 * offset, which the server then takes from its TimeZone (on the date given,
 * for a PlainDateTime), so the date goes too.
 */
function temporalTimetzText(value: unknown): string | null {
  const kind = temporalKind(value)
  if (kind === TemporalKind.PlainTime) return timeText(Number(wallUs(value, kind)))
  if (kind !== TemporalKind.Instant && kind !== TemporalKind.ZonedDateTime && kind !== TemporalKind.PlainDateTime) return null
  const [day, us] = splitWall(wallUs(value, kind))
  let offset = ''
  if (kind === TemporalKind.Instant) offset = '+00'
  else if (kind === TemporalKind.ZonedDateTime) offset = offsetText(Math.round((value as { offsetNanoseconds: number }).offsetNanoseconds / 1e9))
  return pgDateText(day, ' ' + timeText(us) + offset)
}

const encodeTimeBinary = (w: Writer, value: unknown): boolean => {
  if (typeof value !== 'string') {
    const us = temporalTime(value, temporalKind(value))
    if (us === null) throw wrongValue('time', value)
    writeInt64Number(w, us)
    return true
  }
  const us = parseTimeInput(value)
  if (us !== us || inputEnd !== value.length) return false
  writeInt64Number(w, us)
  return true
}

const encodeTimetzBinary = (w: Writer, value: unknown): boolean => {
  if (typeof value !== 'string') {
    if (temporalKind(value) !== TemporalKind.None) return false
    throw wrongValue('timetz', value)
  }
  const us = parseTimeInput(value)
  if (us !== us) return false
  const east = parseOffsetInput(value, inputEnd)
  if (east !== east) return false
  writeInt64Number(w, us)
  // The wire counts seconds west of UTC.
  w.i32(-east | 0)
  return true
}

const encodeTimeText = (value: unknown): string => {
  if (typeof value === 'string') return value
  const us = temporalTime(value, temporalKind(value))
  if (us === null) throw wrongValue('time', value)
  return timeText(us)
}

const encodeTimetzText = (value: unknown): string => {
  if (typeof value === 'string') return value
  return temporalTimetzText(value) ?? throwWrong('timetz', value)
}

function throwWrong(name: string, value: unknown): never {
  throw wrongValue(name, value)
}

export const timeCodec: Codec = {
  name: 'time',
  decodeText: decodeTimeText,
  decodeBinary: decodeTimeBinary,
  encodeText: encodeTimeText,
  encodeBinary: encodeTimeBinary,
}

export const timetzCodec: Codec = {
  name: 'timetz',
  decodeText: decodeTimetzText,
  decodeBinary: decodeTimetzBinary,
  encodeText: encodeTimetzText,
  encodeBinary: encodeTimetzBinary,
}

export function registerTimeCodecs(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(1083 /* time */, timeCodec)
  table.set(1266 /* timetz */, timetzCodec)
}
