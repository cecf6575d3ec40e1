// Fuzzing of a whole Client behind a scripted server (fewer cases): startup
// exchanges (trust, protocol 3.0, cleartext, MD5, SCRAM) and query replies,
// mutated at the message and the byte level and written in random chunks.
// Every failure is a client or server error; every row delivered is one the
// server sent for that query; nothing is thrown into the process.
//
// Whatever comes in, a reader either decodes it or throws its own documented
// error: never a RangeError or TypeError, never a hang, never memory out of
// proportion to the input. Seeded (test/support/fuzz.ts): PIPEGRES_FUZZ_SEED
// replays a run, PIPEGRES_FUZZ_SCALE multiplies the cases; `npm run fuzz`
// runs every fuzz file again and again.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { pbkdf2Sync } from 'node:crypto'
import fc from 'fast-check'
import { encodeBase64 } from '../../../src/auth/base64.js'
import { AuthError, ConnectionError, PgError, ProtocolError } from '../../../src/errors.js'
import { connect, type Client } from '../../../src/index.js'
import { CodecError } from '../../../src/types/codec.js'
import { concat, cstr, dataRowBody, int16 as i16, int32 as i32, rowDescriptionBody, type Bytes } from '../../support/fakes/backend-messages.js'
import { fakeServer, type FakeConnection } from '../../support/fakes/fake-server.js'
import {
  byteMutation,
  chunking,
  chunksOf,
  code,
  lenientFrames,
  messageMutation,
  mutateBytes,
  mutateMessages,
  serialize,
  text,
  utf8,
  type ByteMutation,
  type MessageMutation,
  type Msg,
} from '../../support/fixtures/backend-streams.js'
import { describeError, fuzzer, hmac, outcome, runs, Tally } from '../../support/fuzz.js'

const { checkAsync } = fuzzer(import.meta.url)

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
  if (stray.length > 0) assert.fail(`thrown into the process: ${stray.map(describeError).join('\n')}`)
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
            if (!STARTUP_ERRORS.some((cls) => err instanceof cls)) assert.fail(`connect rejected with ${describeError(err)}`)
            assert.ok(!(err as Error).message.includes(SECRET), `the password is in the error: ${(err as Error).message}`)
            // An exchange left intact must succeed, or this test would accept a client that refuses everything.
            assert.ok(mm.length > 0 || bm.length > 0, `the intact ${kind} startup failed: ${describeError(err)}`)
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
                if (!QUERY_ERRORS.some((cls) => s.reason instanceof cls)) assert.fail(`query ${i} rejected with ${describeError(s.reason)}`)
                if (intact && !(s.reason instanceof PgError)) assert.fail(`query ${i} failed on an intact stream: ${describeError(s.reason)}`)
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
