import { utf8Read } from '../../protocol/utf8.js'
import { CodecError, type Codec, type Decoder, type ResolvedTypeOptions } from '../codec.js'
import { durationOf, instantOf, plainDateOf, plainDateTimeOf, plainTimeOf } from '../temporal-values.js'
import { readInt32, readUint32 } from './binary.js'
import { dateStringCodec, readBinaryDate, readTextDate } from './date.js'
import { intervalCodec } from './interval.js'
import { parseIntervalWith } from './interval-text.js'
import { parsedTimeEnd, parseTimeText, readBinaryTime, timeCodec, timeLengthError } from './time.js'
import { lengthError, parseText, splitBinary, splitDay, splitUs, timestampCodec, timestamptzCodec } from './timestamp.js'

// The codecs of the temporal type option: timestamptz, timestamp, date, time
// and interval as Temporal.Instant, PlainDateTime, PlainDate, PlainTime and
// Duration (see temporal-values.ts), the infinities as ±Infinity as with
// Dates. A table of codecs of their own, chosen when a view's codecs are
// built: the default decoders keep no test for the option. Values are read
// by the default codecs' parsers; parameters are encoded by the default
// codecs, which take Temporal values whatever the options.

function timestampDecoders(name: string, zoned: boolean): { text: Decoder; binary: Decoder } {
  const make = zoned ? instantOf : plainDateTimeOf
  return {
    text: (buf, start, end) => {
      const inf = parseText(name, zoned, buf, start, end)
      return inf === 0 ? make(name, splitDay, splitUs) : inf
    },
    binary: (buf, start, end) => {
      if (end - start !== 8) throw lengthError(name, end - start)
      const inf = splitBinary(name, buf, start)
      return inf === 0 ? make(name, splitDay, splitUs) : inf
    },
  }
}

function timestampTemporalCodec(name: string, zoned: boolean, encoders: Codec): Codec {
  const d = timestampDecoders(name, zoned)
  return { name, decodeText: d.text, decodeBinary: d.binary, encodeText: encoders.encodeText, encodeBinary: encoders.encodeBinary! }
}

const dayValue = (day: number): unknown => (day === Infinity || day === -Infinity ? day : plainDateOf(day))

const dateTemporalCodec: Codec = {
  ...dateStringCodec,
  decodeText: (buf, start, end) => dayValue(readTextDate(buf, start, end)),
  decodeBinary: (buf, start, end) => dayValue(readBinaryDate(buf, start, end)),
}

const timeTemporalCodec: Codec = {
  ...timeCodec,
  decodeText: (buf, start, end) => {
    const us = parseTimeText(buf, start, end)
    if (us !== us || parsedTimeEnd !== end) throw new CodecError(`malformed time value '${utf8Read(buf, start, Math.min(end, start + 40))}'`)
    return plainTimeOf(us)
  },
  decodeBinary: (buf, start, end) => {
    if (end - start !== 8) throw timeLengthError('time', end - start, 8)
    return plainTimeOf(readBinaryTime('time', buf, start))
  },
}

const INT32_MAX = 2147483647
const INT32_MIN = -2147483648

const intervalTemporalCodec: Codec = {
  ...intervalCodec,
  decodeText: (buf, start, end) => parseIntervalWith(buf, start, end, durationOf),
  decodeBinary: (buf, start, end) => {
    if (end - start !== 16) throw new CodecError(`malformed binary interval: ${end - start} bytes where 16 were expected`)
    const hi = readInt32(buf, start)
    const lo = readUint32(buf, start + 4)
    const days = readInt32(buf, start + 8)
    const months = readInt32(buf, start + 12)
    if (hi === INT32_MAX && lo === 0xffffffff && days === INT32_MAX && months === INT32_MAX) return Infinity
    if (hi === INT32_MIN && lo === 0 && days === INT32_MIN && months === INT32_MIN) return -Infinity
    // A Duration holds every int64 count of microseconds: beyond ±2^53 they are counted in a bigint.
    const us = hi >= -0x200000 && hi < 0x200000 ? hi * 4294967296 + lo : (BigInt(hi) << 32n) | BigInt(lo)
    return durationOf(months, days, us)
  },
}

const codecs = {
  timestamp: timestampTemporalCodec('timestamp', false, timestampCodec('date')),
  timestamptz: timestampTemporalCodec('timestamptz', true, timestamptzCodec('date')),
}

/** Registered after the other date/time codecs: replaces them where the temporal option is set. */
export function registerTemporalCodecs(table: Map<number, Codec>, options: ResolvedTypeOptions): void {
  if (!options.temporal) return
  table.set(1082 /* date */, dateTemporalCodec)
  table.set(1083 /* time */, timeTemporalCodec)
  table.set(1114 /* timestamp */, codecs.timestamp)
  table.set(1184 /* timestamptz */, codecs.timestamptz)
  table.set(1186 /* interval */, intervalTemporalCodec)
}
