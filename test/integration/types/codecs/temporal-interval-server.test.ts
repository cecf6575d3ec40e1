import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { CodecError } from '../../../../src/types/codec.js'
import { intervalCodec } from '../../../../src/types/codecs/interval.js'
import { Interval } from '../../../../src/types/interval.js'
import { Writer } from '../../../../src/protocol/writer.js'
import { getTestServer } from '../../../support/servers/test-server.js'
import { echoParam, runStatement } from '../../../support/codecs/raw-values.js'
import { fetchBoth } from '../../../support/codecs/type-roundtrip.js'
import { decodeIn, INTERVAL_STYLES, pgIntervalText } from '../../../support/codecs/temporal.js'

// interval decoded from what a real server sends in every IntervalStyle and in
// binary (identical values), and encoded as the server understands it.

after(() => runStatement('SET IntervalStyle = postgres'))

const iv = (months: number, days: number, us: number) => new Interval(months, days, us)
const H = 3600000000
const M = 60000000
const S = 1000000

// [SQL literal, value]: signs mixed every way the styles print differently.
const CASES: [string, Interval][] = [
  ["'0'", iv(0, 0, 0)],
  ["'1 year 2 mons 3 days 04:05:06.789'", iv(14, 3, 4 * H + 5 * M + 6789000)],
  ["'-1 days +02:03:00'", iv(0, -1, 2 * H + 3 * M)],
  ["'1 day -00:00:01'", iv(0, 1, -S)],
  ["'-00:00:01'", iv(0, 0, -S)],
  ["'-0.5 seconds'", iv(0, 0, -500000)],
  ["'0.000001 seconds'", iv(0, 0, 1)],
  ["'-1 mons'", iv(-1, 0, 0)],
  ["'1 year -1 mons'", iv(11, 0, 0)],
  ["'-1 year -2 mons +3 days -04:05:06.5'", iv(-14, 3, -(4 * H + 5 * M + 6500000))],
  ["'1 year -2 days 3 hours'", iv(12, -2, 3 * H)],
  ["'-1 year 2 mons -3 days'", iv(-10, -3, 0)],
  ["'-3 days -04:05:06'", iv(0, -3, -(4 * H + 5 * M + 6 * S))],
  ["'1 day'", iv(0, 1, 0)],
  ["'1 day 1 hour 1 minute 1 second'", iv(0, 1, H + M + S)],
  ["'100 hours'", iv(0, 0, 100 * H)],
  ["'-1 days -100:00:00'", iv(0, -1, -100 * H)],
  ["'-59 minutes -30 seconds'", iv(0, 0, -(59 * M + 30 * S))],
  ["'1 year -1 second'", iv(12, 0, -S)],
  ["'-178956970 years -8 mons'", iv(-2147483648, 0, 0)],
  ["'178956970 years 7 mons 2147483647 days'", iv(2147483647, 2147483647, 0)],
  ["'-2147483648 days'", iv(0, -2147483648, 0)],
  ["'2501999:47:34.740991'", iv(0, 0, Number.MAX_SAFE_INTEGER)],
  ["'-2501999:47:34.740991'", iv(0, 0, -Number.MAX_SAFE_INTEGER)],
]

test('interval: every IntervalStyle and binary decode to the same Interval', async () => {
  try {
    for (const style of INTERVAL_STYLES) {
      await runStatement(`SET IntervalStyle = ${style}`)
      const { text, binary } = await fetchBoth(CASES.map(([sql]) => `${sql}::interval`))
      CASES.forEach(([sql, value], i) => {
        const printed = text[i]!.toString()
        const label = `${sql} in ${style}: '${printed}'`
        // The server's text is what the unit tests' oracle predicts, so the property tests there are about real output.
        assert.equal(printed, pgIntervalText(value.months, value.days, BigInt(value.microseconds), style), label)
        const fromText = decodeIn(intervalCodec.decodeText, text[i]!)
        assert.deepStrictEqual(fromText, decodeIn(intervalCodec.decodeBinary!, binary[i]!), label)
        assert.deepStrictEqual(fromText, value, label)
      })
    }
  } finally {
    await runStatement('SET IntervalStyle = postgres')
  }
})

test('interval: microseconds beyond 2^53 are refused in both formats, in every style', async () => {
  try {
    for (const style of INTERVAL_STYLES) {
      await runStatement(`SET IntervalStyle = ${style}`)
      const { text, binary } = await fetchBoth(["'2501999:47:34.740992'::interval", "'-2562047788 hours'::interval", "'1 day 2501999:47:34.740992'::interval"])
      for (let i = 0; i < text.length; i++) {
        for (const [decode, bytes] of [[intervalCodec.decodeText, text[i]!], [intervalCodec.decodeBinary!, binary[i]!]] as const) {
          assert.throws(() => decodeIn(decode, bytes), (e: unknown) => e instanceof CodecError && /more microseconds than a JavaScript number holds exactly/.test(e.message), `${style}: ${text[i]}`)
        }
      }
    }
  } finally {
    await runStatement('SET IntervalStyle = postgres')
  }
})

test('interval: infinities where the server has them (PostgreSQL 17+), refused as text by older servers', async () => {
  const server = await getTestServer()
  if (server.version >= 17) {
    try {
      for (const style of INTERVAL_STYLES) {
        await runStatement(`SET IntervalStyle = ${style}`)
        const { text, binary } = await fetchBoth(["'infinity'::interval", "'-infinity'::interval"])
        assert.deepEqual(text.map(String), ['infinity', '-infinity'])
        assert.equal(decodeIn(intervalCodec.decodeText, text[0]!), Infinity)
        assert.equal(decodeIn(intervalCodec.decodeBinary!, binary[0]!), Infinity)
        assert.equal(decodeIn(intervalCodec.decodeText, text[1]!), -Infinity)
        assert.equal(decodeIn(intervalCodec.decodeBinary!, binary[1]!), -Infinity)
      }
    } finally {
      await runStatement('SET IntervalStyle = postgres')
    }
    assert.equal(await echoParam(1186, 0, Buffer.from(intervalCodec.encodeText(Infinity))), 'infinity')
    assert.equal(await echoParam(1186, 0, Buffer.from(intervalCodec.encodeText(-Infinity))), '-infinity')
  } else {
    // Refused, rather than taken as a huge finite interval.
    await assert.rejects(echoParam(1186, 0, Buffer.from(intervalCodec.encodeText(Infinity))), /invalid input syntax for type interval/)
  }
  assert.equal(intervalCodec.encodeBinary!(new Writer(), Infinity), false)
})

test('interval: encoders, as the server understood them', async () => {
  for (const [, value] of CASES) {
    const expected = pgIntervalText(value.months, value.days, BigInt(value.microseconds), 'postgres')
    const w = new Writer()
    assert.equal(intervalCodec.encodeBinary!(w, value), true)
    assert.equal(await echoParam(1186, 1, w.take()), expected)
    const plain = { months: value.months, days: value.days, microseconds: value.microseconds }
    const w2 = new Writer()
    assert.equal(intervalCodec.encodeBinary!(w2, plain), true)
    assert.equal(await echoParam(1186, 1, w2.take()), expected)
    // The ISO 8601 text form is read back to the same fields.
    assert.equal(await echoParam(1186, 0, Buffer.from(intervalCodec.encodeText(value))), expected, value.toString())
  }
  // A string goes as text, for the server to parse.
  assert.equal(intervalCodec.encodeBinary!(new Writer(), '2 weeks'), false)
  assert.equal(await echoParam(1186, 0, Buffer.from(intervalCodec.encodeText('2 weeks'))), '14 days')
})
