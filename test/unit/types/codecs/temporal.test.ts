import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { CodecError, defaultTypeOptions, type Codec } from '../../../../src/types/codec.js'
import { dateCodec, registerDateCodecs } from '../../../../src/types/codecs/date.js'
import { registerTimeCodecs, timeCodec, timetzCodec } from '../../../../src/types/codecs/time.js'
import { registerTimestampCodecs, timestampCodec, timestamptzCodec } from '../../../../src/types/codecs/timestamp.js'
import {
  dateOf,
  decodeAlike,
  mutationsOf,
  decBin,
  decText,
  encBin,
  END_DATE_DAY,
  END_TIMESTAMP,
  int32Hex,
  int64Hex,
  isoOf,
  pgStyle,
  JS_DATE_MAX_MS,
  MIN_DATE_DAY,
  MIN_TIMESTAMP,
  PG_EPOCH_MS,
  pgDate,
  pgOffset,
  pgTimestampText,
  timeOfDay,
  US_PER_DAY,
} from '../../../support/codecs/temporal.js'

const dateS = dateCodec('string')
const dateD = dateCodec('date')
const tsS = timestampCodec('string')
const tsD = timestampCodec('date')
const tstzS = timestamptzCodec('string')
const tstzD = timestamptzCodec('date')

const iso = (s: string) => new Date(s)
const MIN_TIMESTAMP_MS = Number(MIN_TIMESTAMP / 1000n) + PG_EPOCH_MS
const throwsCodec = (fn: () => unknown, re: RegExp) => assert.throws(fn, (e: unknown) => e instanceof CodecError && re.test(e.message))

test('register functions add the codecs by OID, per option', () => {
  const table = new Map<number, Codec>()
  registerDateCodecs(table, defaultTypeOptions)
  registerTimeCodecs(table, defaultTypeOptions)
  registerTimestampCodecs(table, defaultTypeOptions)
  assert.equal(table.get(1082), dateS)
  assert.equal(table.get(1083), timeCodec)
  assert.equal(table.get(1266), timetzCodec)
  assert.equal(table.get(1114), tsD)
  assert.equal(table.get(1184), tstzD)
  const other = new Map<number, Codec>()
  registerDateCodecs(other, { ...defaultTypeOptions, dates: 'date' })
  registerTimestampCodecs(other, { ...defaultTypeOptions, timestamps: 'string' })
  assert.equal(other.get(1082), dateD)
  assert.equal(other.get(1114), tsS)
  assert.equal(other.get(1184), tstzS)
  for (const [name, c] of [['date', dateS], ['time', timeCodec], ['timetz', timetzCodec], ['timestamp', tsS], ['timestamptz', tstzD]] as const) {
    assert.equal(c.name, name)
    assert.notEqual(c.preferBinary, false)
  }
})

// [binary int32 hex (from date_send on a real server), PostgreSQL's text, the 'date' mode value]
const DATES: [string, string, Date | number][] = [
  ['00000000', '2000-01-01', iso('2000-01-01T00:00:00Z')],
  ['ffffffff', '1999-12-31', iso('1999-12-31T00:00:00Z')],
  ['ffffd533', '1970-01-01', new Date(0)],
  ['00002279', '2024-02-29', iso('2024-02-29T00:00:00Z')],
  ['fff4dbf9', '0001-01-01', iso('0001-01-01T00:00:00Z')],
  ['fff4dbf8', '0001-12-31 BC', iso('0000-12-31T00:00:00Z')],
  ['fff49d7b', '0044-03-15 BC', iso('-000043-03-15T00:00:00Z')],
  ['002c95d4', '10000-01-01', iso('+010000-01-01T00:00:00Z')],
  ['05f5b633', '275760-09-13', new Date(JS_DATE_MAX_MS)],
  ['ffda97a7', '4714-11-24 BC', iso('-004713-11-24T00:00:00Z')],
  ['7fffffff', 'infinity', Infinity],
  ['80000000', '-infinity', -Infinity],
]

test('date: exact bytes and text both ways, in both modes', () => {
  for (const [hex, text, value] of DATES) {
    assert.equal(decBin(dateS, hex), text, hex)
    assert.equal(decText(dateS, text), text, text)
    assert.deepEqual(decBin(dateD, hex), value, hex)
    assert.deepEqual(decText(dateD, text), value, text)
    // Encoding the 'date' mode value gives the bytes and the text back.
    assert.equal(encBin(dateS, value), hex, text)
    assert.equal(dateS.encodeText(value), text)
  }
  // The last day of date's range is beyond a Date.
  assert.equal(decBin(dateS, '7fda970c'), '5874897-12-31')
  throwsCodec(() => decBin(dateD, '7fda970c'), /5874897-12-31 is beyond the range of a JavaScript Date; use the dates: 'string' option/)
  throwsCodec(() => decText(dateD, '275760-09-14'), /beyond the range of a JavaScript Date/)
})

test('date: leap days and the year 0 (1 BC) boundary', () => {
  for (const ok of ['2000-02-29', '2024-02-29', '0001-02-29 BC', '0005-02-29 BC', '0401-02-29 BC']) assert.equal(decText(dateS, ok), ok)
  for (const bad of ['1900-02-29', '2023-02-29', '0002-02-29 BC', '0101-02-29 BC', '0003-02-29']) throwsCodec(() => decText(dateS, bad), /malformed date/)
  assert.deepEqual(decText(dateD, '0001-02-29 BC'), iso('0000-02-29T00:00:00Z'))
})

test('date: malformed values are refused', () => {
  for (const bad of [
    '', 'infinit', 'infinityy', ' 2024-01-01', '2024-01-01 ', '24-01-01', '2024-1-01', '2024-01-1', '2024/01/01', '01/02/2024',
    '0000-01-01', '2024-00-01', '2024-13-01', '2024-01-00', '2024-01-32', '2024-02-30', '2024-01-01 AD', '2024-01-01 BCE', '2024-01-01BC',
    '123456789-01-01', '4714-11-23 BC', '5874898-01-01',
  ]) {
    throwsCodec(() => decText(dateS, bad), /date/)
    throwsCodec(() => decText(dateD, bad), /date/)
  }
  for (const hex of ['', '000000', '0000000000', '7fda970d', 'ffda97a6', '7ffffffe', '80000001']) throwsCodec(() => decBin(dateS, hex), /binary date/)
})

test('date: encoding', () => {
  // A Date stands for its UTC calendar day, whatever its time of day.
  assert.equal(encBin(dateS, iso('2024-02-29T23:59:59.999Z')), '00002279')
  assert.equal(encBin(dateS, new Date(-1)), 'ffffd532')
  assert.equal(encBin(dateS, iso('-004713-11-24T00:00:00Z')), 'ffda97a7')
  assert.equal(dateS.encodeText(iso('-000043-03-15T12:00:00Z')), '0044-03-15 BC')
  assert.equal(encBin(dateS, '2024-02-29'), false)
  assert.equal(dateS.encodeText('2024-02-29'), '2024-02-29')
  throwsCodec(() => encBin(dateS, iso('-004713-11-23T23:59:59.999Z')), /out of range for date \(before 4714-11-24 BC\)/)
  throwsCodec(() => dateS.encodeText(iso('-004713-11-23T00:00:00Z')), /out of range for date/)
  for (const bad of [new Date(NaN)]) {
    throwsCodec(() => encBin(dateS, bad), /date cannot be an invalid Date/)
    throwsCodec(() => dateS.encodeText(bad), /invalid Date/)
  }
  for (const [bad, what] of [[0, 'a number'], [NaN, 'a number'], [true, 'a boolean'], [null, 'null'], [20240229n, 'a bigint'], [{}, 'an object'], [[2024], 'an array']] as const) {
    throwsCodec(() => encBin(dateD, bad), new RegExp(`^date needs a Date, a Temporal.PlainDate, a string or ±Infinity; got ${what}`))
    throwsCodec(() => dateD.encodeText(bad), new RegExp(`^date needs a Date, a Temporal.PlainDate, a string or ±Infinity; got ${what}`))
  }
})

test('date: random days round-trip against an independent calendar (property)', () => {
  fc.assert(
    fc.property(fc.integer({ min: MIN_DATE_DAY, max: END_DATE_DAY - 1 }), (day) => {
      const hex = int32Hex(day)
      const text = pgDate(day)
      assert.equal(decBin(dateS, hex), text)
      assert.equal(decText(dateS, text), text)
      const ms = (day + 10957) * 86400000
      if (ms <= JS_DATE_MAX_MS) {
        const d = decBin(dateD, hex) as Date
        assert.equal(d.getTime(), ms)
        assert.deepEqual(decText(dateD, text), d)
        assert.equal(encBin(dateD, d), hex)
        assert.equal(dateD.encodeText(d), text)
      }
    }),
    { numRuns: 2000 },
  )
})

test('time: exact bytes and text both ways', () => {
  const cases: [bigint, string][] = [
    [0n, '00:00:00'],
    [1n, '00:00:00.000001'],
    [45296500000n, '12:34:56.5'],
    [45296123456n, '12:34:56.123456'],
    [45296120000n, '12:34:56.12'],
    [US_PER_DAY - 1n, '23:59:59.999999'],
    [US_PER_DAY, '24:00:00'],
  ]
  assert.equal(int64Hex(45296500000n), '0000000a8be1bd20') // time_send('12:34:56.5') on a real server
  for (const [us, text] of cases) {
    assert.equal(decBin(timeCodec, int64Hex(us)), text)
    assert.equal(decText(timeCodec, text), text)
    assert.equal(encBin(timeCodec, text), int64Hex(us))
    assert.equal(timeCodec.encodeText(text), text)
  }
})

test('time: malformed values are refused, odd strings go as text', () => {
  for (const bad of ['', '24:00:00.000001', '24:00:01', '25:00:00', '12:60:00', '12:00:60', '12:34', '1:02:03', '12:34:56.', '12:34:56.1234567', '12:34:56 ', '12:34:56+00', 'allballs', '12-34-56']) {
    throwsCodec(() => decText(timeCodec, bad), /malformed time value/)
  }
  for (const hex of ['', '00000000000000', '000000000000000000', int64Hex(-1n), int64Hex(US_PER_DAY + 1n), int64Hex(-(2n ** 63n))]) {
    throwsCodec(() => decBin(timeCodec, hex), /binary time/)
  }
  // Parsed to binary only when unambiguous.
  assert.equal(encBin(timeCodec, '12:34'), int64Hex(45240000000n))
  assert.equal(encBin(timeCodec, '24:00'), int64Hex(US_PER_DAY))
  assert.equal(encBin(timeCodec, '00:00:00.5'), int64Hex(500000n))
  for (const text of ['1:02', '12:34:56.1234567', '24:00:00.000001', '23:59:60', 'allballs', '12:34:56 PM', '12:34:56+00', 'now', '', '12:34:', '12:34:56.']) {
    assert.equal(encBin(timeCodec, text), false, text)
  }
  for (const [bad, what] of [[new Date(0), 'a Date'], [45296, 'a number'], [null, 'null'], [undefined, 'undefined']] as const) {
    throwsCodec(() => encBin(timeCodec, bad), new RegExp(`^time needs a string .*; got ${what}$`))
    throwsCodec(() => timeCodec.encodeText(bad), new RegExp(`got ${what}$`))
  }
})

test('timetz: exact bytes (seconds WEST of UTC on the wire) and text both ways', () => {
  // [hex from timetz_send on a real server where noted, text]
  const cases: [string, string][] = [
    ['0000000a8be1bd20ffffb2a8', '12:34:56.5+05:30'], // timetz_send
    ['00000000dde878c000007080', '01:02:03-08'], // timetz_send
    ['0000000000000000ffff1f01', '00:00:00+15:59:59'], // timetz_send
    ['00000000000000000000e0ff', '00:00:00-15:59:59'], // timetz_send
    [int64Hex(US_PER_DAY) + int32Hex(0), '24:00:00+00'],
    [int64Hex(1n) + int32Hex(-1050), '00:00:00.000001+00:17:30'],
    [int64Hex(0n) + int32Hex(2670), '00:00:00-00:44:30'],
    [int64Hex(0n) + int32Hex(-60), '00:00:00+00:01'],
    [int64Hex(0n) + int32Hex(1), '00:00:00-00:00:01'],
  ]
  for (const [hex, text] of cases) {
    assert.equal(decBin(timetzCodec, hex), text)
    assert.equal(decText(timetzCodec, text), text)
    assert.equal(encBin(timetzCodec, text), hex, text)
    assert.equal(timetzCodec.encodeText(text), text)
  }
  // An offset spelled longer than PostgreSQL prints it decodes to the printed form.
  assert.equal(decText(timetzCodec, '12:00:00+05:30:00'), '12:00:00+05:30')
  assert.equal(decText(timetzCodec, '12:00:00-00:00'), '12:00:00+00')
})

test('timetz: malformed values are refused, odd strings go as text', () => {
  for (const bad of ['12:00:00', '12:00:00+', '12:00:00+5', '12:00:00+16', '12:00:00-16', '12:00:00+05:60', '12:00:00+05:30:60', '12:00:00+05:30 ', '12:00:00 +05', '24:00:01+00', '12:00:00+05:3']) {
    throwsCodec(() => decText(timetzCodec, bad), /malformed timetz value/)
  }
  for (const hex of ['0000000a8be1bd20ffffb2', '0000000a8be1bd20ffffb2a800', int64Hex(-1n) + '00000000', int64Hex(0n) + int32Hex(57600), int64Hex(0n) + int32Hex(-57600)]) {
    throwsCodec(() => decBin(timetzCodec, hex), /binary timetz/)
  }
  for (const text of ['12:00:00', '12:00:00+16', '12:00+0530', '12:00:00 +05', '12:00:00Z', '12:00:00 America/New_York', '12:00:00+05:30 ', '12:00:00+5']) {
    assert.equal(encBin(timetzCodec, text), false, text)
  }
  throwsCodec(() => encBin(timetzCodec, new Date(0)), /^timetz needs a string .* with an offset .*; got a Date$/)
  throwsCodec(() => timetzCodec.encodeText(1), /got a number$/)
})

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

test('time and timetz: random values decode identically from both formats and encode back (property)', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 86400000000 }), fc.integer({ min: -57599, max: 57599 }), (us, east) => {
      const text = timeOfDay(us)
      assert.equal(decBin(timeCodec, int64Hex(BigInt(us))), text)
      assert.equal(decText(timeCodec, text), text)
      assert.equal(encBin(timeCodec, text), int64Hex(BigInt(us)))
      const tz = text + pgOffset(east)
      const hex = int64Hex(BigInt(us)) + int32Hex(-east)
      assert.equal(decBin(timetzCodec, hex), tz)
      assert.equal(decText(timetzCodec, tz), tz)
      assert.equal(encBin(timetzCodec, tz), hex)
    }),
    { numRuns: 3000 },
  )
})

test('truncated and garbled values: a CodecError or the same value, never a read beyond the value (all codecs)', () => {
  const texts: [Codec[], string[]][] = [
    [[dateS, dateD], ['2024-02-29', '0044-03-15 BC', '5874897-12-31', 'infinity', '-infinity']],
    [[timeCodec], ['12:34:56.123456', '24:00:00']],
    [[timetzCodec], ['12:34:56.5+05:30', '01:02:03-00:44:30']],
    [[tsS, tsD], ['2024-02-29 12:34:56.123456', '0001-12-31 23:59:59.5 BC', '294276-12-31 23:59:59.999999', '-infinity']],
    [[tstzS, tstzD], ['2024-02-29 12:34:56.123456+05:30', '4714-11-23 19:03:58-04:56:02 BC', '1900-01-01 00:00:00-00:17:30', 'infinity']],
  ]
  for (const [codecs, values] of texts) {
    for (const c of codecs) for (const v of values) for (const m of mutationsOf(v)) decodeAlike(c.decodeText, m)
  }
  const binaries: [Codec[], string[]][] = [
    [[dateS, dateD], ['00002279', '7fffffff', '7fda970c']],
    [[timeCodec], [int64Hex(US_PER_DAY)]],
    [[timetzCodec], ['0000000a8be1bd20ffffb2a8']],
    [[tsS, tsD, tstzS, tstzD], ['0002b58341685e40', '7fffffffffffffff', 'fd0f7cc1411fa000', '7fffff5bb3b29fff']],
  ]
  for (const [codecs, values] of binaries) {
    for (const c of codecs) for (const v of values) for (const m of mutationsOf(Buffer.from(v, 'hex'))) decodeAlike(c.decodeBinary!, m)
  }
})

test('random bytes: decoders throw nothing but CodecError and never read beyond the value (property)', () => {
  const all = [dateS, dateD, timeCodec, timetzCodec, tsS, tsD, tstzS, tstzD]
  const textish = fc.array(fc.constantFrom(...'0123456789-:+. BCinfty'.split('')), { maxLength: 40 }).map((a) => Buffer.from(a.join('')))
  fc.assert(
    fc.property(fc.oneof(fc.uint8Array({ maxLength: 16 }), textish), (bytes) => {
      for (const c of all) {
        decodeAlike(c.decodeText, bytes)
        decodeAlike(c.decodeBinary!, bytes)
      }
    }),
    { numRuns: 3000 },
  )
})
