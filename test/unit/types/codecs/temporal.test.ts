// date, time and timetz on exact bytes and text, both modes and directions,
// without a server; and every temporal codec against truncated, garbled and
// random bytes. timestamp and timestamptz: temporal-timestamps.test.ts.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { CodecError, defaultTypeOptions, type Codec } from '../../../../src/types/codec.js'
import { dateCodec, registerDateCodecs } from '../../../../src/types/codecs/date.js'
import { registerTimeCodecs, timeCodec, timetzCodec } from '../../../../src/types/codecs/time.js'
import { registerTimestampCodecs, timestampCodec, timestamptzCodec } from '../../../../src/types/codecs/timestamp.js'
import {
  decodeAlike,
  mutationsOf,
  decBin,
  decText,
  encBin,
  END_DATE_DAY,
  int32Hex,
  int64Hex,
  JS_DATE_MAX_MS,
  MIN_DATE_DAY,
  pgDate,
  pgOffset,
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
