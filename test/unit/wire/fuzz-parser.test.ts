// Fuzzing of the browser-side parser (pipegres/wire): result streams recorded
// from real servers, mutated at the message and the byte level and cut into
// random chunks, parse or fail the same way in every chunking.
//
// Whatever comes in, a reader either decodes it or throws its own documented
// error: never a RangeError or TypeError, never a hang, never memory out of
// proportion to the input. Seeded (test/support/fuzz.ts): PIPEGRES_FUZZ_SEED
// replays a run, PIPEGRES_FUZZ_SCALE multiplies the cases; `npm run fuzz`
// runs every fuzz file again and again.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { WireParser, WireProtocolError } from '../../../src/wire/index.js'
import type { Bytes } from '../../support/fakes/backend-messages.js'
import { byteMutation, chunking, chunksOf, messageMutation, mutateBytes, mutateMessages, RESULT_MESSAGES } from '../../support/fixtures/backend-streams.js'
import { describeError, fuzzer, runs } from '../../support/fuzz.js'

const { check } = fuzzer(import.meta.url)

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
    if (!(err instanceof WireProtocolError)) assert.fail(`the wire parser threw ${describeError(err)}`)
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
