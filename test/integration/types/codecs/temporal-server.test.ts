import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { CodecError, type Codec } from '../../../../src/types/codec.js'
import { dateCodec } from '../../../../src/types/codecs/date.js'
import { timeCodec, timetzCodec } from '../../../../src/types/codecs/time.js'
import { timestampCodec, timestamptzCodec } from '../../../../src/types/codecs/timestamp.js'
import { Writer } from '../../../../src/protocol/writer.js'
import { echoParam, runStatement } from '../../../support/codecs/raw-values.js'
import { fetchBoth } from '../../../support/codecs/type-roundtrip.js'
import { decodeIn, pgStyle } from '../../../support/codecs/temporal.js'

// Decoders checked on the bytes a real server sends, in text and in binary
// (which must decode to identical values), and encoders by what it understood.

const dateS = dateCodec('string')
const dateD = dateCodec('date')
const tsS = timestampCodec('string')
const tsD = timestampCodec('date')
const tstzS = timestamptzCodec('string')
const tstzD = timestamptzCodec('date')

after(() => runStatement("SET TimeZone = 'UTC'"))

type Outcome = unknown | { error: RegExp }

function decodeOrError(decode: (buf: Uint8Array, s: number, e: number) => unknown, bytes: Buffer): Outcome {
  try {
    return decodeIn(decode, bytes)
  } catch (e) {
    if (!(e instanceof CodecError)) throw e
    return { error: e.message }
  }
}

/**
 * Checks every `[sql, expected]` for `codec`: text and binary decode to the same
 * value (or both fail), which is `expected` ({ error } for a CodecError).
 */
async function check(codec: Codec, cast: string, cases: readonly (readonly [string, Outcome])[]): Promise<void> {
  const { text, binary } = await fetchBoth(cases.map(([sql]) => `${sql}::${cast}`))
  cases.forEach(([sql, expected], i) => {
    const fromText = decodeOrError(codec.decodeText, text[i]!)
    const fromBinary = decodeOrError(codec.decodeBinary!, binary[i]!)
    const label = `${sql}::${cast} (${codec.name}, server text '${text[i]!.toString()}')`
    if (expected !== null && typeof expected === 'object' && 'error' in expected) {
      for (const got of [fromText, fromBinary]) {
        assert.ok(got !== null && typeof got === 'object' && 'error' in got, `${label}: expected an error, got ${String(got)}`)
        assert.match((got as { error: string }).error, (expected as { error: RegExp }).error, label)
      }
      return
    }
    assert.deepStrictEqual(fromText, fromBinary, label)
    assert.deepStrictEqual(fromBinary, expected, label)
  })
}

const D = (iso: string) => new Date(iso)

test('date: decoders against the server in both formats and both modes', async () => {
  const cases: [string, string, Outcome][] = [
    ["'2024-02-29'", '2024-02-29', D('2024-02-29T00:00:00Z')],
    ["'2000-01-01'", '2000-01-01', D('2000-01-01T00:00:00Z')],
    ["'1999-12-31'", '1999-12-31', D('1999-12-31T00:00:00Z')],
    ["'1970-01-01'", '1970-01-01', new Date(0)],
    ["'1900-02-28'", '1900-02-28', D('1900-02-28T00:00:00Z')],
    ["'0001-01-01'", '0001-01-01', D('0001-01-01T00:00:00Z')],
    ["'0001-12-31 BC'", '0001-12-31 BC', D('0000-12-31T00:00:00Z')],
    ["'0001-02-29 BC'", '0001-02-29 BC', D('0000-02-29T00:00:00Z')],
    ["'0044-03-15 BC'", '0044-03-15 BC', D('-000043-03-15T00:00:00Z')],
    ["'4714-11-24 BC'", '4714-11-24 BC', D('-004713-11-24T00:00:00Z')],
    ["'9999-12-31'", '9999-12-31', D('9999-12-31T00:00:00Z')],
    ["'10000-01-01'", '10000-01-01', D('+010000-01-01T00:00:00Z')],
    ["'275760-09-13'", '275760-09-13', new Date(8.64e15)],
    ["'275760-09-14'", '275760-09-14', { error: /275760-09-14 is beyond the range of a JavaScript Date/ }],
    ["'5874897-12-31'", '5874897-12-31', { error: /5874897-12-31 is beyond the range of a JavaScript Date/ }],
    ["'infinity'", 'infinity', Infinity],
    ["'-infinity'", '-infinity', -Infinity],
  ]
  await check(dateS, 'date', cases.map(([sql, s]) => [sql, s]))
  await check(dateD, 'date', cases.map(([sql, , d]) => [sql, d]))
})

test('time and timetz: decoders against the server in both formats', async () => {
  await check(timeCodec, 'time', [
    ["'00:00:00'", '00:00:00'],
    ["'24:00:00'", '24:00:00'],
    ["'12:34:56.5'", '12:34:56.5'],
    ["'12:34:56.120'", '12:34:56.12'],
    ["'23:59:59.999999'", '23:59:59.999999'],
    ["'00:00:00.000001'", '00:00:00.000001'],
    ["'allballs'", '00:00:00'],
    ["'1:02'", '01:02:00'],
    ["'12:34:56.1234567'", '12:34:56.123457'],
  ])
  await check(timetzCodec, 'timetz', [
    ["'12:34:56.5+05:30'", '12:34:56.5+05:30'],
    ["'01:02:03-08'", '01:02:03-08'],
    ["'01:02:03+00'", '01:02:03+00'],
    ["'01:02:03-00:00'", '01:02:03+00'],
    ["'00:00:00+15:59:59'", '00:00:00+15:59:59'],
    ["'24:00:00-15:59:59'", '24:00:00-15:59:59'],
    ["'12:00:00+00:17:30'", '12:00:00+00:17:30'],
    ["'12:00:00-00:44:30'", '12:00:00-00:44:30'],
    ["'12:00:00+05:45'", '12:00:00+05:45'],
    ["'00:00:00.000001+14'", '00:00:00.000001+14'],
  ])
})

// [SQL literal of a timestamp without time zone, 'string' mode, 'date' mode]
const TIMESTAMPS: [string, string, Outcome][] = [
  ["'2024-02-29 12:34:56.123456'", '2024-02-29T12:34:56.123456', D('2024-02-29T12:34:56.123Z')],
  ["'2024-02-29 12:34:56'", '2024-02-29T12:34:56', D('2024-02-29T12:34:56Z')],
  ["'2000-01-01 00:00:00'", '2000-01-01T00:00:00', D('2000-01-01T00:00:00Z')],
  ["'1999-12-31 23:59:59.999999'", '1999-12-31T23:59:59.999999', D('1999-12-31T23:59:59.999Z')],
  ["'1969-12-31 23:59:59.9995'", '1969-12-31T23:59:59.9995', D('1969-12-31T23:59:59.999Z')],
  ["'0001-01-01 00:00:00'", '0001-01-01T00:00:00', D('0001-01-01T00:00:00Z')],
  ["'0001-12-31 23:59:59.999999 BC'", '0000-12-31T23:59:59.999999', D('0000-12-31T23:59:59.999Z')],
  ["'0001-02-29 12:00:00 BC'", '0000-02-29T12:00:00', D('0000-02-29T12:00:00Z')],
  ["'0044-03-15 12:00:00.000001 BC'", '-000043-03-15T12:00:00.000001', D('-000043-03-15T12:00:00Z')],
  ["'4714-11-24 00:00:00 BC'", '-004713-11-24T00:00:00', D('-004713-11-24T00:00:00Z')],
  ["'9999-12-31 23:59:59.999999'", '9999-12-31T23:59:59.999999', D('9999-12-31T23:59:59.999Z')],
  ["'10000-01-01 00:00:00'", '+010000-01-01T00:00:00', D('+010000-01-01T00:00:00Z')],
  ["'275760-09-13 00:00:00.000999'", '+275760-09-13T00:00:00.000999', new Date(8.64e15)],
  ["'275760-09-13 00:00:00.001'", '+275760-09-13T00:00:00.001', { error: /beyond the range of a JavaScript Date/ }],
  ["'294276-12-31 23:59:59.999999'", '+294276-12-31T23:59:59.999999', { error: /294276-12-31T23:59:59.999999Z? is beyond the range of a JavaScript Date/ }],
  ["'infinity'", 'infinity', Infinity],
  ["'-infinity'", '-infinity', -Infinity],
]

test('timestamp: decoders against the server in both formats and both modes', async () => {
  await check(tsS, 'timestamp', TIMESTAMPS.map(([sql, s]) => [sql, pgStyle(s)]))
  await check(tsD, 'timestamp', TIMESTAMPS.map(([sql, , d]) => [sql, d]))
  // A timestamp without time zone ignores the session's zone.
  await runStatement("SET TimeZone = 'Asia/Kolkata'")
  await check(tsS, 'timestamp', TIMESTAMPS.map(([sql, s]) => [sql, pgStyle(s)]))
  await runStatement("SET TimeZone = 'UTC'")
})

// Instants given in UTC, decoded while the server prints them in other zones.
const INSTANTS: [string, string][] = [
  ["'2024-02-29 12:34:56.123456+00'", '2024-02-29T12:34:56.123456Z'],
  ["'2024-03-10 06:59:59.999999+00'", '2024-03-10T06:59:59.999999Z'], // just before New York springs forward
  ["'2024-03-10 07:00:00+00'", '2024-03-10T07:00:00Z'],
  ["'2024-11-03 05:30:00+00'", '2024-11-03T05:30:00Z'], // 01:30 EDT in New York
  ["'2024-11-03 06:30:00+00'", '2024-11-03T06:30:00Z'], // 01:30 EST: the same wall clock an hour later
  ["'1930-06-01 12:00:00+00'", '1930-06-01T12:00:00Z'],
  ["'1900-01-01 00:00:00+00'", '1900-01-01T00:00:00Z'],
  ["'1850-01-01 00:00:00+00'", '1850-01-01T00:00:00Z'],
  ["'1971-01-01 00:00:00+00'", '1971-01-01T00:00:00Z'],
  ["'2000-01-01 00:00:00+00'", '2000-01-01T00:00:00Z'],
  ["'1999-12-31 23:59:59.999999+00'", '1999-12-31T23:59:59.999999Z'],
  ["'0001-01-01 00:00:00+00'", '0001-01-01T00:00:00Z'],
  ["'0001-12-31 23:59:59.999999+00 BC'", '0000-12-31T23:59:59.999999Z'],
  ["'4714-11-24 00:00:00+00 BC'", '-004713-11-24T00:00:00Z'],
  ["'294276-12-31 23:59:59.999999+00'", '+294276-12-31T23:59:59.999999Z'],
  ["'infinity'", 'infinity'],
  ["'-infinity'", '-infinity'],
]

const ZONES = ['UTC', 'Asia/Kolkata', 'America/New_York', 'Europe/Amsterdam', 'Africa/Monrovia', 'America/St_Johns', 'Pacific/Chatham', 'Asia/Kathmandu', 'Pacific/Kiritimati']

test('timestamptz: the same instants in both formats and both modes whatever the session TimeZone', async () => {
  try {
    for (const zone of ZONES) {
      await runStatement(`SET TimeZone = '${zone}'`)
      await check(tstzS, 'timestamptz', INSTANTS.map(([sql, s]) => [sql, pgStyle(s)]))
      await check(
        tstzD,
        'timestamptz',
        INSTANTS.map(([sql, s]): [string, Outcome] => {
          if (s.endsWith('infinity')) return [sql, s.startsWith('-') ? -Infinity : Infinity]
          const ms = new Date(s).getTime() // parses the ISO string to milliseconds, dropping the rest
          return [sql, s.startsWith('+294276') ? { error: /beyond the range of a JavaScript Date/ } : new Date(Math.floor(ms))]
        }),
      )
    }
  } finally {
    await runStatement("SET TimeZone = 'UTC'")
  }
})

test('timestamptz: the server really prints the offsets these tests are about', async () => {
  // So that the instants above exercise offsets with minutes, seconds (LMT) and DST in text.
  const expect: [string, string, RegExp][] = [
    ['Asia/Kolkata', "'2024-01-01 00:00:00+00'", /^2024-01-01 05:30:00\+05:30$/],
    ['Asia/Kolkata', "'1900-01-01 00:00:00+00'", /^1900-01-01 05:21:10\+05:21:10$/],
    ['Asia/Kolkata', "'1850-01-01 00:00:00+00'", /^1850-01-01 05:53:28\+05:53:28$/],
    ['Asia/Kolkata', "'294276-12-31 23:59:59.999999+00'", /^294277-01-01 05:29:59.999999\+05:30$/],
    ['Africa/Monrovia', "'1971-01-01 00:00:00+00'", /^1970-12-31 23:15:30-00:44:30$/],
    ['America/New_York', "'2024-11-03 05:30:00+00'", /^2024-11-03 01:30:00-04$/],
    ['America/New_York', "'2024-11-03 06:30:00+00'", /^2024-11-03 01:30:00-05$/],
    ['America/New_York', "'2024-03-10 06:59:59.999999+00'", /^2024-03-10 01:59:59.999999-05$/],
    ['America/New_York', "'2024-03-10 07:00:00+00'", /^2024-03-10 03:00:00-04$/],
    ['America/New_York', "'4714-11-24 00:00:00+00 BC'", /^4714-11-23 19:03:58-04:56:02 BC$/],
    // tzdata 2022b merged Amsterdam into Brussels; older data has Amsterdam Mean Time, +00:19:32 or +01:19:32 in summer.
    ['Europe/Amsterdam', "'1930-06-01 12:00:00+00'", /^1930-06-01 1[34]:(19:32\+01:19:32|00:00\+01)$/],
    ['Pacific/Chatham', "'2024-01-01 00:00:00+00'", /^2024-01-01 13:45:00\+13:45$/],
  ]
  try {
    for (const [zone, sql, re] of expect) {
      await runStatement(`SET TimeZone = '${zone}'`)
      const { text } = await fetchBoth([`${sql}::timestamptz`])
      assert.match(text[0]!.toString(), re, `${sql} in ${zone}`)
    }
  } finally {
    await runStatement("SET TimeZone = 'UTC'")
  }
})

test('timestamptz: local wall-clock literals across DST transitions decode alike from both formats', async () => {
  try {
    await runStatement("SET TimeZone = 'America/New_York'")
    // 02:30 does not exist on 2024-03-10 and 01:30 happens twice on 2024-11-03:
    // whichever instant the server picks, text and binary must agree.
    const sqls = ["'2024-03-10 02:30'", "'2024-11-03 01:30'", "'2024-11-03 01:30 EDT'", "'2024-11-03 01:30 EST'", "'2024-03-10 02:30'::timestamp"]
    const { text, binary } = await fetchBoth(sqls.map((s) => `${s}::timestamptz`))
    sqls.forEach((sql, i) => {
      assert.deepStrictEqual(decodeIn(tstzS.decodeText, text[i]!), decodeIn(tstzS.decodeBinary!, binary[i]!), sql)
      assert.deepStrictEqual(decodeIn(tstzD.decodeText, text[i]!), decodeIn(tstzD.decodeBinary!, binary[i]!), sql)
    })
    assert.equal(decodeIn(tstzS.decodeText, text[2]!), '2024-11-03T05:30:00Z')
    assert.equal(decodeIn(tstzS.decodeText, text[3]!), '2024-11-03T06:30:00Z')
  } finally {
    await runStatement("SET TimeZone = 'UTC'")
  }
})

/** Encodes with encodeBinary (or, when it declines, encodeText) and returns how the server prints the parameter. */
async function echo(codec: Codec, oid: number, value: unknown, expr = '$1::text'): Promise<string | null> {
  const w = new Writer()
  if (codec.encodeBinary!(w, value)) return echoParam(oid, 1, w.take(), expr)
  return echoParam(oid, 0, Buffer.from(codec.encodeText(value)), expr)
}

async function echoText(codec: Codec, oid: number, value: unknown, expr = '$1::text'): Promise<string | null> {
  return echoParam(oid, 0, Buffer.from(codec.encodeText(value)), expr)
}

test('date: encoders, as the server understood them', async () => {
  const cases: [unknown, string][] = [
    [D('2024-02-29T23:59:59.999Z'), '2024-02-29'],
    [new Date(-1), '1969-12-31'],
    [D('0000-12-31T00:00:00Z'), '0001-12-31 BC'],
    [D('-000043-03-15T00:00:00Z'), '0044-03-15 BC'],
    [D('-004713-11-24T00:00:00Z'), '4714-11-24 BC'],
    [D('+010000-01-01T00:00:00Z'), '10000-01-01'],
    [new Date(8.64e15), '275760-09-13'],
    [Infinity, 'infinity'],
    [-Infinity, '-infinity'],
    ['2024-02-29', '2024-02-29'],
    ['5874897-12-31', '5874897-12-31'],
  ]
  for (const [value, printed] of cases) {
    for (const c of [dateS, dateD]) {
      assert.equal(await echo(c, 1082, value), printed, String(value))
      assert.equal(await echoText(c, 1082, value), printed, String(value))
    }
  }
})

test('time and timetz: encoders, as the server understood them', async () => {
  for (const [value, printed, binary] of [
    ['12:34:56.5', '12:34:56.5', true],
    ['12:34', '12:34:00', true],
    ['24:00:00', '24:00:00', true],
    ['00:00:00.000001', '00:00:00.000001', true],
    ['23:59:59.999999', '23:59:59.999999', true],
    ['allballs', '00:00:00', false],
    ['1:02:03 PM', '13:02:03', false],
    ['12:34:56.1234567', '12:34:56.123457', false],
  ] as const) {
    assert.equal(timeCodec.encodeBinary!(new Writer(), value), binary, value)
    assert.equal(await echo(timeCodec, 1083, value), printed, value)
    assert.equal(await echoText(timeCodec, 1083, value), printed, value)
  }
  for (const [value, printed, binary] of [
    ['12:34:56.5+05:30', '12:34:56.5+05:30', true],
    ['01:02:03-08', '01:02:03-08', true],
    ['00:00:00+15:59:59', '00:00:00+15:59:59', true],
    ['24:00:00-15:59:59', '24:00:00-15:59:59', true],
    ['12:00+00:17:30', '12:00:00+00:17:30', true],
    ['12:00:00-00:00', '12:00:00+00', true],
    ['12:00:00Z', '12:00:00+00', false],
    ['12:00:00+0530', '12:00:00+05:30', false],
  ] as const) {
    assert.equal(timetzCodec.encodeBinary!(new Writer(), value), binary, value)
    assert.equal(await echo(timetzCodec, 1266, value), printed, value)
    assert.equal(await echoText(timetzCodec, 1266, value), printed, value)
  }
})

test('timestamp and timestamptz: encoders, as the server understood them', async () => {
  const cases: [unknown, string][] = [
    [D('2024-02-29T12:34:56.789Z'), '2024-02-29 12:34:56.789'],
    [new Date(-1), '1969-12-31 23:59:59.999'],
    [new Date(0), '1970-01-01 00:00:00'],
    [D('0000-12-31T23:59:59.999Z'), '0001-12-31 23:59:59.999 BC'],
    [D('-000043-03-15T12:00:00Z'), '0044-03-15 12:00:00 BC'],
    [D('-004713-11-24T00:00:00Z'), '4714-11-24 00:00:00 BC'],
    [D('+010000-01-01T00:00:00Z'), '10000-01-01 00:00:00'],
    [new Date(8.64e15), '275760-09-13 00:00:00'],
    [Infinity, 'infinity'],
    [-Infinity, '-infinity'],
  ]
  try {
    for (const [value, printed] of cases) {
      for (const c of [tsS, tsD]) {
        assert.equal(await echo(c, 1114, value), printed, String(value))
        assert.equal(await echoText(c, 1114, value), printed, String(value))
      }
      const zoned = printed.endsWith('infinity') ? printed : printed.replace(/( BC)?$/, '+00$1')
      for (const c of [tstzS, tstzD]) {
        assert.equal(await echo(c, 1184, value), zoned, String(value))
        assert.equal(await echoText(c, 1184, value), zoned, String(value))
      }
    }
    // The instant stays the same in another session zone; a timestamp without zone keeps its UTC wall clock.
    await runStatement("SET TimeZone = 'Asia/Kolkata'")
    const d = D('2024-02-29T12:34:56.789Z')
    assert.equal(await echo(tstzD, 1184, d), '2024-02-29 18:04:56.789+05:30')
    assert.equal(await echoText(tstzD, 1184, d), '2024-02-29 18:04:56.789+05:30')
    assert.equal(await echo(tsD, 1114, d), '2024-02-29 12:34:56.789')
    assert.equal(await echoText(tsD, 1114, d), '2024-02-29 12:34:56.789')
    // Strings go as text, for the server to read in its own zone.
    assert.equal(await echo(tstzD, 1184, '2024-02-29 12:00'), '2024-02-29 12:00:00+05:30')
  } finally {
    await runStatement("SET TimeZone = 'UTC'")
  }
})
