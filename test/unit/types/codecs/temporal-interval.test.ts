import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { CodecError, defaultTypeOptions, type Codec } from '../../../../src/types/codec.js'
import { intervalCodec, registerIntervalCodecs } from '../../../../src/types/codecs/interval.js'
import { Interval } from '../../../../src/types/interval.js'
import { decBin, decodeAlike, decText, encBin, mutationsOf, int32Hex, int64Hex, INTERVAL_STYLES, pgIntervalText } from '../../../support/codecs/temporal.js'

const throwsCodec = (fn: () => unknown, re: RegExp) => assert.throws(fn, (e: unknown) => e instanceof CodecError && re.test(e.message))
const iv = (months: number, days: number, us: number) => new Interval(months, days, us)
const hexOf = (months: number, days: number, us: bigint) => int64Hex(us) + int32Hex(days) + int32Hex(months)
const H = 3600000000
const M = 60000000
const S = 1000000

test('registers interval by OID', () => {
  const table = new Map<number, Codec>()
  registerIntervalCodecs(table, defaultTypeOptions)
  assert.equal(table.get(1186), intervalCodec)
  assert.equal(intervalCodec.name, 'interval')
})

test('Interval: fields, toString as IntervalStyle iso_8601 prints, toJSON', () => {
  const cases: [Interval, string][] = [
    [iv(0, 0, 0), 'PT0S'],
    [iv(14, 3, 4 * H + 5 * M + 6.5 * S), 'P1Y2M3DT4H5M6.5S'],
    [iv(0, -1, 2 * H + 3 * M), 'P-1DT2H3M'],
    [iv(0, 0, -500000), 'PT-0.5S'],
    [iv(-14, 3, -(4 * H + 5 * M + 6.5 * S)), 'P-1Y-2M3DT-4H-5M-6.5S'],
    [iv(12, 0, 0), 'P1Y'],
    [iv(-12, 0, 0), 'P-1Y'],
    [iv(11, 0, 0), 'P11M'],
    [iv(-1, 0, 0), 'P-1M'],
    [iv(0, 0, 1), 'PT0.000001S'],
    [iv(0, 0, -1), 'PT-0.000001S'],
    [iv(0, 0, 60 * S), 'PT1M'],
    [iv(0, 0, 100 * H), 'PT100H'],
    [iv(0, 0, Number.MAX_SAFE_INTEGER), `PT2501999H47M34.740991S`],
    [iv(0, 0, -Number.MAX_SAFE_INTEGER), `PT-2501999H-47M-34.740991S`],
    [iv(2147483647, -2147483648, 0), 'P178956970Y7M-2147483648D'],
  ]
  for (const [v, s] of cases) {
    assert.equal(v.toString(), s)
    assert.equal(String(v), s)
    assert.equal(JSON.stringify({ v }), `{"v":"${s}"}`)
    assert.equal(s, pgIntervalText(v.months, v.days, BigInt(v.microseconds), 'iso_8601'))
  }
  assert.deepEqual({ ...iv(1, 2, 3) }, { months: 1, days: 2, microseconds: 3 })
  assert.deepEqual(new Interval(), iv(0, 0, 0))
})

test('binary: exact bytes both ways', () => {
  const cases: [string, Interval][] = [
    ['0000000000000000' + '00000000' + '00000000', iv(0, 0, 0)],
    [int64Hex(14706789000n) + '00000003' + '0000000e', iv(14, 3, 14706789000)],
    [int64Hex(7380000000n) + 'ffffffff' + '00000000', iv(0, -1, 7380000000)],
    [int64Hex(-1n) + '80000000' + '7fffffff', iv(2147483647, -2147483648, -1)],
    [int64Hex(BigInt(Number.MAX_SAFE_INTEGER)) + '00000000' + '00000000', iv(0, 0, Number.MAX_SAFE_INTEGER)],
    [int64Hex(BigInt(-Number.MAX_SAFE_INTEGER)) + '00000000' + '00000000', iv(0, 0, -Number.MAX_SAFE_INTEGER)],
    [int64Hex(-(2n ** 53n)) + '00000000' + '00000000', iv(0, 0, -(2 ** 53))],
    // Only all three fields at their extreme are infinite.
    ['0000000000000000' + '7fffffff' + '7fffffff', iv(2147483647, 2147483647, 0)],
    ['0000000000000000' + '80000000' + '80000000', iv(-2147483648, -2147483648, 0)],
  ]
  for (const [hex, value] of cases) {
    const got = decBin(intervalCodec, hex)
    assert.deepEqual(got, value, hex)
    assert.ok(got instanceof Interval)
    if (value.microseconds !== -(2 ** 53)) assert.equal(encBin(intervalCodec, value), hex)
  }
  // interval_send('infinity') and ('-infinity') on PostgreSQL 17+.
  assert.equal(decBin(intervalCodec, '7fffffffffffffff7fffffff7fffffff'), Infinity)
  assert.equal(decBin(intervalCodec, '80000000000000008000000080000000'), -Infinity)
})

test('binary: malformed values and microseconds beyond 2^53 are refused', () => {
  for (const hex of ['', '00'.repeat(15), '00'.repeat(17)]) throwsCodec(() => decBin(intervalCodec, hex), /^malformed binary interval: \d+ bytes where 16 were expected$/)
  for (const us of [2n ** 53n, -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n)]) {
    throwsCodec(() => decBin(intervalCodec, hexOf(1, 2, us)), new RegExp(`^interval of 1 months 2 days ${us} microseconds has more microseconds than a JavaScript number holds exactly`))
  }
  throwsCodec(() => decBin(intervalCodec, '7fffffffffffffff7fffffff7ffffffe'), /more microseconds/)
})

// [text as the server prints it (checked against real servers in the integration tests), value]
const TEXTS: [string, Interval][] = [
  // postgres
  ['00:00:00', iv(0, 0, 0)],
  ['1 year 2 mons 3 days 04:05:06.789', iv(14, 3, 14706789000)],
  ['-1 days +02:03:00', iv(0, -1, 7380000000)],
  ['1 day -00:00:01', iv(0, 1, -1000000)],
  ['-00:00:01', iv(0, 0, -1000000)],
  ['-00:00:00.5', iv(0, 0, -500000)],
  ['-1 mons', iv(-1, 0, 0)],
  ['11 mons', iv(11, 0, 0)],
  ['1 year', iv(12, 0, 0)],
  ['-1 years -2 mons +3 days -04:05:06.5', iv(-14, 3, -14706500000)],
  ['-1 days -100:00:00', iv(0, -1, -100 * H)],
  ['2562047788:00:00', iv(0, 0, NaN)], // NaN: beyond 2^53 microseconds, refused
  ['-178956970 years -8 mons', iv(-2147483648, 0, 0)],
  ['178956970 years 7 mons 2147483647 days', iv(2147483647, 2147483647, 0)],
  // postgres_verbose
  ['@ 0', iv(0, 0, 0)],
  ['@ 1 year 2 mons 3 days 4 hours 5 mins 6.789 secs', iv(14, 3, 14706789000)],
  ['@ 1 day -2 hours -3 mins ago', iv(0, -1, 7380000000)],
  ['@ 10 mons 3 days ago', iv(-10, -3, 0)],
  ['@ 0.5 secs ago', iv(0, 0, -500000)],
  ['@ 1 sec', iv(0, 0, 1000000)],
  ['@ 59 mins 30 secs ago', iv(0, 0, -(59 * M + 30 * S))],
  ['@ 1 year -1 sec', iv(12, 0, -1000000)],
  ['@ 1 day 1 hour 1 min 1 sec', iv(0, 1, H + M + S)],
  ['@ 1 year 2 mons -3 days 4 hours 5 mins 6 secs ago', iv(-14, 3, -(4 * H + 5 * M + 6 * S))],
  // sql_standard
  ['0', iv(0, 0, 0)],
  ['1-2', iv(14, 0, 0)],
  ['-1-2', iv(-14, 0, 0)],
  ['0-1', iv(1, 0, 0)],
  ['+1-0 -2 +3:00:00', iv(12, -2, 3 * H)],
  ['-1-2 +3 +0:00:00', iv(-14, 3, 0)],
  ['-1-2 +3 -4:05:06.5', iv(-14, 3, -14706500000)],
  ['+0-0 +1 -0:00:01', iv(0, 1, -1000000)],
  ['-3 4:05:06', iv(0, -3, -(4 * H + 5 * M + 6 * S))],
  ['1 0:00:00', iv(0, 1, 0)],
  ['-0:00:01', iv(0, 0, -1000000)],
  ['4:05:06.789', iv(0, 0, 14706789000)],
  ['100:00:00', iv(0, 0, 100 * H)],
  // iso_8601
  ['PT0S', iv(0, 0, 0)],
  ['P1Y2M3DT4H5M6.789S', iv(14, 3, 14706789000)],
  ['P-1DT2H3M', iv(0, -1, 7380000000)],
  ['PT-0.5S', iv(0, 0, -500000)],
  ['P-1Y-2M3DT-4H-5M-6.5S', iv(-14, 3, -14706500000)],
  ['P1W', iv(0, 7, 0)],
]

test('text: every IntervalStyle', () => {
  for (const [text, value] of TEXTS) {
    if (Number.isNaN(value.microseconds)) {
      throwsCodec(() => decText(intervalCodec, text), /more microseconds than a JavaScript number holds exactly/)
      continue
    }
    const got = decText(intervalCodec, text)
    assert.ok(got instanceof Interval, text)
    // deepStrictEqual: a negated zero would fail here against the binary decoding's 0.
    assert.deepEqual(got, value, text)
  }
  // PostgreSQL 17+ prints the infinities alike in every style.
  assert.equal(decText(intervalCodec, 'infinity'), Infinity)
  assert.equal(decText(intervalCodec, '-infinity'), -Infinity)
})

test('text: the largest microseconds a number holds exactly, and one past them', () => {
  assert.deepEqual(decText(intervalCodec, '2501999:47:34.740991'), iv(0, 0, Number.MAX_SAFE_INTEGER))
  assert.deepEqual(decText(intervalCodec, '-2501999:47:34.740991'), iv(0, 0, -Number.MAX_SAFE_INTEGER))
  assert.deepEqual(decText(intervalCodec, 'PT-2501999H-47M-34.740991S'), iv(0, 0, -Number.MAX_SAFE_INTEGER))
  for (const text of ['2501999:47:34.740992', '@ 2501999 hours 47 mins 34.740992 secs ago', 'PT2501999H47M34.740992S', '-1 2501999:47:34.740992']) {
    throwsCodec(() => decText(intervalCodec, text), /has more microseconds than a JavaScript number holds exactly/)
  }
})

test('text: malformed values are refused', () => {
  for (const bad of [
    '', ' ', 'infinit', 'Infinity', '- infinity', '1', '5', '+0', '1 year 2', '1 yr', '1 years2 mons', '1  year', ' 1 year', '1 year ', '1 hour',
    '1 year 00:00', '1 year 00:00:0', '00:60:00', '00:00:60', '00:00:00.', '00:00:00.1234567', '00:00:00 1 year', '1 year 00:00:00 1 day',
    '@', '@ ', '@ 1', '@ 1 fortnight', '@ 1.5 days', '@ 1 day ago ago', '@ 1 day ago 1 hour', '@1 day',
    'P', 'PT', 'P1', 'P1X', 'P1.5Y', 'PT1.5H', 'P1H', 'PT1D', 'P1YT', 'P1Y2M3DT4H5M6.1234567S', 'PT1S2',
    '1-', '-1-', '1-2-3', '+1-2 3 +4:05:06', '+1-2 +3 4:05:06', '1-2 +3 +4:05:06', '+1-2 +3', '1 2 3 4', '-3 4', '3 -4:05:06', '1-2 3:04:05',
    '2147483648 days', '-2147483649 days', '178956971 years', '1234567890123456 days',
  ]) {
    throwsCodec(() => decText(intervalCodec, bad), /^(malformed interval value|interval '.*' is out of range)/)
  }
})

test('encoding: Interval, look-alike objects, strings, infinities', () => {
  const value = iv(14, 3, 14706789000)
  assert.equal(encBin(intervalCodec, value), hexOf(14, 3, 14706789000n))
  assert.equal(encBin(intervalCodec, { months: 14, days: 3, microseconds: 14706789000 }), hexOf(14, 3, 14706789000n))
  assert.equal(encBin(intervalCodec, { months: -2147483648, days: 2147483647, microseconds: -Number.MAX_SAFE_INTEGER }), hexOf(-2147483648, 2147483647, -(2n ** 53n - 1n)))
  assert.equal(intervalCodec.encodeText(value), 'P1Y2M3DT4H5M6.789S')
  assert.equal(intervalCodec.encodeText({ months: 0, days: -1, microseconds: -1 }), 'P-1DT-0.000001S')
  assert.equal(encBin(intervalCodec, '1 day'), false)
  assert.equal(intervalCodec.encodeText('1 day'), '1 day')
  // Infinities go as text: PostgreSQL 17+ reads it, older servers refuse it instead of storing a huge finite interval.
  assert.equal(encBin(intervalCodec, Infinity), false)
  assert.equal(encBin(intervalCodec, -Infinity), false)
  assert.equal(intervalCodec.encodeText(Infinity), 'infinity')
  assert.equal(intervalCodec.encodeText(-Infinity), '-infinity')
  const fieldErrors: [unknown, RegExp][] = [
    [{ months: 1.5, days: 0, microseconds: 0 }, /^interval months must be a 32-bit integer; got 1.5$/],
    [{ months: 2 ** 31, days: 0, microseconds: 0 }, /^interval months must be a 32-bit integer; got 2147483648$/],
    [{ months: 0, days: -(2 ** 31) - 1, microseconds: 0 }, /^interval days must be a 32-bit integer; got -2147483649$/],
    [{ months: 0, days: '1', microseconds: 0 }, /^interval days must be a 32-bit integer; got a string$/],
    [{ months: 0, days: 0, microseconds: 2 ** 53 }, /^interval microseconds must be a safe integer; got 9007199254740992$/],
    [{ months: 0, days: 0, microseconds: 1n }, /^interval microseconds must be a safe integer; got a bigint$/],
    [{ months: 0, days: 0, microseconds: 0.5 }, /^interval microseconds must be a safe integer; got 0.5$/],
    [{ days: 1 }, /^interval months must be a 32-bit integer; got undefined$/],
    [iv(0, 0, NaN), /^interval microseconds must be a safe integer; got NaN$/],
  ]
  for (const [bad, re] of fieldErrors) {
    throwsCodec(() => encBin(intervalCodec, bad), re)
    throwsCodec(() => intervalCodec.encodeText(bad), re)
  }
  for (const [bad, what] of [[1000, 'a number'], [NaN, 'a number'], [null, 'null'], [new Date(0), 'a Date'], [{}, 'an object \\(Object\\)'], [[1, 2, 3], 'an array'], [true, 'a boolean']] as const) {
    const re = new RegExp(`^interval needs an Interval, a Temporal.Duration, an object \\{ months, days, microseconds \\} of integers, a string or ±Infinity; got ${what}$`)
    throwsCodec(() => encBin(intervalCodec, bad), re)
    throwsCodec(() => intervalCodec.encodeText(bad), re)
  }
})

const anyInterval = fc.record({
  months: fc.oneof(fc.integer({ min: -2147483648, max: 2147483647 }), fc.integer({ min: -40, max: 40 })),
  days: fc.oneof(fc.integer({ min: -2147483648, max: 2147483647 }), fc.integer({ min: -40, max: 40 }), fc.constant(0)),
  microseconds: fc.oneof(fc.maxSafeInteger(), fc.integer({ min: -100 * H, max: 100 * H }), fc.integer({ min: -2 * S, max: 2 * S }), fc.constant(0)),
})

test('random intervals: binary, every text style and the encoders agree (property)', () => {
  fc.assert(
    fc.property(anyInterval, ({ months, days, microseconds }) => {
      const value = iv(months, days, microseconds)
      const hex = hexOf(months, days, BigInt(microseconds))
      assert.deepEqual(decBin(intervalCodec, hex), value)
      assert.equal(encBin(intervalCodec, value), hex)
      for (const style of INTERVAL_STYLES) {
        const text = pgIntervalText(months, days, BigInt(microseconds), style)
        assert.deepEqual(decText(intervalCodec, text), value, `${style}: ${text}`)
      }
      assert.equal(value.toString(), pgIntervalText(months, days, BigInt(microseconds), 'iso_8601'))
      assert.deepEqual(decText(intervalCodec, intervalCodec.encodeText(value)), value)
    }),
    { numRuns: 3000 },
  )
})

test('truncated and garbled values: a CodecError or the same value, never a read beyond the value', () => {
  const texts = ['1 year 2 mons 3 days 04:05:06.789', '-1 days +02:03:00', '@ 1 day -2 hours -3 mins 4.5 secs ago', '@ 0', '+1-2 -3 +4:05:06.5', '-3 4:05:06', '-1-2', '0', 'P-1Y-2M3DT-4H-5M-6.5S', 'PT0S', 'infinity', '-infinity']
  for (const t of texts) for (const m of mutationsOf(t)) decodeAlike(intervalCodec.decodeText, m)
  for (const h of ['000000036c9d3c88000000030000000e', '7fffffffffffffff7fffffff7fffffff', '80000000000000008000000080000000']) {
    for (const m of mutationsOf(Buffer.from(h, 'hex'))) decodeAlike(intervalCodec.decodeBinary!, m)
  }
})

test('random bytes: decoders throw nothing but CodecError and never read beyond the value (property)', () => {
  const textish = fc.array(fc.constantFrom(...'0123456789-:+. @PTYMDHSWagoyearmondayhoursecinfty'.split('')), { maxLength: 40 }).map((a) => Buffer.from(a.join('')))
  fc.assert(
    fc.property(fc.oneof(fc.uint8Array({ maxLength: 20 }), textish), (bytes) => {
      decodeAlike(intervalCodec.decodeText, bytes)
      decodeAlike(intervalCodec.decodeBinary!, bytes)
    }),
    { numRuns: 3000 },
  )
})
