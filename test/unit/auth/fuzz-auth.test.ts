// Fuzzing of the authentication parsers: the SCRAM exchange against mutated
// server messages, SASL mechanism lists, MD5 salts, base64, and the
// certificates channel binding hashes.
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
import { chooseSaslMechanism, md5PasswordMessage, ScramClient, tlsServerEndPointHash } from '../../../src/auth/index.js'
import { decodeBase64, encodeBase64 } from '../../../src/auth/base64.js'
import { parseServerFinal, parseServerFirst } from '../../../src/auth/scram-messages.js'
import { AuthError } from '../../../src/errors.js'
import { concat, type Bytes } from '../../support/fakes/backend-messages.js'
import { byteMutation, mutateBytes, utf8, type ByteMutation } from '../../support/fixtures/backend-streams.js'
import { describeError, fuzzer, hmac, only, runs } from '../../support/fuzz.js'

const { check, checkAsync } = fuzzer(import.meta.url)

const PASSWORD = 'fuzz-pw'
const CLIENT_NONCE = 'fuzzclientnonce0123456789'

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
        if (!(err instanceof AuthError)) assert.fail(`clientFinal threw ${describeError(err)}`)
        assert.ok(firstMutations.length > 0, `the intact server-first-message was refused: ${err.message}`)
        return
      }
      const serverFinal = message(server.serverFinal(Buffer.from(final).toString()), finalMutations)
      try {
        client.verifyServerFinal(serverFinal)
      } catch (err) {
        if (!(err instanceof AuthError)) assert.fail(`verifyServerFinal threw ${describeError(err)}`)
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
