import { utf8Read } from '../../protocol/utf8.js'
import { CodecError } from '../codec.js'
import { Interval } from '../interval.js'

// Parses an interval in every IntervalStyle the server can print, into the same
// three fields the binary format carries:
//   postgres           '1 year 2 mons 3 days 04:05:06.789', '-1 days +02:03:00', '00:00:00'
//   postgres_verbose   '@ 1 year 2 mons 3 days 4 hours 5 mins 6.789 secs', '@ 1 day -2 hours ago', '@ 0'
//   sql_standard       '1-2', '3 4:05:06.789', '-1-2', '+1-2 -3 +4:05:06', '0'
//   iso_8601           'P1Y2M3DT4H5M6.789S', 'P-1DT2H3M', 'PT-0.5S', 'PT0S'
// Each component the server prints is exact (whole years, months, days, hours,
// minutes, seconds plus at most six fractional digits), so the sums below are
// exact as long as the microseconds stay within ±2^53; beyond, they are summed
// in a bigint (parseIntervalWith hands it on, parseIntervalText refuses it).
//
// The cursor lives in module state so that parsing allocates nothing but the result.

const US_PER_HOUR = 3600000000
const US_PER_MINUTE = 60000000
const US_PER_SECOND = 1000000

const EMPTY = new Uint8Array(0)
let buf: Uint8Array = EMPTY
let pos = 0
let end = 0
let months = 0
let days = 0
let us = 0
/** The microseconds once their sum passes ±2^53 (then `us` is stale), else null. */
let big: bigint | null = null

/** The byte at i, or -1 past the end: bytes beyond the value are never looked at. */
function ch(i: number): number {
  return i < end ? buf[i]! : -1
}

/** Digits at pos as a number (at most 15, so exact); -1 when there are none or too many. */
function unsigned(): number {
  const first = pos
  let n = 0
  while (pos < end) {
    const d = buf[pos]! - 0x30
    if (d < 0 || d > 9) break
    n = n * 10 + d
    pos++
  }
  return pos === first || pos - first > 15 ? -1 : n
}

/** Microseconds of '.f…' (1 to 6 digits) at pos; 0 when no '.' is there; -1 when malformed. */
function fraction(): number {
  if (pos >= end || buf[pos] !== 0x2e) return 0
  pos++
  const first = pos
  let f = 0
  let scale = 100000
  while (pos < end) {
    const d = buf[pos]! - 0x30
    if (d < 0 || d > 9) break
    f += d * scale
    scale /= 10
    pos++
  }
  return pos === first || pos - first > 6 ? -1 : f
}

/** Consumes an optional sign: -1 for '-', 1 for '+' or none. */
function sign(): number {
  const c = ch(pos)
  if (c === 0x2d) {
    pos++
    return -1
  }
  if (c === 0x2b) pos++
  return 1
}

/** Adds n·unit + extra microseconds (n an integer, extra a safe integer); exact at any size. */
function addUs(n: number, unit: number, extra: number): void {
  if (big === null) {
    const x = n * unit + extra
    const sum = us + x
    if (Math.abs(n) <= MAX_SAFE_FACTOR / unit && Number.isSafeInteger(x) && Number.isSafeInteger(sum)) {
      us = sum
      return
    }
    big = BigInt(us)
  }
  big += BigInt(n) * BigInt(unit) + BigInt(extra)
}

/** Below this over the unit, n·unit is exact in a double. */
const MAX_SAFE_FACTOR = Number.MAX_SAFE_INTEGER

function twoDigits(at: number): number {
  const a = buf[at]! - 0x30
  const b = buf[at + 1]! - 0x30
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1
}

/** 'H…:MM:SS[.ffffff]' at pos (hours of any width), added with sign `s`. */
function time(s: number): boolean {
  const h = unsigned()
  if (h < 0 || pos + 6 > end || buf[pos] !== 0x3a || buf[pos + 3] !== 0x3a) return false
  const m = twoDigits(pos + 1)
  const sec = twoDigits(pos + 4)
  if (m < 0 || m > 59 || sec < 0 || sec > 59) return false
  pos += 6
  const f = fraction()
  if (f < 0) return false
  addUs(s * h, US_PER_HOUR, 0)
  addUs(s, m * US_PER_MINUTE + sec * US_PER_SECOND + f, 0)
  return true
}

/** Whether pos starts `word` followed by a space or the end; consumes it if so. */
function word(w: string): boolean {
  const n = w.length
  if (pos + n > end || (pos + n < end && buf[pos + n] !== 0x20)) return false
  for (let i = 0; i < n; i++) if (buf[pos + i] !== w.charCodeAt(i)) return false
  pos += n
  return true
}

/** The unit word at pos, consumed: 'year'(s), 'mon'(s), 'day'(s) and, when `verbose`, 'hour'(s), 'min'(s), 'sec'(s); '' if none. */
function unit(verbose: boolean): string {
  switch (ch(pos)) {
    case 0x79 /* y */:
      return word('year') || word('years') ? 'y' : ''
    case 0x6d /* m */:
      if (word('mon') || word('mons')) return 'M'
      return verbose && (word('min') || word('mins')) ? 'm' : ''
    case 0x64 /* d */:
      return word('day') || word('days') ? 'd' : ''
    case 0x68 /* h */:
      return verbose && (word('hour') || word('hours')) ? 'h' : ''
    case 0x73 /* s */:
      return verbose && (word('sec') || word('secs')) ? 's' : ''
    default:
      return ''
  }
}

/** Adds n (signed) of a unit; only seconds take the fraction f. */
function add(u: string, n: number, f: number): boolean {
  if (f !== 0 && u !== 's') return false
  switch (u) {
    case 'y':
      months += n * 12
      return true
    case 'M':
      months += n
      return true
    case 'd':
      days += n
      return true
    case 'h':
      addUs(n, US_PER_HOUR, 0)
      return true
    case 'm':
      addUs(n, US_PER_MINUTE, 0)
      return true
    case 's':
      addUs(n, US_PER_SECOND, f)
      return true
    default:
      return false
  }
}

/** postgres: '[±]N unit' parts, then an optional '[±]H:MM:SS[.f]'. */
function postgres(): boolean {
  for (;;) {
    const s = sign()
    const at = pos
    const n = unsigned()
    if (n < 0) return false
    if (ch(pos) === 0x3a) {
      pos = at
      return time(s) && pos === end
    }
    if (ch(pos) !== 0x20) return false
    pos++
    if (!add(unit(false), s * n, 0)) return false
    if (pos === end) return true
    if (ch(pos++) !== 0x20) return false
  }
}

/** postgres_verbose: '@' then ' [-]N unit' parts (seconds with a fraction), ' 0' for zero, ' ago' negating all. */
function verbose(): boolean {
  pos++
  if (pos === end) return false
  while (pos < end) {
    if (ch(pos++) !== 0x20) return false
    if (word('ago')) {
      if (pos !== end) return false
      // 0 - x, not -x: a negated zero would differ from the binary decoding's 0.
      months = 0 - months
      days = 0 - days
      us = 0 - us
      if (big !== null) big = -big
      return true
    }
    const s = sign()
    const n = unsigned()
    if (n < 0) return false
    const f = fraction()
    if (f < 0) return false
    if (pos === end || (ch(pos) === 0x20 && ch(pos + 1) === 0x61) /* ' ago' */) {
      // The unitless zero of an all-zero interval.
      if (n !== 0 || f !== 0) return false
      continue
    }
    if (ch(pos++) !== 0x20) return false
    if (!add(unit(true), s * n, s * f)) return false
  }
  return true
}

/** iso_8601 with designators: 'P[nY][nM][nD][T[nH][nM][n[.f]S]]', every number optionally negative. */
function iso(): boolean {
  pos++
  let inTime = false
  if (pos === end) return false
  while (pos < end) {
    if (ch(pos) === 0x54 /* T */ && !inTime) {
      inTime = true
      pos++
      if (pos === end) return false
      continue
    }
    const s = ch(pos) === 0x2d ? (pos++, -1) : 1
    const n = unsigned()
    if (n < 0) return false
    const f = fraction()
    if (f < 0) return false
    const d = ch(pos++)
    const u = inTime ? (d === 0x48 ? 'h' : d === 0x4d ? 'm' : d === 0x53 ? 's' : '') : d === 0x59 ? 'y' : d === 0x4d ? 'M' : d === 0x44 ? 'd' : d === 0x57 ? 'w' : ''
    if (u === 'w') {
      if (f !== 0) return false
      days += s * n * 7
    } else if (!add(u, s * n, s * f)) return false
  }
  return true
}

/** '[±]Y-M' at pos, added with sign s (the sign covers both). */
function yearMonth(s: number): boolean {
  const y = unsigned()
  if (y < 0 || ch(pos++) !== 0x2d) return false
  const m = unsigned()
  if (m < 0) return false
  months += s * (y * 12 + m)
  return true
}

/**
 * sql_standard: '0', '[-]Y-M', '[-]D H:MM:SS', '[-]H:MM:SS' (one sign for the
 * whole value), or, with mixed signs or both year-month and day-time parts, all
 * three parts each with its own sign: '+Y-M -D +H:MM:SS'.
 */
function sqlStandard(): boolean {
  let spaces = 0
  for (let i = pos; i < end; i++) if (buf[i] === 0x20) spaces++
  if (spaces === 2) {
    if (ch(pos) !== 0x2b && ch(pos) !== 0x2d) return false
    if (!yearMonth(sign()) || ch(pos++) !== 0x20) return false
    if (ch(pos) !== 0x2b && ch(pos) !== 0x2d) return false
    const s = sign()
    const d = unsigned()
    if (d < 0 || ch(pos++) !== 0x20) return false
    days += s * d
    if (ch(pos) !== 0x2b && ch(pos) !== 0x2d) return false
    return time(sign()) && pos === end
  }
  const s = ch(pos) === 0x2d ? (pos++, -1) : 1
  if (spaces === 1) {
    const d = unsigned()
    if (d < 0 || ch(pos++) !== 0x20) return false
    days += s * d
    return time(s) && pos === end
  }
  if (spaces !== 0) return false
  const at = pos
  const n = unsigned()
  if (n < 0) return false
  if (pos === end) return n === 0
  const c = ch(pos)
  pos = at
  if (c === 0x2d) return yearMonth(s) && pos === end
  return c === 0x3a && time(s) && pos === end
}

function hasLetter(start: number): boolean {
  for (let i = start; i < end; i++) {
    const c = buf[i]! | 0x20
    if (c >= 0x61 && c <= 0x7a) return true
  }
  return false
}

const INT32_MAX = 2147483647

/** An interval printed by the server in any IntervalStyle: an Interval, or ±Infinity for the infinite intervals. */
export function parseIntervalText(b: Uint8Array, start: number, e: number): Interval | number {
  const inf = parse(b, start, e)
  if (inf !== 0) return inf
  if (big !== null) {
    throw new CodecError(`interval '${utf8Read(b, start, Math.min(e, start + 80))}' has more microseconds than a JavaScript number holds exactly (±2^53)`)
  }
  return new Interval(months, days, us)
}

/** The same, its fields handed to `make` (microseconds in a bigint beyond ±2^53); ±Infinity for the infinite intervals. */
export function parseIntervalWith(b: Uint8Array, start: number, e: number, make: (months: number, days: number, us: number | bigint) => unknown): unknown {
  const inf = parse(b, start, e)
  return inf !== 0 ? inf : make(months, days, big ?? us)
}

/** Parses into months, days and us (or big); returns ±Infinity for the infinities, else 0. */
function parse(b: Uint8Array, start: number, e: number): number {
  buf = b
  pos = start
  end = e
  months = 0
  days = 0
  us = 0
  big = null
  const c = ch(start)
  let ok: boolean
  if (c === 0x69 /* i */ || (c === 0x2d && ch(start + 1) === 0x69)) {
    const s = utf8Read(b, start, e)
    if (s === 'infinity') return Infinity
    if (s === '-infinity') return -Infinity
    ok = false
  } else if (c === 0x40 /* @ */) ok = verbose()
  else if (c === 0x50 /* P */) ok = iso()
  else if (hasLetter(start)) ok = postgres()
  else ok = sqlStandard()
  // Release the caller's chunk.
  buf = EMPTY
  if (!ok) throw new CodecError(`malformed interval value '${utf8Read(b, start, Math.min(e, start + 80))}'`)
  if (months > INT32_MAX || months < -INT32_MAX - 1 || days > INT32_MAX || days < -INT32_MAX - 1 || (big !== null && (big >= 2n ** 63n || big < -(2n ** 63n)))) {
    throw new CodecError(`interval '${utf8Read(b, start, Math.min(e, start + 80))}' is out of range`)
  }
  return 0
}
