import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Framer, type MessageSink } from '../../../src/protocol/framer.js'
import { ProtocolError } from '../../../src/errors.js'
import { message } from '../../support/fakes/backend-messages.js'

type Msg = [type: string, body: number[]]

/** A framed message as a list of bytes, so streams can be spliced with spread. */
const msg = (type: string, body: number[]): number[] => [...message(type, body)]

function collector(): { sink: MessageSink; got: Msg[] } {
  const got: Msg[] = []
  return {
    got,
    sink: {
      onMessage(type, buf, start, end) {
        got.push([String.fromCharCode(type), [...buf.subarray(start, end)]])
      },
    },
  }
}

const stream: Msg[] = [
  ['1', []],
  ['2', []],
  ['T', [0, 1, 97, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 23, 0, 4, 255, 255, 255, 255, 0, 0]],
  ['D', [0, 1, 0, 0, 0, 1, 0x31]],
  ['D', [0, 1, 255, 255, 255, 255]],
  ['C', [...Buffer.from('SELECT 2'), 0]],
  ['Z', [0x49]],
]
const bytes = Uint8Array.from(stream.flatMap(([t, b]) => msg(t, b)))

test('many messages in one chunk', () => {
  const { sink, got } = collector()
  new Framer(sink).push(bytes)
  assert.deepEqual(got, stream)
})

test('split into two chunks at every byte boundary', () => {
  for (let cut = 0; cut <= bytes.length; cut++) {
    const { sink, got } = collector()
    const f = new Framer(sink)
    f.push(bytes.subarray(0, cut))
    f.push(bytes.subarray(cut))
    assert.deepEqual(got, stream, `cut at ${cut}`)
    assert.equal(f.holdsPartial, false)
  }
})

test('split into three chunks at every pair of boundaries', () => {
  for (let a = 0; a <= bytes.length; a++) {
    for (let b = a; b <= bytes.length; b++) {
      const { sink, got } = collector()
      const f = new Framer(sink)
      f.push(bytes.subarray(0, a))
      f.push(bytes.subarray(a, b))
      f.push(bytes.subarray(b))
      assert.deepEqual(got, stream, `cuts at ${a}, ${b}`)
    }
  }
})

test('one byte at a time', () => {
  const { sink, got } = collector()
  const f = new Framer(sink)
  for (const b of bytes) f.push(Uint8Array.of(b))
  assert.deepEqual(got, stream)
})

test('a message larger than any chunk is assembled once', () => {
  const big = new Array(100_000).fill(0).map((_, i) => i & 255)
  const data = Uint8Array.from([...msg('d', big), ...msg('c', [])])
  const { sink, got } = collector()
  const f = new Framer(sink)
  for (let i = 0; i < data.length; i += 1000) f.push(data.subarray(i, i + 1000))
  assert.equal(got.length, 2)
  assert.deepEqual(got[0]![1], big)
})

function rejects(data: number[], pattern: RegExp, max?: number): void {
  const { sink } = collector()
  const f = new Framer(sink, max)
  assert.throws(() => f.push(Uint8Array.from(data)), (e: unknown) => e instanceof ProtocolError && pattern.test((e as Error).message))
}

test('lengths below 4 are refused before anything else', () => {
  rejects([0x44, 0, 0, 0, 3], /invalid length 3/)
  rejects([0x44, 0, 0, 0, 0], /invalid length 0/)
})

test('negative lengths (top bit set) are refused', () => {
  rejects([0x44, 0x80, 0, 0, 0], /invalid length -2147483648/)
  rejects([0x44, 0xff, 0xff, 0xff, 0xff], /invalid length -1/)
})

test('lengths near 2^31 are refused without allocating', () => {
  rejects([0x44, 0x7f, 0xff, 0xff, 0xff], /more than the limit/)
})

test('a configurable limit applies to data messages', () => {
  rejects(msg('D', new Array(100).fill(0)), /more than the limit of 50/, 50)
})

test('short-only messages must have their exact length', () => {
  rejects(msg('Z', [0x49, 0]), /ReadyForQuery of length 6; it must be 5/)
  rejects(msg('1', [0]), /ParseComplete of length 5; it must be 4/)
  rejects([0x4b, 0, 0, 0x10, 0], /BackendKeyData of 4096 bytes/)
  rejects([0x52, 0x7f, 0, 0, 0], /Authentication of \d+ bytes/)
})

test('unknown message types are refused by name', () => {
  rejects(msg('!', []), /unknown message type '!'/)
  rejects([0, 0, 0, 0, 4], /unknown message type 0x00/)
  // Frontend-only letters are not backend messages.
  rejects(msg('P', []), /unknown message type 'P'/)
})

test('a bad header split across chunks is still refused', () => {
  const { sink } = collector()
  const f = new Framer(sink)
  f.push(Uint8Array.of(0x44, 0xff))
  assert.throws(() => f.push(Uint8Array.of(0xff, 0xff, 0xff)), ProtocolError)
})

test('an unknown type is refused from its byte alone, before its length arrives', () => {
  const { sink } = collector()
  const f = new Framer(sink)
  f.push(Uint8Array.of(...msg('Z', [0x49])))
  assert.throws(() => f.push(Uint8Array.of(0x21, 0)), /unknown message type '!'/)
})
