import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { ascii, canonicalNumeric, codecOf, decode, encodeBinary } from '../../../support/codecs/scalar-table.js'
import { Money } from '../../../../src/types/money.js'

// Property tests without a server: random values through encode then decode, in
// binary and in text, must come back unchanged.

const RUNS = { numRuns: 300 }

const digits = (max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: max })


test('integers: binary and text round trips at every width', () => {
  const widths: [number, number, number][] = [
    [21, -32768, 32767],
    [23, -2147483648, 2147483647],
    [26, 0, 4294967295],
  ]
  for (const [oid, min, max] of widths) {
    const c = codecOf(oid)
    fc.assert(
      fc.property(fc.integer({ min, max }), (n) => {
        assert.equal(decode(c.decodeBinary, encodeBinary(c, n) as Buffer), n)
        assert.equal(decode(c.decodeText, c.encodeText(n)), n)
      }),
      RUNS,
    )
  }
  const i8 = codecOf(20)
  fc.assert(
    fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (n) => {
      assert.equal(decode(i8.decodeBinary, encodeBinary(i8, n) as Buffer), n)
      assert.equal(decode(i8.decodeText, i8.encodeText(n)), n)
    }),
    RUNS,
  )
  const i8n = codecOf(20, { int8: 'number' })
  fc.assert(
    fc.property(fc.maxSafeInteger(), (n) => {
      assert.equal(decode(i8n.decodeBinary, encodeBinary(i8n, n) as Buffer), n)
      assert.equal(decode(i8n.decodeText, i8n.encodeText(n)), n)
    }),
    RUNS,
  )
  const x8 = codecOf(5069)
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), (n) => {
      assert.equal(decode(x8.decodeBinary, encodeBinary(x8, n) as Buffer), n)
      assert.equal(decode(x8.decodeText, x8.encodeText(n)), n)
    }),
    RUNS,
  )
})

test('float8 and float4: every double and float32 (NaN, ±0, subnormals) round trips exactly', () => {
  const f8 = codecOf(701)
  fc.assert(
    fc.property(fc.double(), (n) => {
      assert.ok(Object.is(decode(f8.decodeBinary, encodeBinary(f8, n) as Buffer), n))
      assert.ok(Object.is(decode(f8.decodeText, f8.encodeText(n)), n))
    }),
    { numRuns: 2000 },
  )
  const f4 = codecOf(700)
  fc.assert(
    fc.property(fc.float(), (n) => {
      assert.ok(Object.is(decode(f4.decodeBinary, encodeBinary(f4, n) as Buffer), n))
      assert.ok(Object.is(decode(f4.decodeText, f4.encodeText(n)), n))
    }),
    { numRuns: 2000 },
  )
  // Any double within float32 range rounds as Math.fround does.
  fc.assert(
    fc.property(fc.double({ min: -3e38, max: 3e38, noNaN: true }), (n) => {
      const f = Math.fround(n)
      if (f === 0 && n !== 0) return
      assert.ok(Object.is(decode(f4.decodeBinary, encodeBinary(f4, n) as Buffer), f))
      assert.ok(Object.is(decode(f4.decodeText, f4.encodeText(n)), f))
    }),
    { numRuns: 1000 },
  )
})

test('float text: the fast path for short decimals gives exactly what Number() gives', () => {
  const c = codecOf(701)
  fc.assert(
    fc.property(fc.boolean(), digits(18), fc.option(digits(18), { nil: undefined }), (neg, i, f) => {
      fc.pre(i !== '' || !!f)
      const s = `${neg ? '-' : ''}${i}${f === undefined ? '' : '.' + f}`
      assert.ok(Object.is(decode(c.decodeText, s), Number(s)), s)
    }),
    { numRuns: 3000 },
  )
})

test('numeric: strings in any numeric syntax encode to binary that decodes to PostgreSQL text (bigint oracle)', () => {
  const c = codecOf(1700)
  fc.assert(
    fc.property(
      fc.boolean(),
      digits(60),
      fc.option(digits(60), { nil: undefined }),
      fc.option(fc.integer({ min: -200, max: 200 }), { nil: undefined }),
      fc.constantFrom('', '+'),
      (neg, intDigits, frac, exp, plus) => {
        if (intDigits === '' && !frac) return
        const s = `${neg ? '-' : plus}${intDigits}${frac === undefined ? '' : '.' + frac}${exp === undefined ? '' : 'e' + exp}`
        const expected = canonicalNumeric(neg, intDigits, frac ?? '', exp ?? 0)
        const bin = encodeBinary(c, s)
        assert.ok(bin, s)
        assert.equal(decode(c.decodeBinary, bin), expected, s)
      },
    ),
    { numRuns: 1000 },
  )
})

test('numeric: huge integers and tiny fractions', () => {
  const c = codecOf(1700)
  fc.assert(
    fc.property(fc.boolean(), fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: 200 }), (neg, len, scale) => {
      const body = '7' + '0123456789'.repeat(100).slice(0, len - 1)
      const text = canonicalNumeric(neg, body, '', -scale)
      assert.equal(decode(c.decodeBinary, encodeBinary(c, text) as Buffer), text)
    }),
    RUNS,
  )
})

test('numeric: numbers go as their shortest decimal; bigints exactly', () => {
  const s = codecOf(1700)
  const n = codecOf(1700, { numeric: 'number' })
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (v) => {
      const bin = encodeBinary(n, v) as Buffer
      assert.equal(decode(n.decodeBinary, bin), v === 0 ? 0 : v)
      assert.equal(decode(s.decodeBinary, bin), decode(s.decodeBinary, encodeBinary(s, String(v)) as Buffer))
    }),
    { numRuns: 1000 },
  )
  fc.assert(
    fc.property(fc.bigInt({ min: -(10n ** 80n), max: 10n ** 80n }), (v) => {
      assert.equal(decode(s.decodeBinary, encodeBinary(s, v) as Buffer), v.toString())
    }),
    RUNS,
  )
})

test('money: int64 minor units round trip; text forms in any grouping decode to the same', () => {
  const c = codecOf(790)
  fc.assert(
    fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (v) => {
      assert.deepEqual(decode(c.decodeBinary, encodeBinary(c, new Money(v)) as Buffer), new Money(v))
      const abs = (v < 0n ? -v : v).toString().padStart(3, '0')
      const units = abs.slice(0, -2).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
      const text = `${v < 0n ? '-' : ''}$${units}.${abs.slice(-2)}`
      assert.deepEqual(decode(c.decodeText, text), new Money(v), text)
      assert.deepEqual(decode(c.decodeText, v < 0n ? `($${units}.${abs.slice(-2)})` : text), new Money(v))
    }),
    RUNS,
  )
})

test('text: any well-formed string without NUL round trips; others are refused', () => {
  const c = codecOf(25)
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => {
      const ok = !s.includes('\0') && (s as unknown as { isWellFormed(): boolean }).isWellFormed()
      if (!ok) {
        assert.throws(() => encodeBinary(c, s), { name: 'CodecError' })
        return
      }
      const bin = encodeBinary(c, s) as Buffer
      assert.deepEqual(bin, ascii(s))
      assert.equal(decode(c.decodeBinary, bin), s)
      assert.equal(decode(c.decodeText, ascii(c.encodeText(s))), s)
    }),
    { numRuns: 1000 },
  )
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 50 }), (s) => {
      fc.pre(!s.includes('\0'))
      assert.equal(decode(c.decodeBinary, encodeBinary(c, s) as Buffer), s)
    }),
    RUNS,
  )
})

/** bytea_output = 'escape': printable ASCII as itself, backslash doubled, other bytes as \ooo. */
function escapeFormat(b: Uint8Array): string {
  let s = ''
  for (const x of b) {
    if (x === 0x5c) s += '\\\\'
    else if (x < 0x20 || x > 0x7e) s += '\\' + x.toString(8).padStart(3, '0')
    else s += String.fromCharCode(x)
  }
  return s
}

test('bytea: binary, hex and escape formats all round trip', () => {
  const c = codecOf(17)
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (b) => {
      const expected = Buffer.from(b)
      assert.deepEqual(decode(c.decodeBinary, encodeBinary(c, b) as Buffer), expected)
      assert.deepEqual(decode(c.decodeText, c.encodeText(b)), expected)
      assert.deepEqual(decode(c.decodeText, escapeFormat(b)), expected)
    }),
    RUNS,
  )
})

test('uuid: 16 random bytes to text and back, in every accepted spelling', () => {
  const c = codecOf(2950)
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (b) => {
      const s = decode(c.decodeBinary, b) as string
      assert.match(s, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      assert.equal(decode(c.decodeText, s), s)
      for (const spelling of [s, s.toUpperCase(), s.replaceAll('-', ''), s.replaceAll('-', '').toUpperCase()]) {
        assert.deepEqual(encodeBinary(c, spelling), Buffer.from(b))
      }
    }),
    RUNS,
  )
})

test('json and jsonb: any JSON value round trips through binary and text', () => {
  const json = codecOf(114)
  const jsonb = codecOf(3802)
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const expected = JSON.parse(JSON.stringify(v)) as unknown
      if (typeof v === 'string') {
        // A string parameter is JSON text: it goes as text, unchanged.
        assert.equal(encodeBinary(jsonb, v), false)
        assert.equal(jsonb.encodeText(JSON.stringify(v)), JSON.stringify(v))
      } else {
        assert.deepStrictEqual(decode(json.decodeBinary, encodeBinary(json, v) as Buffer), expected)
        assert.deepStrictEqual(decode(jsonb.decodeBinary, encodeBinary(jsonb, v) as Buffer), expected)
      }
      assert.deepStrictEqual(decode(jsonb.decodeText, ascii(jsonb.encodeText(JSON.stringify(v)))), expected)
      assert.deepStrictEqual(decode(json.decodeText, ascii(json.encodeText(typeof v === 'string' ? JSON.stringify(v) : v))), expected)
    }),
    RUNS,
  )
})

test('pg_lsn: any uint64 round trips through binary, text and bigint', () => {
  const c = codecOf(3220)
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), (n) => {
      const bin = encodeBinary(c, n) as Buffer
      const s = decode(c.decodeBinary, bin) as string
      assert.match(s, /^(0|[1-9A-F][0-9A-F]{0,7})\/(0|[1-9A-F][0-9A-F]{0,7})$/)
      assert.equal(decode(c.decodeText, s), s)
      assert.deepEqual(encodeBinary(c, s), bin)
      assert.equal(c.encodeText(n), s)
      const [hi, lo] = s.split('/') as [string, string]
      assert.equal((BigInt('0x' + hi) << 32n) | BigInt('0x' + lo), n)
    }),
    RUNS,
  )
})
