// Fuzzing of the frame splitter: valid streams (random messages, and sessions
// and results recorded from real servers), mutated at the message and the
// byte level, and random bytes, cut into random chunks.
//
// Whatever comes in, a reader either decodes it or throws its own documented
// error: never a RangeError or TypeError, never a hang, never memory out of
// proportion to the input. Seeded (test/support/fuzz.ts): PIPEGRES_FUZZ_SEED
// replays a run, PIPEGRES_FUZZ_SCALE multiplies the cases; `npm run fuzz`
// runs every fuzz file again and again.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { Framer } from '../../../src/protocol/framer.js'
import { ProtocolError } from '../../../src/errors.js'
import { concat, int32 as i32, type Bytes } from '../../support/fakes/backend-messages.js'
import { chunking, chunksOf, code, mutatedStream, randomStream, serialize, validStream } from '../../support/fixtures/backend-streams.js'
import { describeError, fuzzer, runs } from '../../support/fuzz.js'

const { check } = fuzzer(import.meta.url)

/** A message as the framer delivered it, without copying it (copies would blur the memory check). */
interface Framed {
  type: number
  length: number
  hash: number
}

function fnv(buf: Uint8Array, start: number, end: number): number {
  let h = 0x811c9dc5
  for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i]!, 0x01000193)
  return h >>> 0
}

/** Bytes a framer may hold for input it has been given: what it has received, a few times over, plus its first room. */
const allowance = (received: number): number => 16 * received + 256 * 1024

/**
 * Feeds chunks to a fresh framer; returns what it delivered and the error it
 * threw, if any. Checks on the way that it never threw anything but a
 * ProtocolError and never held memory out of proportion to its input.
 */
function frameChunks(chunks: readonly Bytes[], maxMessageSize?: number): { framed: Framed[]; error: string | null } {
  const framed: Framed[] = []
  const framer = new Framer(
    {
      onMessage(type, buf, start, end) {
        framed.push({ type, length: end - start, hash: fnv(buf, start, end) })
      },
    },
    maxMessageSize,
  )
  const base = process.memoryUsage().arrayBuffers
  let received = 0
  for (const chunk of chunks) {
    received += chunk.length
    try {
      framer.push(chunk)
    } catch (err) {
      if (!(err instanceof ProtocolError)) assert.fail(`the framer threw ${describeError(err)}`)
      return { framed, error: err.message }
    } finally {
      const held = process.memoryUsage().arrayBuffers - base
      if (held > allowance(received)) assert.fail(`the framer holds ${held} bytes after receiving ${received}`)
    }
  }
  return { framed, error: null }
}

test('framer: valid streams in any chunking give back exactly their messages', (t) => {
  check(t, runs(1500), [validStream, chunking], (msgs, cuts) => {
    const data = serialize(msgs)
    const { framed, error } = frameChunks(chunksOf(data, cuts))
    assert.equal(error, null)
    assert.deepEqual(
      framed,
      msgs.map((m) => ({ type: m.type, length: m.body.length, hash: fnv(m.body, 0, m.body.length) })),
    )
  })
})

function sameInAnyChunking(data: Bytes, cuts: number[] | 'bytes', maxMessageSize?: number): void {
  const whole = frameChunks([data], maxMessageSize)
  const chunked = frameChunks(chunksOf(data, cuts), maxMessageSize)
  assert.deepEqual(chunked, whole)
}

test('framer: mutated streams frame or fail with a ProtocolError, the same in every chunking', (t) => {
  check(t, runs(3000), [mutatedStream, chunking, fc.option(fc.integer({ min: 5, max: 200 }), { freq: 5 })], (data, cuts, max) =>
    sameInAnyChunking(data, cuts, max ?? undefined),
  )
})

test('framer: random bytes frame or fail with a ProtocolError, the same in every chunking', (t) => {
  check(t, runs(2000), [randomStream, chunking], (data, cuts) => sameInAnyChunking(data, cuts))
})

// Every type that may be long, each with a length claim near its own limit.
const LONG_CLAIMS: [type: string, claim: number][] = [
  ['D', 2 ** 30],
  ['d', 2 ** 30 + 2 ** 16],
  ['E', 2 ** 30],
  ['N', 2 ** 30],
  ['V', 2 ** 30],
  ['T', 16 * 2 ** 20],
  ['S', 2 ** 20],
  ['A', 2 ** 20],
  ['R', 2 ** 16],
  ['t', 4 + 2 + 4 * 65535],
  ['G', 4 + 3 + 2 * 65535],
]

test('framer: a length claim is not an allocation: 20 bytes claiming 1 GiB cost kilobytes, however they arrive', (t) => {
  for (const [type, claim] of LONG_CLAIMS) {
    const data = concat([Uint8Array.of(code(type)), i32(claim), new Uint8Array(15).fill(7)])
    // frameChunks checks the memory held after every chunk against allowance().
    assert.deepEqual(frameChunks([data]), { framed: [], error: null }, type)
    assert.deepEqual(frameChunks(chunksOf(data, [2, 9])), { framed: [], error: null }, type)
  }
  check(t, runs(300), [fc.constantFrom(...LONG_CLAIMS), fc.uint8Array({ maxLength: 3000 }), chunking], ([type, claim], body, cuts) => {
    const data = concat([Uint8Array.of(code(type)), i32(claim), body])
    assert.deepEqual(frameChunks(chunksOf(data, cuts)), { framed: [], error: null })
  })
})

test('framer: a big message still arrives whole, growing with its bytes', (t) => {
  // Sizes around the first room, the registration of assembled messages, and a few MiB.
  check(t, runs(12), [fc.constantFrom(60_000, 70_000, 1_048_000, 1_049_000, 3_500_000), fc.integer({ min: 2000, max: 200_000 }), fc.nat()], (size, chunkSize, seed) => {
    const body = new Uint8Array(size)
    for (let i = 0; i < size; i += 4096) body[i] = (i / 4096 + seed) & 255
    body[size - 1] = 0x5a
    const data = serialize([{ type: code('D'), body }, { type: code('c'), body: new Uint8Array(0) }])
    const chunks: Bytes[] = []
    for (let i = 0; i < data.length; i += chunkSize) chunks.push(data.subarray(i, i + chunkSize))
    const { framed, error } = frameChunks(chunks)
    assert.equal(error, null)
    assert.deepEqual(framed, [
      { type: code('D'), length: size, hash: fnv(body, 0, size) },
      { type: code('c'), length: 0, hash: fnv(body, 0, 0) },
    ])
  })
})
