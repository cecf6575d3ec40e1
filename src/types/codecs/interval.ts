import type { Writer } from '../../protocol/writer.js'
import { CodecError, describeValue, type Codec, type Decoder, type ResolvedTypeOptions } from '../codec.js'
import { Interval } from '../interval.js'
import { intervalFields, intervalIsoText, TemporalKind, temporalKind } from '../temporal-params.js'
import { readInt32, readUint32, writeInt64, writeInt64Number } from './binary.js'
import { parseIntervalText } from './interval-text.js'

// interval: int64 microseconds, int32 days, int32 months in binary; text in any
// IntervalStyle (see interval-text.ts). Decodes to an Interval holding the three
// fields exactly, or to ±Infinity for PostgreSQL 17's infinite intervals, which
// set all three fields to their extreme.

const INT32_MAX = 2147483647
const INT32_MIN = -2147483648

const decodeBinary: Decoder = (buf, start, end) => {
  if (end - start !== 16) throw new CodecError(`malformed binary interval: ${end - start} bytes where 16 were expected`)
  const hi = readInt32(buf, start)
  const lo = readUint32(buf, start + 4)
  const days = readInt32(buf, start + 8)
  const months = readInt32(buf, start + 12)
  // Safe while the high word only sign-extends a 53-bit value.
  if (hi >= -0x200000 && hi < 0x200000) return new Interval(months, days, hi * 4294967296 + lo)
  if (hi === INT32_MAX && lo === 0xffffffff && days === INT32_MAX && months === INT32_MAX) return Infinity
  if (hi === INT32_MIN && lo === 0 && days === INT32_MIN && months === INT32_MIN) return -Infinity
  throw new CodecError(
    `interval of ${months} months ${days} days ${(BigInt(hi) << 32n) | BigInt(lo)} microseconds has more microseconds than a JavaScript number holds exactly (±2^53)`,
  )
}

const decodeText: Decoder = parseIntervalText

function wrongValue(value: unknown): CodecError {
  return new CodecError(
    `interval needs an Interval, a Temporal.Duration, an object { months, days, microseconds } of integers, a string or ±Infinity; got ${describeValue(value)}`,
  )
}

function isInt32(n: unknown): n is number {
  return typeof n === 'number' && (n | 0) === n
}

/** The three fields of an Interval or a look-alike object, checked; null for a value of another kind. */
function fieldsOf(value: unknown): Interval | null {
  if (typeof value !== 'object' || value === null || value instanceof Date || Array.isArray(value)) return null
  const v = value as { months?: unknown; days?: unknown; microseconds?: unknown }
  const { months, days, microseconds } = v
  if (months === undefined && days === undefined && microseconds === undefined) return null
  if (!isInt32(months)) throw fieldError('months', months, 'a 32-bit integer')
  if (!isInt32(days)) throw fieldError('days', days, 'a 32-bit integer')
  if (typeof microseconds !== 'number' || !Number.isSafeInteger(microseconds)) throw fieldError('microseconds', microseconds, 'a safe integer')
  return value instanceof Interval ? value : new Interval(months, days, microseconds)
}

function fieldError(field: string, v: unknown, what: string): CodecError {
  const shown = typeof v === 'number' ? String(v) : describeValue(v)
  return new CodecError(`interval ${field} must be ${what}; got ${shown}`)
}

const encodeBinary = (w: Writer, value: unknown): boolean => {
  if (typeof value === 'string') return false
  // Sent as the text 'infinity', which PostgreSQL 17+ reads and older servers
  // refuse, where binary extremes would be taken as a huge finite interval.
  if (value === Infinity || value === -Infinity) return false
  if (temporalKind(value) === TemporalKind.Duration) {
    const [months, days, us] = intervalFields(value)
    writeInt64(w, us)
    w.i32(days)
    w.i32(months)
    return true
  }
  const f = fieldsOf(value)
  if (f === null) throw wrongValue(value)
  writeInt64Number(w, f.microseconds)
  w.i32(f.days)
  w.i32(f.months)
  return true
}

const encodeText = (value: unknown): string => {
  if (typeof value === 'string') return value
  if (value === Infinity) return 'infinity'
  if (value === -Infinity) return '-infinity'
  if (temporalKind(value) === TemporalKind.Duration) return intervalIsoText(...intervalFields(value))
  const f = fieldsOf(value)
  if (f === null) throw wrongValue(value)
  return f.toString()
}

export const intervalCodec: Codec = { name: 'interval', decodeText, decodeBinary, encodeText, encodeBinary }

export function registerIntervalCodecs(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(1186 /* interval */, intervalCodec)
}
