import { test } from 'node:test'
import assert from 'node:assert/strict'
import { utf8Read } from '../../../src/protocol/utf8.js'
import { decodeUuidBinary } from '../../../src/types/codecs/uuid.js'
import { pgDateText } from '../../../src/types/codecs/date.js'

// The short-string path makes ASCII strings in JS, one case per length; these
// check every length on both sides of its limit against the standard decoder,
// so that an off-by-one in a case or in the ASCII check shows up as a wrong string.

const reference = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true })

/** `n` printable ASCII bytes, placed at an offset inside a bigger buffer. */
function asciiAt(n: number, offset: number): Uint8Array {
  const buf = new Uint8Array(offset + n + 3).fill(0xff)
  for (let i = 0; i < n; i++) buf[offset + i] = 0x21 + ((i * 7) % 94)
  return buf
}

test('utf8Read: ASCII of every length up to past the short-string limit, at an offset', () => {
  for (let n = 0; n <= 48; n++) {
    const buf = asciiAt(n, 5)
    const got = utf8Read(buf, 5, 5 + n)
    assert.equal(got, reference.decode(buf.subarray(5, 5 + n)), `length ${n}`)
    assert.equal(got.length, n)
  }
})

test('utf8Read: a multi-byte or malformed sequence at any position of a short string is read as UTF-8', () => {
  const e = [0xc3, 0xa9] // é
  for (let n = 1; n <= 40; n++) {
    for (let at = 0; at < n; at++) {
      const bytes = Array.from({ length: n }, (_, i) => 0x61 + (i % 26))
      bytes.splice(at, 1, ...e)
      const buf = Uint8Array.from(bytes)
      assert.equal(utf8Read(buf, 0, buf.length), reference.decode(buf), `é at ${at} of ${n}`)
      // A lone high byte: the replacement character, never a Latin-1 character.
      const lone = Uint8Array.from(bytes.slice(0, n))
      lone[at] = 0xe9
      assert.equal(utf8Read(lone, 0, lone.length), reference.decode(lone), `0xe9 at ${at} of ${n}`)
      assert.ok(!utf8Read(lone, 0, lone.length).includes('é'))
    }
  }
})

test('utf8Read: NUL and DEL are ASCII', () => {
  const buf = Uint8Array.of(0x00, 0x41, 0x7f)
  assert.equal(utf8Read(buf, 0, 3), '\u0000A\u007f')
})

test('uuid binary: every byte value in every position gives the canonical text', () => {
  const hex = (b: number) => b.toString(16).padStart(2, '0')
  const canonical = (u: Uint8Array) => {
    const h = [...u].map(hex).join('')
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
  }
  const buf = new Uint8Array(20)
  for (let pos = 0; pos < 16; pos++) {
    for (let v = 0; v < 256; v++) {
      for (let i = 0; i < 16; i++) buf[2 + i] = (i * 37 + pos) & 0xff
      buf[2 + pos] = v
      assert.equal(decodeUuidBinary(buf, 2, 18), canonical(buf.subarray(2, 18)))
    }
  }
})

test('pgDateText: days across four centuries and the edges of four-digit years match the Date calendar', () => {
  const PG_EPOCH_DAYS = 10957 // 2000-01-01 in days since 1970-01-01
  const check = (day: number) => {
    const iso = new Date((day + PG_EPOCH_DAYS) * 86400000).toISOString()
    const year = Number(iso.slice(0, iso.indexOf('-', 1)))
    if (year < 1 || year > 9999) return
    assert.equal(pgDateText(day), iso.slice(0, 10), `day ${day}`)
  }
  for (let day = -146097; day <= 146097; day += 1) check(day)
  for (const day of [-730119, 2921939]) check(day)
  assert.equal(pgDateText(-730119), '0001-01-01')
  assert.equal(pgDateText(2921939), '9999-12-31')
  assert.equal(pgDateText(-730120), '0001-12-31 BC')
  assert.equal(pgDateText(2921940), '10000-01-01')
  assert.equal(pgDateText(0, ' 12:00:00'), '2000-01-01 12:00:00')
})
