import { test } from 'node:test'
import assert from 'node:assert/strict'
import { assertCodecError, bytes, codecOf, decode, encodeBinary } from '../../../support/codecs/scalar-table.js'
import { parseFloatText } from '../../../../src/types/codecs/floats.js'
import { numericBinaryToString } from '../../../../src/types/codecs/numeric.js'
import { Money } from '../../../../src/types/money.js'

// Exact bytes for the numeric scalar codecs: bool, integers, OID-like types,
// floats, numeric and money, both formats, both directions, edge values and
// malformed input.

const BOOL = 16, INT8 = 20, INT2 = 21, INT4 = 23, OID = 26, XID = 28, CID = 29, XID8 = 5069
const REGCLASS = 2205, REGPROC = 24, TID = 27, INT2VECTOR = 22, OIDVECTOR = 30
const FLOAT4 = 700, FLOAT8 = 701, NUMERIC = 1700, MONEY = 790

test('bool: t/f and 1/0 both ways; anything else is malformed', () => {
  const c = codecOf(BOOL)
  assert.equal(decode(c.decodeText, 't'), true)
  assert.equal(decode(c.decodeText, 'f'), false)
  assert.equal(decode(c.decodeBinary, bytes('01')), true)
  assert.equal(decode(c.decodeBinary, bytes('00')), false)
  for (const bad of ['', 'true', 'T', 'tt', 'x']) assertCodecError(() => decode(c.decodeText, bad), /malformed bool/)
  for (const bad of ['', '02', '0100']) assertCodecError(() => decode(c.decodeBinary, bytes(bad)), /malformed bool/)
  assert.deepEqual(encodeBinary(c, true), bytes('01'))
  assert.deepEqual(encodeBinary(c, false), bytes('00'))
  assert.equal(encodeBinary(c, 'yes'), false)
  assert.equal(c.encodeText(true), 't')
  assert.equal(c.encodeText(false), 'f')
  assert.equal(c.encodeText('on'), 'on')
  assertCodecError(() => encodeBinary(c, 1), /^bool needs a boolean or a string; got a number$/)
  assertCodecError(() => c.encodeText(null), /got null/)
})

test('int2 and int4: limits in both formats and both directions', () => {
  const cases: [number, number, string, string][] = [
    [INT2, 0, '0', '0000'],
    [INT2, 1, '1', '0001'],
    [INT2, -1, '-1', 'ffff'],
    [INT2, 32767, '32767', '7fff'],
    [INT2, -32768, '-32768', '8000'],
    [INT4, 0, '0', '00000000'],
    [INT4, 256, '256', '00000100'],
    [INT4, -1, '-1', 'ffffffff'],
    [INT4, 2147483647, '2147483647', '7fffffff'],
    [INT4, -2147483648, '-2147483648', '80000000'],
  ]
  for (const [oid, n, text, bin] of cases) {
    const c = codecOf(oid)
    assert.equal(decode(c.decodeText, text), n)
    assert.equal(decode(c.decodeBinary, bytes(bin)), n)
    assert.deepEqual(encodeBinary(c, n), bytes(bin))
    assert.deepEqual(encodeBinary(c, BigInt(n)), bytes(bin))
    assert.equal(c.encodeText(n), text)
    assert.equal(c.encodeText(BigInt(n)), text)
  }
  // "-0" is zero, not the number -0.
  assert.ok(Object.is(decode(codecOf(INT4).decodeText, '-0'), 0))
  assert.equal(codecOf(INT4).encodeText(-0), '0')
})

test('int2 and int4: out of range, non-integers and wrong types are refused', () => {
  const i2 = codecOf(INT2)
  const i4 = codecOf(INT4)
  for (const v of [32768, -32769, 32768n, -32769n]) {
    assertCodecError(() => encodeBinary(i2, v), /^value out of range for int2$/)
    assertCodecError(() => i2.encodeText(v), /out of range for int2/)
  }
  for (const v of [2 ** 31, -(2 ** 31) - 1, 2n ** 31n, Number.MAX_SAFE_INTEGER, 1e300]) {
    assertCodecError(() => encodeBinary(i4, v), /^value out of range for int4$/)
  }
  for (const v of [1.5, NaN, Infinity, -Infinity]) {
    assertCodecError(() => encodeBinary(i4, v), /^int4 needs an integer number, a bigint or a string; got a non-integer number$/)
  }
  assertCodecError(() => encodeBinary(i4, true), /^int4 needs an integer number, a bigint or a string; got a boolean$/)
  assertCodecError(() => encodeBinary(i4, {}), /got an object \(Object\)/)
  assertCodecError(() => encodeBinary(i4, [1]), /got an array/)
  assertCodecError(() => i4.encodeText(undefined), /got undefined/)
  assert.equal(encodeBinary(i4, '12'), false)
  assert.equal(i4.encodeText('12'), '12')
  // Malformed server values.
  for (const bad of ['', '-', '1a', ' 1', '1 ', '+1', '1.0', '0x10', '--1']) assertCodecError(() => decode(i4.decodeText, bad), /malformed int4/)
  for (const bad of ['2147483648', '-2147483649', '99999999999999999999']) assertCodecError(() => decode(i4.decodeText, bad), /out of range for int4/)
  assertCodecError(() => decode(i2.decodeText, '32768'), /out of range for int2/)
  for (const bad of ['', '00', '000000', '0000000000']) {
    assertCodecError(() => decode(i4.decodeBinary, bytes(bad)), /malformed binary int4: \d+ bytes where 4 were expected/)
  }
  assertCodecError(() => decode(i2.decodeBinary, bytes('000000')), /binary int2/)
})

test('int8 as bigint (default): limits both ways', () => {
  const c = codecOf(INT8)
  const cases: [bigint, string, string][] = [
    [0n, '0', '0000000000000000'],
    [-1n, '-1', 'ffffffffffffffff'],
    [4294967296n, '4294967296', '0000000100000000'],
    [9007199254740991n, '9007199254740991', '001fffffffffffff'],
    [9007199254740993n, '9007199254740993', '0020000000000001'],
    [-9007199254740993n, '-9007199254740993', 'ffdfffffffffffff'],
    [123456789012345678n, '123456789012345678', '01b69b4ba630f34e'],
    [9223372036854775807n, '9223372036854775807', '7fffffffffffffff'],
    [-9223372036854775808n, '-9223372036854775808', '8000000000000000'],
  ]
  for (const [n, text, bin] of cases) {
    assert.equal(decode(c.decodeText, text), n)
    assert.equal(decode(c.decodeBinary, bytes(bin)), n)
    assert.deepEqual(encodeBinary(c, n), bytes(bin))
    assert.equal(c.encodeText(n), text)
    if (Number.isSafeInteger(Number(n)) && BigInt(Number(n)) === n) {
      assert.deepEqual(encodeBinary(c, Number(n)), bytes(bin))
      assert.equal(c.encodeText(Number(n)), text)
    }
  }
  for (const v of [2n ** 63n, -(2n ** 63n) - 1n]) {
    assertCodecError(() => encodeBinary(c, v), /^value out of range for int8$/)
    assertCodecError(() => c.encodeText(v), /^value out of range for int8$/)
  }
  // A number beyond 2^53 may already be rounded: refused, never sent.
  for (const v of [2 ** 53, -(2 ** 53), 1e20]) assertCodecError(() => encodeBinary(c, v), /int8 needs .*; got a number beyond 2\^53 \(use a bigint\)/)
  assertCodecError(() => encodeBinary(c, 0.5), /got a non-integer number/)
  assertCodecError(() => c.encodeText(NaN), /got a non-integer number/)
  assertCodecError(() => encodeBinary(c, false), /^int8 needs a bigint, a safe-integer number or a string; got a boolean$/)
  assert.equal(encodeBinary(c, '5'), false)
  for (const bad of ['9223372036854775808', '-9223372036854775809', '123456789012345678901']) assertCodecError(() => decode(c.decodeText, bad), /out of range for int8/)
  for (const bad of ['', '-', '1e3', '12 ', '١٢']) assertCodecError(() => decode(c.decodeText, bad), /malformed int8/)
  assertCodecError(() => decode(c.decodeBinary, bytes('00000000')), /binary int8/)
})

test('int8 as number: exact up to 2^53 - 1, refused beyond (never rounded)', () => {
  const c = codecOf(INT8, { int8: 'number' })
  for (const [n, text, bin] of [
    [0, '0', '0000000000000000'],
    [-1, '-1', 'ffffffffffffffff'],
    [Number.MAX_SAFE_INTEGER, '9007199254740991', '001fffffffffffff'],
    [-Number.MAX_SAFE_INTEGER, '-9007199254740991', 'ffe0000000000001'],
    [4294967296, '4294967296', '0000000100000000'],
    [-4294967297, '-4294967297', 'fffffffeffffffff'],
  ] as const) {
    assert.equal(decode(c.decodeText, text), n)
    assert.equal(decode(c.decodeBinary, bytes(bin)), n)
    assert.deepEqual(encodeBinary(c, n), bytes(bin))
  }
  for (const [text, bin] of [
    ['9007199254740992', '0020000000000000'],
    ['-9007199254740992', 'ffe0000000000000'],
    ['9007199254740993', '0020000000000001'],
    ['9223372036854775807', '7fffffffffffffff'],
    ['-9223372036854775808', '8000000000000000'],
    ['9999999999999999', '002386f26fc0ffff'],
  ] as const) {
    assertCodecError(() => decode(c.decodeText, text), /int8 value: does not fit a JavaScript number exactly/)
    assertCodecError(() => decode(c.decodeBinary, bytes(bin)), /int8 value: does not fit a JavaScript number exactly/)
  }
  assertCodecError(() => decode(c.decodeText, '12x'), /malformed int8 value: not an integer/)
  assertCodecError(() => decode(c.decodeText, '99999999999999999999'), /out of range for int8/)
})

test('int8 as string: the decimal digits', () => {
  const c = codecOf(INT8, { int8: 'string' })
  assert.equal(decode(c.decodeText, '-9223372036854775808'), '-9223372036854775808')
  assert.equal(decode(c.decodeBinary, bytes('8000000000000000')), '-9223372036854775808')
  assert.equal(decode(c.decodeBinary, bytes('7fffffffffffffff')), '9223372036854775807')
  assert.equal(decode(c.decodeBinary, bytes('0000000000000000')), '0')
  assert.equal(decode(c.decodeText, '42'), '42')
  assert.equal(c.encodeText('42'), '42')
})

test('oid, xid, cid: unsigned 32-bit numbers in both formats', () => {
  for (const oid of [OID, XID, CID]) {
    const c = codecOf(oid)
    for (const [n, text, bin] of [
      [0, '0', '00000000'],
      [1259, '1259', '000004eb'],
      [2147483648, '2147483648', '80000000'],
      [4294967295, '4294967295', 'ffffffff'],
    ] as const) {
      assert.equal(decode(c.decodeText, text), n)
      assert.equal(decode(c.decodeBinary, bytes(bin)), n)
      assert.deepEqual(encodeBinary(c, n), bytes(bin))
      assert.deepEqual(encodeBinary(c, BigInt(n)), bytes(bin))
      assert.equal(c.encodeText(n), text)
    }
    assertCodecError(() => encodeBinary(c, -1), new RegExp(`^value out of range for ${c.name}$`))
    assertCodecError(() => encodeBinary(c, 4294967296), /out of range/)
    assertCodecError(() => decode(c.decodeText, '4294967296'), /out of range/)
    assertCodecError(() => decode(c.decodeText, '-1'), /out of range/)
    assertCodecError(() => encodeBinary(c, 1.5), /non-integer/)
    assert.equal(encodeBinary(c, '7'), false)
  }
  assert.equal(codecOf(OID).preferBinary, undefined)
})

test('reg* types: a name in text, the OID in binary, results requested in text', () => {
  for (const oid of [REGPROC, 2202, 2203, 2204, REGCLASS, 2206, 3734, 3769, 4089, 4096, 4191]) {
    const c = codecOf(oid)
    assert.equal(c.preferBinary, false, c.name)
    assert.equal(decode(c.decodeText, 'pg_catalog.pg_class'), 'pg_catalog.pg_class')
    assert.equal(decode(c.decodeText, '-'), '-')
    assert.equal(decode(c.decodeBinary, bytes('000004eb')), 1259)
    assert.equal(decode(c.decodeBinary, bytes('ffffffff')), 4294967295)
    assert.deepEqual(encodeBinary(c, 1259), bytes('000004eb'))
    assert.equal(encodeBinary(c, 'pg_class'), false)
    assert.equal(c.encodeText(1259), '1259')
    assert.equal(c.encodeText('pg_class'), 'pg_class')
    assertCodecError(() => encodeBinary(c, -5), /out of range/)
    assertCodecError(() => decode(c.decodeBinary, bytes('0000')), /binary/)
  }
  assert.equal(codecOf(REGCLASS).name, 'regclass')
})

test('xid8: unsigned 64-bit bigint', () => {
  const c = codecOf(XID8)
  assert.equal(decode(c.decodeText, '18446744073709551615'), 18446744073709551615n)
  assert.equal(decode(c.decodeBinary, bytes('ffffffffffffffff')), 18446744073709551615n)
  assert.equal(decode(c.decodeBinary, bytes('0000000100000002')), 4294967298n)
  assert.equal(decode(c.decodeText, '0'), 0n)
  assert.deepEqual(encodeBinary(c, 18446744073709551615n), bytes('ffffffffffffffff'))
  assert.deepEqual(encodeBinary(c, 2n ** 63n), bytes('8000000000000000'))
  assert.deepEqual(encodeBinary(c, 5), bytes('0000000000000005'))
  assert.equal(c.encodeText(2n ** 64n - 1n), '18446744073709551615')
  assertCodecError(() => encodeBinary(c, 2n ** 64n), /out of range for xid8/)
  assertCodecError(() => encodeBinary(c, -1n), /out of range for xid8/)
  assertCodecError(() => encodeBinary(c, -1), /out of range for xid8/)
  assertCodecError(() => encodeBinary(c, 1.5), /xid8 needs/)
  assertCodecError(() => decode(c.decodeText, '18446744073709551616'), /out of range/)
  assertCodecError(() => decode(c.decodeText, '-1'), /out of range/)
})

test('tid: (block,offset) in both formats', () => {
  const c = codecOf(TID)
  assert.equal(decode(c.decodeText, '(0,1)'), '(0,1)')
  assert.equal(decode(c.decodeBinary, bytes('000000000001')), '(0,1)')
  assert.equal(decode(c.decodeBinary, bytes('ffffffffffff')), '(4294967295,65535)')
  assertCodecError(() => decode(c.decodeBinary, bytes('00000000')), /binary tid/)
  assert.equal(c.encodeText('(3,4)'), '(3,4)')
  assertCodecError(() => c.encodeText(5), /tid needs a string/)
  assert.equal(c.encodeBinary, undefined)
})

test('int2vector and oidvector: number[] from text and from the one-dimensional binary array', () => {
  const v2 = codecOf(INT2VECTOR)
  const vo = codecOf(OIDVECTOR)
  assert.deepEqual(decode(v2.decodeText, '1 2 3'), [1, 2, 3])
  assert.deepEqual(decode(v2.decodeText, ''), [])
  assert.deepEqual(decode(v2.decodeText, '-32768 32767'), [-32768, 32767])
  // As PostgreSQL sends them (captured): '1 2 3'::int2vector, ''::int2vector, '1 2'::oidvector.
  assert.deepEqual(decode(v2.decodeBinary, bytes('00000001 00000000 00000015 00000003 00000000 00000002 0001 00000002 0002 00000002 0003')), [1, 2, 3])
  assert.deepEqual(decode(v2.decodeBinary, bytes('00000001 00000000 00000015 00000000 00000000')), [])
  assert.deepEqual(decode(v2.decodeBinary, bytes('00000000 00000000 00000015')), [])
  assert.deepEqual(decode(v2.decodeBinary, bytes('00000001 00000000 00000015 00000001 00000000 00000002 8000')), [-32768])
  assert.deepEqual(decode(vo.decodeBinary, bytes('00000001 00000000 0000001a 00000002 00000000 00000004 00000001 00000004 ffffffff')), [1, 4294967295])
  assert.deepEqual(decode(vo.decodeText, '1 4294967295'), [1, 4294967295])
  assertCodecError(() => decode(v2.decodeText, '1  2'), /malformed int2/)
  assertCodecError(() => decode(v2.decodeText, '1 70000'), /out of range for int2/)
  // A NULL element, a wrong element type, a wrong length, two dimensions.
  assertCodecError(() => decode(v2.decodeBinary, bytes('00000001 00000001 00000015 00000001 00000000 ffffffff')), /malformed int2vector/)
  assertCodecError(() => decode(v2.decodeBinary, bytes('00000001 00000000 00000017 00000001 00000000 00000002 0001')), /element type/)
  assertCodecError(() => decode(v2.decodeBinary, bytes('00000001 00000000 00000015 00000002 00000000 00000002 0001')), /length/)
  assertCodecError(() => decode(v2.decodeBinary, bytes('00000002 00000000 00000015 00000001 00000000 00000001 00000000 00000002 0001')), /one-dimensional/)
  assertCodecError(() => decode(v2.decodeBinary, bytes('000000010000')), /too short/)
  assert.equal(v2.encodeText([1, 2, 3]), '1 2 3')
  assert.equal(v2.encodeText([]), '')
  assert.equal(vo.encodeText([4294967295, 0]), '4294967295 0')
  assert.equal(v2.encodeText('1 2'), '1 2')
  assertCodecError(() => v2.encodeText([1, 40000]), /out of range for int2/)
  assertCodecError(() => vo.encodeText([-1]), /out of range for oid/)
  assertCodecError(() => v2.encodeText([1.5]), /int2 needs/)
  assertCodecError(() => v2.encodeText(5), /int2vector needs an array of int2 numbers or a string/)
})

test('float8: specials, -0, subnormals, extremes, both ways', () => {
  const c = codecOf(FLOAT8)
  const cases: [number, string, string][] = [
    [0, '0', '0000000000000000'],
    [-0, '-0', '8000000000000000'],
    [1.5, '1.5', '3ff8000000000000'],
    [-2.5, '-2.5', 'c004000000000000'],
    [0.1, '0.1', '3fb999999999999a'],
    [NaN, 'NaN', '7ff8000000000000'],
    [Infinity, 'Infinity', '7ff0000000000000'],
    [-Infinity, '-Infinity', 'fff0000000000000'],
    [Number.MAX_VALUE, '1.7976931348623157e+308', '7fefffffffffffff'],
    [Number.MIN_VALUE, '5e-324', '0000000000000001'],
    [2.2250738585072014e-308, '2.2250738585072014e-308', '0010000000000000'],
    [123456789.123, '123456789.123', '419d6f34547df3b6'],
    [1e21, '1e+21', '444b1ae4d6e2ef50'],
    [1e-7, '1e-07', '3e7ad7f29abcaf48'],
  ]
  for (const [n, text, bin] of cases) {
    assert.ok(Object.is(decode(c.decodeText, text), n), text)
    assert.ok(Object.is(decode(c.decodeBinary, bytes(bin)), n), bin)
    if (!Number.isNaN(n)) assert.deepEqual(encodeBinary(c, n), bytes(bin))
    assert.ok(Object.is(Number(c.encodeText(n)), n) || Number.isNaN(n))
  }
  assert.equal(c.encodeText(-0), '-0')
  assert.equal(c.encodeText(NaN), 'NaN')
  assert.equal(c.encodeText(-Infinity), '-Infinity')
  assert.deepEqual(encodeBinary(c, 2n ** 60n), bytes('43b0000000000000'))
  assertCodecError(() => encodeBinary(c, 2n ** 60n + 1n), /float8 needs a number, a bigint or a string; got a bigint that a double cannot hold exactly/)
  assertCodecError(() => encodeBinary(c, 10n ** 400n), /cannot hold exactly/)
  assertCodecError(() => encodeBinary(c, true), /^float8 needs a number, a bigint or a string; got a boolean$/)
  assert.equal(encodeBinary(c, '1.5'), false)
  const nan = encodeBinary(c, NaN)
  assert.ok(nan && Number.isNaN(nan.readDoubleBE(0)))
  for (const bad of ['', 'abc', '0x10', '1,5', ' 1', 'Inf', 'nan', '1e', '-', '.', '1.5.5', 'Infinityx']) {
    assertCodecError(() => decode(c.decodeText, bad), /malformed float8/)
  }
  assertCodecError(() => decode(c.decodeBinary, bytes('00000000')), /binary float8/)
})

test('float8 text: the short-value fast path agrees with Number() on its boundaries', () => {
  const p = (s: string) => parseFloatText(Buffer.from(s), 0, s.length, 'float8')
  for (const s of ['123456789012345', '1234567890123456', '0.1234567890123456', '9.99999999999999', '-0.000', '5.', '.5', '0.0000000000000000000001', '0.00000000000000000000001', '0.30000000000000004', '4.35', '1.7976931348623157e308']) {
    assert.ok(Object.is(p(s), Number(s)), s)
  }
})

test('float4: the float32 value in both formats; encode rounds like PostgreSQL and refuses overflow and underflow', () => {
  const c = codecOf(FLOAT4)
  const cases: [number, string, string][] = [
    [0, '0', '00000000'],
    [-0, '-0', '80000000'],
    [1.5, '1.5', '3fc00000'],
    [Math.fround(0.1), '0.1', '3dcccccd'],
    [NaN, 'NaN', '7fc00000'],
    [Infinity, 'Infinity', '7f800000'],
    [-Infinity, '-Infinity', 'ff800000'],
    [Math.fround(3.4028234663852886e38), '3.4028235e+38', '7f7fffff'],
    [Math.fround(1.401298464324817e-45), '1e-45', '00000001'],
    [Math.fround(1.1754943508222875e-38), '1.1754944e-38', '00800000'],
  ]
  for (const [n, text, bin] of cases) {
    assert.ok(Object.is(decode(c.decodeText, text), n), text)
    assert.ok(Object.is(decode(c.decodeBinary, bytes(bin)), n), bin)
    if (!Number.isNaN(n)) assert.deepEqual(encodeBinary(c, n), bytes(bin))
  }
  // 0.1 as a double rounds to the float32 0.1, and its text is that float32's.
  assert.deepEqual(encodeBinary(c, 0.1), bytes('3dcccccd'))
  assert.equal(c.encodeText(0.1), String(Math.fround(0.1)))
  assert.equal(c.encodeText(-0), '-0')
  assert.equal(c.encodeText(Infinity), 'Infinity')
  assert.deepEqual(encodeBinary(c, 16777217n), bytes('4b800000'))
  for (const v of [1e39, -1e39, Number.MAX_VALUE]) assertCodecError(() => encodeBinary(c, v), /^value out of range for float4$/)
  for (const v of [1e-46, -1e-50, Number.MIN_VALUE]) assertCodecError(() => c.encodeText(v), /^value out of range for float4$/)
  assertCodecError(() => encodeBinary(c, null), /^float4 needs a number, a bigint or a string; got null$/)
  assertCodecError(() => decode(c.decodeBinary, bytes('0000000000000000')), /binary float4/)
})

test('numeric: binary to PostgreSQL text, with scale, weight and specials (captured bytes)', () => {
  const c = codecOf(NUMERIC)
  const cases: [string, string][] = [
    ['12.300', '0002 0000 0000 0003 000c 0bb8'],
    ['-0.00012', '0002 ffff 4000 0005 0001 07d0'],
    ['NaN', '0000 0000 c000 0000'],
    ['Infinity', '0000 0000 d000 0020'],
    ['-Infinity', '0000 0000 f000 0020'],
    ['0', '0000 0000 0000 0000'],
    ['0.00', '0000 0000 0000 0002'],
    ['100000', '0001 0001 0000 0000 000a'],
    ['0.0005', '0001 ffff 0000 0004 0005'],
    ['0.5', '0001 ffff 0000 0001 1388'],
    ['1', '0001 0000 0000 0000 0001'],
    ['9999', '0001 0000 0000 0000 270f'],
    ['10000', '0001 0001 0000 0000 0001'],
    ['12345678.9', '0003 0001 0000 0001 04d2 162e 2328'],
    ['-1.000000000001', '0004 0000 4000 000c 0001 0000 0000 0001'],
    [`0.${'0'.repeat(129)}1`, '0001 ffdf 0000 0082 0064'],
  ]
  for (const [text, bin] of cases) {
    assert.equal(decode(c.decodeBinary, bytes(bin)), text, bin)
    assert.equal(decode(c.decodeText, text), text)
  }
  // Digits past dscale are dropped, as numeric_recv does; missing digits are zeros.
  assert.equal(decode(c.decodeBinary, bytes('0001 ffff 0000 0001 04d2')), '0.1')
  assert.equal(decode(c.decodeBinary, bytes('0001 0002 0000 0002 0001')), '100000000.00')
  assert.equal(decode(c.decodeBinary, bytes('0001 fffd 0000 0006 0001')), '0.000000')
  // Weight 32767: the largest integer part there is.
  const big = numericBinaryToString(bytes('0001 7fff 0000 0000 0001'), 0, 10)
  assert.equal(big, '1' + '0'.repeat(32767 * 4))
  for (const [bad, why] of [
    ['0000 0000 0000', /shorter than its header/],
    ['0001 0000 0000 0000', /length does not match/],
    ['0001 0000 0000 0000 0001 0000', /length does not match/],
    ['0000 0000 8000 0000', /invalid sign/],
    ['0000 0000 0000 4000', /invalid scale/],
    ['0001 0000 0000 0000 2710', /digit out of range/],
    ['0002 0000 0000 0000 0001 ffff', /digit out of range/],
  ] as const) {
    assertCodecError(() => decode(c.decodeBinary, bytes(bad)), why)
  }
  for (const bad of ['', '-', '1.2.3', 'abc', '1e5', ' 1', 'nan', '-NaN', 'Inf']) assertCodecError(() => decode(c.decodeText, bad), /malformed numeric/)
})

test('numeric as number: Number of the exact text', () => {
  const c = codecOf(NUMERIC, { numeric: 'number' })
  assert.equal(decode(c.decodeBinary, bytes('0002 0000 0000 0003 000c 0bb8')), 12.3)
  assert.equal(decode(c.decodeText, '12.300'), 12.3)
  assert.ok(Number.isNaN(decode(c.decodeBinary, bytes('0000 0000 c000 0000'))))
  assert.equal(decode(c.decodeBinary, bytes('0000 0000 f000 0020')), -Infinity)
  assert.equal(decode(c.decodeText, 'Infinity'), Infinity)
})

test('numeric: strings, numbers and bigints to binary', () => {
  const c = codecOf(NUMERIC)
  const cases: [unknown, string][] = [
    ['12.300', '0002 0000 0000 0003 000c 0bb8'],
    ['-0.00012', '0002 ffff 4000 0005 0001 07d0'],
    ['0', '0000 0000 0000 0000'],
    ['-0.00', '0000 0000 0000 0002'],
    ['+.5', '0001 ffff 0000 0001 1388'],
    ['5.', '0001 0000 0000 0000 0005'],
    ['1e5', '0001 0001 0000 0000 000a'],
    ['1E+5', '0001 0001 0000 0000 000a'],
    ['+.5e-3', '0001 ffff 0000 0004 0005'],
    ['1.5e1', '0001 0000 0000 0000 000f'],
    ['00012345678.90', '0003 0001 0000 0002 04d2 162e 2328'],
    ['1e-130', '0001 ffdf 0000 0082 0064'],
    ['0e5000', '0000 0000 0000 0000'],
    ['NaN', '0000 0000 c000 0000'],
    ['nan', '0000 0000 c000 0000'],
    ['Infinity', '0000 0000 d000 0000'],
    ['+inf', '0000 0000 d000 0000'],
    ['-INFINITY', '0000 0000 f000 0000'],
    ['-inf', '0000 0000 f000 0000'],
    [0, '0000 0000 0000 0000'],
    [-0, '0000 0000 0000 0000'],
    [12.3, '0002 0000 0000 0001 000c 0bb8'],
    [0.1, '0001 ffff 0000 0001 03e8'],
    [1e21, '0001 0005 0000 0000 000a'],
    [5e-7, '0001 fffe 0000 0007 0032'],
    [-1.5e-7, '0001 fffe 4000 0008 000f'],
    [NaN, '0000 0000 c000 0000'],
    [Infinity, '0000 0000 d000 0000'],
    [-Infinity, '0000 0000 f000 0000'],
    [123456789012n, '0003 0002 0000 0000 04d2 162e 2334'],
    [-10000n, '0001 0001 4000 0000 0001'],
  ]
  for (const [v, bin] of cases) assert.deepEqual(encodeBinary(c, v), bytes(bin), String(v))
  // Round trip through the decoder for the string forms PostgreSQL itself prints.
  for (const s of ['12.300', '-0.00012', '0.00', '100000', '1' + '0'.repeat(4000), '-' + '9'.repeat(1000) + '.' + '1'.repeat(999)]) {
    assert.equal(decode(c.decodeBinary, encodeBinary(c, s) as Buffer), s)
  }
  // Left to the server (text), which accepts or reports them in its own words.
  for (const s of ['', ' 1', '1 ', '1_000', '0x1F', '1e', '1e+', 'e5', '.', '-', '1.2.3', 'infinit', '1e1234567890', `0.${'0'.repeat(16383)}1`, '1e131072', '0e-16384']) {
    assert.equal(encodeBinary(c, s), false, JSON.stringify(s.slice(0, 30)))
  }
  // The largest weight and scale that still fit.
  assert.ok(encodeBinary(c, '1e131071'))
  assert.ok(encodeBinary(c, '1e-16383'))
  assert.equal(c.encodeText('1.50'), '1.50')
  assert.equal(c.encodeText(1e21), '1e+21')
  assert.equal(c.encodeText(NaN), 'NaN')
  assert.equal(c.encodeText(-Infinity), '-Infinity')
  assert.equal(c.encodeText(10n ** 30n), '1' + '0'.repeat(30))
  assertCodecError(() => encodeBinary(c, true), /^numeric needs a string, a number or a bigint; got a boolean$/)
  assertCodecError(() => c.encodeText({}), /numeric needs/)
})

test('money: a Money of minor units from every text form and from binary', () => {
  const c = codecOf(MONEY)
  const cases: [string, bigint][] = [
    ['$1,234.56', 123456n],
    ['-$1,234.56', -123456n],
    ['($1.00)', -100n],
    ['$0.00', 0n],
    ['1.234,56 €', 123456n],
    ['¥100', 100n],
    ['$92,233,720,368,547,758.07', 9223372036854775807n],
    ['-$92,233,720,368,547,758.08', -9223372036854775808n],
  ]
  for (const [text, v] of cases) assert.deepEqual(decode(c.decodeText, text), new Money(v), text)
  assert.deepEqual(decode(c.decodeBinary, bytes('fffffffffffe1dc0')), new Money(-123456n))
  assert.deepEqual(decode(c.decodeBinary, bytes('7fffffffffffffff')), new Money(9223372036854775807n))
  assert.deepEqual(decode(c.decodeBinary, bytes('8000000000000000')), new Money(-9223372036854775808n))
  assert.deepEqual(encodeBinary(c, new Money(-123456n)), bytes('fffffffffffe1dc0'))
  assert.deepEqual(encodeBinary(c, new Money(0n)), bytes('0000000000000000'))
  // A bare bigint is an amount in major units, like a number: text.
  assert.equal(encodeBinary(c, 5n), false)
  assert.equal(c.encodeText(5n), '5')
  assert.equal(encodeBinary(c, '12.34'), false)
  assert.equal(encodeBinary(c, 12.34), false)
  assert.equal(c.encodeText(12.34), '12.34')
  assert.equal(c.encodeText('$5'), '$5')
  assertCodecError(() => c.encodeText(new Money(5n)), /money needs a number, a bigint or a string in major units \(a Money goes only in binary\); got an object \(Money\)/)
  assertCodecError(() => encodeBinary(c, new Money(2n ** 63n)), /out of range for money/)
  assertCodecError(() => encodeBinary(c, NaN), /money needs/)
  assertCodecError(() => encodeBinary(c, true), /^money needs a Money \(minor units\), or a number, a bigint or a string in major units; got a boolean$/)
  assertCodecError(() => decode(c.decodeText, '$'), /malformed money/)
  assertCodecError(() => decode(c.decodeText, '$92,233,720,368,547,758.08'), /out of range for money/)
  assertCodecError(() => decode(c.decodeText, '$1,000,000,000,000,000,000.00'), /out of range for money/)
  assertCodecError(() => decode(c.decodeBinary, bytes('00')), /binary money/)
})
