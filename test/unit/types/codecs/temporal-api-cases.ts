import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { TypeCatalog } from '../../../../src/types/catalog.js'
import { CodecError, type Codec } from '../../../../src/types/codec.js'
import { toText } from '../../../../src/types/text-params.js'
import { resolveTypeOptions } from '../../../../src/wire/scalars.js'
import { typeTable } from '../../../../src/wire/types.js'
import { WireProtocolError } from '../../../../src/wire/index.js'
import {
  decBin,
  decodeAlike,
  decText,
  encBin,
  END_TIMESTAMP,
  int32Hex,
  int64Hex,
  INTERVAL_STYLES,
  MIN_DATE_DAY,
  MIN_TIMESTAMP,
  mutationsOf,
  pgDate,
  pgIntervalText,
  pgTimestampText,
  timeOfDay,
  US_PER_DAY,
} from '../../../support/codecs/temporal.js'

// The codecs of the temporal type option and the Temporal parameters of the
// default codecs, on hand-built bytes and against oracles built on Temporal
// itself (never on the code under test). For a runtime with the global
// Temporal; temporal-api.test.ts runs them.

/* eslint-disable @typescript-eslint/no-explicit-any */
const T = (globalThis as any).Temporal
const RUNS = { numRuns: 300 }

const temporalView = new TypeCatalog().view({ temporal: true })
const defaultView = new TypeCatalog().view()
const tc = (oid: number): Codec => temporalView.codec(oid)
const dc = (oid: number): Codec => defaultView.codec(oid)

const PG_EPOCH_US = 946684800000000n
/** The last microsecond (since 2000) an Instant holds: +275760-09-13T00:00:00Z. */
const INSTANT_MAX_US = 8640000000000000000000n / 1000n - PG_EPOCH_US

const instantOfUs = (us: bigint) => T.Instant.fromEpochNanoseconds((us + PG_EPOCH_US) * 1000n)
const shown = (v: unknown) => (typeof v === 'object' && v !== null ? `${(v as any)[Symbol.toStringTag]} ${String(v)}` : v)

function throwsCodec(f: () => unknown, message: RegExp): void {
  assert.throws(f, (e: unknown) => e instanceof CodecError && message.test(e.message))
}

export function temporalCodecTests(): void {
  test('timestamptz: binary and text decode to the same Instant, exact to the microsecond', () => {
    const c = tc(1184)
    assert.equal(shown(decBin(c, int64Hex(0n))), 'Temporal.Instant 2000-01-01T00:00:00Z')
    assert.equal(shown(decBin(c, int64Hex(-1n))), 'Temporal.Instant 1999-12-31T23:59:59.999999Z')
    assert.equal(shown(decBin(c, int64Hex(MIN_TIMESTAMP))), 'Temporal.Instant -004713-11-24T00:00:00Z')
    assert.equal(shown(decBin(c, int64Hex(INSTANT_MAX_US))), 'Temporal.Instant +275760-09-13T00:00:00Z')
    throwsCodec(() => decBin(c, int64Hex(INSTANT_MAX_US + 1n)), /beyond the range of a Temporal\.Instant/)
    throwsCodec(() => decBin(c, int64Hex(END_TIMESTAMP)), /out of range/)
    assert.equal(decBin(c, '7fffffffffffffff'), Infinity)
    assert.equal(decBin(c, '8000000000000000'), -Infinity)
    assert.equal(decText(c, 'infinity'), Infinity)
    throwsCodec(() => decBin(c, '00'), /8 were expected/)
    fc.assert(
      fc.property(fc.bigInt(MIN_TIMESTAMP, INSTANT_MAX_US), fc.integer({ min: -15 * 3600, max: 15 * 3600 }), (us, east) => {
        const want = instantOfUs(us)
        const bin = decBin(c, int64Hex(us)) as any
        assert.ok(bin.equals(want), `${bin} ${want}`)
        // The same instant printed at any offset (seconds included, as local mean time is).
        assert.ok((decText(c, pgTimestampText(us, east)) as any).equals(want))
      }),
      RUNS,
    )
  })

  test('timestamp, date and time decode to PlainDateTime, PlainDate and PlainTime in both formats', () => {
    fc.assert(
      fc.property(fc.bigInt(MIN_TIMESTAMP, INSTANT_MAX_US), (us) => {
        const want = instantOfUs(us).toZonedDateTimeISO('UTC').toPlainDateTime()
        for (const v of [decBin(tc(1114), int64Hex(us)), decText(tc(1114), pgTimestampText(us, null))]) assert.ok((v as any).equals(want), `${v} ${want}`)
      }),
      RUNS,
    )
    fc.assert(
      fc.property(fc.integer({ min: MIN_DATE_DAY, max: 100_000_000 - 10957 }), (day) => {
        const want = T.PlainDate.from('2000-01-01').add({ days: day })
        for (const v of [decBin(tc(1082), int32Hex(day)), decText(tc(1082), pgDate(day))]) assert.ok((v as any).equals(want), `${v} ${want}`)
      }),
      RUNS,
    )
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number(US_PER_DAY) - 1 }), (us) => {
        const want = T.PlainTime.from('00:00').add({ microseconds: us })
        for (const v of [decBin(tc(1083), int64Hex(BigInt(us))), decText(tc(1083), timeOfDay(us))]) assert.ok((v as any).equals(want), `${v} ${want}`)
      }),
      RUNS,
    )
    assert.equal(decBin(tc(1082), '7fffffff'), Infinity)
    assert.equal(decText(tc(1082), '-infinity'), -Infinity)
    assert.equal(shown(decText(tc(1082), '0001-01-01 BC')), 'Temporal.PlainDate 0000-01-01')
    throwsCodec(() => decBin(tc(1083), int64Hex(US_PER_DAY)), /24:00:00 has no Temporal\.PlainTime/)
  })

  test('interval decodes to a Duration: months split into years, days and time kept apart, mixed signs refused', () => {
    const hex = (us: bigint, days: number, months: number) => int64Hex(us) + int32Hex(days) + int32Hex(months)
    const c = tc(1186)
    assert.equal(String(decBin(c, hex(14706789000n, 3, 14))), 'P1Y2M3DT4H5M6.789S')
    assert.equal(String(decBin(c, hex(-14706789000n, -3, -14))), '-P1Y2M3DT4H5M6.789S')
    assert.equal(String(decBin(c, hex(360000000000n, 0, 0))), 'PT100H')
    assert.equal(String(decBin(c, hex(2n ** 63n - 1n, 0, 0))), 'PT2562047788H54.775807S')
    assert.equal(decBin(c, hex(2n ** 63n - 1n, 2147483647, 2147483647)), Infinity)
    assert.equal(decBin(c, hex(-(2n ** 63n), -2147483648, -2147483648)), -Infinity)
    throwsCodec(() => decBin(c, hex(-1n, 1, 0)), /mixes signs/)
    throwsCodec(() => decText(c, '1 mon -1 days'), /mixes signs/)
    assert.equal(String(decText(c, '@ 1 year 2 mons ago')), '-P1Y2M')
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2147483647 }), fc.integer({ min: 0, max: 2147483647 }), fc.bigInt(0n, 2n ** 63n - 2n), fc.boolean(), (months, days, us, neg) => {
        const s = neg ? -1 : 1
        const d = decBin(c, hex(BigInt(s) * us, s * days, s * months)) as any
        assert.equal(d.years * 12 + d.months, s * months || 0)
        assert.equal(d.days, s * days || 0)
        assert.equal(BigInt(d.hours) * 3600000000n + BigInt(d.minutes * 60000000 + d.seconds * 1000000 + d.milliseconds * 1000 + d.microseconds), BigInt(s) * us)
        // And back: the same bytes.
        assert.equal(encBin(c, d), hex(BigInt(s) * us, s * days, s * months))
        // The text of every IntervalStyle gives the same Duration, microseconds beyond 2^53 included.
        for (const style of INTERVAL_STYLES) assert.equal(String(decText(c, pgIntervalText(s * months, s * days, BigInt(s) * us, style))), String(d), style)
      }),
      RUNS,
    )
  })

  test('no input makes a temporal decoder throw anything but a CodecError, nor read beyond its value', () => {
    const cases: [number, string][] = [
      [1184, '2024-02-29 12:34:56.123456+05:30'],
      [1114, '275760-09-13 23:59:59.999999'],
      [1082, '0044-03-15 BC'],
      [1083, '23:59:59.999999'],
      [1186, '1 year -2 mons 3 days 04:05:06'],
    ]
    for (const [oid, text] of cases) for (const m of mutationsOf(text)) decodeAlike(tc(oid).decodeText, m)
    for (const [oid, hex] of [
      [1184, int64Hex(INSTANT_MAX_US)],
      [1114, int64Hex(INSTANT_MAX_US + US_PER_DAY)],
      [1082, int32Hex(100_000_000)],
      [1083, int64Hex(US_PER_DAY)],
      [1186, int64Hex(-5n) + int32Hex(3) + int32Hex(-7)],
    ] as const) {
      for (const m of mutationsOf(Buffer.from(hex, 'hex'))) decodeAlike(tc(oid).decodeBinary!, m)
    }
  })

  test('Temporal parameters in the default codecs: exact bytes, nanoseconds rounded to even, text that says the same', () => {
    const instant = T.Instant.from('2000-01-01T00:00:00.0000015Z')
    assert.equal(encBin(dc(1184), instant), int64Hex(2n))
    assert.equal(encBin(dc(1184), T.Instant.from('2000-01-01T00:00:00.0000025Z')), int64Hex(2n))
    assert.equal(encBin(dc(1184), T.Instant.from('1999-12-31T23:59:59.9999995Z')), int64Hex(0n))
    assert.equal(encBin(dc(1184), T.Instant.from('1999-12-31T23:59:59.9999985Z')), int64Hex(-2n))
    assert.equal(dc(1184).encodeText(instant), '2000-01-01 00:00:00.000002+00')
    // No zone to place it in: the server reads the text in its TimeZone.
    assert.equal(encBin(dc(1184), T.PlainDateTime.from('2024-01-01T00:00')), false)
    assert.equal(dc(1184).encodeText(T.PlainDateTime.from('2024-01-01T00:00')), '2024-01-01 00:00:00')
    const zoned = T.ZonedDateTime.from('2000-01-01T02:00:00[+02:00]')
    assert.equal(encBin(dc(1184), zoned), int64Hex(0n))
    assert.equal(encBin(dc(1114), zoned), int64Hex(7200000000n))
    assert.equal(toText(zoned, 1), '2000-01-01 02:00:00+02')
    assert.equal(encBin(dc(1082), T.PlainDate.from('-004713-11-24')), int32Hex(MIN_DATE_DAY))
    assert.equal(dc(1082).encodeText(T.PlainDate.from('-000043-03-15')), '0044-03-15 BC')
    throwsCodec(() => encBin(dc(1082), T.PlainDate.from('-004713-11-23')), /out of range for date/)
    assert.equal(encBin(dc(1083), T.PlainTime.from('23:59:59.9999996')), int64Hex(US_PER_DAY))
    assert.equal(encBin(dc(1266), T.PlainTime.from('12:00')), false)
    assert.equal(dc(1266).encodeText(T.PlainTime.from('12:00')), '12:00:00')
    assert.equal(encBin(dc(1186), T.Duration.from({ years: 1, weeks: 1, hours: 1, nanoseconds: 1500 })), int64Hex(3600000002n) + int32Hex(7) + int32Hex(12))
    assert.equal(dc(1186).encodeText(T.Duration.from({ months: -14, days: -1, seconds: -1, microseconds: -5 })), 'P-14M-1DT-1.000005S')
    throwsCodec(() => encBin(dc(1186), T.Duration.from({ hours: 2562047789 })), /beyond interval's range/)
    throwsCodec(() => encBin(dc(23), T.PlainDate.from('2024-01-01')), /got a Temporal\.PlainDate$/)
    fc.assert(
      fc.property(fc.bigInt(MIN_TIMESTAMP * 1000n, INSTANT_MAX_US * 1000n - 1000n), (ns) => {
        const v = T.Instant.fromEpochNanoseconds(ns + PG_EPOCH_US * 1000n)
        const us = BigInt(v.round({ smallestUnit: 'microsecond', roundingMode: 'halfEven' }).epochNanoseconds) / 1000n - PG_EPOCH_US
        assert.equal(encBin(dc(1184), v), int64Hex(us))
        assert.equal(dc(1184).encodeText(v), pgTimestampText(us, 0))
        assert.equal(toText(v, 1), pgTimestampText(us, 0))
      }),
      RUNS,
    )
  })

  test('pipegres/wire: the same option, the same values, its own errors', () => {
    const wire = typeTable(resolveTypeOptions({ temporal: true }))
    assert.equal(shown(wire.get(1184)!.binary(Buffer.from(int64Hex(-1n), 'hex'), 0, 8)), 'Temporal.Instant 1999-12-31T23:59:59.999999Z')
    assert.equal(shown(wire.get(1114)!.text('0044-03-15 12:00:00.5 BC')), 'Temporal.PlainDateTime -000043-03-15T12:00:00.5')
    assert.equal(shown(wire.get(1082)!.text('2024-02-29')), 'Temporal.PlainDate 2024-02-29')
    assert.equal(wire.get(1082)!.text('infinity'), Infinity)
    assert.equal(shown(wire.get(1083)!.text('12:34:56.000001')), 'Temporal.PlainTime 12:34:56.000001')
    assert.equal(shown(wire.get(1186)!.text('1 year 2 mons 3 days 04:05:06.789')), 'Temporal.Duration P1Y2M3DT4H5M6.789S')
    assert.equal(shown(wire.get(1186)!.text('-2562047788:00:54.775808')), 'Temporal.Duration -PT2562047788H54.775808S')
    assert.equal(shown(wire.get(1186)!.binary(Buffer.from(int64Hex(-(2n ** 63n)) + int32Hex(0) + int32Hex(0), 'hex'), 0, 16)), 'Temporal.Duration -PT2562047788H54.775808S')
    assert.deepEqual((wire.get(1185)!.text('{"2024-01-01 00:00:00+00",NULL}') as unknown[]).map(shown), ['Temporal.Instant 2024-01-01T00:00:00Z', null])
    assert.throws(() => wire.get(1186)!.text('1 mon -1 days'), (e: unknown) => e instanceof WireProtocolError && /mixes signs/.test(e.message))
    assert.throws(() => wire.get(1083)!.text('24:00:00'), (e: unknown) => e instanceof WireProtocolError && /24:00:00/.test(e.message))
    // Without the global, the option is refused as wire refuses its other options.
    const saved = Object.getOwnPropertyDescriptor(globalThis, 'Temporal')!
    delete (globalThis as { Temporal?: unknown }).Temporal
    try {
      assert.throws(() => resolveTypeOptions({ temporal: true }), (e: unknown) => e instanceof TypeError && /^types\.temporal needs the global Temporal/.test(e.message))
      assert.equal(resolveTypeOptions({ temporal: false }).temporal, false)
    } finally {
      Object.defineProperty(globalThis, 'Temporal', saved)
    }
  })
}
