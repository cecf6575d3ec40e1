import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { WireInterval, WireProtocolError, type WireTypeOptions } from '../../../src/wire/index.js'
import { resolveTypeOptions } from '../../../src/wire/scalars.js'
import { typeTable } from '../../../src/wire/types.js'
import { concat, int32, int64 } from '../../support/fakes/backend-messages.js'

// Property tests of the value decoders, each against a reference written
// here independently of the decoder: random values in both formats must
// decode to the reference value, and text and binary must agree.

const RUNS = { numRuns: 500 }

function decoders(oid: number, types: WireTypeOptions = {}) {
  const t = typeTable(resolveTypeOptions(types)).get(oid)
  assert.ok(t, `a decoder for ${oid}`)
  return { text: t.text, binary: (b: Uint8Array) => t.binary(b, 0, b.length) }
}

function int16(n: number): Uint8Array {
  const b = new Uint8Array(2)
  new DataView(b.buffer).setInt16(0, n)
  return b
}

const digitString = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max })

/** numeric_send's form of a decimal string, built digit group by digit group around the decimal point. */
function numericBinary(text: string): Uint8Array {
  const negative = text.startsWith('-')
  const [int, frac = ''] = text.replace('-', '').split('.')
  const dscale = frac.length
  const intPadded = int!.padStart(Math.ceil(int!.length / 4) * 4, '0')
  const fracPadded = frac.padEnd(Math.ceil(frac.length / 4) * 4, '0')
  let groups = [...(intPadded + fracPadded).matchAll(/\d{4}/g)].map((m) => Number(m[0]))
  let weight = intPadded.length / 4 - 1
  while (groups.length > 0 && groups[0] === 0) {
    groups.shift()
    weight--
  }
  while (groups.length > 0 && groups[groups.length - 1] === 0) groups.pop()
  if (groups.length === 0) weight = 0
  const sign = negative && groups.length > 0 ? 0x4000 : 0
  return concat([int16(groups.length), int16(weight), int16(sign), int16(dscale), ...groups.map(int16)])
}

test('numeric: binary gives PostgreSQL text exactly, scale zeros included; text is kept as is', () => {
  const { text, binary } = decoders(1700)
  fc.assert(
    fc.property(fc.boolean(), digitString(1, 40), digitString(0, 30), (neg, intDigits, fracDigits) => {
      const int = intDigits.replace(/^0+(?=\d)/, '')
      let s = int + (fracDigits ? '.' + fracDigits : '')
      // PostgreSQL has no negative zero.
      if (neg && /[1-9]/.test(s)) s = '-' + s
      assert.equal(binary(numericBinary(s)), s)
      assert.equal(text(s), s)
    }),
    RUNS,
  )
  const asNumber = decoders(1700, { numeric: 'number' })
  assert.equal(asNumber.binary(numericBinary('-12.50')), -12.5)
  for (const [sign, name] of [
    [0xc000, 'NaN'],
    [0xd000, 'Infinity'],
    [0xf000, '-Infinity'],
  ] as const) {
    assert.equal(binary(concat([int16(0), int16(0), Uint8Array.of(sign >> 8, 0), int16(0)])), name)
  }
})

test('numeric: malformed binary is refused, digits hidden beyond the scale included', () => {
  const { binary } = decoders(1700)
  const bad = (b: Uint8Array, re: RegExp) => assert.throws(() => binary(b), (e: unknown) => e instanceof WireProtocolError && re.test(e.message))
  bad(Uint8Array.of(0, 0, 0), /shorter than its 8-byte header/)
  bad(concat([int16(2), int16(0), int16(0), int16(0), int16(1)]), /10 bytes for 2 digits/)
  bad(concat([int16(1), int16(0), int16(0), int16(0), int16(10000)]), /base-10000 digit 10000/)
  bad(concat([int16(1), int16(0), int16(0x1000), int16(0), int16(1)]), /sign 0x1000/)
  // 1.23 stored with a scale of 1 would print as '1.2': refused, not truncated.
  bad(concat([int16(2), int16(0), int16(0), int16(1), int16(1), int16(2300)]), /digits beyond its scale/)
  bad(concat([int16(3), int16(0), int16(0), int16(4), int16(1), int16(2300), int16(1)]), /digits beyond its scale/)
  bad(concat([int16(1), int16(0), int16(0xc000), int16(0), int16(1)]), /a special value with digits/)
})

test('integers and floats: both formats agree with the value', () => {
  const i2 = decoders(21)
  const i4 = decoders(23)
  const oid = decoders(26)
  fc.assert(
    fc.property(fc.integer({ min: -32768, max: 32767 }), fc.integer(), fc.integer({ min: 0, max: 4294967295 }), (a, b, c) => {
      assert.equal(i2.binary(int16(a)), a)
      assert.equal(i2.text(String(a)), a)
      assert.equal(i4.binary(int32(b)), b)
      assert.equal(i4.text(String(b)), b)
      assert.equal(oid.binary(int32(c | 0)), c)
      assert.equal(oid.text(String(c)), c)
    }),
    RUNS,
  )
  for (const [mode, conv] of [
    ['bigint', (v: bigint) => v],
    ['string', (v: bigint) => String(v)],
  ] as const) {
    const i8 = decoders(20, { int8: mode })
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (v) => {
        assert.equal(i8.binary(int64(v)), conv(v))
        assert.equal(i8.text(String(v)), conv(v))
      }),
      RUNS,
    )
  }
  const i8n = decoders(20, { int8: 'number' })
  fc.assert(
    fc.property(fc.maxSafeInteger(), (v) => {
      assert.equal(i8n.binary(int64(BigInt(v))), v)
      assert.equal(i8n.text(String(v)), v)
    }),
    RUNS,
  )
  assert.throws(() => i8n.text('9007199254740992'), /beyond ±2\^53/)
  for (const [what, bad] of [
    [i2, '32768'],
    [i2, '1.0'],
    [i4, ''],
    [i4, ' 1'],
    [i4, '0x10'],
    [oid, '-1'],
  ] as const) {
    assert.throws(() => what.text(bad), WireProtocolError, `'${bad}'`)
  }
  assert.throws(() => decoders(20).text('9223372036854775808'), WireProtocolError)

  const f8 = decoders(701)
  // As PostgreSQL prints a float: JS's shortest digits, but with the sign of a negative zero.
  const printed = (x: number) => (Object.is(x, -0) ? '-0' : String(x))
  const f4 = decoders(700)
  fc.assert(
    fc.property(fc.double(), (x) => {
      const b = new Uint8Array(8)
      new DataView(b.buffer).setFloat64(0, x)
      assert.ok(Object.is(f8.binary(b), x))
      assert.ok(Object.is(f8.text(printed(x)), x))
      const b4 = new Uint8Array(4)
      new DataView(b4.buffer).setFloat32(0, x)
      const x4 = Math.fround(x)
      assert.ok(Object.is(f4.binary(b4), x4))
      // PostgreSQL prints the shortest text that reads back as the same float4; any such text must give the float4.
      assert.ok(Object.is(f4.text(printed(x4)), x4))
    }),
    RUNS,
  )
  assert.throws(() => f8.text('1,5'), WireProtocolError)
  assert.throws(() => f8.text('inf'), WireProtocolError)
})

const MS_2000 = Date.UTC(2000, 0, 1)

test('dates: day numbers print as PostgreSQL prints them, checked against Date for years 1 to 9999', () => {
  const { text, binary } = decoders(1082)
  const first = Math.round((Date.UTC(1, 0, 1) - MS_2000) / 86400000) - 366
  const last = Math.round((Date.UTC(9999, 11, 31) - MS_2000) / 86400000)
  fc.assert(
    fc.property(fc.integer({ min: first, max: last }), (day) => {
      const ref = new Date(MS_2000 + day * 86400000)
      ref.getUTCFullYear()
      const y = ref.getUTCFullYear()
      const ymd = `${String(y > 0 ? y : 1 - y).padStart(4, '0')}-${String(ref.getUTCMonth() + 1).padStart(2, '0')}-${String(ref.getUTCDate()).padStart(2, '0')}${y > 0 ? '' : ' BC'}`
      assert.equal(binary(int32(day)), ymd)
      assert.equal(text(ymd), ymd)
      assert.deepEqual(decoders(1082, { dates: 'date' }).text(ymd), ref)
      assert.deepEqual(decoders(1082, { dates: 'date' }).binary(int32(day)), ref)
    }),
    RUNS,
  )
  // The whole range of date: text read back gives the same day as binary.
  const asDate = decoders(1082)
  fc.assert(
    fc.property(fc.integer({ min: -2451545, max: 2145031948 }), (day) => {
      const printed = asDate.binary(int32(day)) as string
      assert.match(printed, /^\d{4,7}-\d\d-\d\d( BC)?$/)
      assert.equal(asDate.text(printed), printed)
    }),
    RUNS,
  )
  for (const bad of ['2023-02-29', '2024-13-01', '0000-01-01', '24-01-01', '2024-01-01 AD', '01/02/2024']) {
    assert.throws(() => text(bad), /malformed date .* \(DateStyle must be ISO\)/, bad)
  }
  assert.throws(() => binary(int32(2145031949)), /out of range/)
})

/** How PostgreSQL prints a timestamp given as [day, µs of day] UTC, with a zone offset east (timestamptz) or none. */
function timestampText(day: number, us: number, offset: number | null): string {
  const local = us + (offset ?? 0) * 1_000_000
  const d = new Date(MS_2000 + day * 86400000 + Math.floor(local / 1000))
  const y = d.getUTCFullYear()
  const frac = (((local % 1_000_000) + 1_000_000) % 1_000_000).toString().padStart(6, '0').replace(/0+$/, '')
  const p2 = (n: number) => String(n).padStart(2, '0')
  let s = `${String(y > 0 ? y : 1 - y).padStart(4, '0')}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())} ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}${frac ? '.' + frac : ''}`
  if (offset !== null) {
    const a = Math.abs(offset)
    s += (offset < 0 ? '-' : '+') + p2(Math.floor(a / 3600))
    if (a % 3600) s += ':' + p2(Math.floor((a % 3600) / 60))
    if (a % 60) s += ':' + p2(a % 60)
  }
  return y > 0 ? s : s + ' BC'
}

test('timestamps: binary, text in any zone offset, and the string and Date forms all agree', () => {
  const ts = decoders(1114)
  const tz = decoders(1184)
  const tsS = decoders(1114, { timestamps: 'string' })
  const tzS = decoders(1184, { timestamps: 'string' })
  // Days whose local date a JS Date can show (years 1 BC-ish to 9999).
  const day = fc.integer({ min: -730000, max: 2900000 })
  const us = fc.integer({ min: 0, max: 86_400_000_000 - 1 })
  const offset = fc.integer({ min: -15 * 3600 - 59 * 60, max: 15 * 3600 + 59 * 60 })
  fc.assert(
    fc.property(day, us, offset, (dd, uu, off) => {
      const total = BigInt(dd) * 86_400_000_000n + BigInt(uu)
      const date = new Date(MS_2000 + dd * 86400000 + Math.floor(uu / 1000))
      assert.deepEqual(ts.binary(int64(total)), date)
      assert.deepEqual(tz.binary(int64(total)), date)
      assert.deepEqual(ts.text(timestampText(dd, uu, null)), date)
      assert.deepEqual(tz.text(timestampText(dd, uu, off)), date)
      const exact = tzS.binary(int64(total))
      assert.equal(tzS.text(timestampText(dd, uu, off)), exact)
      assert.equal(tsS.text(timestampText(dd, uu, null)), tsS.binary(int64(total)))
      assert.equal(String(exact).replace('T', ' ').replace('Z', '+00'), timestampText(dd, uu, 0))
    }),
    RUNS,
  )
  assert.equal(ts.binary(int64(2n ** 63n - 1n)), Infinity)
  assert.equal(tzS.binary(int64(-(2n ** 63n))), '-infinity')
  assert.throws(() => ts.text('2024-01-01 00:00:00+00'), /malformed timestamp/)
  assert.throws(() => tz.text('2024-01-01 00:00:00'), /malformed timestamptz/)
  assert.throws(() => tz.text('2024-01-01T00:00:00Z'), /malformed timestamptz/)
  assert.throws(() => ts.text('2024-01-01 24:00:00'), /malformed timestamp/)
  assert.throws(() => ts.binary(int32(0)), /4 bytes where 8 were expected/)
})

test('time and timetz: binary prints as PostgreSQL prints; text is checked', () => {
  const time = decoders(1083)
  const timetz = decoders(1266)
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 86_400_000_000 }), fc.integer({ min: -57599, max: 57599 }), (us, west) => {
      const printed = time.binary(int64(BigInt(us))) as string
      const ref = timestampText(0, us % 86_400_000_000, null).slice(11)
      assert.equal(printed, us === 86_400_000_000 ? '24:00:00' : ref)
      assert.equal(time.text(printed), printed)
      const zoned = timetz.binary(concat([int64(BigInt(us)), int32(west)])) as string
      assert.ok(zoned.startsWith(printed))
      assert.equal(timetz.text(zoned), zoned)
    }),
    RUNS,
  )
  assert.throws(() => time.binary(int64(86_400_000_001n)), /not a time of day/)
  assert.throws(() => time.text('24:00:01'), /malformed time/)
  assert.throws(() => time.text('12:00'), /malformed time/)
  assert.throws(() => timetz.text('12:00:00'), /malformed timetz/)
})

/** How PostgreSQL prints an interval with IntervalStyle postgres. */
function postgresInterval(months: number, days: number, us: number): string {
  const parts: string[] = []
  let before = false
  const add = (n: number, unit: string) => {
    if (n === 0) return
    parts.push(`${before && n > 0 ? '+' : ''}${n} ${unit}${n === 1 ? '' : 's'}`)
    before = n < 0
  }
  add(Math.trunc(months / 12), 'year')
  add(months % 12, 'mon')
  add(days, 'day')
  if (parts.length === 0 || us !== 0) {
    const a = Math.abs(us)
    const h = Math.floor(a / 3_600_000_000)
    const m = Math.floor((a % 3_600_000_000) / 60_000_000)
    const s = Math.floor((a % 60_000_000) / 1_000_000)
    const frac = String(a % 1_000_000).padStart(6, '0').replace(/0+$/, '')
    const sign = us < 0 ? '-' : before ? '+' : ''
    parts.push(`${sign}${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}${frac ? '.' + frac : ''}`)
  }
  return parts.join(' ')
}

test('interval: binary, IntervalStyle postgres and iso_8601 text all give the same WireInterval', () => {
  const { text, binary } = decoders(1186)
  const i32 = fc.integer({ min: -2147483647, max: 2147483646 })
  fc.assert(
    fc.property(i32, i32, fc.maxSafeInteger(), (months, days, us) => {
      const expected = new WireInterval(months, days, us)
      assert.deepEqual(binary(concat([int64(BigInt(us)), int32(days), int32(months)])), expected)
      assert.deepEqual(text(postgresInterval(months, days, us)), expected)
      assert.deepEqual(text(expected.toString()), expected)
      assert.equal(JSON.stringify({ v: expected }), `{"v":"${expected.toString()}"}`)
    }),
    RUNS,
  )
  assert.throws(() => binary(concat([int64(2n ** 60n), int32(0), int32(0)])), /more microseconds than a JavaScript number holds exactly/)
  for (const bad of ['@ 1 day', '1 day 2 mons', '1-2', '3 4:05:06', '1 fortnight', '', 'P', 'PT']) {
    assert.throws(() => text(bad), /malformed interval .*IntervalStyle must be postgres or iso_8601/, `'${bad}'`)
  }
})

/** Text array output as array_out writes it: quotes where needed, backslash escapes, NULL. */
function arrayText(value: unknown): string {
  if (Array.isArray(value)) return '{' + value.map(arrayText).join(',') + '}'
  if (value === null) return 'NULL'
  const s = String(value)
  const quote = s === '' || /^null$/i.test(s) || /[{}",\\\s]/.test(s)
  return quote ? '"' + s.replace(/["\\]/g, (c) => '\\' + c) + '"' : s
}

test('text arrays: any nesting, quoting, escapes and NULLs parse back to the values', () => {
  const { text } = decoders(1009)
  const element = fc.oneof(fc.constant(null), fc.string({ maxLength: 8 }), fc.constantFrom('NULL', 'null', '"', '\\', '{', '}', ',', ' a ', 'é'))
  const shaped = fc
    .tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 3 }))
    .chain(([a, b, c]) => fc.array(fc.array(fc.array(element, { minLength: c, maxLength: c }), { minLength: b, maxLength: b }), { minLength: a, maxLength: a }))
  fc.assert(
    fc.property(fc.oneof(fc.array(element, { maxLength: 10 }), shaped), (value) => {
      assert.deepEqual(text(arrayText(value)), value)
    }),
    RUNS,
  )
  const ints = decoders(1007)
  assert.deepEqual(ints.text('{{1,2},{3,4}}'), [
    [1, 2],
    [3, 4],
  ])
  for (const bad of ['{1,2', '{1,,2}', '{{1,2},3}', '{{1,2},{3}}', '{{1},{{2}}}', '[0:1]={1,2,3}', '{1}x', '1,2', '{"1}', '{a}']) {
    assert.throws(() => ints.text(bad), WireProtocolError, bad)
  }
})

test('binary arrays: header, dimensions and element lengths are checked', () => {
  const { binary } = decoders(1007)
  const arr = (ndim: number, flags: number, oid: number, dims: [number, number][], elems: (number | null)[]) =>
    concat([int32(ndim), int32(flags), int32(oid), ...dims.flatMap(([n, l]) => [int32(n), int32(l)]), ...elems.map((e) => (e === null ? int32(-1) : concat([int32(4), int32(e)])))])
  assert.deepEqual(binary(arr(1, 1, 23, [[3, 1]], [1, null, 3])), [1, null, 3])
  assert.deepEqual(binary(arr(0, 0, 23, [], [])), [])
  const shifted = binary(arr(2, 0, 23, [[1, 0], [2, 5]], [7, 8])) as unknown as unknown[] & { lowerBounds?: number[] }
  assert.deepEqual(shifted.lowerBounds, [0, 5])
  assert.deepEqual(shifted, [[7, 8]])
  const bad = (b: Uint8Array, re: RegExp) => assert.throws(() => binary(b), (e: unknown) => e instanceof WireProtocolError && re.test(e.message))
  bad(arr(1, 0, 25, [[1, 1]], [1]), /element type OID 25 where 23 was expected/)
  bad(arr(7, 0, 23, [], []), /7 dimensions/)
  bad(arr(1, 2, 23, [[1, 1]], [1]), /flags 2/)
  bad(arr(1, 0, 23, [[1000000, 1]], [1]), /1000000 elements in 8 bytes/)
  bad(arr(1, 0, 23, [[-1, 1]], []), /dimension of size -1/)
  bad(concat([arr(1, 0, 23, [[1, 1]], [1]), Uint8Array.of(0)]), /1 bytes after the last element/)
  bad(arr(1, 0, 23, [[2, 1]], [1]).subarray(0, 30), /truncated element|2 elements in/)
  bad(concat([int32(1), int32(0), int32(23), int32(1), int32(1), int32(5), int32(1)]), /malformed int4\[\]: element of length 5 with 4 bytes left/)
  // An element that does not fit its type is refused through the array too.
  bad(concat([int32(1), int32(0), int32(23), int32(1), int32(1), int32(2), int16(1)]), /malformed int4: 2 bytes where 4 were expected/)
})

test('bytea, uuid, bool, char, json: both formats and their errors', () => {
  const bytea = decoders(17)
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (b) => {
      assert.deepEqual(bytea.binary(b), b)
      assert.deepEqual(bytea.text('\\x' + Buffer.from(b).toString('hex')), b)
      // bytea_output = escape.
      const escaped = Array.from(b, (c) => (c === 0x5c ? '\\\\' : c >= 0x20 && c < 0x7f ? String.fromCharCode(c) : '\\' + c.toString(8).padStart(3, '0'))).join('')
      assert.deepEqual(bytea.text(escaped), b)
    }),
    RUNS,
  )
  const copied = Uint8Array.of(1, 2, 3)
  const out = bytea.binary(copied) as Uint8Array
  copied[0] = 9
  assert.equal(out[0], 1, 'bytea values are copies, not views of the chunk')
  // From a Node Buffer too, whose slice() would share memory: a plain Uint8Array copy.
  const chunk = Buffer.from([5, 6, 7])
  const fromBuffer = bytea.binary(chunk) as Uint8Array
  chunk[0] = 0
  assert.equal(Object.getPrototypeOf(fromBuffer), Uint8Array.prototype)
  assert.deepEqual(fromBuffer, Uint8Array.of(5, 6, 7))
  assert.throws(() => bytea.text('\\x0'), /malformed bytea/)
  assert.throws(() => bytea.text('\\xzz'), /malformed bytea/)
  assert.throws(() => bytea.text('\\9'), /malformed bytea/)

  const uuid = decoders(2950)
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (b) => {
      const s = uuid.binary(b) as string
      assert.equal(s.replaceAll('-', ''), Buffer.from(b).toString('hex'))
      assert.equal(uuid.text(s), s)
    }),
    RUNS,
  )
  assert.throws(() => uuid.text('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'), /malformed uuid/)

  const bool = decoders(16)
  assert.throws(() => bool.binary(Uint8Array.of(2)), /malformed bool: byte 2/)
  assert.throws(() => bool.text('true'), /malformed bool/)
  const char = decoders(18)
  assert.equal(char.binary(Uint8Array.of(0)), '')
  assert.equal(char.binary(Uint8Array.of(0x41)), 'A')
  assert.equal(char.binary(Uint8Array.of(0xff)), '\\377')
  const jsonb = decoders(3802)
  assert.throws(() => jsonb.binary(Uint8Array.of(2, 0x31)), /unknown format version 2/)
  assert.throws(() => decoders(114).text('{'), /malformed json: not JSON/)
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const s = JSON.stringify(v)
      assert.deepEqual(jsonb.binary(concat([Uint8Array.of(1), new TextEncoder().encode(s)])), JSON.parse(s))
    }),
    { numRuns: 200 },
  )
})
