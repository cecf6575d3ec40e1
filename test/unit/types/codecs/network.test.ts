import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { Writer } from '../../../../src/protocol/writer.js'
import { CodecError, defaultTypeOptions, type Codec, type Decoder } from '../../../../src/types/codec.js'
import { cidrCodec, formatIpv6, inetCodec, registerNetworkCodecs } from '../../../../src/types/codecs/network.js'
import { macaddr8Codec, macaddrCodec, registerMacAddressCodecs } from '../../../../src/types/codecs/mac-address.js'

// inet, cidr, macaddr and macaddr8 on exact bytes, without a server.

/** Decodes `bytes` from the middle of a larger buffer, as from a socket chunk. */
function decode(f: Decoder | undefined, bytes: Uint8Array | string): unknown {
  const v = typeof bytes === 'string' ? Buffer.from(bytes) : bytes
  const buf = new Uint8Array(v.length + 6).fill(0xee)
  buf.set(v, 3)
  return f!(buf, 3, 3 + v.length)
}

/** The binary parameter bytes, or false when the codec leaves the value to text (checking nothing was written). */
function encode(c: Codec, value: unknown): number[] | false {
  const w = new Writer(64)
  w.u8(0x55)
  const ok = c.encodeBinary!(w, value)
  const out = Array.from(w.take())
  assert.equal(out[0], 0x55)
  if (!ok) {
    assert.equal(out.length, 1, 'nothing written when the value goes as text')
    return false
  }
  return out.slice(1)
}

/** Every proper prefix of a valid binary value is refused, even with valid-looking bytes after its end. */
function assertTruncationsThrow(f: Decoder, bytes: Uint8Array): void {
  for (let n = 0; n < bytes.length; n++) {
    assert.throws(() => f(bytes, 0, n), CodecError, `prefix of ${n} bytes`)
  }
}

const v4 = (bits: number, cidr: number, ...a: number[]) => new Uint8Array([2, bits, cidr, 4, ...a])
const v6 = (bits: number, cidr: number, ...a: number[]) => new Uint8Array([3, bits, cidr, 16, ...a])
/** 16 address bytes from 8 words. */
const words = (...w: number[]) => w.flatMap((x) => [x >> 8, x & 0xff])

test('registers inet, cidr, macaddr and macaddr8 by OID', () => {
  const table = new Map<number, Codec>()
  registerNetworkCodecs(table, defaultTypeOptions)
  registerMacAddressCodecs(table, defaultTypeOptions)
  assert.equal(table.get(869), inetCodec)
  assert.equal(table.get(650), cidrCodec)
  assert.equal(table.get(829), macaddrCodec)
  assert.equal(table.get(774), macaddr8Codec)
  assert.deepEqual([...table.values()].map((c) => c.name), ['inet', 'cidr', 'macaddr', 'macaddr8'])
})

test('inet and cidr binary: IPv4, prefix shown for cidr always and for inet unless full', () => {
  assert.equal(decode(inetCodec.decodeBinary, v4(32, 0, 192, 168, 1, 5)), '192.168.1.5')
  assert.equal(decode(inetCodec.decodeBinary, v4(24, 0, 192, 168, 1, 5)), '192.168.1.5/24')
  assert.equal(decode(inetCodec.decodeBinary, v4(0, 0, 0, 0, 0, 0)), '0.0.0.0/0')
  assert.equal(decode(inetCodec.decodeBinary, v4(32, 0, 255, 255, 255, 255)), '255.255.255.255')
  assert.equal(decode(cidrCodec.decodeBinary, v4(32, 1, 10, 0, 0, 1)), '10.0.0.1/32')
  assert.equal(decode(cidrCodec.decodeBinary, v4(8, 1, 10, 0, 0, 0)), '10.0.0.0/8')
  assert.equal(decode(cidrCodec.decodeBinary, v4(0, 1, 0, 0, 0, 0)), '0.0.0.0/0')
  // The flag byte is ignored, as the server ignores it: the type decides.
  assert.equal(decode(inetCodec.decodeBinary, v4(32, 1, 1, 2, 3, 4)), '1.2.3.4')
})

test('IPv6 formatting follows PostgreSQL: longest zero run, first of equals, no run of one, embedded IPv4', () => {
  const cases: [number[], string][] = [
    [words(0, 0, 0, 0, 0, 0, 0, 0), '::'],
    [words(0, 0, 0, 0, 0, 0, 0, 1), '::1'],
    [words(0, 0, 0, 0, 0, 0, 0, 2), '::2'],
    [words(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), '2001:db8::'],
    [words(0x2001, 0xdb8, 0, 0, 1, 0, 0, 1), '2001:db8::1:0:0:1'],
    [words(0x2001, 0, 0, 1, 0, 0, 0, 1), '2001:0:0:1::1'],
    [words(1, 0, 2, 0, 3, 0, 4, 0), '1:0:2:0:3:0:4:0'],
    [words(1, 2, 3, 4, 5, 6, 7, 8), '1:2:3:4:5:6:7:8'],
    [words(0, 1, 2, 3, 4, 5, 6, 7), '0:1:2:3:4:5:6:7'],
    [words(0xfe80, 0, 0, 0, 0x1ff, 0xfe23, 0x4567, 0x890a), 'fe80::1ff:fe23:4567:890a'],
    [words(0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    [words(0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304), '::ffff:1.2.3.4'],
    [words(0, 0, 0, 0, 0, 0, 0x0102, 0x0304), '::1.2.3.4'],
    [words(0, 0, 0, 0, 0, 0, 0x0001, 0x0000), '::0.1.0.0'],
    [words(0, 0, 0, 0, 0, 0xfffe, 0x0102, 0x0304), '::fffe:102:304'],
    [words(0, 0, 0, 0, 1, 0xffff, 0x0102, 0x0304), '::1:ffff:102:304'],
    [words(1, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304), '1::ffff:102:304'],
    [words(0, 0, 1, 0, 0, 0, 0, 1), '0:0:1::1'],
    [words(1, 0, 0, 2, 3, 4, 0, 0), '1::2:3:4:0:0'],
    [words(0, 0, 1, 2, 3, 4, 0, 0), '::1:2:3:4:0:0'],
    [words(1, 0, 0, 2, 3, 0, 0, 0), '1:0:0:2:3::'],
    [words(0, 0, 0, 1, 0, 0, 0, 1), '::1:0:0:0:1'],
  ]
  for (const [bytes, text] of cases) assert.equal(formatIpv6(new Uint8Array(bytes), 0), text, text)
  assert.equal(decode(inetCodec.decodeBinary, v6(128, 0, ...words(0, 0, 0, 0, 0, 0, 0, 1))), '::1')
  assert.equal(decode(inetCodec.decodeBinary, v6(32, 0, ...words(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0))), '2001:db8::/32')
  assert.equal(decode(inetCodec.decodeBinary, v6(0, 0, ...words(0, 0, 0, 0, 0, 0, 0, 0))), '::/0')
  assert.equal(decode(cidrCodec.decodeBinary, v6(128, 1, ...words(0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304))), '::ffff:1.2.3.4/128')
  assert.equal(decode(inetCodec.decodeBinary, v6(120, 0, ...words(0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304))), '::ffff:1.2.3.4/120')
})

test('malformed inet binary values are refused', () => {
  const bad: [Uint8Array, RegExp][] = [
    [new Uint8Array([]), /malformed binary inet: 0 bytes/],
    [new Uint8Array([4, 32, 0, 4, 1, 2, 3, 4]), /unknown address family 4/],
    [new Uint8Array([2, 33, 0, 4, 1, 2, 3, 4]), /33 prefix bits/],
    [new Uint8Array([3, 129, 0, 16, ...words(0, 0, 0, 0, 0, 0, 0, 0)]), /129 prefix bits/],
    [new Uint8Array([2, 32, 0, 16, 1, 2, 3, 4]), /IPv4 address of the wrong length/],
    [new Uint8Array([2, 32, 0, 4, 1, 2, 3, 4, 5]), /IPv4 address of the wrong length/],
    [new Uint8Array([3, 128, 0, 4, 1, 2, 3, 4]), /IPv6 address of the wrong length/],
  ]
  for (const [bytes, message] of bad) assert.throws(() => decode(inetCodec.decodeBinary, bytes), message)
  assertTruncationsThrow(inetCodec.decodeBinary!, v4(24, 0, 1, 2, 3, 0))
  assertTruncationsThrow(cidrCodec.decodeBinary!, v6(64, 1, ...words(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0)))
})

test('inet and cidr text values pass through; anything the server cannot print is refused', () => {
  assert.equal(decode(inetCodec.decodeText, '192.168.1.5'), '192.168.1.5')
  assert.equal(decode(cidrCodec.decodeText, '2001:db8::/32'), '2001:db8::/32')
  assert.equal(decode(inetCodec.decodeText, '::ffff:1.2.3.4'), '::ffff:1.2.3.4')
  for (const bad of ['', '1.2.3.4 ', 'FE80::1', 'x']) assert.throws(() => decode(inetCodec.decodeText, bad), /malformed inet/, bad)
})

test('inet binary encoding of addresses the server reads the same way', () => {
  assert.deepEqual(encode(inetCodec, '192.168.1.5'), [2, 32, 0, 4, 192, 168, 1, 5])
  assert.deepEqual(encode(inetCodec, '192.168.1.5/24'), [2, 24, 0, 4, 192, 168, 1, 5])
  assert.deepEqual(encode(inetCodec, '0.0.0.0/0'), [2, 0, 0, 4, 0, 0, 0, 0])
  assert.deepEqual(encode(inetCodec, '255.255.255.255/32'), [2, 32, 0, 4, 255, 255, 255, 255])
  assert.deepEqual(encode(inetCodec, '::1'), [3, 128, 0, 16, ...words(0, 0, 0, 0, 0, 0, 0, 1)])
  assert.deepEqual(encode(inetCodec, '::'), [3, 128, 0, 16, ...words(0, 0, 0, 0, 0, 0, 0, 0)])
  assert.deepEqual(encode(inetCodec, '::/0'), [3, 0, 0, 16, ...words(0, 0, 0, 0, 0, 0, 0, 0)])
  assert.deepEqual(encode(inetCodec, '1::'), [3, 128, 0, 16, ...words(1, 0, 0, 0, 0, 0, 0, 0)])
  assert.deepEqual(encode(inetCodec, '1::/16'), [3, 16, 0, 16, ...words(1, 0, 0, 0, 0, 0, 0, 0)])
  assert.deepEqual(encode(inetCodec, '2001:DB8::1:0:0:1/64'), [3, 64, 0, 16, ...words(0x2001, 0xdb8, 0, 0, 1, 0, 0, 1)])
  assert.deepEqual(encode(inetCodec, '1:2:3:4:5:6:7::'), [3, 128, 0, 16, ...words(1, 2, 3, 4, 5, 6, 7, 0)])
  assert.deepEqual(encode(inetCodec, '::2:3:4:5:6:7:8'), [3, 128, 0, 16, ...words(0, 2, 3, 4, 5, 6, 7, 8)])
  assert.deepEqual(encode(inetCodec, '1:2:3:4:5:6:7:8/127'), [3, 127, 0, 16, ...words(1, 2, 3, 4, 5, 6, 7, 8)])
  assert.deepEqual(encode(inetCodec, '::ffff:1.2.3.4'), [3, 128, 0, 16, ...words(0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304)])
  assert.deepEqual(encode(inetCodec, '::ffff:1.2.3.4/100'), [3, 100, 0, 16, ...words(0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304)])
  assert.deepEqual(encode(inetCodec, '1:2:3:4:5:6:1.2.3.4'), [3, 128, 0, 16, ...words(1, 2, 3, 4, 5, 6, 0x0102, 0x0304)])
  // One parse's bytes never leak into the next.
  assert.deepEqual(encode(inetCodec, 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'), [3, 128, 0, 16, ...Array(16).fill(255)])
  assert.deepEqual(encode(inetCodec, '1::2'), [3, 128, 0, 16, ...words(1, 0, 0, 0, 0, 0, 0, 2)])
})

test('inet strings outside the strict forms go as text for the server to judge', () => {
  for (const s of [
    '',
    '1.2.3',
    '1.2.3/24',
    '01.2.3.4',
    '1.2.3.4/',
    '1.2.3.4/33',
    '1.2.3.4/024',
    '256.1.1.1',
    '1.2.3.4.5',
    ' 1.2.3.4',
    '1.2.3.4 ',
    '0x01020304',
    'localhost',
    ':1',
    '1:',
    '1::2:',
    ':::',
    '1:::2',
    '1::2::3',
    '12345::',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7:8::',
    '::1:2:3:4:5:6:7:8',
    '1:2:3:4:5:6:7',
    '::/129',
    '::/064',
    '::/',
    '::1/64/64',
    'fe80::1%eth0',
    '::ffff:1.2.3',
    '::ffff:1.2.3.04',
    '1:2:3:4:5:6:7:1.2.3.4',
    '::1.2.3.4:5',
    'g::',
  ]) {
    assert.equal(encode(inetCodec, s), false, s)
  }
})

test('cidr binary encoding: bare IPv4 and host bits set are left to the server', () => {
  assert.deepEqual(encode(cidrCodec, '10.0.0.0/8'), [2, 8, 1, 4, 10, 0, 0, 0])
  assert.deepEqual(encode(cidrCodec, '10.1.2.3/32'), [2, 32, 1, 4, 10, 1, 2, 3])
  assert.deepEqual(encode(cidrCodec, '0.0.0.0/0'), [2, 0, 1, 4, 0, 0, 0, 0])
  assert.deepEqual(encode(cidrCodec, '192.168.0.128/25'), [2, 25, 1, 4, 192, 168, 0, 128])
  assert.deepEqual(encode(cidrCodec, '2001:db8::/32'), [3, 32, 1, 16, ...words(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0)])
  assert.deepEqual(encode(cidrCodec, '::1'), [3, 128, 1, 16, ...words(0, 0, 0, 0, 0, 0, 0, 1)])
  assert.equal(encode(cidrCodec, '10.0.0.0'), false, 'classful default')
  assert.equal(encode(cidrCodec, '10.0.0.1/8'), false, 'host bits')
  assert.equal(encode(cidrCodec, '192.168.0.129/25'), false, 'host bit in a partial byte')
  assert.equal(encode(cidrCodec, '2001:db8::1/64'), false, 'IPv6 host bits')
  assert.equal(encode(cidrCodec, '::1/127'), false, 'last bit')
})

test('inet and cidr take strings only', () => {
  for (const c of [inetCodec, cidrCodec]) {
    assert.equal(c.encodeText('10.0.0.0/8'), '10.0.0.0/8')
    assert.equal(c.encodeText('anything'), 'anything')
    assert.throws(() => c.encodeText(42), new RegExp(`^CodecError: ${c.name} needs a string; got a number$`))
    assert.throws(() => encode(c, { address: '1.2.3.4' }), new RegExp(`${c.name} needs a string; got an object \\(Object\\)`))
    assert.throws(() => encode(c, null), CodecError)
  }
})

const ipv4Bytes = fc.uint8Array({ minLength: 4, maxLength: 4 })
// Words drawn mostly from 0 so that zero runs of every length and position occur.
const ipv6Bytes = fc
  .array(fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 0xffff }) }, { weight: 1, arbitrary: fc.constant(0xffff) }), {
    minLength: 8,
    maxLength: 8,
  })
  .map((w) => new Uint8Array(words(...w)))

function maskHostBits(a: Uint8Array, bits: number): Uint8Array {
  const out = a.slice()
  for (let i = 0; i < out.length; i++) {
    const keep = bits - 8 * i
    if (keep <= 0) out[i] = 0
    else if (keep < 8) out[i]! &= 0xff << (8 - keep)
  }
  return out
}

test('property: inet and cidr binary → string → binary gives the same bytes', () => {
  const address = fc.oneof(
    ipv4Bytes.chain((a) => fc.tuple(fc.constant(2), fc.integer({ min: 0, max: 32 }), fc.constant(a))),
    ipv6Bytes.chain((a) => fc.tuple(fc.constant(3), fc.integer({ min: 0, max: 128 }), fc.constant(a))),
  )
  fc.assert(
    fc.property(address, fc.boolean(), ([family, bits, addr], cidr) => {
      const codec = cidr ? cidrCodec : inetCodec
      const a = cidr ? maskHostBits(addr, bits) : addr
      const bytes = new Uint8Array([family, bits, cidr ? 1 : 0, a.length, ...a])
      const text = decode(codec.decodeBinary, bytes) as string
      assert.equal(decode(codec.decodeText, text), text)
      // A bare IPv4 cidr is the one form left to the server (classful default).
      if (cidr && family === 2 && !text.includes('/')) assert.fail('cidr text always has a prefix')
      assert.deepEqual(encode(codec, text), Array.from(bytes))
    }),
    { numRuns: 2000 },
  )
})

test('macaddr and macaddr8 binary and text decoding', () => {
  assert.equal(decode(macaddrCodec.decodeBinary, new Uint8Array([0x08, 0x00, 0x2b, 0x01, 0x02, 0x03])), '08:00:2b:01:02:03')
  assert.equal(decode(macaddrCodec.decodeBinary, new Uint8Array(6).fill(255)), 'ff:ff:ff:ff:ff:ff')
  assert.equal(decode(macaddrCodec.decodeBinary, new Uint8Array(6)), '00:00:00:00:00:00')
  assert.equal(decode(macaddr8Codec.decodeBinary, new Uint8Array([8, 0, 0x2b, 0xff, 0xfe, 1, 2, 3])), '08:00:2b:ff:fe:01:02:03')
  assert.equal(decode(macaddrCodec.decodeText, '08:00:2b:01:02:03'), '08:00:2b:01:02:03')
  assert.equal(decode(macaddr8Codec.decodeText, '08:00:2b:ff:fe:01:02:03'), '08:00:2b:ff:fe:01:02:03')
  assertTruncationsThrow(macaddrCodec.decodeBinary!, new Uint8Array(6))
  assertTruncationsThrow(macaddr8Codec.decodeBinary!, new Uint8Array(8))
  assert.throws(() => decode(macaddrCodec.decodeBinary, new Uint8Array(8)), /malformed binary macaddr: 8 bytes where 6 were expected/)
  assert.throws(() => decode(macaddr8Codec.decodeBinary, new Uint8Array(6)), /malformed binary macaddr8: 6 bytes where 8 were expected/)
  for (const bad of ['08:00:2b:01:02:0', '08:00:2B:01:02:03', '08-00-2b-01-02-03', '08:00:2b:01:02:03:04:05', '08:00:2b:01:02:0g']) {
    assert.throws(() => decode(macaddrCodec.decodeText, bad), /malformed macaddr/, bad)
  }
  assert.throws(() => decode(macaddr8Codec.decodeText, '08:00:2b:01:02:03'), /malformed macaddr8: 17 characters/)
})

test('macaddr binary encoding of every layout macaddr_in reads', () => {
  const bytes = [0x08, 0x00, 0x2b, 0x01, 0x02, 0x03]
  for (const s of ['08:00:2b:01:02:03', '08-00-2b-01-02-03', '08002b:010203', '08002b-010203', '0800.2b01.0203', '0800-2b01-0203', '08002b010203', '08:00:2B:01:02:03']) {
    assert.deepEqual(encode(macaddrCodec, s), bytes, s)
  }
  for (const s of ['', '08:00:2b:01:02', '08:00:2b:01:02:03:04:05', '08:00-2b:01:02:03', '08.00.2b.01.02.03', '0800:2b01:0203', '8:0:2b:1:2:3', ' 08:00:2b:01:02:03', '08:00:2b:01:02:03:', '08002b01020', 'zz:00:2b:01:02:03']) {
    assert.equal(encode(macaddrCodec, s), false, s)
  }
  assert.equal(macaddrCodec.encodeText('08:00:2b:01:02:03'), '08:00:2b:01:02:03')
  assert.throws(() => encode(macaddrCodec, new Uint8Array(6)), /^CodecError: macaddr needs a string; got a Uint8Array$/)
  assert.throws(() => macaddrCodec.encodeText(1), /macaddr needs a string; got a number/)
})

test('macaddr8 binary encoding: 8 bytes, or 6 made EUI-64 with ff:fe in the middle', () => {
  const eight = [0x08, 0x00, 0x2b, 0x01, 0x02, 0x03, 0x04, 0x05]
  for (const s of ['08:00:2b:01:02:03:04:05', '08-00-2b-01-02-03-04-05', '08.00.2b.01.02.03.04.05', '08002b0102030405', '0800.2b01.0203.0405', '08002b:0102030405']) {
    assert.deepEqual(encode(macaddr8Codec, s), eight, s)
  }
  assert.deepEqual(encode(macaddr8Codec, '08:00:2b:01:02:03'), [0x08, 0x00, 0x2b, 0xff, 0xfe, 0x01, 0x02, 0x03])
  assert.deepEqual(encode(macaddr8Codec, '08002b010203'), [0x08, 0x00, 0x2b, 0xff, 0xfe, 0x01, 0x02, 0x03])
  for (const s of ['', '08:00:2b:01:02:03:04', '08:00:2b:01:02:03:04:05:06', '08:00-2b:01:02:03:04:05', '08:00:2b:01:02:03:04:05:', ':08:00:2b:01:02:03:04:05', '08:00:2b:01:02:03 ', '080']) {
    assert.equal(encode(macaddr8Codec, s), false, s)
  }
  assert.throws(() => encode(macaddr8Codec, 8), /macaddr8 needs a string; got a number/)
})

test('property: macaddr and macaddr8 binary → string → binary', () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 6, maxLength: 6 }), fc.uint8Array({ minLength: 8, maxLength: 8 }), (six, eight) => {
      const s6 = decode(macaddrCodec.decodeBinary, six) as string
      assert.equal(decode(macaddrCodec.decodeText, s6), s6)
      assert.deepEqual(encode(macaddrCodec, s6), Array.from(six))
      assert.deepEqual(encode(macaddrCodec, s6.toUpperCase().replaceAll(':', '')), Array.from(six))
      const s8 = decode(macaddr8Codec.decodeBinary, eight) as string
      assert.equal(decode(macaddr8Codec.decodeText, s8), s8)
      assert.deepEqual(encode(macaddr8Codec, s8), Array.from(eight))
      assert.deepEqual(encode(macaddr8Codec, s6), [six[0], six[1], six[2], 0xff, 0xfe, six[3], six[4], six[5]])
    }),
    { numRuns: 500 },
  )
})
