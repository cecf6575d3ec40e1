import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { Writer } from '../../../../src/protocol/writer.js'
import type { Codec } from '../../../../src/types/codec.js'
import { cidrCodec, inetCodec } from '../../../../src/types/codecs/network.js'
import { macaddr8Codec, macaddrCodec } from '../../../../src/types/codecs/mac-address.js'
import { echoParam } from '../../../support/codecs/raw-values.js'
import { echoAll, param, select, testType, textParam, type Param } from '../../../support/codecs/type-roundtrip.js'

// inet, cidr, macaddr and macaddr8 against what a real server sends and understands.

const INET = 869
const CIDR = 650
const MACADDR = 829
const MACADDR8 = 774

const words = (...w: number[]) => w.flatMap((x) => [x >> 8, x & 0xff])

test('inet and cidr decode to what the server prints, from text and binary alike', async () => {
  await testType(inetCodec, INET, [
    ["'192.168.1.5'::inet", '192.168.1.5'],
    ["'192.168.1.5/24'::inet", '192.168.1.5/24'],
    ["'192.168.1.5/32'::inet", '192.168.1.5'],
    ["'0.0.0.0/0'::inet", '0.0.0.0/0'],
    ["'255.255.255.255'::inet", '255.255.255.255'],
    ["'10.1/16'::inet", '10.1.0.0/16'],
    ["'::1'::inet", '::1'],
    ["'::'::inet", '::'],
    ["'::/0'::inet", '::/0'],
    ["'2001:db8::1/64'::inet", '2001:db8::1/64'],
    ["'2001:0db8:0000:0000:0000:0000:0000:0001/128'::inet", '2001:db8::1'],
    ["'1:0:0:2:0:0:0:3'::inet", '1:0:0:2::3'],
    ["'1:0:0:0:2:0:0:3'::inet", '1::2:0:0:3'],
    ["'1:0:0:2:0:0:3:4'::inet", '1::2:0:0:3:4'],
    ["'0:0:1:0:0:0:0:0'::inet", '0:0:1::'],
    ["'1:0:0:2:3:4:0:0'::inet", '1::2:3:4:0:0'],
    ["'1:0:0:2:3:0:0:0/64'::inet", '1:0:0:2:3::/64'],
    ["'1:0:2:0:3:0:4:0'::inet", '1:0:2:0:3:0:4:0'],
    ["'FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF'::inet", 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ["'::ffff:1.2.3.4'::inet", '::ffff:1.2.3.4'],
    ["'::ffff:0102:0304'::inet", '::ffff:1.2.3.4'],
    ["'::1.2.3.4'::inet", '::1.2.3.4'],
    ["'::0.0.0.2'::inet", '::2'],
    ["'::0.1.0.0'::inet", '::0.1.0.0'],
    ["'::1:ffff:1.2.3.4'::inet", '::1:ffff:102:304'],
    ["'::fffe:1.2.3.4'::inet", '::fffe:102:304'],
    ["'fe80::1ff:fe23:4567:890a/10'::inet", 'fe80::1ff:fe23:4567:890a/10'],
    ["'10.0.0.0/8'::cidr::inet", '10.0.0.0/8'],
  ])
  await testType(cidrCodec, CIDR, [
    ["'10.0.0.0/8'::cidr", '10.0.0.0/8'],
    ["'10'::cidr", '10.0.0.0/8'],
    ["'192.168.1'::cidr", '192.168.1.0/24'],
    ["'192.168.1.5'::cidr", '192.168.1.5/32'],
    ["'0.0.0.0/0'::cidr", '0.0.0.0/0'],
    ["'::1'::cidr", '::1/128'],
    ["'::/0'::cidr", '::/0'],
    ["'2001:db8::/32'::cidr", '2001:db8::/32'],
    ["'::ffff:1.2.3.4/128'::cidr", '::ffff:1.2.3.4/128'],
    ["'192.168.1.5/24'::inet::cidr", '192.168.1.0/24'],
  ])
})

const ipv4 = fc.tuple(fc.constant(2), fc.integer({ min: 0, max: 32 }), fc.uint8Array({ minLength: 4, maxLength: 4 }))
// Zero words most of the time, so runs of zeros of every length and position come up.
const ipv6 = fc.tuple(
  fc.constant(3),
  fc.integer({ min: 0, max: 128 }),
  fc
    .array(fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.integer({ min: 0, max: 0xffff }) }, { weight: 1, arbitrary: fc.constant(0xffff) }), {
      minLength: 8,
      maxLength: 8,
    })
    .map((w) => new Uint8Array(words(...w))),
)

function maskHostBits(a: Uint8Array, bits: number): Uint8Array {
  return a.map((byte, i) => {
    const keep = bits - 8 * i
    return keep <= 0 ? 0 : keep >= 8 ? byte : byte & (0xff << (8 - keep))
  })
}

test('property: random addresses print as the server prints them, and encode to the bytes it sends', async () => {
  for (const [codec, oid, cidr] of [
    [inetCodec, INET, false],
    [cidrCodec, CIDR, true],
  ] as const) {
    const samples = fc.sample(fc.oneof(ipv4, ipv6), { numRuns: 200, seed: oid })
    const params: Param[] = samples.map(([family, bits, addr]) => {
      const a = cidr ? maskHostBits(addr, bits) : addr
      return { oid, format: 1, value: new Uint8Array([family, bits, cidr ? 1 : 0, a.length, ...a]) }
    })
    const exprs = params.map((_, i) => `$${i + 1}`)
    const text = await select(exprs, params, 0)
    const binary = await select(exprs, params, 1)
    for (let i = 0; i < params.length; i++) {
      const printed = text[i]!.toString()
      assert.deepEqual(binary[i], Buffer.from(params[i]!.value!), 'the server sends back what it was sent')
      assert.equal(codec.decodeBinary!(binary[i]!, 0, binary[i]!.length), printed)
      assert.equal(codec.decodeText(text[i]!, 0, text[i]!.length), printed)
      const w = new Writer(64)
      assert.ok(codec.encodeBinary!(w, printed), `${printed} goes in binary`)
      assert.deepEqual(Buffer.from(w.take()), binary[i], printed)
    }
  }
})

test('inet and cidr strings: the binary encoder reads them as the server reads them as text', async () => {
  const inputs: [Codec, number, string, boolean][] = [
    [inetCodec, INET, '192.168.1.5', true],
    [inetCodec, INET, '192.168.1.5/24', true],
    [inetCodec, INET, '0.0.0.0/0', true],
    [inetCodec, INET, '255.255.255.255/32', true],
    [inetCodec, INET, '::', true],
    [inetCodec, INET, '::/0', true],
    [inetCodec, INET, '1::', true],
    [inetCodec, INET, '1::/16', true],
    [inetCodec, INET, '::1', true],
    [inetCodec, INET, '2001:DB8::1:0:0:1/64', true],
    [inetCodec, INET, '1:2:3:4:5:6:7::', true],
    [inetCodec, INET, '::2:3:4:5:6:7:8', true],
    [inetCodec, INET, '1:2:3:4:5:6:7:8/127', true],
    [inetCodec, INET, '0001:0002:0003:0004:0005:0006:0007:0008', true],
    [inetCodec, INET, '::ffff:1.2.3.4', true],
    [inetCodec, INET, '::ffff:1.2.3.4/100', true],
    [inetCodec, INET, '1:2:3:4:5:6:1.2.3.4', true],
    [inetCodec, INET, '1::1.2.3.4', true],
    [inetCodec, INET, '10.1/16', false],
    [inetCodec, INET, '01.02.03.04', false],
    [inetCodec, INET, '1.2.3.4/024', false],
    [cidrCodec, CIDR, '10.0.0.0/8', true],
    [cidrCodec, CIDR, '192.168.0.128/25', true],
    [cidrCodec, CIDR, '2001:db8::/32', true],
    [cidrCodec, CIDR, '::1', true],
    [cidrCodec, CIDR, '10.0.0.0', false],
    [cidrCodec, CIDR, '128.1', false],
    [cidrCodec, CIDR, '10', false],
  ]
  const ours = inputs.map(([codec, oid, s, binary]) => {
    const p = param(codec, oid, s)
    assert.equal(p.format, binary ? 1 : 0, s)
    return p
  })
  const theirs = inputs.map(([, oid, s]) => textParam(oid, s))
  assert.deepEqual(await echoAll(ours), await echoAll(theirs))
})

test('the server, not the encoder, refuses bad addresses', async () => {
  for (const s of ['10.0.0.1/8', '2001:db8::1/32']) {
    const p = param(cidrCodec, CIDR, s)
    assert.equal(p.format, 0)
    await assert.rejects(echoParam(CIDR, 0, p.value, '$1'), /invalid cidr value/)
  }
  for (const s of ['1.2.3.4/33', '::/129', 'fe80::1%eth0', 'nonsense', '1:2:3:4:5:6:7:8:9']) {
    const p = param(inetCodec, INET, s)
    assert.equal(p.format, 0)
    await assert.rejects(echoParam(INET, 0, p.value, '$1'), /invalid input syntax for type inet/)
  }
})

test('macaddr and macaddr8 decode to what the server prints, from text and binary alike', async () => {
  await testType(macaddrCodec, MACADDR, [
    ["'08:00:2b:01:02:03'::macaddr", '08:00:2b:01:02:03'],
    ["'08-00-2B-01-02-03'::macaddr", '08:00:2b:01:02:03'],
    ["'ffffffffffff'::macaddr", 'ff:ff:ff:ff:ff:ff'],
    ["'00:00:00:00:00:00'::macaddr", '00:00:00:00:00:00'],
    ["'08:00:2b:ff:fe:01:02:03'::macaddr8::macaddr", '08:00:2b:01:02:03'],
  ])
  await testType(macaddr8Codec, MACADDR8, [
    ["'08:00:2b:01:02:03:04:05'::macaddr8", '08:00:2b:01:02:03:04:05'],
    ["'08:00:2b:01:02:03'::macaddr8", '08:00:2b:ff:fe:01:02:03'],
    ["'08:00:2b:01:02:03'::macaddr::macaddr8", '08:00:2b:ff:fe:01:02:03'],
    ["'ffffffffffffffff'::macaddr8", 'ff:ff:ff:ff:ff:ff:ff:ff'],
    ["macaddr8_set7bit('00:00:00:00:00:00:00:00')", '02:00:00:00:00:00:00:00'],
  ])
})

test('macaddr and macaddr8 strings: the binary encoder reads them as the server reads them as text', async () => {
  const inputs: [Codec, number, string, boolean][] = [
    ...['08:00:2b:01:02:03', '08-00-2b-01-02-03', '08002b:010203', '08002b-010203', '0800.2b01.0203', '0800-2b01-0203', '08002b010203', 'AB:CD:EF:01:02:03'].map(
      (s): [Codec, number, string, boolean] => [macaddrCodec, MACADDR, s, true],
    ),
    [macaddrCodec, MACADDR, '8:0:2b:1:2:3', false],
    [macaddrCodec, MACADDR, ' 08:00:2b:01:02:03 ', false],
    ...['08:00:2b:01:02:03:04:05', '08-00-2b-01-02-03-04-05', '08.00.2b.01.02.03.04.05', '0800.2b01.0203.0405', '08002b0102030405', '08002b:0102030405', '08:00:2b:01:02:03', '08002B010203'].map(
      (s): [Codec, number, string, boolean] => [macaddr8Codec, MACADDR8, s, true],
    ),
    [macaddr8Codec, MACADDR8, '08:00:2b:01:02:03:04:05:', false],
    [macaddr8Codec, MACADDR8, ' 08:00:2b:01:02:03:04:05 ', false],
  ]
  const ours = inputs.map(([codec, oid, s, binary]) => {
    const p = param(codec, oid, s)
    assert.equal(p.format, binary ? 1 : 0, s)
    return p
  })
  const theirs = inputs.map(([, oid, s]) => textParam(oid, s))
  assert.deepEqual(await echoAll(ours), await echoAll(theirs))
  await assert.rejects(echoParam(MACADDR, 0, param(macaddrCodec, MACADDR, '08:00:2b:01:02').value, '$1'), /invalid input syntax for type macaddr/)
})

test('property: random MAC addresses round-trip through the server', async () => {
  const six = fc.sample(fc.uint8Array({ minLength: 6, maxLength: 6 }), { numRuns: 100, seed: 6 })
  const eight = fc.sample(fc.uint8Array({ minLength: 8, maxLength: 8 }), { numRuns: 100, seed: 8 })
  const params: Param[] = [
    ...six.map((value): Param => ({ oid: MACADDR, format: 1, value })),
    ...eight.map((value): Param => ({ oid: MACADDR8, format: 1, value })),
  ]
  const exprs = params.map((_, i) => `$${i + 1}`)
  const text = await select(exprs, params, 0)
  const binary = await select(exprs, params, 1)
  params.forEach((p, i) => {
    const codec = p.oid === MACADDR ? macaddrCodec : macaddr8Codec
    const printed = text[i]!.toString()
    assert.deepEqual(binary[i], Buffer.from(p.value!))
    assert.equal(codec.decodeBinary!(binary[i]!, 0, binary[i]!.length), printed)
    assert.equal(codec.decodeText(text[i]!, 0, text[i]!.length), printed)
    const again = param(codec, p.oid, printed)
    assert.equal(again.format, 1)
    assert.deepEqual(Buffer.from(again.value!), Buffer.from(p.value!))
  })
})
