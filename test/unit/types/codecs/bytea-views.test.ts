import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Framer, isAssembledMessage } from '../../../../src/protocol/framer.js'
import { byteaCodec, byteaHex } from '../../../../src/types/codecs/bytea.js'
import { CodecError } from '../../../../src/types/codec.js'
import { dataRow } from '../../../support/fakes/backend-messages.js'

// Without a server: when a big bytea may come back as a view of the message it
// arrived in, and when it must be copied. A view is only safe in memory that
// nobody writes again, which the framer's own assembly buffers are and socket
// chunks or a reader's reused buffer are not.

const MiB = 1024 * 1024

function pattern(n: number): Uint8Array {
  const b = new Uint8Array(n)
  for (let i = 0; i < n; i++) b[i] = (i * 31 + 7) & 255
  return b
}

/** Feeds `bytes` to a framer in chunks of `chunk` bytes; returns the decoded value and the buffer it was decoded from. */
function receive(bytes: Uint8Array, chunk: number): { value: Uint8Array; from: Uint8Array } {
  let got: { value: Uint8Array; from: Uint8Array } | undefined
  const framer = new Framer({
    onMessage(_type, buf, start) {
      const n = new DataView(buf.buffer, buf.byteOffset).getInt32(start + 2)
      got = { value: byteaCodec.decodeBinary!(buf, start + 6, start + 6 + n) as Uint8Array, from: buf }
    },
  })
  for (let p = 0; p < bytes.length; p += chunk) framer.push(bytes.slice(p, p + chunk))
  assert.ok(got, 'no message')
  return got
}

test('a big value assembled from many chunks is returned as a view of its message, unchanged', () => {
  const value = pattern(3 * MiB)
  const { value: got, from } = receive(dataRow([value]), 64 * 1024)
  assert.ok(isAssembledMessage(from))
  assert.equal(got.buffer, from.buffer, 'a view, not a copy')
  assert.ok(Buffer.isBuffer(got))
  assert.equal(Buffer.compare(got, value), 0)
})

test("a big value inside one socket chunk is copied: the chunk is not the framer's to lend", () => {
  const value = pattern(2 * MiB)
  const bytes = dataRow([value])
  const { value: got, from } = receive(bytes, bytes.length)
  assert.equal(isAssembledMessage(from), false)
  assert.notEqual(got.buffer, from.buffer)
  assert.equal(Buffer.compare(got, value), 0)
})

test('small values, and big values that are a small part of their buffer, are copied', () => {
  const small = receive(dataRow([pattern(200 * 1024)]), 16 * 1024)
  assert.equal(isAssembledMessage(small.from), false, 'small messages are not registered')
  assert.notEqual(small.value.buffer, small.from.buffer)

  // A 1 MiB value decoded from a 4 MiB assembled message (as from a row with other big columns).
  const { from } = receive(dataRow([pattern(4 * MiB)]), 64 * 1024)
  const part = byteaCodec.decodeBinary!(from, 11, 11 + MiB) as Uint8Array
  assert.notEqual(part.buffer, from.buffer)
})

test('a value read out of a buffer its reader reuses is copied, so reuse cannot change it', () => {
  // What a COPY decoder does with a row split across payloads: carry it in one buffer, decode, then reuse the buffer.
  const carry = new Uint8Array(4 * MiB)
  const value = pattern(3 * MiB)
  carry.set(value, 0)
  const got = byteaCodec.decodeBinary!(carry, 0, value.length) as Uint8Array
  carry.fill(0)
  assert.equal(Buffer.compare(got, value), 0)
})

test('byteaHex builds the hex form natively and refuses one longer than a string can be', () => {
  assert.equal(byteaHex(new Uint8Array([0, 1, 0x7f, 0x80, 0xfe, 0xff])), '\\x00017f80feff')
  assert.equal(byteaHex(new Uint8Array(0)), '\\x')
  const mib = pattern(MiB)
  const hex = byteaHex(mib)
  assert.equal(hex.length, 2 + 2 * MiB)
  assert.equal(hex, '\\x' + Buffer.from(mib).toString('hex'))
  // Zero-filled and never written, so this costs no memory; two characters a byte are past V8's string limit.
  assert.throws(
    () => byteaHex(new Uint8Array(300 * MiB)),
    (e: unknown) => e instanceof CodecError && /bytea of 314572800 bytes is too long for its text form/.test(e.message),
  )
})
