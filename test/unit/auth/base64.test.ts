import { test } from 'node:test'
import assert from 'node:assert/strict'
import { decodeBase64, encodeBase64 } from '../../../src/auth/base64.js'

test('encodeBase64 and decodeBase64 agree with Buffer for every length up to 100', () => {
  let seed = 1
  for (let length = 0; length <= 100; length++) {
    const bytes = new Uint8Array(length).map(() => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24)
    const text = encodeBase64(bytes)
    assert.equal(text, Buffer.from(bytes).toString('base64'))
    assert.deepEqual(decodeBase64(text), bytes)
  }
})

test('decodeBase64 accepts only canonical padded base64', () => {
  for (const bad of ['A', 'AA', 'AAA', 'AAAAA', 'AA=A', 'A===', '====', '=AAA', 'AA==AAAA', 'QR==', 'QUJ=', 'QQ=', 'Q Q==', 'QQ==\n', 'ab-_', 'ab\u00e9c', '\u0000AAA']) {
    assert.equal(decodeBase64(bad), undefined, JSON.stringify(bad))
  }
  assert.deepEqual(decodeBase64(''), new Uint8Array(0))
  assert.deepEqual(decodeBase64('QQ=='), Uint8Array.of(0x41))
  assert.deepEqual(decodeBase64('QUI='), Uint8Array.of(0x41, 0x42))
  assert.deepEqual(decodeBase64('+/+/'), Uint8Array.of(0xfb, 0xff, 0xbf))
})
