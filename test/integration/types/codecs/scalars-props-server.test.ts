import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { RawConnection, rawConnection } from '../../../support/codecs/raw-values.js'
import type { TypeOptions } from '../../../../src/types/codec.js'
import { canonicalNumeric, codecOf } from '../../../support/codecs/scalar-table.js'
import { param, textParam, type Param } from '../../../support/codecs/type-roundtrip.js'
import { Money } from '../../../../src/types/money.js'

// Property tests against the real server: random values, many per statement.
// Encoders are judged by the text the server prints for what it received;
// decoders by the bytes the server sends for values it parsed itself, in both
// formats, which must decode to identical values.

const RUNS = { numRuns: 4 }
const batch = <T>(arb: fc.Arbitrary<T>) => fc.array(arb, { minLength: 30, maxLength: 60 })

async function run(sql: string, params: Param[], format: 0 | 1, oid: number, conn?: RawConnection): Promise<Buffer[]> {
  const c = conn ?? (await rawConnection())
  const { fields, rows } = await c.run(sql, params, format)
  for (const f of fields) assert.equal(f.typeOid, oid)
  return rows[0]!.map((b) => b!)
}

const list = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i + 1)).join(', ')

/** What the server prints for each value encoded by our codec (binary where the codec takes it). */
async function printed(oid: number, values: unknown[], options: TypeOptions = {}): Promise<string[]> {
  const codec = codecOf(oid, options)
  const rows = await run(`SELECT ${list(values.length, (i) => `$${i}::text`)}`, values.map((v) => param(codec, oid, v)), 0, 25)
  return rows.map((b) => b.toString('utf8'))
}

/** The server's values for these parameters, returned in text and in binary, decoded by our codec; asserts both formats agree. */
async function returned(oid: number, params: Param[], options: TypeOptions = {}, conn?: RawConnection): Promise<unknown[]> {
  const codec = codecOf(oid, options)
  const sql = `SELECT ${list(params.length, (i) => `$${i}`)}`
  const text = (await run(sql, params, 0, oid, conn)).map((b) => codec.decodeText(b, 0, b.length))
  if (!codec.decodeBinary) return text
  const binary = (await run(sql, params, 1, oid, conn)).map((b) => codec.decodeBinary!(b, 0, b.length))
  assert.deepStrictEqual(binary, text, `${codec.name}: binary and text decode to identical values`)
  return text
}

/** Sends values encoded by our codec and returns them as the server sends them back, decoded (both formats checked). */
async function roundTrip(oid: number, values: unknown[], options: TypeOptions = {}): Promise<unknown[]> {
  const codec = codecOf(oid, options)
  return returned(oid, values.map((v) => param(codec, oid, v)), options)
}

/** The server parses each text itself. */
const asText = (oid: number, texts: string[]): Param[] => texts.map((t) => textParam(oid, t))

test('integers of every width, against the server', async () => {
  const widths: [number, fc.Arbitrary<number | bigint>, TypeOptions][] = [
    [21, fc.integer({ min: -32768, max: 32767 }), {}],
    [23, fc.integer({ min: -2147483648, max: 2147483647 }), {}],
    [20, fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), {}],
    [20, fc.maxSafeInteger(), { int8: 'number' }],
    [26, fc.integer({ min: 0, max: 4294967295 }), {}],
    [5069, fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), {}],
  ]
  for (const [oid, arb, options] of widths) {
    await fc.assert(
      fc.asyncProperty(batch(arb), async (values) => {
        assert.deepEqual(await printed(oid, values, options), values.map(String))
        assert.deepStrictEqual(await returned(oid, asText(oid, values.map(String)), options), values)
        assert.deepStrictEqual(await roundTrip(oid, values, options), values)
      }),
      RUNS,
    )
  }
})

test('float8: any double, NaN, ±0, subnormals, against the server', async () => {
  await fc.assert(
    fc.asyncProperty(batch(fc.oneof(fc.double(), fc.constantFrom(-0, 5e-324, -5e-324, NaN, Infinity, -Infinity, Number.MAX_VALUE))), async (values) => {
      const c = codecOf(701)
      const texts = await printed(701, values)
      texts.forEach((t, i) => assert.ok(Object.is(c.decodeText(Buffer.from(t), 0, t.length), values[i]), `${t} is ${values[i]}`))
      assert.deepStrictEqual(await returned(701, asText(701, values.map((v) => c.encodeText(v)))), values)
      assert.deepStrictEqual(await roundTrip(701, values), values)
    }),
    RUNS,
  )
})

test('float4: any float32, and doubles rounded as the server rounds them', async () => {
  await fc.assert(
    fc.asyncProperty(batch(fc.float()), async (values) => {
      const c = codecOf(700)
      const texts = await printed(700, values)
      texts.forEach((t, i) => assert.ok(Object.is(c.decodeText(Buffer.from(t), 0, t.length), values[i]), `${t} is ${values[i]}`))
      assert.deepStrictEqual(await returned(700, asText(700, values.map((v) => c.encodeText(v)))), values)
      assert.deepStrictEqual(await roundTrip(700, values), values)
    }),
    RUNS,
  )
  // Doubles in float32 range: binary rounding (ours) must match the server parsing the double's own text.
  await fc.assert(
    fc.asyncProperty(batch(fc.double({ min: -3.4e38, max: 3.4e38, noNaN: true }).filter((d) => d === 0 || Math.abs(d) > 1.5e-45)), async (values) => {
      const ours = await roundTrip(700, values)
      const theirs = await returned(700, asText(700, values.map((v) => (Object.is(v, -0) ? '-0' : String(v)))))
      assert.deepStrictEqual(ours, theirs)
      assert.deepStrictEqual(ours, values.map(Math.fround))
    }),
    RUNS,
  )
})

const digits = (max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: max })

/** Numeric strings in any syntax numeric_in accepts: sign, leading zeros, point, exponent; huge and tiny. */
const numericString = fc
  .tuple(
    fc.constantFrom('', '-', '+'),
    fc.oneof(digits(20), digits(1000)),
    fc.option(fc.oneof(digits(20), digits(300)), { nil: undefined }),
    fc.option(fc.integer({ min: -300, max: 300 }), { nil: undefined }),
    fc.constantFrom('e', 'E'),
  )
  .filter(([, i, f]) => i !== '' || !!f)
  .map(([sign, i, f, exp, e]) => `${sign}${i}${f === undefined ? '' : '.' + f}${exp === undefined ? '' : e + exp}`)

test('numeric: random strings (huge, tiny, any syntax) in binary mean what they mean in text', async () => {
  await fc.assert(
    fc.asyncProperty(batch(fc.oneof(numericString, fc.constantFrom('NaN', 'nan', 'Infinity', '-inf', '+INF', '0', '-0.000', '1e-130'))), async (values) => {
      const c = codecOf(1700)
      // Every one of these goes in binary.
      for (const v of values) assert.notEqual(param(c, 1700, v).format, 0, v)
      const viaBinary = await printed(1700, values)
      const viaText = (await run(`SELECT ${list(values.length, (i) => `$${i}::text`)}`, asText(1700, values), 0, 25)).map((b) => b.toString())
      assert.deepEqual(viaBinary, viaText)
      // Decoding the server's own values gives its own text, in both formats.
      assert.deepStrictEqual(await returned(1700, asText(1700, values)), viaText)
    }),
    { numRuns: 6 },
  )
})

test('numeric: the bigint oracle agrees with the server', async () => {
  await fc.assert(
    fc.asyncProperty(batch(fc.tuple(fc.boolean(), digits(200), digits(200), fc.integer({ min: -200, max: 200 }))), async (parts) => {
      const values = parts.filter(([, i, f]) => i + f !== '').map(([neg, i, f, exp]) => ({ s: `${neg ? '-' : ''}${i}.${f}e${exp}`, expected: canonicalNumeric(neg, i, f, exp) }))
      assert.deepEqual(await printed(1700, values.map((v) => v.s)), values.map((v) => v.expected))
    }),
    RUNS,
  )
})

test('numeric: numbers go as their shortest decimal; bigints exactly; number mode reads them back', async () => {
  await fc.assert(
    fc.asyncProperty(batch(fc.double({ noNaN: true, noDefaultInfinity: true })), fc.array(fc.bigInt({ min: -(10n ** 100n), max: 10n ** 100n }), { minLength: 5, maxLength: 20 }), async (numbers, bigints) => {
      const texts = await printed(1700, numbers)
      texts.forEach((t, i) => assert.equal(Number(t), numbers[i] === 0 ? 0 : numbers[i], t))
      assert.deepStrictEqual(
        await roundTrip(1700, numbers, { numeric: 'number' }),
        numbers.map((n) => (n === 0 ? 0 : n)),
      )
      assert.deepEqual(await printed(1700, bigints), bigints.map(String))
    }),
    RUNS,
  )
})

test('money: any int64 of minor units', async () => {
  await fc.assert(
    fc.asyncProperty(batch(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((v) => new Money(v))), async (values) => {
      const c = codecOf(790)
      const texts = await printed(790, values)
      texts.forEach((t, i) => assert.deepEqual(c.decodeText(Buffer.from(t), 0, Buffer.byteLength(t)), values[i], t))
      assert.deepStrictEqual(await roundTrip(790, values), values)
    }),
    RUNS,
  )
})

const wellFormed = (s: string) => !s.includes('\0') && (s as unknown as { isWellFormed(): boolean }).isWellFormed()

test('text: any Unicode string (4-byte characters included) comes back unchanged', async () => {
  await fc.assert(
    fc.asyncProperty(batch(fc.oneof(fc.string({ unit: 'binary', maxLength: 100 }), fc.string({ unit: 'grapheme', maxLength: 40 })).filter(wellFormed)), async (values) => {
      assert.deepEqual(await printed(25, values), values)
      assert.deepStrictEqual(await roundTrip(25, values), values)
      assert.deepStrictEqual(await roundTrip(1043, values), values)
    }),
    RUNS,
  )
})

test('bytea: any bytes, back in binary, hex and escape formats', async () => {
  const conn = await RawConnection.open()
  try {
    await conn.run("SET bytea_output = 'escape'", [], 0)
    await fc.assert(
      fc.asyncProperty(batch(fc.uint8Array({ maxLength: 200 })), async (values) => {
        const expected = values.map((v) => Buffer.from(v))
        assert.deepStrictEqual(await roundTrip(17, values), expected)
        const c = codecOf(17)
        const escaped = await returned(17, values.map((v) => param(c, 17, v)), {}, conn)
        assert.deepStrictEqual(escaped, expected)
      }),
      RUNS,
    )
  } finally {
    // run() leaves the socket unreferenced; keep the event loop alive until it has closed.
    const keepAlive = setInterval(() => {}, 1000)
    await conn.close().finally(() => clearInterval(keepAlive))
  }
})

test('uuid: any 16 bytes', async () => {
  await fc.assert(
    fc.asyncProperty(batch(fc.uuid({ version: [1, 2, 3, 4, 5, 6, 7, 8] })), async (values) => {
      assert.deepEqual(await printed(2950, values.map((v) => v.toUpperCase())), values)
      assert.deepStrictEqual(await roundTrip(2950, values.map((v) => v.replaceAll('-', ''))), values)
    }),
    RUNS,
  )
})

test('json and jsonb: any JSON value', async () => {
  const noNul = (v: unknown) => !JSON.stringify(v).includes('\\u0000')
  await fc.assert(
    fc.asyncProperty(batch(fc.jsonValue().filter(noNul)), async (values) => {
      const expected = values.map((v) => JSON.parse(JSON.stringify(v)) as unknown)
      // A string parameter is JSON text: pass each value's serialisation where it is a string.
      const params = values.map((v) => (typeof v === 'string' ? JSON.stringify(v) : v))
      assert.deepStrictEqual(await roundTrip(3802, params), expected)
      assert.deepStrictEqual(await roundTrip(114, params), expected)
    }),
    RUNS,
  )
})

test('pg_lsn: any uint64', async () => {
  await fc.assert(
    fc.asyncProperty(batch(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })), async (values) => {
      const c = codecOf(3220)
      const texts = await printed(3220, values)
      texts.forEach((t, i) => {
        const [hi, lo] = t.split('/') as [string, string]
        assert.equal((BigInt('0x' + hi) << 32n) | BigInt('0x' + lo), values[i])
        assert.equal(c.encodeText(values[i]), t)
      })
      assert.deepStrictEqual(await roundTrip(3220, values), texts)
      assert.deepStrictEqual(await roundTrip(3220, texts), texts)
    }),
    RUNS,
  )
})

test('"char": all 256 byte values', async () => {
  const c = codecOf(18)
  const values = Array.from({ length: 256 }, (_, b) => c.decodeBinary!(Uint8Array.of(b), 0, 1) as string)
  const asInt = await run(`SELECT ${list(256, (i) => `$${i}::int4`)}`, values.map((v) => param(c, 18, v)), 0, 23)
  assert.deepEqual(asInt.map(String), values.map((_, b) => String(b < 128 ? b : b - 256)))
  assert.deepStrictEqual(await roundTrip(18, values), values)
})
