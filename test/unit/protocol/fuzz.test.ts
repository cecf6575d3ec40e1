// test-tags: slow
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { Framer } from '../../../src/protocol/framer.js'
import {
  decodeAuthentication,
  decodeBackendKeyData,
  decodeCommandComplete,
  decodeCopyResponse,
  decodeErrorFields,
  decodeNegotiateProtocolVersion,
  decodeNotification,
  decodeParameterDescription,
  decodeParameterStatus,
  decodeReadyForQuery,
  decodeRowDescription,
  decodeSaslMechanisms,
  type FieldDescription,
} from '../../../src/protocol/backend.js'
import { chooseSaslMechanism, md5PasswordMessage, ScramClient, tlsServerEndPointHash } from '../../../src/auth/index.js'
import { decodeBase64, encodeBase64 } from '../../../src/auth/base64.js'
import { parseServerFinal, parseServerFirst } from '../../../src/auth/scram-messages.js'
import { AuthError, ConnectionError, PgError, ProtocolError } from '../../../src/errors.js'
import { connect, type Client } from '../../../src/index.js'
import { TypeCatalog } from '../../../src/types/catalog.js'
import { CodecError } from '../../../src/types/codec.js'
import { WireParser, WireProtocolError } from '../../../src/wire/index.js'
import { concat, cstr, dataRowBody, int16 as i16, int32 as i32, message, rowDescriptionBody } from '../../support/fakes/backend-messages.js'
import { fakeServer, type FakeConnection } from '../../support/fakes/fake-server.js'
import { RECORDINGS, bytes as hexBytes } from '../../support/fixtures/wire-recordings.js'
import { repoRoot as root } from '../../support/paths.js'

// Fuzzing of everything that reads bytes from a server: the frame splitter,
// every backend-message decoder, the authentication parsers, the browser-side
// parser, and (fewer cases) a whole Client behind a scripted server. Inputs
// start from valid streams (recorded from real servers or built from random
// field values), get mutated at the message and the byte level, and are cut
// into random chunks. Whatever comes in, a reader either decodes it or throws
// its own documented error: never a RangeError or TypeError, never a hang,
// never memory out of proportion to the input.
//
// Seeded: PIPEGRES_FUZZ_SEED=<n> replays a run (every failure prints it);
// PIPEGRES_FUZZ_SCALE=<x> multiplies the number of cases (scripts/fuzz.ts
// runs this file again and again at a larger scale, with fresh seeds).

const BASE_SEED = process.env.PIPEGRES_FUZZ_SEED ? Number(process.env.PIPEGRES_FUZZ_SEED) | 0 : (Math.random() * 2 ** 31) | 0
const SCALE = process.env.PIPEGRES_FUZZ_SCALE ? Number(process.env.PIPEGRES_FUZZ_SCALE) : 1
if (!Number.isFinite(BASE_SEED) || !(SCALE > 0)) throw new Error('PIPEGRES_FUZZ_SEED must be an integer and PIPEGRES_FUZZ_SCALE a positive number')

const runs = (n: number): number => Math.max(1, Math.round(n * SCALE))

/** Each property gets its own seed from the base seed and its name, so a filtered run replays the same cases. */
function seedFor(name: string): number {
  return (BASE_SEED ^ createHash('sha256').update(name).digest().readInt32BE(0)) | 0
}

function reproduce(): string {
  return `PIPEGRES_FUZZ_SEED=${BASE_SEED}${SCALE !== 1 ? ` PIPEGRES_FUZZ_SCALE=${SCALE}` : ''} npm test -- unit/fuzz-protocol`
}

function failed(t: TestContext, err: unknown): never {
  const message = err instanceof Error ? err.message : String(err)
  throw new Error(`fuzz case failed; replay with: ${reproduce()} --test-name-pattern=${JSON.stringify(t.name)}\n${message}`, { cause: err })
}

function check<Ts extends [unknown, ...unknown[]]>(t: TestContext, numRuns: number, arbs: { [K in keyof Ts]: fc.Arbitrary<Ts[K]> }, body: (...args: Ts) => void): void {
  t.diagnostic(`seed ${BASE_SEED}, ${numRuns} cases`)
  try {
    fc.assert(fc.property(...arbs, body), { seed: seedFor(t.name), numRuns })
  } catch (err) {
    failed(t, err)
  }
}

async function checkAsync<Ts extends [unknown, ...unknown[]]>(
  t: TestContext,
  numRuns: number,
  arbs: { [K in keyof Ts]: fc.Arbitrary<Ts[K]> },
  body: (...args: Ts) => Promise<void>,
): Promise<void> {
  t.diagnostic(`seed ${BASE_SEED}, ${numRuns} cases`)
  try {
    await fc.assert(fc.asyncProperty(...arbs, body), { seed: seedFor(t.name), numRuns })
  } catch (err) {
    failed(t, err)
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.constructor.name}: ${err.message}\n${err.stack ?? ''}` : String(err)
}

/** Counts outcomes by name, for a diagnostic line showing that a property reached both sides. */
class Tally {
  private readonly counts = new Map<string, number>()
  add(outcome: string): void {
    this.counts.set(outcome, (this.counts.get(outcome) ?? 0) + 1)
  }
  report(t: TestContext): void {
    t.diagnostic([...this.counts].map(([k, n]) => `${k}: ${n}`).join(', '))
  }
}

const outcome = (r: unknown): string => (r instanceof Error ? r.constructor.name : 'decoded')

/** Runs `fn`; a throw must be one of `allowed`. */
function only(allowed: readonly (abstract new (...args: never[]) => Error)[], fn: () => unknown): unknown {
  try {
    return fn()
  } catch (err) {
    if (allowed.some((c) => err instanceof c)) return err
    assert.fail(`threw ${describe(err)}`)
  }
}

// ---------------------------------------------------------------------------
// Building messages

type Bytes = Uint8Array
interface Msg {
  type: number
  body: Bytes
}

const utf8 = new TextEncoder()
const code = (c: string): number => c.charCodeAt(0)

const frame = (m: Msg): Bytes => message(m.type, m.body)

const serialize = (msgs: readonly Msg[]): Bytes => concat(msgs.map(frame))

/** Splits a stream into messages the way any reader would, stopping at the first length that cannot be right. */
function lenientFrames(data: Bytes): Msg[] {
  const out: Msg[] = []
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  let p = 0
  while (p + 5 <= data.length) {
    const len = view.getInt32(p + 1)
    if (len < 4 || p + 1 + len > data.length) break
    out.push({ type: data[p]!, body: data.subarray(p + 5, p + 1 + len) })
    p += 1 + len
  }
  return out
}

// Strings the protocol carries as C strings: any well-formed text without NUL.
const text = (maxLength = 12): fc.Arbitrary<string> =>
  fc.string({ unit: 'binary', maxLength }).filter((s) => !s.includes('\0') && Buffer.from(s).toString() === s)
const u32 = fc.integer({ min: 0, max: 2 ** 32 - 1 })
const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })
const int16 = fc.integer({ min: -32768, max: 32767 })

const fieldArb: fc.Arbitrary<FieldDescription> = fc.record(
  {
    name: text(),
    tableOid: u32,
    columnNumber: int16,
    typeOid: u32,
    typeSize: int16,
    typeModifier: int32,
    format: fc.constantFrom(0, 1),
  },
  { noNullPrototype: true },
)

const ERROR_CODES = 'SVCMDHPpqWstcdnFLR'
const NUMERIC_CODES = 'PpL'

/** A valid backend message with what its decoder must return (undefined: no decoder to compare with). */
interface Valid extends Msg {
  expected?: unknown
}

const validMessage: fc.Arbitrary<Valid> = fc.oneof(
  fc.array(fieldArb, { maxLength: 5 }).map((fields) => ({ type: code('T'), body: rowDescriptionBody(fields), expected: fields })),
  fc.array(fc.oneof(fc.constant(null), fc.uint8Array({ maxLength: 24 })), { maxLength: 6 }).map((values) => ({ type: code('D'), body: dataRowBody(values) })),
  fc.array(u32, { maxLength: 8 }).map((oids) => ({ type: code('t'), body: concat([i16(oids.length), ...oids.map(i32)]), expected: oids })),
  fc
    .tuple(
      fc.constantFrom('E', 'N'),
      fc.uniqueArray(fc.constantFrom(...ERROR_CODES), { maxLength: 8 }),
      fc.array(text(), { minLength: 8, maxLength: 8 }),
      fc.array(fc.integer({ min: -1000, max: 100000 }), { minLength: 8, maxLength: 8 }),
      fc.array(fc.tuple(fc.constantFrom('X', 'Y', 'z', '!'), text()), { maxLength: 2 }),
    )
    .map(([t, codes, texts, numbers, unknown]) => {
      const parts: Bytes[] = []
      const fields: Record<string, string | number> = {}
      codes.forEach((c, i) => {
        const value = NUMERIC_CODES.includes(c) ? String(numbers[i]) : texts[i]!
        parts.push(Uint8Array.of(code(c)), cstr(value))
        fields[c] = NUMERIC_CODES.includes(c) ? numbers[i]! : value
      })
      for (const [c, v] of unknown) parts.push(Uint8Array.of(code(c)), cstr(v))
      parts.push(Uint8Array.of(0))
      return { type: code(t), body: concat(parts), expected: fields }
    }),
  fc.tuple(text(), text(24)).map(([k, v]) => ({ type: code('S'), body: concat([cstr(k), cstr(v)]), expected: [k, v] })),
  fc.tuple(int32, fc.uint8Array({ minLength: 4, maxLength: 256 })).map(([pid, key]) => ({ type: code('K'), body: concat([i32(pid), key]), expected: { processId: pid, secretKey: key } })),
  fc
    .oneof(
      fc.constant(i32(0)),
      fc.constant(i32(3)),
      fc.uint8Array({ minLength: 4, maxLength: 4 }).map((salt) => concat([i32(5), salt])),
      fc.array(fc.constantFrom('SCRAM-SHA-256', 'SCRAM-SHA-256-PLUS', 'X-UNKNOWN'), { maxLength: 3 }).map((ms) => concat([i32(10), ...ms.map(cstr), Uint8Array.of(0)])),
      fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 18 }), fc.integer({ min: 1, max: 100_000 })).map(([salt, i]) => concat([i32(11), utf8.encode(`r=abc123srv,s=${encodeBase64(salt)},i=${i}`)])),
      fc.uint8Array({ minLength: 32, maxLength: 32 }).map((sig) => concat([i32(12), utf8.encode(`v=${encodeBase64(sig)}`)])),
      fc.constantFrom(2, 7, 8, 9).map(i32),
    )
    .map((body) => ({ type: code('R'), body })),
  fc.tuple(int32, fc.array(text(), { maxLength: 3 })).map(([v, opts]) => ({ type: code('v'), body: concat([i32(v), i32(opts.length), ...opts.map(cstr)]), expected: { version: v, unsupportedOptions: opts } })),
  text(20).map((tag) => ({ type: code('C'), body: cstr(tag), expected: tag })),
  fc.tuple(fc.constantFrom('G', 'H', 'W'), fc.constantFrom(0, 1), fc.array(fc.constantFrom(0, 1), { maxLength: 6 })).map(([t, format, cols]) => ({
    type: code(t),
    body: concat([Uint8Array.of(format), i16(cols.length), ...cols.map(i16)]),
    expected: { format, columnFormats: cols },
  })),
  fc.tuple(int32, text(), text(24)).map(([pid, channel, payload]) => ({ type: code('A'), body: concat([i32(pid), cstr(channel), cstr(payload)]), expected: { processId: pid, channel, payload } })),
  fc.constantFrom('I', 'T', 'E').map((s) => ({ type: code('Z'), body: Uint8Array.of(code(s)), expected: s })),
  fc.constantFrom('1', '2', '3', 'n', 's', 'I', 'c').map((t) => ({ type: code(t), body: new Uint8Array(0) })),
  fc.uint8Array({ maxLength: 40 }).map((data) => ({ type: code('d'), body: data })),
  fc.uint8Array({ maxLength: 16 }).map((data) => ({ type: code('V'), body: concat([i32(data.length), data]) })),
)

// Streams recorded from real PostgreSQL 15 and 18 servers: a whole session
// (startup included), and the result messages of many types in text and binary.
const SESSIONS: Msg[][] = [15, 18].map((v) =>
  lenientFrames(Uint8Array.from(Buffer.from(readFileSync(join(root, 'test', 'support', 'fixtures', `session-pg${v}.hex`), 'utf8').replace(/\s+/g, ''), 'hex'))),
)
const RESULTS: Bytes[] = RECORDINGS.flatMap(({ fixtures }) =>
  Object.values(fixtures).flatMap((f) => [f.text, f.binary, f['all-binary']].filter((h): h is string => h !== undefined).map(hexBytes)),
)
const RESULT_MESSAGES: Msg[][] = RESULTS.map(lenientFrames)

const validStream: fc.Arbitrary<Msg[]> = fc.oneof(
  fc.array(validMessage, { minLength: 1, maxLength: 12 }),
  fc.constantFrom(...SESSIONS),
  fc.constantFrom(...RESULT_MESSAGES),
)

// ---------------------------------------------------------------------------
// Mutations

/** Values that sit on the edges the readers check: lengths, counts, signs. */
const INTERESTING_32 = [0, 1, 3, 4, 5, -1, -2, 0x7fffffff, -0x80000000, 0x40000000, 0x40010000, 0x3fffffff, 0x10000, 65535, 1664]
const INTERESTING_16 = [0, 1, -1, 0x7fff, -0x8000, 1664, 255]

type ByteMutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'set'; at: number; value: number }
  | { kind: 'insert'; at: number; bytes: Bytes }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'int32'; at: number; value: number }
  | { kind: 'int16'; at: number; value: number }

const byteMutation: fc.Arbitrary<ByteMutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('int32' as const), at: fc.nat(), value: fc.constantFrom(...INTERESTING_32) }),
  fc.record({ kind: fc.constant('int16' as const), at: fc.nat(), value: fc.constantFrom(...INTERESTING_16) }),
)

function mutateBytes(data: Bytes, m: ByteMutation): Bytes {
  const n = data.length
  const at = m.at % (n + 1)
  switch (m.kind) {
    case 'flip':
    case 'set': {
      if (n === 0) return data
      const out = data.slice()
      const i = m.at % n
      out[i] = m.kind === 'flip' ? out[i]! ^ (1 << m.bit) : m.value
      return out
    }
    case 'insert':
      return concat([data.subarray(0, at), m.bytes, data.subarray(at)])
    case 'delete':
      return concat([data.subarray(0, at), data.subarray(Math.min(n, at + m.count))])
    case 'truncate':
      return data.subarray(0, at)
    case 'int32':
    case 'int16': {
      const width = m.kind === 'int32' ? 4 : 2
      if (n < width) return data
      const out = data.slice()
      out.set(m.kind === 'int32' ? i32(m.value) : i16(m.value), m.at % (n - width + 1))
      return out
    }
  }
}

const BACKEND_TYPES = 'R K 2 3 C d c G H W D I E V v n N A t S 1 s Z T'.split(' ').map(code)

type MessageMutation =
  | { kind: 'drop'; i: number }
  | { kind: 'dup'; i: number }
  | { kind: 'swap'; i: number; j: number }
  | { kind: 'retype'; i: number; type: number }
  | { kind: 'insert'; i: number; msg: Msg }
  | { kind: 'body'; i: number; mutation: ByteMutation }
  | { kind: 'length'; i: number; delta: number }

const messageMutation: fc.Arbitrary<MessageMutation> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), i: fc.nat() }),
  fc.record({ kind: fc.constant('dup' as const), i: fc.nat() }),
  fc.record({ kind: fc.constant('swap' as const), i: fc.nat(), j: fc.nat() }),
  fc.record({ kind: fc.constant('retype' as const), i: fc.nat(), type: fc.oneof(fc.constantFrom(...BACKEND_TYPES), fc.integer({ min: 0, max: 255 })) }),
  fc.record({ kind: fc.constant('insert' as const), i: fc.nat(), msg: validMessage }),
  fc.record({ kind: fc.constant('body' as const), i: fc.nat(), mutation: byteMutation }),
  fc.record({ kind: fc.constant('length' as const), i: fc.nat(), delta: fc.oneof(fc.integer({ min: -6, max: 6 }), fc.constantFrom(...INTERESTING_32)) }),
)

/** Applies message-level mutations; a 'length' one leaves the message with a length its body does not have. */
function mutateMessages(msgs: readonly Msg[], mutations: readonly MessageMutation[]): Bytes {
  let list: (Msg & { lengthDelta?: number })[] = msgs.slice()
  for (const m of mutations) {
    const n = list.length
    if (n === 0 && m.kind !== 'insert') continue
    const i = m.i % Math.max(n, 1)
    switch (m.kind) {
      case 'drop':
        list.splice(i, 1)
        break
      case 'dup':
        list.splice(i, 0, list[i]!)
        break
      case 'swap': {
        const j = m.j % n
        const a = list[i]!
        list[i] = list[j]!
        list[j] = a
        break
      }
      case 'retype':
        list[i] = { ...list[i]!, type: m.type }
        break
      case 'insert':
        list.splice(m.i % (n + 1), 0, m.msg)
        break
      case 'body':
        list[i] = { ...list[i]!, body: mutateBytes(list[i]!.body, m.mutation) }
        break
      case 'length':
        list[i] = { ...list[i]!, lengthDelta: m.delta }
        break
    }
  }
  list = list.slice(0, 400)
  return concat(list.map((m) => concat([Uint8Array.of(m.type), i32(m.body.length + 4 + (m.lengthDelta ?? 0)), m.body])))
}

/** A mutated stream: valid messages, then mutations at the message level and at the byte level. */
const mutatedStream: fc.Arbitrary<Bytes> = fc
  .tuple(validStream, fc.array(messageMutation, { maxLength: 3 }), fc.array(byteMutation, { maxLength: 2 }))
  .map(([msgs, mm, bm]) => bm.reduce(mutateBytes, mutateMessages(msgs, mm)))

const randomStream: fc.Arbitrary<Bytes> = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  // Random bodies behind plausible headers get past the first check more often.
  fc.array(fc.tuple(fc.constantFrom(...BACKEND_TYPES), fc.uint8Array({ maxLength: 40 })), { maxLength: 8 }).map((ms) => serialize(ms.map(([type, body]) => ({ type, body })))),
)

/** Cut points for a stream: random positions, or every byte. */
const chunking = fc.oneof({ weight: 6, arbitrary: fc.array(fc.nat(), { maxLength: 12 }) }, { weight: 1, arbitrary: fc.constant('bytes' as const) })

function chunksOf(data: Bytes, cuts: number[] | 'bytes'): Bytes[] {
  if (cuts === 'bytes') return Array.from({ length: data.length }, (_, i) => data.subarray(i, i + 1))
  const at = [...new Set(cuts.map((c) => c % (data.length + 1)))].sort((a, b) => a - b)
  const out: Bytes[] = []
  let prev = 0
  for (const c of [...at, data.length]) {
    out.push(data.subarray(prev, c))
    prev = c
  }
  return out
}

// ---------------------------------------------------------------------------
// The frame splitter

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
      if (!(err instanceof ProtocolError)) assert.fail(`the framer threw ${describe(err)}`)
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

// ---------------------------------------------------------------------------
// Backend-message decoders

const catalog = new TypeCatalog()
const view = catalog.view()
const PLAN_TYPES = [16, 17, 20, 21, 23, 25, 26, 114, 600, 700, 701, 790, 869, 1007, 1009, 1043, 1082, 1083, 1114, 1184, 1186, 1560, 1700, 2950, 3614, 3802, 3904]

/** The errors each kind of message may be refused with; everything else is a bug. */
function allowedErrors(type: number, body: Bytes): (abstract new (...args: never[]) => Error)[] {
  if (type === code('D')) return [ProtocolError, CodecError]
  // SCRAM texts and an MD5 salt are judged by the authentication layer.
  if (type === code('R') && body.length >= 4) {
    const c = new DataView(body.buffer, body.byteOffset).getInt32(0)
    if (c === 5 || c === 11 || c === 12) return [ProtocolError, AuthError]
  }
  return [ProtocolError]
}

/** Decodes a message body found at [start, end) of `buf` with the decoder the client uses for its type. */
function decodeMessage(type: number, buf: Bytes, start: number, end: number, columns: readonly number[]): unknown {
  switch (String.fromCharCode(type)) {
    case 'T':
      return decodeRowDescription(buf, start, end)
    case 't':
      return decodeParameterDescription(buf, start, end)
    case 'E':
      return decodeErrorFields(buf, start, end)
    case 'N':
      return decodeErrorFields(buf, start, end, 'NoticeResponse')
    case 'S':
      return decodeParameterStatus(buf, start, end)
    case 'K':
      return decodeBackendKeyData(buf, start, end)
    case 'R': {
      const req = decodeAuthentication(buf, start, end)
      // The data is a copy: it must not be a view of the message.
      assert.notEqual(req.data.buffer, buf.buffer)
      const textOf = (): string => Buffer.from(req.data).toString('utf8')
      if (req.code === 10) return decodeSaslMechanisms(req.data)
      if (req.code === 11) return parseServerFirst(textOf(), 'abc123', 100_000, 'SCRAM-SHA-256')
      if (req.code === 12) return parseServerFinal(textOf(), 'SCRAM-SHA-256')
      if (req.code === 5) return md5PasswordMessage('u', 'pw', req.data)
      return req
    }
    case 'v':
      return decodeNegotiateProtocolVersion(buf, start, end)
    case 'C':
      return decodeCommandComplete(buf, start, end)
    case 'G':
    case 'H':
    case 'W':
      return decodeCopyResponse(buf, start, end, 'CopyResponse')
    case 'A':
      return decodeNotification(buf, start, end)
    case 'Z':
      // The framer lets a ReadyForQuery through only with its one status byte.
      return end - start === 1 ? decodeReadyForQuery(buf, start) : null
    case 'D': {
      const cols = columns.map((typeOid, i) => ({ name: `c${i}`, typeOid }))
      const formats = columns.length % 2 === 0 ? view.resultFormats(cols) : []
      const plan = view.plan(cols, formats)
      return columns.length % 3 === 0 ? plan.array(buf, start, end) : plan.object(buf, start, end)
    }
    default:
      return null
  }
}

/** Places a body inside a bigger buffer, so that a decoder reading past its end would see other bytes (NULs included). */
const surroundings = fc.tuple(fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 8 }))

function decodeIn(type: number, body: Bytes, [before, after]: [Bytes, Bytes], columns: readonly number[]): unknown {
  const buf = concat([before, body, after])
  return decodeMessage(type, buf, before.length, before.length + body.length, columns)
}

function errorFieldsOf(fields: Record<string, string | number>) {
  const name = (c: string) =>
    ({ S: 'severity', V: 'severityNonLocalized', C: 'code', M: 'message', D: 'detail', H: 'hint', P: 'position', p: 'internalPosition', q: 'internalQuery', W: 'where', s: 'schema', t: 'table', c: 'column', d: 'dataType', n: 'constraint', F: 'file', L: 'line', R: 'routine' })[c]!
  return Object.fromEntries(Object.entries(fields).map(([c, v]) => [name(c), v]))
}

test('decoders: valid messages decode to what was encoded, wherever they sit in a buffer', (t) => {
  check(t, runs(2000), [validMessage, surroundings], (m, around) => {
    // A DataRow is decoded by the plan of its statement: text columns, as many as it has.
    const columns = m.type === code('D') ? Array<number>((m.body[0]! << 8) | m.body[1]!).fill(25) : []
    const got = decodeIn(m.type, m.body, around, columns)
    if (m.expected === undefined) return
    const type = String.fromCharCode(m.type)
    if (type === 'E' || type === 'N') {
      const expected = errorFieldsOf(m.expected as Record<string, string | number>)
      const f = got as Record<string, unknown>
      for (const [k, v] of Object.entries(expected)) assert.equal(f[k], v, k)
      if (expected.message === undefined) assert.match(String(f.message), /without a message/)
    } else if (type === 'K') {
      const e = m.expected as { processId: number; secretKey: Bytes }
      const g = got as { processId: number; secretKey: Bytes }
      assert.equal(g.processId, e.processId)
      assert.deepEqual([...g.secretKey], [...e.secretKey])
    } else {
      assert.deepEqual(got, m.expected)
    }
  })
})

const planColumns = fc.array(fc.constantFrom(...PLAN_TYPES), { minLength: 1, maxLength: 4 })

/** Text a value parser might half-accept: digits, signs, brackets, quotes, keywords. */
const valueText = fc
  .array(fc.constantFrom(...'0123456789-+.eE:{},"\\ ()[]<>tTfFnNuUlL'.split(''), 'NULL', 'infinity', 'NaN', '1999-01-08', '04:05:06', '::1', '127.0.0.1/8', "'a'", '$1'), { maxLength: 12 })
  .map((parts) => utf8.encode(parts.join('')))

const dataRow = fc.oneof(
  fc.array(fc.oneof(fc.constant(null), fc.uint8Array({ maxLength: 24 }), valueText), { maxLength: 5 }).map(dataRowBody),
  fc.uint8Array({ maxLength: 60 }),
)

test('decoders: mutated and random bodies decode or fail with the error their layer documents', (t) => {
  const body = fc.oneof(
    fc.tuple(validMessage, fc.array(byteMutation, { minLength: 1, maxLength: 4 })).map(([m, ms]) => ({ type: m.type, body: ms.reduce(mutateBytes, m.body) })),
    fc.tuple(fc.constantFrom(...BACKEND_TYPES), fc.uint8Array({ maxLength: 64 })).map(([type, b]) => ({ type, body: b })),
    dataRow.map((b) => ({ type: code('D'), body: b })),
  )
  const tally = new Tally()
  check(t, runs(6000), [body, surroundings, planColumns], (m, around, columns) => {
    tally.add(outcome(only(allowedErrors(m.type, m.body), () => decodeIn(m.type, m.body, around, columns))))
  })
  tally.report(t)
})

test('decoders: a DataRow of random values for any column types decodes or fails with a ProtocolError or CodecError', (t) => {
  const tally = new Tally()
  check(t, runs(3000), [planColumns, fc.array(fc.oneof(fc.constant(null), fc.uint8Array({ maxLength: 24 }), valueText), { maxLength: 4 })], (columns, values) => {
    const body = dataRowBody(values.slice(0, columns.length).concat(Array(Math.max(0, columns.length - values.length)).fill(null)))
    tally.add(outcome(only([ProtocolError, CodecError], () => decodeMessage(code('D'), body, 0, body.length, columns))))
  })
  tally.report(t)
})

// ---------------------------------------------------------------------------
// Authentication: the SCRAM exchange, MD5 salts, SASL mechanism lists, certificates

const PASSWORD = 'fuzz-pw'
const CLIENT_NONCE = 'fuzzclientnonce0123456789'

function hmac(key: Uint8Array, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest()
}

/** The server side of one SCRAM-SHA-256 exchange, right: server-first for the nonce, and the signature for the client's final message. */
function scramServer(salt: Bytes, iterations: number) {
  const serverFirst = `r=${CLIENT_NONCE}srv,s=${encodeBase64(salt)},i=${iterations}`
  return {
    serverFirst,
    serverFinal(clientFinal: string): string {
      const withoutProof = clientFinal.slice(0, clientFinal.lastIndexOf(',p='))
      const salted = pbkdf2Sync(PASSWORD, salt, iterations, 32, 'sha256')
      const authMessage = `n=,r=${CLIENT_NONCE},${serverFirst},${withoutProof}`
      return `v=${encodeBase64(hmac(hmac(salted, 'Server Key'), authMessage))}`
    },
  }
}

test('SCRAM: mutated server messages are refused with an AuthError; intact ones complete the exchange', async (t) => {
  const message = (s: string, mutations: ByteMutation[]) => mutations.reduce(mutateBytes, utf8.encode(s))
  await checkAsync(
    t,
    runs(400),
    [fc.uint8Array({ minLength: 1, maxLength: 20 }), fc.integer({ min: 1, max: 40 }), fc.array(byteMutation, { maxLength: 3 }), fc.array(byteMutation, { maxLength: 3 })],
    async (salt, iterations, firstMutations, finalMutations) => {
      const client = new ScramClient({ password: PASSWORD, mechanism: 'SCRAM-SHA-256', nonce: CLIENT_NONCE, maxIterations: 64 })
      client.clientFirst()
      const server = scramServer(salt, iterations)
      let final: Uint8Array
      try {
        final = await client.clientFinal(message(server.serverFirst, firstMutations))
      } catch (err) {
        if (!(err instanceof AuthError)) assert.fail(`clientFinal threw ${describe(err)}`)
        assert.ok(firstMutations.length > 0, `the intact server-first-message was refused: ${err.message}`)
        return
      }
      const serverFinal = message(server.serverFinal(Buffer.from(final).toString()), finalMutations)
      try {
        client.verifyServerFinal(serverFinal)
      } catch (err) {
        if (!(err instanceof AuthError)) assert.fail(`verifyServerFinal threw ${describe(err)}`)
        assert.equal(client.verified, false)
        return
      }
      assert.equal(client.verified, true)
      // A mutation that left the message as it was does not count.
      if (Buffer.compare(Buffer.from(serverFinal), Buffer.from(server.serverFinal(Buffer.from(final).toString()))) !== 0) {
        assert.fail('a changed server signature was accepted')
      }
    },
  )
})

test('SCRAM and SASL: server texts, salts and mechanism lists only ever fail with an AuthError', (t) => {
  const scramText = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 80 }),
    fc.array(fc.constantFrom('r=', 's=', 'i=', 'v=', 'e=', 'm=', ',', '=', CLIENT_NONCE, 'srv', 'c2FsdA==', '4096', '0', '-1', '99999999999999999999', 'ä', '\0'), { maxLength: 12 }).map((p) => p.join('')),
  )
  check(t, runs(4000), [scramText, fc.uint8Array({ maxLength: 8 }), fc.array(fc.string({ maxLength: 30 }), { maxLength: 10 }), fc.constantFrom('disable' as const, 'prefer' as const, 'require' as const), fc.boolean(), fc.boolean()], (s, salt, offered, channelBinding, tls, bindingDataAvailable) => {
    only([AuthError], () => parseServerFirst(s, CLIENT_NONCE, 4096, 'SCRAM-SHA-256'))
    only([AuthError], () => parseServerFinal(s, 'SCRAM-SHA-256'))
    only([AuthError], () => md5PasswordMessage('u', s, salt))
    only([AuthError], () => chooseSaslMechanism(offered, { channelBinding, tls, bindingDataAvailable }))
    const decoded = decodeBase64(s)
    if (decoded !== undefined) assert.equal(encodeBase64(decoded), s)
  })
})

// A certificate is read only as far as its signature algorithm: build that
// skeleton in DER, with the algorithms the client knows and some it does not.
function der(tag: number, content: Bytes): Bytes {
  const n = content.length
  const len = n < 0x80 ? Uint8Array.of(n) : n < 0x100 ? Uint8Array.of(0x81, n) : Uint8Array.of(0x82, n >> 8, n & 255)
  return concat([Uint8Array.of(tag), len, content])
}
const oid = (hex: string): Bytes => der(0x06, Uint8Array.from(Buffer.from(hex, 'hex')))
const SIGNATURE_OIDS = ['2a864886f70d01010b', '2a864886f70d01010c', '2a8648ce3d040302', '2a864886f70d010105', '2b6570', '2a864886f70d01010a', '0102030405']
const HASH_OIDS = ['608648016503040201', '608648016503040202', '2b0e03021a', '0102']

const certificateArb = fc
  .tuple(fc.constantFrom(...SIGNATURE_OIDS), fc.constantFrom(...HASH_OIDS), fc.uint8Array({ maxLength: 300 }), fc.uint8Array({ maxLength: 64 }), fc.boolean())
  .map(([sig, hash, tbs, signature, withNull]) => {
    const params =
      sig === '2a864886f70d01010a' ? der(0x30, withNull ? new Uint8Array(0) : der(0xa0, der(0x30, concat([oid(hash), Uint8Array.of(5, 0)])))) : withNull ? Uint8Array.of(5, 0) : new Uint8Array(0)
    return der(0x30, concat([der(0x30, tbs), der(0x30, concat([oid(sig), params])), der(0x03, concat([Uint8Array.of(0), signature]))]))
  })

test('channel binding: mutated certificates hash or fail with an AuthError', (t) => {
  check(t, runs(3000), [certificateArb, fc.array(byteMutation, { maxLength: 3 })], (cert, mutations) => {
    const result = only([AuthError], () => tlsServerEndPointHash(mutations.reduce(mutateBytes, cert)))
    if (mutations.length === 0 && !(result instanceof AuthError)) assert.ok((result as Bytes).length >= 28)
  })
})

// ---------------------------------------------------------------------------
// The browser-side parser (pipegres/wire) on mutated recordings

interface WireRun {
  events: unknown[]
  error: string | null
}

function wireParse(chunks: readonly Bytes[], rowMode: 'object' | 'array'): WireRun {
  const events: unknown[] = []
  const parser = new WireParser({
    rowMode,
    onFields: (fields) => events.push(['fields', fields]),
    onRow: (row) => events.push(['row', row]),
    onComplete: (c) => events.push(['complete', c]),
    onError: (e) => events.push(['error', { ...e, message: e.message }]),
    onNotice: (n) => events.push(['notice', n]),
  })
  try {
    for (const c of chunks) parser.push(c)
    parser.end()
  } catch (err) {
    if (!(err instanceof WireProtocolError)) assert.fail(`the wire parser threw ${describe(err)}`)
    return { events, error: err.message }
  }
  return { events, error: null }
}

test('wire parser: mutated result streams parse or fail with a WireProtocolError, the same in every chunking', (t) => {
  const resultStream = fc
    .tuple(fc.array(fc.constantFrom(...RESULT_MESSAGES), { minLength: 1, maxLength: 3 }), fc.array(messageMutation, { maxLength: 3 }), fc.array(byteMutation, { maxLength: 2 }))
    .map(([streams, mm, bm]) => bm.reduce(mutateBytes, mutateMessages(streams.flat(), mm)))
  check(t, runs(2500), [resultStream, chunking, fc.constantFrom('object' as const, 'array' as const)], (data, cuts, rowMode) => {
    const whole = wireParse([data], rowMode)
    const chunked = wireParse(chunksOf(data, cuts), rowMode)
    assert.deepEqual(chunked, whole)
  })
})

// ---------------------------------------------------------------------------
// A whole Client behind a scripted server

/** Uncaught exceptions and unhandled rejections while `fn` runs: there must be none. */
async function noStrayErrors(fn: () => Promise<void>): Promise<void> {
  const stray: unknown[] = []
  const onError = (err: unknown) => stray.push(err)
  process.on('uncaughtException', onError)
  process.on('unhandledRejection', onError)
  try {
    await fn()
    // Let whatever the last case set off (socket closes, timers of 0) run.
    await new Promise((r) => setTimeout(r, 5))
  } finally {
    process.off('uncaughtException', onError)
    process.off('unhandledRejection', onError)
  }
  if (stray.length > 0) assert.fail(`thrown into the process: ${stray.map(describe).join('\n')}`)
}

async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms: a hang`)), ms)))])
  } finally {
    clearTimeout(timer)
  }
}

/** Writes bytes in the given chunks, one per turn of the event loop, so that they tend to arrive as separate reads. */
async function writeChunks(c: FakeConnection, chunks: readonly Bytes[]): Promise<void> {
  for (const chunk of chunks) {
    if (c.socket.destroyed) return
    c.socket.write(chunk)
    await new Promise((r) => setImmediate(r))
  }
}

const SECRET = 'fuzz-Secret-Pw-7391'
const authOk = (): Msg => ({ type: code('R'), body: i32(0) })
const status = (k: string, v: string): Msg => ({ type: code('S'), body: concat([cstr(k), cstr(v)]) })
const startupTail = (key = 4): Msg[] => [status('server_version', '18.0'), status('client_encoding', 'UTF8'), { type: code('K'), body: concat([i32(77), new Uint8Array(key).fill(3)]) }, { type: code('Z'), body: Uint8Array.of(code('I')) }]

/** One server turn: what to send, given the message the client sent last (for SCRAM, whose answers depend on it). */
type Turn = (lastClientMessage: string) => Msg[]

const STARTUPS: Record<string, Turn[]> = {
  trust: [() => [authOk(), ...startupTail()]],
  'protocol 3.0': [() => [{ type: code('v'), body: concat([i32(196608), i32(0)]) }, authOk(), ...startupTail()]],
  cleartext: [() => [{ type: code('R'), body: i32(3) }], () => [authOk(), ...startupTail(32)]],
  md5: [() => [{ type: code('R'), body: concat([i32(5), Uint8Array.of(1, 2, 3, 4)]) }], () => [authOk(), ...startupTail()]],
  scram: (() => {
    const salt = Uint8Array.of(9, 8, 7, 6, 5)
    let first = ''
    let nonce = ''
    return [
      () => [{ type: code('R'), body: concat([i32(10), cstr('SCRAM-SHA-256'), Uint8Array.of(0)]) }],
      (clientFirst: string) => {
        nonce = /r=([^,]+)/.exec(clientFirst)?.[1] ?? 'x'
        first = `r=${nonce}srv,s=${encodeBase64(salt)},i=16`
        return [{ type: code('R'), body: concat([i32(11), utf8.encode(first)]) }]
      },
      (clientFinal: string) => {
        const withoutProof = clientFinal.slice(0, clientFinal.lastIndexOf(',p='))
        const salted = pbkdf2Sync(SECRET, salt, 16, 32, 'sha256')
        const signature = hmac(hmac(salted, 'Server Key'), `n=,r=${nonce},${first},${withoutProof}`)
        return [{ type: code('R'), body: concat([i32(12), utf8.encode(`v=${encodeBase64(signature)}`)]) }, authOk(), ...startupTail()]
      },
    ]
  })(),
}

/** Reads one client message (typed or not) as text, or gives up after `ms`. */
async function readClient(c: FakeConnection, untyped: boolean, ms: number): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)))
  // A read that loses the race, or finds the client gone, must not end up as an unhandled rejection.
  const read = (untyped ? c.readUntyped() : c.read().then((m) => m.body)).then(
    (b) => b.toString('latin1'),
    () => null,
  )
  try {
    return await Promise.race([read, timeout])
  } finally {
    clearTimeout(timer)
  }
}

const STARTUP_ERRORS = [ProtocolError, ConnectionError, AuthError, PgError]

test('client: mutated startup exchanges connect or fail with a client or server error, never anything else', async (t) => {
  const tally = new Tally()
  let current: { turns: Turn[]; mutateTurn: number; mm: MessageMutation[]; bm: ByteMutation[]; cuts: number[] | 'bytes' } | null = null
  const server = await fakeServer(async (c) => {
    const script = current!
    let last = await readClient(c, true, 1000)
    for (let i = 0; i < script.turns.length && last !== null && !c.closed; i++) {
      let data = serialize(script.turns[i]!(last))
      if (i === script.mutateTurn) data = script.bm.reduce(mutateBytes, mutateMessages(lenientFrames(data), script.mm))
      await writeChunks(c, chunksOf(data, script.cuts))
      // An intact turn is answered at once; after a mutated one the client may be waiting for more instead.
      if (i + 1 < script.turns.length) last = await readClient(c, false, i === script.mutateTurn ? 150 : 3000)
    }
    // Nothing more will come: a client still waiting learns it now.
    await readClient(c, false, 100)
    c.socket.end()
  })
  try {
    await noStrayErrors(() =>
      checkAsync(
        t,
        runs(60),
        [fc.constantFrom(...Object.keys(STARTUPS)), fc.nat(), fc.array(messageMutation, { maxLength: 2 }), fc.array(byteMutation, { maxLength: 2 }), chunking],
        async (kind, turn, mm, bm, cuts) => {
          const turns = STARTUPS[kind]!
          current = { turns, mutateTurn: turn % turns.length, mm, bm, cuts }
          let client: Client | undefined
          try {
            client = await within(10_000, 'connect', connect({ ...server.options, password: SECRET, connectTimeout: 5000 }))
            tally.add('connected')
          } catch (err) {
            tally.add(outcome(err))
            if (!STARTUP_ERRORS.some((cls) => err instanceof cls)) assert.fail(`connect rejected with ${describe(err)}`)
            assert.ok(!(err as Error).message.includes(SECRET), `the password is in the error: ${(err as Error).message}`)
            // An exchange left intact must succeed, or this test would accept a client that refuses everything.
            assert.ok(mm.length > 0 || bm.length > 0, `the intact ${kind} startup failed: ${describe(err)}`)
            return
          } finally {
            await client?.end()
          }
        },
      ),
    )
  } finally {
    await server.close()
  }
  tally.report(t)
})

const QUERY_ERRORS = [ProtocolError, ConnectionError, PgError, CodecError]

/** The reply to one first execution of a one-statement query: ParseComplete, descriptions, rows, tag, ReadyForQuery. */
const replyArb = fc
  .tuple(
    fc.integer({ min: 1, max: 3 }),
    fc.array(fc.array(fc.oneof(fc.constant(null), text(8)), { minLength: 3, maxLength: 3 }), { maxLength: 4 }),
    fc.constantFrom('ok', 'ok', 'ok', 'error', 'error after rows', 'notice'),
  )
  .map(([width, rows, shape]): Msg[] => {
    const fields = Array.from({ length: width }, (_, i) => ({ name: `c${i}`, tableOid: 0, columnNumber: 0, typeOid: 25, typeSize: -1, typeModifier: -1, format: 0 }))
    const row = (r: (string | null)[]): Msg => ({ type: code('D'), body: dataRowBody(r.slice(0, width).map((v) => (v === null ? null : utf8.encode(v)))) })
    const error: Msg = { type: code('E'), body: concat([cstr('SERROR'), cstr('VERROR'), cstr('C22012'), cstr('Mdivision by zero'), Uint8Array.of(0)]) }
    const ready: Msg = { type: code('Z'), body: Uint8Array.of(code('I')) }
    if (shape === 'error') return [error, ready]
    const head: Msg[] = [
      { type: code('1'), body: new Uint8Array(0) },
      { type: code('t'), body: i16(0) },
      { type: code('T'), body: rowDescriptionBody(fields) },
      { type: code('2'), body: new Uint8Array(0) },
    ]
    const body = rows.map(row)
    if (shape === 'notice') body.splice(body.length >> 1, 0, { type: code('N'), body: concat([cstr('SNOTICE'), cstr('C00000'), cstr('Mhello'), Uint8Array.of(0)]) }, status('TimeZone', 'UTC'))
    if (shape === 'error after rows') return [...head, ...body, error, ready]
    return [...head, ...body, { type: code('C'), body: cstr(`SELECT ${rows.length}`) }, ready]
  })

/** The rows each reply of a stream carries, as the client must decode them (text columns). */
function rowsPerReply(data: Bytes): (string | null)[][][] {
  const replies: (string | null)[][][] = [[]]
  for (const m of lenientFrames(data)) {
    if (m.type === code('Z')) replies.push([])
    else if (m.type === code('D')) {
      const v = new DataView(m.body.buffer, m.body.byteOffset, m.body.byteLength)
      const row: (string | null)[] = []
      let p = 2
      for (let i = 0; m.body.length >= 2 && i < v.getInt16(0) && p + 4 <= m.body.length; i++) {
        const len = v.getInt32(p)
        p += 4
        row.push(len < 0 ? null : Buffer.from(m.body.subarray(p, p + len)).toString('utf8'))
        if (len > 0) p += len
      }
      replies[replies.length - 1]!.push(row)
    }
  }
  return replies
}

test('client: mutated replies reject queries with a client or server error, and every row delivered is one the server sent for that query', async (t) => {
  const tally = new Tally()
  let current: Bytes[][] = []
  const server = await fakeServer(async (c) => {
    const replies = current
    await c.acceptStartup()
    for (const chunks of replies) {
      await c.readUntilSync()
      await writeChunks(c, chunks)
    }
    c.socket.end()
  })
  try {
    await noStrayErrors(() =>
      checkAsync(
        t,
        runs(60),
        [
          fc.array(fc.tuple(replyArb, fc.array(messageMutation, { maxLength: 2 }), fc.array(byteMutation, { maxLength: 1 }), chunking), { minLength: 1, maxLength: 3 }),
          fc.constantFrom('array' as const, 'object' as const),
        ],
        async (replies, rowMode) => {
          // Each reply mutated on its own, then cut into chunks written one by one after its query has arrived.
          const sent = replies.map(([msgs, mm, bm]) => bm.reduce(mutateBytes, mutateMessages(msgs, mm)))
          current = sent.map((s, i) => chunksOf(s, replies[i]![3]).filter((c) => c.length > 0))
          const intact = replies.every(([, mm, bm]) => mm.length === 0 && bm.length === 0)
          const client = await connect({ ...server.options, connectTimeout: 5000 })
          try {
            const settled = await within(
              10_000,
              'queries',
              Promise.allSettled(replies.map((_, i) => client.query(`SELECT fuzz_${i}`, [], { rowMode }))),
            )
            const expected = rowsPerReply(concat(sent))
            settled.forEach((s, i) => {
              tally.add(s.status === 'rejected' ? outcome(s.reason) : 'fulfilled')
              if (s.status === 'rejected') {
                if (!QUERY_ERRORS.some((cls) => s.reason instanceof cls)) assert.fail(`query ${i} rejected with ${describe(s.reason)}`)
                if (intact && !(s.reason instanceof PgError)) assert.fail(`query ${i} failed on an intact stream: ${describe(s.reason)}`)
                return
              }
              // Replies are matched to queries in order, one per ReadyForQuery: the rows of
              // query i can only be the DataRows between the (i-1)th and the ith of them.
              const want = expected[i]
              assert.ok(want !== undefined, `query ${i} got a result, but the stream holds no reply for it`)
              const got = s.value.rows
              assert.equal(got.length, want.length, `query ${i}: ${got.length} rows delivered, its reply holds ${want.length}`)
              got.forEach((row, r) => {
                const sentRow = want[r]!
                if (Array.isArray(row)) {
                  assert.equal(row.length, sentRow.length)
                  // A mutated description may give a column another type: only text values compare as sent.
                  row.forEach((value, k) => {
                    if (typeof value === 'string' || value === null) assert.equal(value, sentRow[k], `query ${i} row ${r} column ${k}`)
                  })
                } else {
                  // Object rows lose a column whose name repeats: compare by membership.
                  for (const value of Object.values(row as Record<string, unknown>)) {
                    if (typeof value === 'string' || value === null) assert.ok(sentRow.includes(value), `query ${i} row ${r}: ${JSON.stringify(value)} is not in the row sent, ${JSON.stringify(sentRow)}`)
                  }
                }
              })
            })
          } finally {
            await client.end()
          }
        },
      ),
    )
  } finally {
    await server.close()
  }
  tally.report(t)
})
