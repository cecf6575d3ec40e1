import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Writer } from '../../../src/protocol/writer.js'
import * as fe from '../../../src/protocol/frontend.js'

// Exact bytes of every frontend message, checked against the layouts in the
// PostgreSQL protocol documentation ("Message Formats").

function bytes(fn: (w: Writer) => void): number[] {
  const w = new Writer(16)
  fn(w)
  return [...w.take()]
}

const s = (str: string): number[] => [...Buffer.from(str, 'utf8')]
const i32 = (n: number): number[] => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]
const i16 = (n: number): number[] => [(n >>> 8) & 255, n & 255]

test('StartupMessage: length, version 3.2, key/value pairs, terminator', () => {
  const body = [...i32(196610), ...s('user'), 0, ...s('bob'), 0, ...s('database'), 0, ...s('db'), 0, 0]
  assert.deepEqual(
    bytes((w) => fe.writeStartup(w, 196610, [['user', 'bob'], ['database', 'db']])),
    [...i32(body.length + 4), ...body],
  )
})

test('SSLRequest and CancelRequest (4-byte and long keys)', () => {
  assert.deepEqual(bytes(fe.writeSSLRequest), [0, 0, 0, 8, 4, 210, 22, 47])
  assert.deepEqual(bytes((w) => fe.writeCancelRequest(w, 1234, new Uint8Array([1, 2, 3, 4]))), [...i32(16), ...i32(80877102), ...i32(1234), 1, 2, 3, 4])
  const key = new Uint8Array(32).fill(7)
  assert.deepEqual(bytes((w) => fe.writeCancelRequest(w, 9, key)), [...i32(44), ...i32(80877102), ...i32(9), ...key])
})

test('PasswordMessage and SASL messages', () => {
  assert.deepEqual(bytes((w) => fe.writePassword(w, 'pé')), [0x70, ...i32(4 + 4), ...s('pé'), 0])
  assert.deepEqual(
    bytes((w) => fe.writeSASLInitialResponse(w, 'SCRAM-SHA-256', new Uint8Array([9, 8]))),
    [0x70, ...i32(4 + 14 + 4 + 2), ...s('SCRAM-SHA-256'), 0, ...i32(2), 9, 8],
  )
  assert.deepEqual(bytes((w) => fe.writeSASLResponse(w, new Uint8Array([1, 2, 3]))), [0x70, ...i32(7), 1, 2, 3])
})

test('Parse with and without parameter types', () => {
  assert.deepEqual(bytes((w) => fe.writeParse(w, 's1', 'SELECT $1', [])), [0x50, ...i32(4 + 3 + 10 + 2), ...s('s1'), 0, ...s('SELECT $1'), 0, 0, 0])
  assert.deepEqual(
    bytes((w) => fe.writeParse(w, '', 'x', [23, 25])),
    [0x50, ...i32(4 + 1 + 2 + 2 + 8), 0, ...s('x'), 0, ...i16(2), ...i32(23), ...i32(25)],
  )
})

test('Bind with NULL, text and binary parameters and per-column result formats', () => {
  const got = bytes((w) => {
    const m = fe.beginBind(w, 'p', 'st', [0, 1], 3)
    w.i32(-1)
    w.i32(2)
    w.str('ab')
    w.i32(1)
    w.u8(7)
    fe.endBind(w, m, [1, 0])
  })
  const body = [...s('p'), 0, ...s('st'), 0, ...i16(2), ...i16(0), ...i16(1), ...i16(3), ...i32(-1), ...i32(2), ...s('ab'), ...i32(1), 7, ...i16(2), ...i16(1), ...i16(0)]
  assert.deepEqual(got, [0x42, ...i32(body.length + 4), ...body])
})

test('Describe, Execute, Sync, Flush, Close, Query, Terminate, Copy messages', () => {
  assert.deepEqual(bytes((w) => fe.writeDescribe(w, 'S', 'a')), [0x44, ...i32(7), 0x53, ...s('a'), 0])
  assert.deepEqual(bytes((w) => fe.writeDescribe(w, 'P', '')), [0x44, ...i32(6), 0x50, 0])
  assert.deepEqual(bytes((w) => fe.writeExecute(w, '', 10)), [0x45, ...i32(9), 0, ...i32(10)])
  assert.deepEqual(bytes(fe.writeSync), [0x53, 0, 0, 0, 4])
  assert.deepEqual(bytes(fe.writeFlush), [0x48, 0, 0, 0, 4])
  assert.deepEqual(bytes(fe.writeExecuteSync), [0x45, ...i32(9), 0, ...i32(0), 0x53, 0, 0, 0, 4])
  assert.deepEqual(bytes((w) => fe.writeClose(w, 'S', 'x')), [0x43, ...i32(7), 0x53, ...s('x'), 0])
  assert.deepEqual(bytes((w) => fe.writeQuery(w, 'SELECT 1')), [0x51, ...i32(13), ...s('SELECT 1'), 0])
  assert.deepEqual(bytes(fe.writeTerminate), [0x58, 0, 0, 0, 4])
  assert.deepEqual(bytes((w) => fe.writeCopyData(w, new Uint8Array([5]))), [0x64, ...i32(5), 5])
  assert.deepEqual(bytes(fe.writeCopyDone), [0x63, 0, 0, 0, 4])
  assert.deepEqual(bytes((w) => fe.writeCopyFail(w, 'no')), [0x66, ...i32(7), ...s('no'), 0])
})

test('writer: a message larger than the slab moves to a new slab without corrupting its length', () => {
  const w = new Writer(16)
  fe.writeSync(w)
  const big = 'x'.repeat(100)
  fe.writeQuery(w, big)
  const out = [...w.take()]
  assert.deepEqual(out, [0x53, 0, 0, 0, 4, 0x51, ...i32(105), ...s(big), 0])
})

test('writer: views already taken are never overwritten', () => {
  const w = new Writer(32)
  fe.writeQuery(w, 'a')
  const first = w.take()
  const copy = [...first]
  for (let i = 0; i < 20; i++) fe.writeQuery(w, 'bbbbbbbb')
  w.take()
  assert.deepEqual([...first], copy)
})

test('writer: truncate undoes a partly written message', () => {
  const w = new Writer(16)
  fe.writeSync(w)
  const mark = w.length
  fe.writeQuery(w, 'x'.repeat(50))
  w.truncate(mark)
  fe.writeFlush(w)
  assert.deepEqual([...w.take()], [0x53, 0, 0, 0, 4, 0x48, 0, 0, 0, 4])
})

test('strings are written as UTF-8, including astral characters and lone surrogates', () => {
  for (const str of ['', 'abc', 'é', '日本語', '😀x', 'a'.repeat(30) + 'é', '\ud800']) {
    const w = new Writer(8)
    const n = w.str(str)
    const out = Buffer.from(w.take())
    assert.equal(n, Buffer.byteLength(str))
    assert.deepEqual(out, Buffer.from(str, 'utf8'))
  }
})
