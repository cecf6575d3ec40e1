// timestamp and timestamptz on exact bytes and text, both modes and
// directions, without a server: bytes captured from a real server, every
// offset form of DateStyle ISO, BC and wide years, flooring, malformed and
// out-of-range values, and random values through both formats. date, time
// and timetz: temporal.test.ts.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { CodecError } from '../../../../src/types/codec.js'
import { dateCodec } from '../../../../src/types/codecs/date.js'
import { timestampCodec, timestamptzCodec } from '../../../../src/types/codecs/timestamp.js'
import {
  dateOf,
  decBin,
  decText,
  encBin,
  END_TIMESTAMP,
  int32Hex,
  int64Hex,
  isoOf,
  pgStyle,
  JS_DATE_MAX_MS,
  MIN_TIMESTAMP,
  PG_EPOCH_MS,
  pgDate,
  pgTimestampText,
} from '../../../support/codecs/temporal.js'

const dateD = dateCodec('date')
const tsS = timestampCodec('string')
const tsD = timestampCodec('date')
const tstzS = timestamptzCodec('string')
const tstzD = timestamptzCodec('date')

const iso = (s: string) => new Date(s)
const MIN_TIMESTAMP_MS = Number(MIN_TIMESTAMP / 1000n) + PG_EPOCH_MS
const throwsCodec = (fn: () => unknown, re: RegExp) => assert.throws(fn, (e: unknown) => e instanceof CodecError && re.test(e.message))

// [µs since 2000-01-01, 'string' mode without zone; the bytes hex come from int64Hex, checked against timestamp_send where noted]
const TIMESTAMPS: [bigint, string][] = [
  [0n, '2000-01-01T00:00:00'],
  [-1n, '1999-12-31T23:59:59.999999'],
  [1n, '2000-01-01T00:00:00.000001'],
  [762525296123456n, '2024-02-29T12:34:56.123456'], // timestamp_send: 0002b58341685e40
  [-63082281600000000n, '0001-01-01T00:00:00'], // ff1fe2ffc59c6000
  [-63082281600000001n, '0000-12-31T23:59:59.999999'], // ff1fe2ffc59c5fff
  [252455616000000000n, '+010000-01-01T00:00:00'], // 0380e70b913b8000
  [MIN_TIMESTAMP, '-004713-11-24T00:00:00'], // fd0f7cc1411fa000
  [END_TIMESTAMP - 1n, '+294276-12-31T23:59:59.999999'], // 7fffff5bb3b29fff
  [BigInt(JS_DATE_MAX_MS - PG_EPOCH_MS) * 1000n, '+275760-09-13T00:00:00'], // 77e41537f0282000
  [-63108806400000000n, '0000-02-29T00:00:00'], // ff1fcadffc544000: a leap day in 1 BC
]

test('timestamp helpers agree with bytes captured from a real server', () => {
  assert.equal(int64Hex(762525296123456n), '0002b58341685e40')
  assert.equal(int64Hex(-63082281600000000n), 'ff1fe2ffc59c6000')
  assert.equal(int64Hex(MIN_TIMESTAMP), 'fd0f7cc1411fa000')
  assert.equal(int64Hex(END_TIMESTAMP - 1n), '7fffff5bb3b29fff')
  assert.equal(int64Hex(-63108806400000000n), 'ff1fcadffc544000')
  assert.equal(int64Hex(252455616000000000n), '0380e70b913b8000')
  assert.equal(isoOf(762525296123456n), '2024-02-29T12:34:56.123456')
})

test('timestamp and timestamptz: exact bytes both ways, in both modes', () => {
  for (const [us, text] of TIMESTAMPS) {
    const hex = int64Hex(us)
    assert.equal(isoOf(us), pgStyle(text))
    assert.equal(decBin(tsS, hex), pgStyle(text), text)
    assert.equal(decBin(tstzS, hex), pgStyle(text + 'Z'), text)
    const ms = Number(us / 1000n - (us % 1000n < 0n ? 1n : 0n)) + PG_EPOCH_MS
    if (ms > JS_DATE_MAX_MS) {
      throwsCodec(() => decBin(tsD, hex), /^timestamp 294276-12-31T23:59:59.999999 is beyond the range of a JavaScript Date; use the timestamps: 'string' option$/)
      throwsCodec(() => decBin(tstzD, hex), /^timestamptz 294276-12-31T23:59:59.999999Z is beyond/)
      continue
    }
    const d = decBin(tsD, hex) as Date
    assert.equal(d.getTime(), ms, text)
    assert.deepEqual(decBin(tstzD, hex), d)
    // A Date goes back as its milliseconds.
    const back = BigInt(ms - PG_EPOCH_MS) * 1000n
    assert.equal(encBin(tsD, d), int64Hex(back))
    assert.equal(encBin(tstzS, d), int64Hex(back))
  }
  for (const c of [tsS, tstzS]) {
    assert.equal(decBin(c, '7fffffffffffffff'), 'infinity')
    assert.equal(decBin(c, '8000000000000000'), '-infinity')
    assert.equal(encBin(c, Infinity), '7fffffffffffffff')
    assert.equal(encBin(c, -Infinity), '8000000000000000')
    assert.equal(c.encodeText(Infinity), 'infinity')
    assert.equal(c.encodeText(-Infinity), '-infinity')
  }
  for (const c of [tsD, tstzD]) {
    assert.equal(decBin(c, '7fffffffffffffff'), Infinity)
    assert.equal(decBin(c, '8000000000000000'), -Infinity)
    assert.equal(decText(c, 'infinity'), Infinity)
    assert.equal(decText(c, '-infinity'), -Infinity)
  }
})

test('timestamp: microseconds are floored towards -infinity in the date mode, in both formats', () => {
  const cases: [bigint, string, string][] = [
    [-1n, '1999-12-31 23:59:59.999999', '1999-12-31T23:59:59.999Z'],
    [-999n, '1999-12-31 23:59:59.999001', '1999-12-31T23:59:59.999Z'],
    [-1000n, '1999-12-31 23:59:59.999', '1999-12-31T23:59:59.999Z'],
    [-1001n, '1999-12-31 23:59:59.998999', '1999-12-31T23:59:59.998Z'],
    [1999n, '2000-01-01 00:00:00.001999', '2000-01-01T00:00:00.001Z'],
    [-63082281600000001n, '0001-12-31 23:59:59.999999 BC', '0000-12-31T23:59:59.999Z'],
  ]
  for (const [us, text, expected] of cases) {
    assert.equal((decBin(tsD, int64Hex(us)) as Date).toISOString(), expected)
    assert.equal((decText(tsD, text) as Date).toISOString(), expected)
    assert.equal((decText(tstzD, text.replace(/( BC)?$/, '+00$1')) as Date).toISOString(), expected)
  }
  // The last millisecond a Date holds, and the microseconds that floor onto it.
  assert.equal((decText(tsD, '275760-09-13 00:00:00.000999') as Date).getTime(), JS_DATE_MAX_MS)
  throwsCodec(() => decText(tsD, '275760-09-13 00:00:00.001'), /beyond the range of a JavaScript Date/)
  throwsCodec(() => decBin(tsD, int64Hex(BigInt(JS_DATE_MAX_MS - PG_EPOCH_MS) * 1000n + 1000n)), /beyond the range of a JavaScript Date/)
})

test('timestamp and timestamptz: text in DateStyle ISO with every offset form, BC and wide years', () => {
  const plain: [string, string][] = [
    ['2024-02-29 12:34:56.123456', '2024-02-29T12:34:56.123456'],
    ['2024-02-29 12:34:56', '2024-02-29T12:34:56'],
    ['2024-02-29 12:34:56.5', '2024-02-29T12:34:56.5'],
    ['0001-01-01 00:00:00', '0001-01-01T00:00:00'],
    ['0001-12-31 23:59:59.999999 BC', '0000-12-31T23:59:59.999999'],
    ['0044-03-15 00:00:00 BC', '-000043-03-15T00:00:00'],
    ['4714-11-24 00:00:00 BC', '-004713-11-24T00:00:00'],
    ['9999-12-31 23:59:59.999999', '9999-12-31T23:59:59.999999'],
    ['10000-01-01 00:00:00', '+010000-01-01T00:00:00'],
    ['294276-12-31 23:59:59.999999', '+294276-12-31T23:59:59.999999'],
  ]
  for (const [text, expected] of plain) {
    assert.equal(decText(tsS, text), pgStyle(expected), text)
    assert.equal(decText(tstzS, text.replace(/( BC)?$/, '+00$1')), pgStyle(expected + 'Z'), text)
  }
  const zoned: [string, string][] = [
    ['2024-02-29 12:34:56.123456+05:30', '2024-02-29T07:04:56.123456Z'],
    ['2024-01-01 00:00:00-08', '2024-01-01T08:00:00Z'],
    ['2024-01-01 00:00:00+00', '2024-01-01T00:00:00Z'],
    ['2024-01-01 00:00:00-00', '2024-01-01T00:00:00Z'],
    ['1930-06-01 00:19:32+00:19:32', '1930-06-01T00:00:00Z'],
    ['1900-01-01 00:00:00-00:17:30', '1900-01-01T00:17:30Z'],
    ['1970-12-31 23:15:30-00:44:30', '1971-01-01T00:00:00Z'],
    ['2024-03-10 03:30:00-04', '2024-03-10T07:30:00Z'],
    ['2024-11-03 01:30:00-04', '2024-11-03T05:30:00Z'],
    ['2024-11-03 01:30:00-05', '2024-11-03T06:30:00Z'],
    ['2024-03-01 00:00:00+05:30', '2024-02-29T18:30:00Z'],
    ['2023-03-01 00:00:00+05:30', '2023-02-28T18:30:00Z'],
    ['0001-01-01 05:53:28+05:53:28', '0001-01-01T00:00:00Z'],
    ['0001-01-01 05:00:00+05:53:28', '0000-12-31T23:06:32Z'],
    ['0001-12-31 19:03:58-04:56:02 BC', '0001-01-01T00:00:00Z'],
    ['4714-11-24 05:53:28+05:53:28 BC', '-004713-11-24T00:00:00Z'],
    ['4714-11-23 19:03:58-04:56:02 BC', '-004713-11-24T00:00:00Z'],
    ['294277-01-01 05:29:59.999999+05:30', '+294276-12-31T23:59:59.999999Z'],
    // No offset: PostgreSQL means UTC then.
    ['2024-01-01 00:00:00', '2024-01-01T00:00:00Z'],
  ]
  for (const [text, expected] of zoned) {
    assert.equal(decText(tstzS, text), pgStyle(expected), text)
    const ms = new Date(expected).getTime()
    if (ms <= JS_DATE_MAX_MS) assert.equal((decText(tstzD, text) as Date).getTime(), Math.floor(ms), text)
  }
})

test('timestamp and timestamptz: malformed or out-of-range values are refused', () => {
  const both = [
    '', 'Infinity', 'infinityx', '2024-02-29T12:34:56', '2024-02-29 12:34', '2024-02-29  12:34:56', '2024-02-29 24:00:00', '2024-02-29 12:60:00',
    '2024-02-29 12:34:60', '2024-02-30 00:00:00', '2024-02-29 12:34:56.', '2024-02-29 12:34:56.1234567', '2024-02-29 12:34:56 AD', '2024-02-29 12:34:56 bc',
    '0000-01-01 00:00:00', '4714-11-23 23:59:59.999999 BC', '294277-01-01 00:00:00', 'Thu Feb 29 12:34:56 2024', '02/29/2024 12:34:56', '2024-02-29 12:34:56 BC ',
  ]
  for (const bad of both) {
    for (const c of [tsS, tstzS, tsD, tstzD]) throwsCodec(() => decText(c, bad), new RegExp(`^(malformed )?${c.name} (value|out of range)`))
  }
  // An offset on a timestamp without time zone, or a malformed one.
  for (const bad of ['2024-02-29 12:34:56+05:30', '2024-02-29 12:34:56+00']) throwsCodec(() => decText(tsS, bad), /malformed timestamp value/)
  for (const bad of ['2024-02-29 12:34:56+5', '2024-02-29 12:34:56+05:3', '2024-02-29 12:34:56+05:30:', '2024-02-29 12:34:56 +05', '2024-02-29 12:34:56+05 BC ']) {
    throwsCodec(() => decText(tstzS, bad), /malformed timestamptz value/)
  }
  // Out of range once the offset is applied.
  throwsCodec(() => decText(tstzS, '4714-11-24 00:00:00+00:00:01 BC'), /timestamptz out of range/)
  throwsCodec(() => decText(tstzS, '294277-01-01 00:00:00-00:00:01'), /timestamptz out of range/)
  for (const hex of ['', '00000000000000', '000000000000000000', int64Hex(MIN_TIMESTAMP - 1n), int64Hex(END_TIMESTAMP), '7ffffffffffffffe', '8000000000000001']) {
    for (const c of [tsS, tstzS, tsD, tstzD]) throwsCodec(() => decBin(c, hex), new RegExp(`^malformed binary ${c.name}|^binary ${c.name} out of range`))
  }
})

test('timestamp and timestamptz: encoding', () => {
  const d = iso('2024-02-29T12:34:56.789Z')
  const us = 762525296789000n
  for (const c of [tsS, tsD, tstzS, tstzD]) {
    assert.equal(encBin(c, d), int64Hex(us))
    assert.equal(encBin(c, new Date(-1)), int64Hex(-946684800001000n))
    assert.equal(encBin(c, new Date(JS_DATE_MAX_MS)), '77e41537f0282000')
    assert.equal(encBin(c, new Date(MIN_TIMESTAMP_MS)), 'fd0f7cc1411fa000')
    assert.equal(encBin(c, '2024-02-29 12:34:56.789123'), false)
    assert.equal(c.encodeText('now'), 'now')
    throwsCodec(() => encBin(c, new Date(MIN_TIMESTAMP_MS - 1)), new RegExp(`is out of range for ${c.name} \\(before 4714-11-24 BC\\)$`))
    throwsCodec(() => c.encodeText(new Date(-JS_DATE_MAX_MS)), /out of range/)
    throwsCodec(() => encBin(c, new Date(NaN)), new RegExp(`^${c.name} cannot be an invalid Date$`))
    throwsCodec(() => c.encodeText(new Date(NaN)), /invalid Date/)
    for (const [bad, what] of [[0, 'a number'], [Date.now(), 'a number'], [NaN, 'a number'], [false, 'a boolean'], [null, 'null'], [1n, 'a bigint'], [{ getTime: () => 0 }, 'an object \\(Object\\)']] as const) {
      throwsCodec(() => encBin(c, bad), new RegExp(`^${c.name} needs a Date, a Temporal.${c.name === 'timestamptz' ? 'Instant' : 'PlainDateTime'}, a string or ±Infinity; got ${what}$`))
      throwsCodec(() => c.encodeText(bad), new RegExp(`^${c.name} needs a Date, a Temporal.${c.name === 'timestamptz' ? 'Instant' : 'PlainDateTime'}, a string or ±Infinity; got ${what}$`))
    }
  }
  assert.equal(tsD.encodeText(d), '2024-02-29 12:34:56.789')
  assert.equal(tstzD.encodeText(d), '2024-02-29 12:34:56.789+00')
  assert.equal(tstzD.encodeText(iso('-000043-03-15T01:02:03Z')), '0044-03-15 01:02:03+00 BC')
  assert.equal(tsD.encodeText(iso('+010000-01-01T00:00:00.001Z')), '10000-01-01 00:00:00.001')
  assert.equal(tsD.encodeText(new Date(-1)), '1969-12-31 23:59:59.999')
})


const anyTimestamp = fc.bigInt({ min: MIN_TIMESTAMP, max: END_TIMESTAMP - 1n })
// Offsets PostgreSQL's time zones use, seconds included (LMT), within ±15:59:59.
const anyOffset = fc.oneof(fc.constantFrom(0, 19800, -28800, 1172, -1050, 21208, -2670), fc.integer({ min: -57599, max: 57599 }))

test('timestamps: random microseconds decode identically from binary and from text at any offset (property)', () => {
  fc.assert(
    fc.property(anyTimestamp, anyOffset, (us, east) => {
      const hex = int64Hex(us)
      const expected = isoOf(us)
      assert.equal(decBin(tsS, hex), expected)
      assert.equal(decBin(tstzS, hex), isoOf(us, true))
      assert.equal(decText(tsS, pgTimestampText(us, null)), expected)
      const text = pgTimestampText(us, east)
      assert.equal(decText(tstzS, text), isoOf(us, true), text)
      const d = dateOf(us)
      if (d.getTime() <= JS_DATE_MAX_MS) {
        assert.deepEqual(decBin(tsD, hex), d)
        assert.deepEqual(decBin(tstzD, hex), d)
        assert.deepEqual(decText(tsD, pgTimestampText(us, null)), d)
        assert.deepEqual(decText(tstzD, text), d)
      }
    }),
    { numRuns: 3000 },
  )
})

test('timestamps: random Dates round-trip through both encoders (property)', () => {
  fc.assert(
    fc.property(fc.date({ min: new Date(MIN_TIMESTAMP_MS), max: new Date(JS_DATE_MAX_MS), noInvalidDate: true }), (d) => {
      for (const [c, zoned] of [[tsD, false], [tstzD, true]] as const) {
        const hex = encBin(c, d) as string
        assert.equal(hex, int64Hex(BigInt(d.getTime() - PG_EPOCH_MS) * 1000n))
        assert.deepEqual(decBin(c, hex), d)
        const text = c.encodeText(d)
        assert.equal(text, pgTimestampText(BigInt(d.getTime() - PG_EPOCH_MS) * 1000n, zoned ? 0 : null))
        assert.deepEqual(decText(c, text), d)
      }
      const day = Math.floor(d.getTime() / 86400000) - 10957
      assert.equal(encBin(dateD, d), int32Hex(day))
      assert.equal(dateD.encodeText(d), pgDate(day))
    }),
    { numRuns: 2000 },
  )
})
