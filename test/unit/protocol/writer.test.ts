import { test } from 'node:test'
import assert from 'node:assert/strict'
import { MAX_FRONTEND_MESSAGE, Writer } from '../../../src/protocol/writer.js'
import * as fe from '../../../src/protocol/frontend.js'
import { ArgumentError } from '../../../src/errors.js'

// How the writer sizes its slabs: exact for one big value, geometric (with a
// capped step) for many small appends, back to a standard slab once a big
// message is handed out, and marks that stay right while bytes move.

const KiB = 1024
const MiB = 1024 * KiB
const SLAB = 64 * KiB

function readInt32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0
}

/** Appends with `append` until `total` bytes are written, counting slabs and the bytes copied into new ones. */
function grow(w: Writer, total: number, append: (w: Writer) => void): { copied: number; slabs: number[] } {
  let copied = 0
  const slabs: number[] = []
  while (w.length < total) {
    const before = w.buf
    const pending = w.length
    append(w)
    if (w.buf !== before) {
      copied += pending
      slabs.push(w.buf.length)
    }
  }
  return { copied, slabs }
}

test('one big value gets a slab of about its size, with room left for the rest of its message', () => {
  const w = new Writer()
  const value = new Uint8Array(10 * MiB).fill(7)
  const m = fe.beginBind(w, '', 'stmt', [1], 1)
  w.i32(value.length)
  w.bytes(value)
  const slab = w.buf
  assert.ok(slab.length >= w.length, 'the value fits')
  assert.ok(slab.length - w.length <= 64 * KiB, `slab of ${slab.length} bytes for ${w.length}: more than a little room to spare`)
  // Result formats, Execute and Sync follow without another slab.
  fe.endBind(w, m, [1])
  fe.writeExecuteSync(w)
  assert.equal(w.buf, slab)
  const out = w.take()
  assert.equal(readInt32(out, 1), out.length - 1 - 15)
  // The value's last byte sits before the result formats (4 bytes), Execute and Sync (15).
  assert.equal(out[out.length - 15 - 4 - 1], 7)
})

test('a big value after a large pending message grows by what it needs plus a capped step', () => {
  const w = new Writer()
  w.bytes(new Uint8Array(3 * MiB))
  w.bytes(new Uint8Array(5 * MiB))
  // 8 MiB needed; the step beyond it is at most what was pending (3 MiB).
  assert.ok(w.buf.length >= 8 * MiB && w.buf.length <= 11 * MiB + SLAB, `slab of ${w.buf.length / MiB} MiB`)
})

test('many small appends cost a bounded number of copies per byte', () => {
  const w = new Writer(64)
  const chunk = new Uint8Array(7).fill(1)
  const total = 8 * MiB
  const { copied, slabs } = grow(w, total, (w) => w.bytes(chunk))
  // Geometric growth: every byte is copied about once on average, never a quadratic amount.
  assert.ok(copied <= 2 * total, `${copied} bytes copied to write ${total}`)
  assert.ok(slabs.length <= 40, `${slabs.length} slabs`)
  const out = w.take()
  assert.equal(out.length, Math.ceil(total / 7) * 7)
  assert.ok(out.every((b) => b === 1))
})

test('past the cap, growth is by steps of at most 64 MiB beyond what is needed', () => {
  const w = new Writer()
  const piece = new Uint8Array(MiB)
  // Just past the point where the step is capped (127 MiB pending).
  const total = 136 * MiB
  const { copied, slabs } = grow(w, total, (w) => w.bytes(piece))
  for (let i = 1; i < slabs.length; i++) {
    assert.ok(slabs[i]! - slabs[i - 1]! <= 64 * MiB + MiB + SLAB, `step from ${slabs[i - 1]} to ${slabs[i]}`)
  }
  assert.ok(w.buf.length - w.length <= 64 * MiB + SLAB)
  // Still linear at this size: a handful of copies of the message at most.
  assert.ok(copied <= 3 * total, `${copied / MiB} MiB copied to write ${total / MiB} MiB`)
})

test('take() keeps reusing a standard slab for small messages', () => {
  const w = new Writer()
  const slab = w.buf
  for (let i = 0; i < 100; i++) {
    fe.writeSync(w)
    assert.equal(w.take().length, 5)
  }
  assert.equal(w.buf, slab)
})

test('take() drops an oversized slab once its bytes are handed out', () => {
  const w = new Writer()
  fe.writeCopyData(w, new Uint8Array(4 * MiB).fill(9))
  const big = w.buf
  assert.ok(big.length > 4 * MiB)
  const out = w.take()
  assert.equal(out.length, 4 * MiB + 5)
  assert.equal(out.buffer, big.buffer, 'handed out as a view, not copied')
  assert.equal(w.buf.length, SLAB, 'back to a standard slab')
  assert.notEqual(w.buf, big)
  // What was handed out is never written to again.
  fe.writeSync(w)
  w.take()
  assert.equal(out[5], 9)
  assert.equal(out[out.length - 1], 9)
})

test('a slab that grew a little during a burst is kept; one that grew a lot is not', () => {
  const w = new Writer()
  // Just over one slab: the burst's slab stays in use.
  while (w.length < SLAB + 100) fe.writeSync(w)
  const burst = w.buf
  w.take()
  assert.equal(w.buf, burst)
  w.bytes(new Uint8Array(KiB * KiB))
  w.take()
  assert.equal(w.buf.length, SLAB)
})

test('marks and patches stay right while the untaken bytes move to bigger slabs', () => {
  const w = new Writer()
  // Something already handed out, so the message starts mid-slab.
  fe.writeSync(w)
  w.take()
  const values = [new Uint8Array(3).fill(1), new Uint8Array(100).fill(2), new Uint8Array(200_000).fill(3), new Uint8Array(5).fill(4)]
  fe.writeBind(
    w,
    '',
    'a statement name',
    values.length,
    (w, i) => {
      const at = w.reserve32()
      w.bytes(values[i]!)
      w.patch32(at, w.length - at - 4)
      return i % 2
    },
    [1],
  )
  const out = w.take()
  assert.equal(out[0], 0x42)
  assert.equal(readInt32(out, 1), out.length - 1)
  let p = 5 + 1 + 'a statement name'.length + 1
  assert.equal((out[p]! << 8) | out[p + 1]!, 4)
  p += 2
  for (let i = 0; i < 4; i++, p += 2) assert.equal((out[p]! << 8) | out[p + 1]!, i % 2, `format of parameter ${i}`)
  assert.equal((out[p]! << 8) | out[p + 1]!, 4)
  p += 2
  for (const v of values) {
    assert.equal(readInt32(out, p), v.length)
    p += 4
    assert.ok(out.subarray(p, p + v.length).every((b) => b === v[0]))
    p += v.length
  }
  assert.equal((out[p]! << 8) | out[p + 1]!, 1)
  assert.equal(p + 4, out.length)
})

test('a long string is measured, not given three bytes of room per character', () => {
  const w = new Writer()
  const ascii = 'x'.repeat(2 * MiB)
  assert.equal(w.str(ascii), 2 * MiB)
  assert.ok(w.buf.length <= 2 * MiB + 64 * KiB, `slab of ${w.buf.length} bytes`)
  w.take()
  const wide = '€'.repeat(MiB)
  assert.equal(w.str(wide), 3 * MiB)
  assert.ok(w.buf.length <= 3 * MiB + 64 * KiB)
  assert.equal(Buffer.from(w.take()).toString('utf8'), wide)
  // Short strings still take the cheap estimate, and their bytes are exact.
  w.cstr('héllo')
  assert.deepEqual([...w.take()], [...Buffer.from('héllo\0', 'utf8')])
})

test('truncate() after a failed huge encode gives up the huge slab', () => {
  const w = new Writer()
  fe.writeSync(w)
  const mark = w.length
  w.bytes(new Uint8Array(8 * MiB))
  w.truncate(mark)
  assert.equal(w.buf.length, SLAB)
  assert.deepEqual([...w.take()], [0x53, 0, 0, 0, 4])
})

test('a value or message larger than PostgreSQL accepts fails before it is copied', () => {
  const w = new Writer()
  const m = w.begin(0x42)
  // Zero-filled and never written, so this costs no memory.
  const huge = new Uint8Array(MAX_FRONTEND_MESSAGE + 1)
  assert.throws(() => w.bytes(huge), (e: unknown) => e instanceof ArgumentError && /more than a PostgreSQL message can hold/.test(e.message))
  assert.equal(w.buf.length, SLAB)
  // A message that grew past the limit one piece at a time fails when it is closed.
  w.pos += MAX_FRONTEND_MESSAGE
  assert.throws(() => w.end(m), ArgumentError)
})
