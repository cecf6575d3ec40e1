// test-tags: slow
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { CopyFormatOptions } from '../../../src/copy/format.js'
import { cols, decodeBytes, decodeChunks, encodeRows, EXACT } from '../../support/codecs/copy-data.js'

// Property tests without a server: random rows of many types, with every
// character that COPY treats specially, encoded in each format and decoded
// back (whole and in random pieces) must come back as the values went in.

const RUNS = { numRuns: 200 }

/** Strings heavy in the characters COPY escapes or quotes, plus any code point (no NUL, which text cannot hold). */
const nasty = fc
  .array(
    fc.oneof(
      fc.constantFrom('\t', '\n', '\r', '\\', '"', "'", ',', ';', '|', '.', 'N', '\\N', '\\.', 'x', ' ', '\u0001', '\u007f', 'é', '🎉'),
      fc.string({ unit: 'binary', maxLength: 4 }),
    ),
    { maxLength: 12 },
  )
  .map((parts) => parts.join('').replaceAll('\0', ''))

/** Canonical numeric text (as the server prints it): no leading zeros, no negative zero. */
const numericText = fc
  .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 30n }), fc.option(fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 12 }), { nil: undefined }))
  .map(([neg, int, frac]) => {
    const body = frac === undefined ? int.toString() : `${int}.${frac}`
    return neg && /[1-9]/.test(body) ? `-${body}` : body
  })

const MIN_MS = Date.UTC(-4000, 0, 1)
const MAX_MS = Date.UTC(200000, 0, 1)
const two = (n: number) => String(n).padStart(2, '0')

/** A day as PostgreSQL prints it: four or more year digits, ' BC' for years before 1. */
function pgDay(d: Date, rest = ''): string {
  const y = d.getUTCFullYear()
  const day = `${String(y > 0 ? y : 1 - y).padStart(4, '0')}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`
  return `${day}${rest}${y > 0 ? '' : ' BC'}`
}

/** A timestamptz in the exact form the timestamps: 'string' option gives ('...T12:34:56.123456Z'). */
function exactTimestamp(ms: number, us: number): string {
  const d = new Date(ms)
  const fraction = (String(d.getUTCMilliseconds()).padStart(3, '0') + String(us).padStart(3, '0')).replace(/0+$/, '')
  return pgDay(d, `T${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}${fraction ? `.${fraction}` : ''}Z`)
}

const instant = fc.integer({ min: MIN_MS, max: MAX_MS })

const COLUMNS = cols(
  ['i4', 23],
  ['i8', 20],
  ['t', 25],
  ['b', 17],
  ['n', 1700],
  ['at', 1184],
  ['exact', 1184],
  ['ia', 1007],
  ['ta', 1009],
  ['j', 3802],
  ['ok', 16],
  ['f', 701],
  ['u', 2950],
  ['d', 1082],
)

const nullable = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null, freq: 5 })

const row = fc.tuple(
  nullable(fc.integer({ min: -2147483648, max: 2147483647 })),
  nullable(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })),
  nullable(nasty),
  nullable(fc.uint8Array({ maxLength: 20 }).map((b) => Buffer.from(b))),
  nullable(numericText),
  nullable(instant.map((ms) => new Date(ms))),
  nullable(fc.tuple(instant, fc.integer({ min: 0, max: 999 })).map(([ms, us]) => exactTimestamp(ms, us))),
  nullable(fc.array(nullable(fc.integer({ min: -2147483648, max: 2147483647 })), { maxLength: 5 })),
  nullable(fc.array(nullable(nasty), { maxLength: 4 })),
  nullable(fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown)),
  nullable(fc.boolean()),
  nullable(fc.double()),
  nullable(fc.uuid().map((u) => u.toLowerCase())),
  nullable(fc.integer({ min: -2000000, max: 2000000 }).map((d) => pgDay(new Date(Date.UTC(2000, 0, 1 + d))))),
)

/** What the exact-mode decoders give back for a row as written: the Date column as its exact string. */
function expected(r: readonly unknown[]): unknown[] {
  return r.map((v) => (v instanceof Date ? exactTimestamp(v.getTime(), 0) : v))
}

const FORMATS: CopyFormatOptions[] = [
  { format: 'binary' },
  { format: 'text' },
  { format: 'csv' },
  { format: 'text', delimiter: '|' },
  { format: 'csv', delimiter: ';', quote: "'", escape: '\\' },
]

/** A JSON string value goes as its JSON text (a string given for json is JSON text, the parameter convention). */
function forBinary(r: readonly unknown[]): unknown[] {
  return r.map((v, i) => (i === 9 && typeof v === 'string' ? JSON.stringify(v) : v))
}

/** And the text forms a string-typed timestamp goes out as must be ones the decoder reads: the server's. */
function forText(r: readonly unknown[]): unknown[] {
  return forBinary(r).map((v, i) => (i === 6 && typeof v === 'string' ? v.replace('T', ' ').replace(/Z( BC)?$/, '+00$1') : v))
}

test('random rows survive encode then decode in every format, whole and in pieces', () => {
  fc.assert(
    fc.property(fc.array(row, { minLength: 1, maxLength: 4 }), fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 8 }), (rows, cuts) => {
      for (const options of FORMATS) {
        // Text and CSV carry strings for the server to parse: give the exact timestamps in its own form.
        const input = options.format === 'binary' ? rows.map(forBinary) : rows.map(forText)
        const bytes = encodeRows(COLUMNS, input, options)
        const want = rows.map(expected)
        assert.deepStrictEqual(decodeBytes(COLUMNS, bytes, options, EXACT), want, JSON.stringify(options))
        const pieces: Uint8Array[] = []
        let p = 0
        for (let k = 0; p < bytes.length; k++) {
          const n = cuts[k % cuts.length]!
          pieces.push(bytes.slice(p, p + n))
          p += n
        }
        assert.deepStrictEqual(decodeChunks(COLUMNS, pieces, options, EXACT), want)
      }
    }),
    RUNS,
  )
})

test('random text with any options survives text and CSV', () => {
  const textOptions = fc.constantFrom('\t', '|', ',', ';', '!', '#', '\u0001', '"', "'", 'X', ' ').map((delimiter) => ({ format: 'text', delimiter }) as CopyFormatOptions)
  const csvOptions = fc
    .tuple(fc.constantFrom(',', ';', '\t', '|', '\\', 'a', "'"), fc.constantFrom('"', "'", '|', '\\', '$'), fc.constantFrom('"', "'", '\\', '!', ','))
    .filter(([d, q]) => d !== q)
    .map(([delimiter, quote, escape]) => ({ format: 'csv', delimiter, quote, escape }) as CopyFormatOptions)
  const two = cols(['a', 25], ['b', 1009])
  fc.assert(
    fc.property(fc.oneof(textOptions, csvOptions), fc.array(fc.tuple(nullable(nasty), nullable(fc.array(nullable(nasty), { maxLength: 3 }))), { maxLength: 5 }), (options, rows) => {
      const bytes = encodeRows(two, rows, options)
      assert.deepStrictEqual(decodeBytes(two, bytes, options), rows)
      // One split at a random point, too.
      for (const k of [1, bytes.length >> 1, bytes.length - 1].filter((x) => x > 0 && x < bytes.length)) {
        assert.deepStrictEqual(decodeChunks(two, [bytes.slice(0, k), bytes.slice(k)], options), rows)
      }
    }),
    RUNS,
  )
})

test('binary: strings and JS values of the same value write the same bytes', () => {
  const one = (oid: number, v: unknown) => encodeRows(cols(['v', oid]), [[v]])
  fc.assert(
    fc.property(fc.integer({ min: -2147483648, max: 2147483647 }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.double({ noNaN: true }), (i, b, f) => {
      assert.deepStrictEqual(one(23, String(i)), one(23, i))
      assert.deepStrictEqual(one(20, b.toString()), one(20, b))
      assert.deepStrictEqual(one(701, Object.is(f, -0) ? '-0' : String(f)), one(701, f))
    }),
    RUNS,
  )
  fc.assert(
    fc.property(instant, (ms) => {
      const d = new Date(ms)
      assert.deepStrictEqual(one(1184, exactTimestamp(ms, 0)), one(1184, d))
      assert.deepStrictEqual(one(1114, exactTimestamp(ms, 0).replace('Z', '')), one(1114, d))
      if (ms >= 0 && ms < Date.UTC(10000, 0, 1)) assert.deepStrictEqual(one(1184, d.toISOString()), one(1184, d))
    }),
    RUNS,
  )
})
