import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import type { Client } from '../../../src/index.js'
import { Interval } from '../../../src/types/interval.js'
import { binaryDecodable, parseResponse, parseStream, WireInterval, WireParser, WireServerError } from '../../../src/wire/index.js'
import { openClient } from '../../support/client.js'
import { getTestServer } from '../../support/servers/test-server.js'
import { WireCapture, type CaptureFormat } from '../../support/codecs/wire-capture.js'

// pipegres/wire against a live server: what it decodes from the server's own
// messages (recorded directly, and forwarded by queryRaw) must equal what the
// Node client decodes from the same statement, value for value.

let db: Client
let capture: WireCapture

before(async () => {
  db = await openClient()
  const server = await getTestServer()
  capture = await WireCapture.open({ path: `${server.socketDir}/.s.PGSQL.${server.port}` }, server.users.trust.user, server.database)
})

after(async () => {
  await capture?.close()
  await db?.end()
})

// Deterministic in n, so that separate sessions compute the same values; every
// type pipegres/wire knows, with NULLs, arrays and a column it does not know.
const MANY_TYPES = `SELECT n, n::int2 AS i2, (n * 1000003)::int4 AS i4, (n::int8 * 4611686018427387) AS i8, n::oid AS o,
  (n / 7.0)::float8 AS f8, (n / 7.0)::float4 AS f4, (n * 1.0001 - 1000)::numeric(12, 4) AS num, ('1e' || (n % 40 - 20))::numeric AS num2,
  md5(n::text) AS t, repeat('é✓', n % 5) AS uni, (n % 3 = 0) AS b, ('n' || n)::name AS nm, chr(65 + n % 26)::"char" AS ch,
  ('x' || n)::char(8) AS bp, ('v' || n)::varchar(10) AS vc,
  ('2000-01-01'::date + n * 97) AS d, ('2000-01-01 00:00:00+00'::timestamptz + n * interval '37 hours 13.123457 sec') AS tz,
  ('1999-06-01 12:00:00'::timestamp - n * interval '1001 hours 0.5 sec') AS ts, ('00:00:00'::time + n * interval '43.123 sec') AS tm,
  ('12:00:00+05:30'::timetz + n * interval '1 min') AS ttz, make_interval(months => n % 25 - 12, days => n % 9 - 4, secs => n * 1.25) AS iv,
  md5(n::text)::uuid AS u, decode(md5(n::text), 'hex') AS by, json_build_object('n', n, 'a', ARRAY[n, n + 1]) AS j,
  jsonb_build_object('n', n, 's', md5(n::text)) AS jb, CASE WHEN n % 4 = 0 THEN NULL ELSE n END AS maybe,
  ARRAY[n, NULL, -n] AS ai, ARRAY[md5(n::text), NULL, ''] AS at, ARRAY[[n, n + 1], [n + 2, n + 3]] AS a2,
  ARRAY[(n / 3.0)::numeric(10, 3)] AS an, ARRAY['2000-01-01'::date + n, 'infinity'] AS ad,
  ARRAY['2000-01-01 00:00:00+00'::timestamptz + n * interval '1 sec'] AS atz, ARRAY[n * interval '1 hour'] AS aiv,
  ARRAY[md5(n::text)::uuid] AS au, ARRAY[decode(md5(n::text), 'hex'), NULL] AS aby, ARRAY[jsonb_build_object('n', n)] AS ajb,
  ARRAY[(n / 7.0)::float8, 'NaN'] AS af8, ARRAY[n % 2 = 0] AS ab, point(n, n / 2.0) AS pt
  FROM generate_series(1, 300) AS n`

/** The Node client's values in pipegres/wire's representation (bytes as Uint8Array, Interval as WireInterval). */
function asWire(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return Uint8Array.from(v)
  if (v instanceof Interval) return new WireInterval(v.months, v.days, v.microseconds)
  if (Array.isArray(v)) return v.map(asWire)
  return v
}

async function reference(sql: string): Promise<unknown[][]> {
  // The second execution of a statement comes back in binary; the first in text. Both must match.
  const first = await db.query<unknown[]>(sql, [], { rowMode: 'array' })
  const second = await db.query<unknown[]>(sql, [], { rowMode: 'array' })
  assert.deepEqual(second.rows, first.rows)
  return first.rows.map((r) => r.map(asWire))
}

function wireRows(data: Uint8Array): unknown[][] {
  const p = new WireParser({ rowMode: 'array' })
  const rows = p.push(data).flatMap((e) => (e.type === 'row' ? [e.row] : []))
  p.end()
  return rows
}

/** Runs queryRaw into a stream and returns everything written. */
async function raw(sql: string, format: 'binary' | 'text', values: unknown[] = []): Promise<{ bytes: Uint8Array; result: Awaited<ReturnType<Client['queryRaw']>> }> {
  const out = new PassThrough()
  const chunks: Buffer[] = []
  out.on('data', (c: Buffer) => chunks.push(c))
  const result = await db.queryRaw(sql, values, out, { format })
  out.end()
  await new Promise((r) => out.once('end', r))
  return { bytes: Buffer.concat(chunks), result }
}

test('recorded from the server in text and binary, every value equals the Node client\'s', async () => {
  const expected = await reference(MANY_TYPES)
  assert.equal(expected.length, 300)
  for (const format of ['text', 'binary'] as CaptureFormat[]) {
    const rows = wireRows(await capture.extended(MANY_TYPES, format))
    const pt = rows.map((r) => r.pop())
    assert.deepEqual(rows, expected.map((r) => r.slice(0, -1)), format)
    // A type pipegres/wire does not decode stays the server's text.
    assert.equal(pt[0], '(1,0.5)')
  }
})

test('queryRaw output parses to the same values, in both formats, with the format of each column as requested', async () => {
  const expected = await reference(MANY_TYPES)
  for (const format of ['binary', 'text'] as const) {
    const { bytes, result } = await raw(MANY_TYPES, format)
    assert.deepEqual(result, { command: 'SELECT', rowCount: 300, bytes: bytes.length })
    const [res, ...rest] = await parseResponse(
      (async function* () {
        yield bytes
      })(),
      { rowMode: 'array' },
    )
    assert.equal(rest.length, 0)
    assert.deepEqual([res!.command, res!.rowCount, res!.error], ['SELECT', 300, null])
    for (const f of res!.fields) assert.equal(f.format, format === 'binary' && binaryDecodable(f.typeOid) ? 1 : 0, `${f.name} in ${format}`)
    assert.deepEqual(res!.rows.map((r) => r.slice(0, -1)), expected.map((r) => r.slice(0, -1)), format)
  }
})

test('queryRaw: several results in one stream, parameters, an empty query and a failure', async () => {
  // Nothing reads the stream before the end: it buffers everything.
  const out = new PassThrough({ highWaterMark: 1 << 20 })
  await db.queryRaw('SELECT $1::int AS a, $2::text AS b', [7, 'é'], out)
  const failure = await db.queryRaw('SELECT n, 10 / (3 - n) AS q FROM generate_series(1, 5) AS n', [], out).then(
    () => assert.fail('the query should fail'),
    (err: Error & { code?: string }) => err,
  )
  assert.equal(failure.code, '22012')
  await db.queryRaw('', [], out)
  await db.queryRaw('SELECT 1 AS last', [], out, { format: 'text' })
  out.end()
  const results = await parseResponse(out)
  assert.deepEqual(
    results.map((r) => [r.command, r.rowCount, r.empty, r.error?.code ?? null]),
    [
      ['SELECT', 1, false, null],
      ['', null, false, '22012'],
      ['', null, true, null],
      ['SELECT', 1, false, null],
    ],
  )
  assert.deepEqual(results[0]!.rows, [{ a: 7, b: 'é' }])
  assert.ok(results[1]!.error instanceof WireServerError)
  assert.equal(results[1]!.error.message, failure.message)
  assert.deepEqual(results[3]!.rows, [{ last: 1 }])
})

test('queryRaw of 20,000 rows streams through parseStream chunk by chunk', async () => {
  const sql = `SELECT n, md5(n::text) AS h, n * 1.5 AS x, ('2024-01-01'::date + n % 1000) AS d FROM generate_series(1, 20000) AS n`
  const out = new PassThrough({ highWaterMark: 4096 })
  const done = db.queryRaw(sql, [], out).finally(() => out.end())
  let chunks = 0
  async function* counted(): AsyncGenerator<Uint8Array> {
    for await (const c of out) {
      chunks++
      yield c as Buffer
    }
  }
  let rows = 0
  const day345 = new Date(Date.UTC(2024, 0, 1) + 345 * 86400000).toISOString().slice(0, 10)
  for await (const ev of parseStream(counted(), { rowMode: 'array' })) {
    if (ev.type !== 'row') continue
    rows++
    if (rows === 12345) assert.deepEqual([ev.row[0], ev.row[2], ev.row[3]], [12345, '18517.5', day345])
  }
  const r = await done
  assert.deepEqual([r.command, r.rowCount], ['SELECT', 20000])
  assert.equal(rows, 20000)
  assert.ok(chunks > 10, `${chunks} chunks`)
})
