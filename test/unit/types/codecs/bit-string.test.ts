import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { Writer } from '../../../../src/protocol/writer.js'
import { CodecError, defaultTypeOptions, type Codec, type Decoder } from '../../../../src/types/codec.js'
import { bitCodec, registerBitStringCodecs, varbitCodec } from '../../../../src/types/codecs/bit-string.js'

// bit and varbit on exact bytes, without a server.

function decode(f: Decoder | undefined, bytes: Uint8Array | string): unknown {
  const v = typeof bytes === 'string' ? Buffer.from(bytes) : bytes
  // Neighbours that are valid bits, so reading past either end would go unnoticed by a lax decoder.
  const buf = new Uint8Array(v.length + 6).fill(0x31)
  buf.set(v, 3)
  return f!(buf, 3, 3 + v.length)
}

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

const bin = (n: number, ...bytes: number[]) => new Uint8Array([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255, ...bytes])

test('registers bit and varbit by OID', () => {
  const table = new Map<number, Codec>()
  registerBitStringCodecs(table, defaultTypeOptions)
  assert.equal(table.get(1560), bitCodec)
  assert.equal(table.get(1562), varbitCodec)
  assert.equal(table.size, 2)
})

test('binary bit strings: length, MSB first, partial last byte', () => {
  for (const c of [bitCodec, varbitCodec]) {
    assert.equal(decode(c.decodeBinary, bin(0)), '')
    assert.equal(decode(c.decodeBinary, bin(1, 0x80)), '1')
    assert.equal(decode(c.decodeBinary, bin(1, 0x00)), '0')
    assert.equal(decode(c.decodeBinary, bin(3, 0xa0)), '101')
    assert.equal(decode(c.decodeBinary, bin(8, 0xa5)), '10100101')
    assert.equal(decode(c.decodeBinary, bin(9, 0xff, 0x80)), '111111111')
    assert.equal(decode(c.decodeBinary, bin(16, 0x01, 0x80)), '0000000110000000')
    assert.equal(decode(c.decodeBinary, bin(1000, ...new Array(125).fill(0x55))), '01'.repeat(500))
  }
})

test('malformed binary bit strings are refused', () => {
  assert.throws(() => decode(varbitCodec.decodeBinary, new Uint8Array([0, 0, 0])), /malformed binary varbit: 3 bytes/)
  assert.throws(() => decode(varbitCodec.decodeBinary, bin(-1)), /malformed binary varbit: 0 bytes do not hold -1 bits/)
  assert.throws(() => decode(bitCodec.decodeBinary, bin(9, 0xff)), /malformed binary bit: 1 bytes do not hold 9 bits/)
  assert.throws(() => decode(bitCodec.decodeBinary, bin(8, 0xff, 0)), /2 bytes do not hold 8 bits/)
  assert.throws(() => decode(bitCodec.decodeBinary, bin(0x7fffffff, 0xff)), CodecError)
  const valid = bin(12, 0xab, 0xc0)
  for (let n = 0; n < valid.length; n++) assert.throws(() => bitCodec.decodeBinary!(valid, 0, n), CodecError, `prefix of ${n}`)
})

test('text bit strings', () => {
  assert.equal(decode(varbitCodec.decodeText, ''), '')
  assert.equal(decode(varbitCodec.decodeText, '0'), '0')
  assert.equal(decode(bitCodec.decodeText, '1010'), '1010')
  const long = '1100'.repeat(700)
  assert.equal(decode(bitCodec.decodeText, long), long)
  for (const bad of ['2', '10 ', 'x', '1010a', '0'.repeat(1500) + '2']) {
    assert.throws(() => decode(varbitCodec.decodeText, bad), /malformed varbit: only 0 and 1 may appear/, bad.slice(-5))
  }
})

test('binary encoding of 0/1 strings; other notations go as text', () => {
  assert.deepEqual(encode(varbitCodec, ''), [0, 0, 0, 0])
  assert.deepEqual(encode(varbitCodec, '1'), [0, 0, 0, 1, 0x80])
  assert.deepEqual(encode(varbitCodec, '101'), [0, 0, 0, 3, 0xa0])
  assert.deepEqual(encode(bitCodec, '10100101'), [0, 0, 0, 8, 0xa5])
  assert.deepEqual(encode(bitCodec, '111111111'), [0, 0, 0, 9, 0xff, 0x80])
  assert.deepEqual(encode(bitCodec, '1'.repeat(1000)), [0, 0, 3, 0xe8, ...new Array(125).fill(0xff)])
  for (const s of ['X1F', 'x1f', 'B101', 'b101', '10 1', '2']) assert.equal(encode(bitCodec, s), false, s)
  assert.equal(bitCodec.encodeText('101'), '101')
  assert.equal(bitCodec.encodeText('X1F'), 'X1F')
})

test('bit strings take strings only', () => {
  for (const c of [bitCodec, varbitCodec]) {
    for (const v of [5, true, [1, 0], new Uint8Array(1), null, undefined, 5n]) {
      assert.throws(() => encode(c, v), new RegExp(`^CodecError: ${c.name} needs a string of 0s and 1s; got `))
      assert.throws(() => c.encodeText(v), CodecError)
    }
  }
})

test('property: bit strings round-trip through binary and text', () => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom('0', '1'), { maxLength: 300 }).map((a) => a.join('')), (s) => {
      const bytes = encode(varbitCodec, s)
      assert.notEqual(bytes, false)
      assert.equal(decode(varbitCodec.decodeBinary, new Uint8Array(bytes as number[])), s)
      assert.equal(decode(bitCodec.decodeText, varbitCodec.encodeText(s)), s)
      // Trailing padding bits are zero.
      const b = bytes as number[]
      if (s.length % 8 !== 0) assert.equal(b[b.length - 1]! & (0xff >> s.length % 8), 0)
    }),
    { numRuns: 1000 },
  )
})
