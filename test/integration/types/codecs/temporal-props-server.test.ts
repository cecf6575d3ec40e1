import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { CodecError, type Codec } from '../../../../src/types/codec.js'
import { dateCodec } from '../../../../src/types/codecs/date.js'
import { intervalCodec } from '../../../../src/types/codecs/interval.js'
import { timeCodec, timetzCodec } from '../../../../src/types/codecs/time.js'
import { timestampCodec, timestamptzCodec } from '../../../../src/types/codecs/timestamp.js'
import { Interval } from '../../../../src/types/interval.js'
import { Writer } from '../../../../src/protocol/writer.js'
import { runStatement } from '../../../support/codecs/raw-values.js'
import { fetchBoth } from '../../../support/codecs/type-roundtrip.js'
import {
  dateOf,
  decodeIn,
  END_DATE_DAY,
  END_TIMESTAMP,
  int32Hex,
  int64Hex,
  INTERVAL_STYLES,
  isoOf,
  JS_DATE_MAX_MS,
  MIN_DATE_DAY,
  MIN_TIMESTAMP,
  PG_EPOCH_MS,
  pgDate,
  pgOffset,
  timeOfDay,
} from '../../../support/codecs/temporal.js'

// Random values through a real server: sent as binary parameters (so the server
// holds exactly them), read back in text and in binary, decoded by both paths.
// Batches of 50 per statement keep each property to a few round trips.

after(async () => {
  await runStatement("SET TimeZone = 'UTC'")
  await runStatement('SET IntervalStyle = postgres')
})

const BATCH = 50
const RUNS = 4

/** `SELECT $1::cast, $2::cast, ...` with binary parameters; the results in text and in binary. */
async function throughServer(oid: number, cast: string, values: readonly Uint8Array[], format: 0 | 1 = 1): Promise<{ text: Buffer[]; binary: Buffer[] }> {
  return fetchBoth(
    values.map((_, i) => `$${i + 1}::${cast}`),
    values.map((value) => ({ oid, format, value })),
  )
}

function encodeBinary(codec: Codec, value: unknown): Uint8Array {
  const w = new Writer()
  assert.equal(codec.encodeBinary!(w, value), true)
  return w.take().slice()
}

function decodeOrError(decode: (buf: Uint8Array, s: number, e: number) => unknown, bytes: Buffer): unknown {
  try {
    return decodeIn(decode, bytes)
  } catch (e) {
    if (e instanceof CodecError) return e.message
    throw e
  }
}

const hex = (h: string) => Buffer.from(h, 'hex')

// Uniform over the whole range (mostly years far from now), near now, and at the edges.
const anyTimestamp = fc.oneof(
  fc.bigInt({ min: MIN_TIMESTAMP, max: END_TIMESTAMP - 1n }),
  fc.bigInt({ min: -3000000000000000n, max: 3000000000000000n }),
  fc.bigInt({ min: MIN_TIMESTAMP, max: MIN_TIMESTAMP + 100000000000n }),
  fc.bigInt({ min: END_TIMESTAMP - 100000000000n, max: END_TIMESTAMP - 1n }),
  fc.bigInt({ min: -63200000000000000n, max: -63000000000000000n }), // around 1 BC / 1 AD
)

async function checkTimestamps(zoned: boolean): Promise<void> {
  const [s, d] = zoned ? [timestamptzCodec('string'), timestamptzCodec('date')] : [timestampCodec('string'), timestampCodec('date')]
  await fc.assert(
    fc.asyncProperty(fc.array(anyTimestamp, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
      const sent = batch.map((us) => hex(int64Hex(us)))
      const { text, binary } = await throughServer(zoned ? 1184 : 1114, zoned ? 'timestamptz' : 'timestamp', sent)
      batch.forEach((us, i) => {
        const label = `${us} µs, server text '${text[i]}'`
        assert.deepEqual(binary[i], sent[i], label)
        const iso = isoOf(us, zoned)
        assert.equal(decodeIn(s.decodeText, text[i]!), iso, label)
        assert.equal(decodeIn(s.decodeBinary!, binary[i]!), iso, label)
        const fromText = decodeOrError(d.decodeText, text[i]!)
        assert.deepStrictEqual(fromText, decodeOrError(d.decodeBinary!, binary[i]!), label)
        const expected = dateOf(us)
        if (expected.getTime() <= JS_DATE_MAX_MS) assert.deepStrictEqual(fromText, expected, label)
        else assert.match(fromText as string, /beyond the range of a JavaScript Date/, label)
      })
    }),
    { numRuns: RUNS },
  )
}

test('timestamp: random microseconds round-trip exactly through the server in both formats (property)', async () => {
  await checkTimestamps(false)
})

test('timestamptz: random microseconds round-trip exactly through the server in both formats, in several zones (property)', async () => {
  try {
    for (const zone of ['UTC', 'Asia/Kolkata', 'America/New_York', 'Europe/Amsterdam']) {
      await runStatement(`SET TimeZone = '${zone}'`)
      await checkTimestamps(true)
    }
  } finally {
    await runStatement("SET TimeZone = 'UTC'")
  }
})

test('timestamp and timestamptz: random Dates encode to what the server reads back, to the millisecond (property)', async () => {
  const anyDate = fc.date({ min: new Date(Number(MIN_TIMESTAMP / 1000n) + PG_EPOCH_MS), max: new Date(JS_DATE_MAX_MS), noInvalidDate: true })
  try {
    await runStatement("SET TimeZone = 'Asia/Kolkata'")
    for (const [codec, oid, cast] of [[timestampCodec('date'), 1114, 'timestamp'], [timestamptzCodec('date'), 1184, 'timestamptz']] as const) {
      await fc.assert(
        fc.asyncProperty(fc.array(anyDate, { minLength: BATCH, maxLength: BATCH }), async (dates) => {
          const viaBinary = await throughServer(oid, cast, dates.map((d) => encodeBinary(codec, d)))
          const viaText = await throughServer(oid, cast, dates.map((d) => Buffer.from(codec.encodeText(d))), 0)
          dates.forEach((d, i) => {
            for (const { text, binary } of [viaBinary, viaText]) {
              assert.deepStrictEqual(decodeIn(codec.decodeText, text[i]!), d, `${d.toISOString()}: '${text[i]}'`)
              assert.deepStrictEqual(decodeIn(codec.decodeBinary!, binary[i]!), d, d.toISOString())
            }
          })
        }),
        { numRuns: RUNS },
      )
    }
  } finally {
    await runStatement("SET TimeZone = 'UTC'")
  }
})

test('date: random days round-trip through the server in both formats and both modes (property)', async () => {
  const s = dateCodec('string')
  const d = dateCodec('date')
  const anyDay = fc.oneof(fc.integer({ min: MIN_DATE_DAY, max: END_DATE_DAY - 1 }), fc.integer({ min: -800000, max: 100000 }), fc.integer({ min: 99990000, max: 100010000 }))
  await fc.assert(
    fc.asyncProperty(fc.array(anyDay, { minLength: BATCH, maxLength: BATCH }), async (days) => {
      const sent = days.map((day) => hex(int32Hex(day)))
      const { text, binary } = await throughServer(1082, 'date', sent)
      days.forEach((day, i) => {
        assert.deepEqual(binary[i], sent[i])
        assert.equal(text[i]!.toString(), pgDate(day))
        assert.equal(decodeIn(s.decodeText, text[i]!), pgDate(day))
        assert.equal(decodeIn(s.decodeBinary!, binary[i]!), pgDate(day))
        const fromText = decodeOrError(d.decodeText, text[i]!)
        assert.deepStrictEqual(fromText, decodeOrError(d.decodeBinary!, binary[i]!))
        const ms = (day + 10957) * 86400000
        if (ms <= JS_DATE_MAX_MS) {
          assert.deepStrictEqual(fromText, new Date(ms))
          assert.deepEqual(Buffer.from(encodeBinary(d, fromText)), sent[i])
        } else assert.match(fromText as string, /beyond the range of a JavaScript Date/)
      })
    }),
    { numRuns: RUNS },
  )
})

test('time and timetz: random values round-trip through the server in both formats (property)', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.integer({ min: 0, max: 86400000000 }), fc.integer({ min: -57599, max: 57599 })), { minLength: BATCH, maxLength: BATCH }),
      async (pairs) => {
        const times = await throughServer(1083, 'time', pairs.map(([us]) => encodeBinary(timeCodec, timeOfDay(us))))
        const tzs = await throughServer(1266, 'timetz', pairs.map(([us, east]) => encodeBinary(timetzCodec, timeOfDay(us) + pgOffset(east))))
        pairs.forEach(([us, east], i) => {
          assert.equal(times.text[i]!.toString(), timeOfDay(us))
          assert.equal(decodeIn(timeCodec.decodeText, times.text[i]!), timeOfDay(us))
          assert.equal(decodeIn(timeCodec.decodeBinary!, times.binary[i]!), timeOfDay(us))
          assert.deepEqual(tzs.binary[i], hex(int64Hex(BigInt(us)) + int32Hex(-east)))
          const printed = timeOfDay(us) + pgOffset(east)
          assert.equal(tzs.text[i]!.toString(), printed)
          assert.equal(decodeIn(timetzCodec.decodeText, tzs.text[i]!), printed)
          assert.equal(decodeIn(timetzCodec.decodeBinary!, tzs.binary[i]!), printed)
        })
      },
    ),
    { numRuns: RUNS },
  )
})

test('interval: random intervals round-trip through the server in binary and every IntervalStyle (property)', async () => {
  const H = 3600000000
  const anyInterval = fc.record({
    months: fc.oneof(fc.integer({ min: -2147483648, max: 2147483647 }), fc.integer({ min: -30, max: 30 }), fc.constant(0)),
    days: fc.oneof(fc.integer({ min: -2147483648, max: 2147483647 }), fc.integer({ min: -40, max: 40 }), fc.constant(0)),
    microseconds: fc.oneof(fc.maxSafeInteger(), fc.integer({ min: -50 * H, max: 50 * H }), fc.integer({ min: -3000000, max: 3000000 }), fc.constant(0)),
  })
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(anyInterval, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        const values = batch.map(({ months, days, microseconds }) => new Interval(months, days, microseconds))
        const sent = values.map((v) => encodeBinary(intervalCodec, v))
        for (const style of INTERVAL_STYLES) {
          await runStatement(`SET IntervalStyle = ${style}`)
          const { text, binary } = await throughServer(1186, 'interval', sent)
          values.forEach((v, i) => {
            assert.deepEqual(binary[i], Buffer.from(sent[i]!))
            assert.deepStrictEqual(decodeIn(intervalCodec.decodeText, text[i]!), v, `${style}: '${text[i]}'`)
            assert.deepStrictEqual(decodeIn(intervalCodec.decodeBinary!, binary[i]!), v)
          })
        }
        // And the ISO 8601 text encoding is read back to the same fields.
        const { binary } = await throughServer(1186, 'interval', values.map((v) => Buffer.from(intervalCodec.encodeText(v))), 0)
        values.forEach((v, i) => assert.deepStrictEqual(decodeIn(intervalCodec.decodeBinary!, binary[i]!), v, v.toString()))
      }),
      { numRuns: RUNS },
    )
  } finally {
    await runStatement('SET IntervalStyle = postgres')
  }
})
