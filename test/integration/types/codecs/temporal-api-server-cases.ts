import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ParameterError, Range, type Client } from '../../../../src/index.js'
import { CodecError } from '../../../../src/types/codec.js'
import { TypeCatalog } from '../../../../src/types/catalog.js'
import { fileClient, uniqueName } from '../../../support/client.js'
import { fetchBoth } from '../../../support/codecs/type-roundtrip.js'
import { decodeIn } from '../../../support/codecs/temporal.js'

// The Temporal tests of temporal-api-server.test.ts, for a runtime with the global
// Temporal. Values are compared by their Temporal class and their ISO string.

/* eslint-disable @typescript-eslint/no-explicit-any */
const T = (globalThis as any).Temporal

/** '[Temporal.Instant] 2024-...Z' for a Temporal value; numbers (the infinities) as they are. */
function shown(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return v
  if (Array.isArray(v)) return v.map(shown)
  if (v instanceof Range) return `${v.lowerInclusive ? '[' : '('}${String(shown(v.lower))},${String(shown(v.upper))}${v.upperInclusive ? ']' : ')'}`
  const tag = (v as { [Symbol.toStringTag]?: string })[Symbol.toStringTag]
  return `[${tag}] ${String(v)}`
}

type Want = string | number | { error: RegExp }

const view = new TypeCatalog().view({ temporal: true })

/** Each `[sql, want]` decoded from the server's text and binary bytes: both agree, and are `want`. */
async function decodes(cast: string, oid: number, cases: readonly (readonly [string, Want])[]): Promise<void> {
  const { text, binary } = await fetchBoth(cases.map(([sql]) => `${sql}::${cast}`))
  const codec = view.codec(oid)
  cases.forEach(([sql, want], i) => {
    const outcome = (decode: (b: Uint8Array, s: number, e: number) => unknown, bytes: Buffer): unknown => {
      try {
        return shown(decodeIn(decode, bytes))
      } catch (e) {
        if (!(e instanceof CodecError)) throw e
        return { error: e.message }
      }
    }
    const label = `${sql}::${cast} (server text '${text[i]!.toString()}')`
    const fromText = outcome(codec.decodeText, text[i]!)
    const fromBinary = outcome(codec.decodeBinary!, binary[i]!)
    if (typeof want === 'object') {
      for (const got of [fromText, fromBinary]) {
        assert.ok(typeof got === 'object' && got !== null && 'error' in got, `${label}: expected an error, got ${String(got)}`)
        assert.match((got as { error: string }).error, want.error, label)
      }
      return
    }
    assert.deepEqual(fromText, fromBinary, label)
    assert.equal(fromBinary, want, label)
  })
}

/** The rows of `sql` in text (the simple protocol) and in binary (an extended query's second execution): they must agree. */
async function bothFormats(db: Client, sql: string, params: unknown[] = []): Promise<unknown[]> {
  const text = params.length === 0 ? (await db.simpleQuery(sql))[0]!.rows : (await db.query(sql, params)).rows
  await db.query(sql, params)
  const binary = (await db.query(sql, params)).rows
  assert.deepEqual(shown(binary), shown(text), sql)
  return binary.map((r) => shown(Object.values(r as object)))
}

export function checkTemporalValues(): void {
  test('decoding: timestamptz as Temporal.Instant, exact to the microsecond, BC and the limits of Instant', () =>
    decodes('timestamptz', 1184, [
      ["'2024-02-29 12:34:56.123456+00'", '[Temporal.Instant] 2024-02-29T12:34:56.123456Z'],
      ["'2024-02-29 12:34:56.123456-03:30'", '[Temporal.Instant] 2024-02-29T16:04:56.123456Z'],
      ["'1999-12-31 23:59:59.999999+00'", '[Temporal.Instant] 1999-12-31T23:59:59.999999Z'],
      ["'0044-03-15 12:00:00.000001+00 BC'", '[Temporal.Instant] -000043-03-15T12:00:00.000001Z'],
      ["'4714-11-24 00:00:00+00 BC'", '[Temporal.Instant] -004713-11-24T00:00:00Z'],
      ["'275760-09-13 00:00:00+00'", '[Temporal.Instant] +275760-09-13T00:00:00Z'],
      ["'275760-09-13 00:00:00.000001+00'", { error: /beyond the range of a Temporal\.Instant/ }],
      ["'294276-12-31 23:59:59.999999+00'", { error: /beyond the range of a Temporal\.Instant/ }],
      ["'infinity'", Infinity],
      ["'-infinity'", -Infinity],
    ]))

  test('decoding: timestamp as Temporal.PlainDateTime', () =>
    decodes('timestamp', 1114, [
      ["'2024-02-29 12:34:56.123456'", '[Temporal.PlainDateTime] 2024-02-29T12:34:56.123456'],
      ["'0001-01-01 00:00:00 BC'", '[Temporal.PlainDateTime] 0000-01-01T00:00:00'],
      ["'4714-11-24 00:00:00.5 BC'", '[Temporal.PlainDateTime] -004713-11-24T00:00:00.5'],
      ["'275760-09-13 23:59:59.999999'", '[Temporal.PlainDateTime] +275760-09-13T23:59:59.999999'],
      ["'275760-09-14 00:00:00'", { error: /beyond the range of a Temporal\.PlainDateTime/ }],
      ["'infinity'", Infinity],
      ["'-infinity'", -Infinity],
    ]))

  test('decoding: date as Temporal.PlainDate', () =>
    decodes('date', 1082, [
      ["'2024-02-29'", '[Temporal.PlainDate] 2024-02-29'],
      ["'0044-03-15 BC'", '[Temporal.PlainDate] -000043-03-15'],
      ["'4714-11-24 BC'", '[Temporal.PlainDate] -004713-11-24'],
      ["'275760-09-13'", '[Temporal.PlainDate] +275760-09-13'],
      ["'275760-09-14'", { error: /beyond the range of a Temporal\.PlainDate/ }],
      ["'5874897-12-31'", { error: /beyond the range of a Temporal\.PlainDate/ }],
      ["'infinity'", Infinity],
      ["'-infinity'", -Infinity],
    ]))

  test('decoding: time as Temporal.PlainTime; 24:00:00 has none', () =>
    decodes('time', 1083, [
      ["'00:00:00'", '[Temporal.PlainTime] 00:00:00'],
      ["'12:34:56.5'", '[Temporal.PlainTime] 12:34:56.5'],
      ["'23:59:59.999999'", '[Temporal.PlainTime] 23:59:59.999999'],
      ["'24:00:00'", { error: /24:00:00 has no Temporal\.PlainTime/ }],
    ]))

  test('decoding: interval as Temporal.Duration, months into years, nothing carried between months, days and time', async () => {
    const cases: [string, Want][] = [
      ["'1 year 2 mons 3 days 04:05:06.789'", '[Temporal.Duration] P1Y2M3DT4H5M6.789S'],
      ["'-1 year -2 mons -3 days -04:05:06.789'", '[Temporal.Duration] -P1Y2M3DT4H5M6.789S'],
      ["'14 months 40 days 100 hours'", '[Temporal.Duration] P1Y2M40DT100H'],
      ["'-0.000001 seconds'", '[Temporal.Duration] -PT0.000001S'],
      ["'0'", '[Temporal.Duration] PT0S'],
      ["'-2562047788 hours -54.775808 seconds'", '[Temporal.Duration] -PT2562047788H54.775808S'],
      ["'1 mon -1 days'", { error: /mixes signs/ }],
      ["'1 day -00:00:01'", { error: /mixes signs/ }],
    ]
    const version = Number((await fetchBoth(["current_setting('server_version_num')"])).text[0]!.toString())
    if (version >= 170000) cases.push(["'infinity'", Infinity], ["'-infinity'", -Infinity])
    await decodes('interval', 1186, cases)
  })

  test('a client with the option: columns, arrays, ranges and multiranges in both formats', async () => {
    const db = await fileClient({ options: { types: { temporal: true } } })
    const rows = await bothFormats(
      db,
      `SELECT '2024-02-29 12:34:56.123456+00'::timestamptz AS tz, '2024-02-29 12:34:56.123456'::timestamp AS ts, '2024-02-29'::date AS d,
         '12:34:56.000001'::time AS t, '1 year 2 days 00:00:00.000001'::interval AS i,
         ARRAY['2024-01-01 00:00:00.000001+00', NULL, 'infinity']::timestamptz[] AS tzs, ARRAY['0044-03-15 BC']::date[] AS ds,
         tstzrange('2024-01-01 00:00:00+00', '2024-01-02 00:00:00.5+00') AS tzr, tsrange('2024-01-01', NULL) AS tsr,
         daterange('2024-01-01', '2024-02-01', '[]') AS dr, '12:00:00+05:30'::timetz AS ttz`,
    )
    assert.deepEqual(rows[0], [
      '[Temporal.Instant] 2024-02-29T12:34:56.123456Z',
      '[Temporal.PlainDateTime] 2024-02-29T12:34:56.123456',
      '[Temporal.PlainDate] 2024-02-29',
      '[Temporal.PlainTime] 12:34:56.000001',
      '[Temporal.Duration] P1Y2DT0.000001S',
      ['[Temporal.Instant] 2024-01-01T00:00:00.000001Z', null, Infinity],
      ['[Temporal.PlainDate] -000043-03-15'],
      '[[Temporal.Instant] 2024-01-01T00:00:00Z,[Temporal.Instant] 2024-01-02T00:00:00.5Z)',
      '[[Temporal.PlainDateTime] 2024-01-01T00:00:00,null)',
      // daterange is canonical: [] becomes [ , next day).
      '[[Temporal.PlainDate] 2024-01-01,[Temporal.PlainDate] 2024-02-02)',
      '12:00:00+05:30',
    ])
    const multi = await bothFormats(db, `SELECT datemultirange(daterange('2024-01-01', '2024-01-03'), daterange('2024-02-01', NULL)) AS m`)
    assert.deepEqual(multi[0], [['[[Temporal.PlainDate] 2024-01-01,[Temporal.PlainDate] 2024-01-03)', '[[Temporal.PlainDate] 2024-02-01,null)']])
    // A query can turn it off, and other options then apply.
    const off = await db.query(`SELECT '2024-02-29'::date AS d`, [], { types: { temporal: false } })
    assert.deepEqual(off.rows, [{ d: '2024-02-29' }])
  })

  test('timestamptz: the TimeZone setting changes the text on the wire, never the Instant (offsets with seconds too)', async () => {
    const db = await fileClient({ options: { types: { temporal: true } } })
    for (const zone of ['UTC', 'America/New_York', 'Asia/Kolkata', 'Europe/Amsterdam']) {
      await db.query(`SET TimeZone = '${zone}'`)
      const [text] = await db.simpleQuery(`SELECT '1800-01-01 00:00:00.000001+00'::timestamptz AS old, '2024-07-01 12:00:00+00'::timestamptz AS now, '1800-01-01 00:00:00.000001+00'::timestamptz::text AS wire`)
      const row = text!.rows[0] as { old: unknown; now: unknown; wire: string }
      assert.equal(shown(row.old), '[Temporal.Instant] 1800-01-01T00:00:00.000001Z', `${zone}: ${row.wire}`)
      assert.equal(shown(row.now), '[Temporal.Instant] 2024-07-01T12:00:00Z', zone)
      // Local mean time before time zones: an offset with seconds (which ones depends on the time zone data).
      if (zone === 'Europe/Amsterdam') assert.match(row.wire, /\+00:\d\d:\d\d$/)
    }
    await db.query(`SET TimeZone = 'UTC'`)
  })

  test('parameters: Temporal values without the option, first execution (text) and later ones (binary) store the same', async () => {
    const db = await fileClient({ options: { types: { timestamps: 'string' } }, setup: "SET TimeZone = 'UTC'" })
    const instant = T.Instant.from('2024-02-29T12:34:56.1234565Z') // a tie: rounded to even
    const zoned = T.ZonedDateTime.from('2024-07-01T12:00:00.000001[Europe/Amsterdam]')
    const pdt = T.PlainDateTime.from('-000043-03-15T23:59:59.9999996') // carried into the next day
    const pd = T.PlainDate.from('2024-02-29')
    const pt = T.PlainTime.from('12:34:56.000001')
    const dur = T.Duration.from({ years: 1, months: 14, weeks: 1, days: 2, hours: 100, seconds: 5, microseconds: 7, nanoseconds: 500 })
    const cases: [string, unknown, string][] = [
      ['$1::timestamptz', instant, '2024-02-29T12:34:56.123456Z'],
      ['$1::timestamptz', zoned, '2024-07-01T10:00:00.000001Z'],
      ['$1::timestamp', instant, '2024-02-29T12:34:56.123456'],
      ['$1::timestamp', zoned, '2024-07-01T12:00:00.000001'],
      ['$1::timestamp', pdt, '0044-03-16T00:00:00 BC'],
      ['$1::timestamp', pd, '2024-02-29T00:00:00'],
      ['$1::timestamptz', pd, '2024-02-29T00:00:00Z'],
      ['$1::timestamptz', T.PlainDateTime.from('2024-02-29T01:02:03.5'), '2024-02-29T01:02:03.5Z'],
      ['$1::date::text', pd, '2024-02-29'],
      ['$1::date::text', pdt, '0044-03-16 BC'],
      ['$1::date::text', zoned, '2024-07-01'],
      ['$1::time::text', pt, '12:34:56.000001'],
      ['$1::time::text', zoned, '12:00:00.000001'],
      ['$1::time::text', T.PlainTime.from('23:59:59.9999999'), '24:00:00'],
      ['$1::timetz::text', zoned, '12:00:00.000001+02'],
      ['$1::timetz::text', pt, '12:34:56.000001+00'],
      ['$1::interval::text', dur, '2 years 2 mons 9 days 100:00:05.000008'],
      ['$1::interval::text', T.Duration.from({ hours: -2562047788 }), '-2562047788:00:00'],
      ['$1::timestamptz[]', [instant, null], '{"2024-02-29T12:34:56.123456Z",null}'],
      ['$1::tstzrange::text', new Range(instant, null), '["2024-02-29 12:34:56.123456+00",)'],
    ]
    for (const [expr, value, want] of cases) {
      const sql = `SELECT ${expr} AS v /* ${uniqueName('p')} */`
      const got: unknown[] = []
      for (let i = 0; i < 3; i++) {
        const v = (await db.query(sql, [value])).rows[0]!.v
        got.push(Array.isArray(v) ? `{${v.map((e) => (e === null ? 'null' : JSON.stringify(e))).join(',')}}` : v)
      }
      assert.deepEqual(got, [want, want, want], `${expr} with ${String(value)}`)
    }
  })

  test('parameters: the server infers the type from the context, as for any value', async () => {
    const table = uniqueName('temporal_params')
    const db = await fileClient({
      options: { types: { temporal: true } },
      setup: `CREATE TABLE ${table} (tz timestamptz, ts timestamp, d date, t time, i interval, tzs timestamptz[], r tstzrange)`,
      cleanup: `DROP TABLE ${table}`,
    })
    const now = T.Now.instant()
    const row = [now, T.PlainDateTime.from('2024-02-29T12:00:00.000001'), T.PlainDate.from('0001-01-01'), T.PlainTime.from('00:00:00.000001'), T.Duration.from({ months: 1, days: 1, microseconds: 1 }), [now], new Range(now, now, '[]')]
    for (let i = 0; i < 3; i++) await db.query(`INSERT INTO ${table} VALUES ($1, $2, $3, $4, $5, $6, $7)`, row)
    const rows = (await db.query(`SELECT * FROM ${table}`)).rows as Record<string, any>[]
    const us = now.round({ smallestUnit: 'microsecond', roundingMode: 'halfEven' })
    assert.equal(rows.length, 3)
    for (const r of rows) {
      assert.ok(r.tz.equals(us), `${r.tz} is ${us}`)
      assert.equal(String(r.ts), '2024-02-29T12:00:00.000001')
      assert.equal(String(r.d), '0001-01-01')
      assert.equal(String(r.t), '00:00:00.000001')
      assert.equal(String(r.i), 'P1M1DT0.000001S')
      assert.ok(r.tzs[0].equals(us))
      assert.ok(r.r.lower.equals(us) && r.r.upperInclusive)
    }
    const found = await db.query(`SELECT count(*)::int AS n FROM ${table} WHERE tz = $1 AND d < $2`, [us, T.PlainDate.from('0001-01-02')])
    assert.deepEqual(found.rows, [{ n: 3 }])
  })

  test('parameters: a Temporal value of no fitting type is a ParameterError naming it', async () => {
    const db = await fileClient()
    for (const [sql, value, message] of [
      ['SELECT $1::int4', T.PlainDate.from('2024-01-01'), /\$1 \(int4\).*Temporal\.PlainDate/],
      ['SELECT $1::timestamptz', T.PlainTime.from('12:00'), /\$1 \(timestamptz\).*Temporal\.PlainTime/],
      ['SELECT $1::interval', T.Instant.from('2024-01-01T00:00:00Z'), /\$1 \(interval\).*Temporal\.Instant/],
      ['SELECT $1::date', T.PlainYearMonth.from('2024-01'), /Temporal\.PlainYearMonth/],
      ['SELECT $1::timestamp', T.PlainDateTime.from('-004714-01-01T00:00:00'), /out of range for timestamp/],
    ] as const) {
      // The second execution encodes by the described type; the first sends text the server may refuse itself.
      await db.query(sql, [null])
      await assert.rejects(db.query(sql, [value]), (e: unknown) => e instanceof ParameterError && message.test(e.message), `${sql} with ${String(value)}`)
    }
    await assert.rejects(db.query('SELECT $1 AS v /* unprepared */', [T.PlainMonthDay.from('01-01')], { prepare: false }), (e: unknown) => e instanceof ParameterError && /PlainMonthDay has no PostgreSQL type/.test(e.message))
  })

  test('COPY: rows in binary and text read and written as Temporal values', async () => {
    const table = uniqueName('temporal_copy')
    const db = await fileClient({
      options: { types: { temporal: true } },
      setup: `CREATE TABLE ${table} (tz timestamptz, ts timestamp, d date, t time, i interval, ds date[])`,
      cleanup: `DROP TABLE ${table}`,
    })
    const values = [
      T.Instant.from('2024-02-29T12:34:56.123456Z'),
      T.PlainDateTime.from('-000043-03-15T12:00:00.000001'),
      T.PlainDate.from('2024-02-29'),
      T.PlainTime.from('23:59:59.999999'),
      T.Duration.from({ years: -1, days: -2, microseconds: -3 }),
      [T.PlainDate.from('2024-01-01'), null],
    ]
    for (const format of ['binary', 'text', 'csv'] as const) {
      await db.query(`TRUNCATE ${table}`)
      await db.copyFromRows(table, [values], { format })
      const rows: unknown[] = []
      for await (const r of db.copyToRows(`SELECT * FROM ${table}`, { format, rowMode: 'array' })) rows.push(shown(r))
      assert.deepEqual(rows, [shown(values)], format)
    }
    // Binary COPY has no text to fall back on: a wall-clock time for a timestamptz column needs the server's TimeZone.
    await assert.rejects(
      db.copyFromRows(table, [[T.PlainDateTime.from('2024-01-01T00:00')]], { columns: ['tz'] }),
      (e: unknown) => e instanceof Error && /cannot write a Temporal\.PlainDateTime as timestamptz.*format: 'text'/.test(e.message),
    )
    await db.copyFromRows(table, [[T.PlainDateTime.from('2024-01-01T00:00')]], { columns: ['tz'], format: 'text' })
  })
}
