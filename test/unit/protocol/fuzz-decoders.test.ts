// Fuzzing of every backend-message decoder: valid messages decode to what was
// encoded wherever they sit in a buffer; mutated and random bodies, and
// DataRows of random values for any column types, decode or fail with the
// error their layer documents.
//
// Whatever comes in, a reader either decodes it or throws its own documented
// error: never a RangeError or TypeError, never a hang, never memory out of
// proportion to the input. Seeded (test/support/fuzz.ts): PIPEGRES_FUZZ_SEED
// replays a run, PIPEGRES_FUZZ_SCALE multiplies the cases; `npm run fuzz`
// runs every fuzz file again and again.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
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
} from '../../../src/protocol/backend.js'
import { md5PasswordMessage } from '../../../src/auth/index.js'
import { parseServerFinal, parseServerFirst } from '../../../src/auth/scram-messages.js'
import { AuthError, ProtocolError } from '../../../src/errors.js'
import { TypeCatalog } from '../../../src/types/catalog.js'
import { CodecError } from '../../../src/types/codec.js'
import { concat, dataRowBody, type Bytes } from '../../support/fakes/backend-messages.js'
import { BACKEND_TYPES, byteMutation, code, mutateBytes, utf8, validMessage } from '../../support/fixtures/backend-streams.js'
import { fuzzer, only, outcome, runs, Tally } from '../../support/fuzz.js'

const { check } = fuzzer(import.meta.url)

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
