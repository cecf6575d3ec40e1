import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto'
import { inspect } from 'node:util'
import { DEFAULT_MAX_ITERATIONS, ScramClient, chooseSaslMechanism } from '../../../src/auth/index.js'
import type { ScramOptions } from '../../../src/auth/index.js'
import { AuthError } from '../../../src/errors.js'

const enc = (text: string) => new TextEncoder().encode(text)
const dec = (bytes: Uint8Array) => new TextDecoder().decode(bytes)
const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString('base64')

// RFC 7677 section 3.
const RFC = {
  password: 'pencil',
  nonce: 'rOprNGfwEbeRWgbNEkqO',
  clientFirst: 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO',
  serverFirst: 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
  clientFinal: 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  serverFinal: 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
}

// A password that must never show up in an error; every error checked below is tested for it.
const SECRET = 'Tr0ub4dor&3-s3cr3t'
const NONCE = 'fyko+d2lbbFgONRv9qkxdawL'
const SERVER_NONCE = NONCE + '3rfcNHYJY1ZVvWVs7j'
const SALT = 'QSXCR+Q6sek8bf92'
const GOOD_FIRST = `r=${SERVER_NONCE},s=${SALT},i=4096`

/** An independent SCRAM-SHA-256 computation straight from RFC 5802 section 3. */
function reference(password: string, clientFirstBare: string, serverFirst: string, cbindInput: Uint8Array) {
  const attrs = new Map(serverFirst.split(',').map((part) => [part[0], part.slice(2)] as const))
  const salted = pbkdf2Sync(password, Buffer.from(attrs.get('s')!, 'base64'), Number(attrs.get('i')), 32, 'sha256')
  const withoutProof = `c=${b64(cbindInput)},r=${attrs.get('r')}`
  const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`
  const clientKey = createHmac('sha256', salted).update('Client Key').digest()
  const storedKey = createHash('sha256').update(clientKey).digest()
  const signature = createHmac('sha256', storedKey).update(authMessage).digest()
  const proof = Buffer.from(clientKey.map((byte, i) => byte ^ signature[i]!))
  const serverKey = createHmac('sha256', salted).update('Server Key').digest()
  return {
    clientFinal: `${withoutProof},p=${b64(proof)}`,
    serverFinal: `v=${b64(createHmac('sha256', serverKey).update(authMessage).digest())}`,
  }
}

function client(opts: Partial<ScramOptions> = {}): ScramClient {
  return new ScramClient({ password: SECRET, mechanism: 'SCRAM-SHA-256', nonce: NONCE, ...opts })
}

/** Asserts an AuthError for `method` whose message matches and does not reveal the password. */
function isAuthError(pattern: RegExp, method = 'SCRAM-SHA-256') {
  return (error: unknown) => {
    assert.ok(error instanceof AuthError, `expected AuthError, got ${String(error)}`)
    assert.equal(error.code, 'PG_AUTH')
    assert.equal(error.method, method)
    assert.match(error.message, pattern)
    for (const text of [error.message, error.stack ?? '', inspect(error, { depth: 5 })]) {
      assert.ok(!text.includes(SECRET), 'the password leaked into an error')
      assert.ok(!text.includes('pencil'), 'the password leaked into an error')
    }
    return true
  }
}

test('RFC 7677 example, byte for byte (with n=user as in the RFC)', async () => {
  const scram = new ScramClient({ password: RFC.password, mechanism: 'SCRAM-SHA-256', nonce: RFC.nonce, username: 'user' })
  assert.equal(scram.mechanism, 'SCRAM-SHA-256')
  assert.equal(dec(scram.clientFirst()), RFC.clientFirst)
  const final = await scram.clientFinal(enc(RFC.serverFirst))
  assert.ok(final instanceof Uint8Array)
  assert.equal(dec(final), RFC.clientFinal)
  scram.verifyServerFinal(enc(RFC.serverFinal))
})

test('the reference implementation reproduces the RFC 7677 example', () => {
  const ref = reference(RFC.password, 'n=user,r=' + RFC.nonce, RFC.serverFirst, enc('n,,'))
  assert.equal(ref.clientFinal, RFC.clientFinal)
  assert.equal(ref.serverFinal, RFC.serverFinal)
})

test('PostgreSQL flavour: empty user name, random 24-character nonce', () => {
  const a = new ScramClient({ password: SECRET, mechanism: 'SCRAM-SHA-256' })
  const b = new ScramClient({ password: SECRET, mechanism: 'SCRAM-SHA-256' })
  const first = dec(a.clientFirst())
  assert.match(first, /^n,,n=,r=[A-Za-z0-9+/]{24}$/)
  assert.notEqual(first, dec(b.clientFirst()))
  assert.equal(dec(client().clientFirst()), `n,,n=,r=${NONCE}`)
})

test('user names are escaped as RFC 5802 saslname', () => {
  assert.equal(dec(client({ username: 'a=b,c' }).clientFirst()), `n,,n=a=3Db=2Cc,r=${NONCE}`)
})

test('SCRAM-SHA-256 with gs2 flag n (c=biws) matches the reference', async () => {
  const scram = client()
  assert.equal(dec(scram.clientFirst()), `n,,n=,r=${NONCE}`)
  const final = dec(await scram.clientFinal(enc(GOOD_FIRST)))
  const ref = reference(SECRET, `n=,r=${NONCE}`, GOOD_FIRST, enc('n,,'))
  assert.equal(final, ref.clientFinal)
  assert.ok(final.startsWith('c=biws,'))
  scram.verifyServerFinal(enc(ref.serverFinal))
})

test('gs2 flag y when the client could bind but the server offered no -PLUS', async () => {
  const scram = client({ clientSupportsBinding: true })
  assert.equal(dec(scram.clientFirst()), `y,,n=,r=${NONCE}`)
  const final = dec(await scram.clientFinal(enc(GOOD_FIRST)))
  const ref = reference(SECRET, `n=,r=${NONCE}`, GOOD_FIRST, enc('y,,'))
  assert.equal(final, ref.clientFinal)
  assert.ok(final.startsWith('c=eSws,'))
  scram.verifyServerFinal(enc(ref.serverFinal))
})

test('SCRAM-SHA-256-PLUS binds the tls-server-end-point data into c=', async () => {
  const bindingData = createHash('sha256').update('a certificate').digest()
  const scram = client({ mechanism: 'SCRAM-SHA-256-PLUS', channelBindingData: bindingData, clientSupportsBinding: false })
  assert.equal(scram.mechanism, 'SCRAM-SHA-256-PLUS')
  assert.equal(dec(scram.clientFirst()), `p=tls-server-end-point,,n=,r=${NONCE}`)
  const final = dec(await scram.clientFinal(enc(GOOD_FIRST)))
  const cbindInput = Buffer.concat([Buffer.from('p=tls-server-end-point,,'), bindingData])
  assert.ok(final.startsWith(`c=${b64(cbindInput)},r=${SERVER_NONCE},p=`))
  const ref = reference(SECRET, `n=,r=${NONCE}`, GOOD_FIRST, cbindInput)
  assert.equal(final, ref.clientFinal)
  scram.verifyServerFinal(enc(ref.serverFinal))
})

test('SCRAM-SHA-256-PLUS copies the binding data it was given', async () => {
  const bindingData = new Uint8Array(32).fill(7)
  const scram = client({ mechanism: 'SCRAM-SHA-256-PLUS', channelBindingData: bindingData })
  bindingData.fill(0)
  scram.clientFirst()
  const final = dec(await scram.clientFinal(enc(GOOD_FIRST)))
  const cbindInput = Buffer.concat([Buffer.from('p=tls-server-end-point,,'), new Uint8Array(32).fill(7)])
  assert.ok(final.startsWith(`c=${b64(cbindInput)},`))
})

test('SCRAM-SHA-256-PLUS without binding data is refused', () => {
  for (const channelBindingData of [undefined, new Uint8Array(0)]) {
    assert.throws(
      () => client({ mechanism: 'SCRAM-SHA-256-PLUS', channelBindingData }),
      isAuthError(/channel binding data/, 'SCRAM-SHA-256-PLUS'),
    )
  }
})

test('the password goes through SASLprep', async () => {
  const finals: string[] = []
  for (const password of ['I\u00ADX', 'IX', '\u2168']) {
    const scram = client({ password })
    scram.clientFirst()
    finals.push(dec(await scram.clientFinal(enc(GOOD_FIRST))))
  }
  assert.equal(finals[0], finals[1])
  assert.equal(finals[2], finals[1])
  assert.equal(finals[1], reference('IX', `n=,r=${NONCE}`, GOOD_FIRST, enc('n,,')).clientFinal)
})

test('invalid options are refused', () => {
  assert.throws(() => client({ nonce: 'has,comma' }), isAuthError(/nonce/))
  assert.throws(() => client({ nonce: '' }), isAuthError(/nonce/))
  assert.throws(() => client({ nonce: 'space inside' }), isAuthError(/nonce/))
  for (const maxIterations of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => client({ maxIterations }), isAuthError(/maxIterations/))
  }
  assert.throws(() => client({ mechanism: 'SCRAM-SHA-1' as never }), isAuthError(/unsupported SASL mechanism/, 'SASL'))
  assert.throws(() => client({ username: 'a\0b' }), isAuthError(/NUL/))
})

test('the default iteration limit is documented and enforced', async () => {
  assert.equal(DEFAULT_MAX_ITERATIONS, 1_000_000)
  const scram = client()
  scram.clientFirst()
  await assert.rejects(
    scram.clientFinal(enc(`r=${SERVER_NONCE},s=${SALT},i=${DEFAULT_MAX_ITERATIONS + 1}`)),
    isAuthError(/1000001 PBKDF2 iterations.*limit of 1000000/),
  )
})

const MALFORMED_SERVER_FIRST: Array<[string, string | Uint8Array, RegExp]> = [
  ['nonce without the client prefix', `r=XXXX${SERVER_NONCE},s=${SALT},i=4096`, /does not begin with the client nonce/],
  ['nonce that is a prefix of the client nonce', `r=${NONCE.slice(0, 10)},s=${SALT},i=4096`, /does not begin with the client nonce/],
  ['nonce equal to the client nonce', `r=${NONCE},s=${SALT},i=4096`, /added nothing/],
  ['nonce with a non-printable character', `r=${NONCE}ab\x7fc,s=${SALT},i=4096`, /printable/],
  ['nonce with a space', `r=${NONCE}ab c,s=${SALT},i=4096`, /printable/],
  ['nonce with a non-ASCII character', `r=${NONCE}é,s=${SALT},i=4096`, /printable/],
  ['empty nonce', `r=,s=${SALT},i=4096`, /does not begin with the client nonce/],
  ['missing salt', `r=${SERVER_NONCE},i=4096`, /expected the salt \(s=\)/],
  ['missing iteration count', `r=${SERVER_NONCE},s=${SALT}`, /iteration count \(i=\) is missing/],
  ['missing everything but the nonce', `r=${SERVER_NONCE}`, /salt \(s=\) is missing/],
  ['missing nonce', `s=${SALT},i=4096`, /expected the nonce \(r=\)/],
  ['attributes out of order', `r=${SERVER_NONCE},i=4096,s=${SALT}`, /expected the salt/],
  ['upper-case attribute name', `R=${SERVER_NONCE},s=${SALT},i=4096`, /expected the nonce/],
  ['attribute without =', `r=${SERVER_NONCE},s${SALT},i=4096`, /expected the salt/],
  ['i=0', `r=${SERVER_NONCE},s=${SALT},i=0`, /not a positive integer/],
  ['i=-1', `r=${SERVER_NONCE},s=${SALT},i=-1`, /not a positive integer/],
  ['i=+5', `r=${SERVER_NONCE},s=${SALT},i=+5`, /not a positive integer/],
  ['i with a leading zero', `r=${SERVER_NONCE},s=${SALT},i=04096`, /not a positive integer/],
  ['i=1.5', `r=${SERVER_NONCE},s=${SALT},i=1.5`, /not a positive integer/],
  ['i=1e3', `r=${SERVER_NONCE},s=${SALT},i=1e3`, /not a positive integer/],
  ['i empty', `r=${SERVER_NONCE},s=${SALT},i=`, /not a positive integer/],
  ['i with a space', `r=${SERVER_NONCE},s=${SALT},i= 4096`, /not a positive integer/],
  ['i with trailing letters', `r=${SERVER_NONCE},s=${SALT},i=4096abc`, /not a positive integer/],
  ['i=2^31', `r=${SERVER_NONCE},s=${SALT},i=2147483648`, /PBKDF2 iterations, more than/],
  ['i huge', `r=${SERVER_NONCE},s=${SALT},i=${'9'.repeat(400)}`, /asks for 9{20}… \(400 digits\) PBKDF2 iterations, more than/],
  ['salt with a bad length', `r=${SERVER_NONCE},s=QSXCR+Q6sek8bf9,i=4096`, /salt is not valid base64/],
  ['salt with bad characters', `r=${SERVER_NONCE},s=QSXC*+Q6sek8bf92,i=4096`, /salt is not valid base64/],
  ['salt in base64url', `r=${SERVER_NONCE},s=QSXCR-Q6sek8bf92,i=4096`, /salt is not valid base64/],
  ['salt with misplaced padding', `r=${SERVER_NONCE},s=QQ==QSXC,i=4096`, /salt is not valid base64/],
  ['salt with non-zero padding bits', `r=${SERVER_NONCE},s=QR==,i=4096`, /salt is not valid base64/],
  ['empty salt', `r=${SERVER_NONCE},s=,i=4096`, /salt is empty/],
  ['server error e=', 'e=other-error', /rejected the SCRAM exchange: "other-error"/],
  ['server error e= with extensions', 'e=invalid-encoding,x=1', /rejected the SCRAM exchange: "invalid-encoding"/],
  ['mandatory extension m=', `m=ext,r=${SERVER_NONCE},s=${SALT},i=4096`, /extension \(m=\)/],
  ['an extension after i', `r=${SERVER_NONCE},s=${SALT},i=4096,x=1`, /unexpected data after the iteration count/],
  ['a trailing comma', `r=${SERVER_NONCE},s=${SALT},i=4096,`, /unexpected data after the iteration count/],
  ['garbage after i', `r=${SERVER_NONCE},s=${SALT},i=4096,garbage`, /unexpected data after the iteration count/],
  ['an empty message', '', /expected the nonce/],
  ['a leading byte-order mark', `\ufeffr=${SERVER_NONCE},s=${SALT},i=4096`, /expected the nonce/],
  ['invalid UTF-8', new Uint8Array([0x72, 0x3d, 0xff, 0xfe]), /not valid UTF-8/],
  ['a server-final message', 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=', /expected the nonce/],
]

for (const [name, message, pattern] of MALFORMED_SERVER_FIRST) {
  test(`server-first-message rejected: ${name}`, async () => {
    const scram = client()
    scram.clientFirst()
    await assert.rejects(scram.clientFinal(typeof message === 'string' ? enc(message) : message), isAuthError(pattern))
    // A failed exchange stays failed.
    await assert.rejects(scram.clientFinal(enc(GOOD_FIRST)), isAuthError(/out of order.*already failed/))
    assert.throws(() => scram.verifyServerFinal(enc('v=')), isAuthError(/out of order.*already failed/))
  })
}

test('maxIterations is honoured exactly', async () => {
  const atLimit = client({ maxIterations: 4096 })
  atLimit.clientFirst()
  await atLimit.clientFinal(enc(GOOD_FIRST))
  const belowLimit = client({ maxIterations: 4095 })
  belowLimit.clientFirst()
  await assert.rejects(belowLimit.clientFinal(enc(GOOD_FIRST)), isAuthError(/asks for 4096 PBKDF2 iterations.*limit of 4095/))
})

async function clientAwaitingServerFinal(): Promise<{ scram: ScramClient; serverFinal: string }> {
  const scram = client()
  scram.clientFirst()
  await scram.clientFinal(enc(GOOD_FIRST))
  return { scram, serverFinal: reference(SECRET, `n=,r=${NONCE}`, GOOD_FIRST, enc('n,,')).serverFinal }
}

test('the correct server-final-message is accepted', async () => {
  const { scram, serverFinal } = await clientAwaitingServerFinal()
  assert.equal(scram.verified, false)
  scram.verifyServerFinal(enc(serverFinal))
  assert.equal(scram.verified, true)
  assert.throws(() => scram.verifyServerFinal(enc(serverFinal)), isAuthError(/out of order.*already complete/))
})

const wrongSignature = (serverFinal: string) => {
  const signature = Buffer.from(serverFinal.slice(2), 'base64')
  signature[31]! ^= 1
  return `v=${b64(signature)}`
}

const MALFORMED_SERVER_FINAL: Array<[string, (good: string) => string | Uint8Array, RegExp]> = [
  ['a wrong signature', wrongSignature, /server signature is wrong/],
  ['the RFC example signature', () => RFC.serverFinal, /server signature is wrong/],
  ['a signature of 31 bytes', () => `v=${b64(new Uint8Array(31))}`, /31 bytes long, not 32/],
  ['a signature of 33 bytes', (good) => `v=${b64(Buffer.concat([Buffer.from(good.slice(2), 'base64'), Buffer.from([0])]))}`, /33 bytes long/],
  ['an empty signature', () => 'v=', /0 bytes long/],
  ['a signature in bad base64', (good) => good.slice(0, -1), /not valid base64/],
  ['a signature with stray characters', (good) => good.slice(0, 10) + '!' + good.slice(11), /not valid base64/],
  ['an extension after v', (good) => `${good},x=1`, /unexpected data after the verifier/],
  ['a trailing comma', (good) => `${good},`, /unexpected data after the verifier/],
  ['server error e=invalid-proof', () => 'e=invalid-proof', /rejected the SCRAM exchange: "invalid-proof"/],
  ['server error with a newline', () => 'e=bad\nforged log line', /rejected the SCRAM exchange: "bad\\nforged log line"/],
  ['an unknown attribute', () => 'x=abc', /expected a verifier \(v=\) or an error \(e=\)/],
  ['an empty message', () => '', /expected a verifier/],
  ['the server-first-message again', () => GOOD_FIRST, /expected a verifier/],
  ['invalid UTF-8', () => new Uint8Array([0x76, 0x3d, 0xc3]), /not valid UTF-8/],
]

for (const [name, make, pattern] of MALFORMED_SERVER_FINAL) {
  test(`server-final-message rejected: ${name}`, async () => {
    const { scram, serverFinal } = await clientAwaitingServerFinal()
    const message = make(serverFinal)
    assert.throws(() => scram.verifyServerFinal(typeof message === 'string' ? enc(message) : message), isAuthError(pattern))
    assert.equal(scram.verified, false)
    // No second chance: the correct signature is refused after a failure.
    assert.throws(() => scram.verifyServerFinal(enc(serverFinal)), isAuthError(/out of order.*already failed/))
  })
}

test('steps called out of order are refused', async () => {
  const fresh = client()
  assert.equal(fresh.verified, false)
  await assert.rejects(fresh.clientFinal(enc(GOOD_FIRST)), isAuthError(/out of order: clientFinal\(\) was called but clientFirst\(\) has not been called/))
  assert.throws(() => fresh.verifyServerFinal(enc('v=')), isAuthError(/out of order: verifyServerFinal\(\) was called but clientFirst\(\) has not been called/))

  const started = client()
  started.clientFirst()
  assert.throws(() => started.clientFirst(), isAuthError(/out of order: clientFirst\(\) was called but clientFinal\(\) has not been called/))
  assert.throws(() => started.verifyServerFinal(enc('v=')), isAuthError(/verifyServerFinal\(\) was called but clientFinal\(\) has not been called/))

  const deriving = client()
  deriving.clientFirst()
  const pending = deriving.clientFinal(enc(GOOD_FIRST))
  await assert.rejects(deriving.clientFinal(enc(GOOD_FIRST)), isAuthError(/clientFinal\(\) has not finished/))
  assert.throws(() => deriving.verifyServerFinal(enc('v=')), isAuthError(/clientFinal\(\) has not finished/))
  await pending
  await assert.rejects(deriving.clientFinal(enc(GOOD_FIRST)), isAuthError(/waiting for verifyServerFinal\(\)/))
  assert.throws(() => deriving.clientFirst(), isAuthError(/waiting for verifyServerFinal\(\)/))
})

test('clientFinal reports problems by rejecting, never by throwing synchronously', () => {
  const scram = client()
  let promise: Promise<Uint8Array> | undefined
  assert.doesNotThrow(() => {
    promise = scram.clientFinal(enc(GOOD_FIRST))
  })
  return assert.rejects(promise!, AuthError)
})

test('the password does not show in an inspected client', async () => {
  const scram = client()
  assert.ok(!inspect(scram, { showHidden: true, depth: 10 }).includes(SECRET))
  assert.ok(!JSON.stringify(scram).includes(SECRET))
  scram.clientFirst()
  await scram.clientFinal(enc(GOOD_FIRST))
  assert.ok(!inspect(scram, { showHidden: true, depth: 10 }).includes(SECRET))
})

test('a full exchange with the mechanism chosen by chooseSaslMechanism', async () => {
  const choice = chooseSaslMechanism(['SCRAM-SHA-256-PLUS', 'SCRAM-SHA-256'], { channelBinding: 'prefer', tls: true, bindingDataAvailable: true })
  const bindingData = new Uint8Array(48).fill(0xab)
  const scram = client({ ...choice, channelBindingData: bindingData })
  assert.equal(dec(scram.clientFirst()).slice(0, 24), 'p=tls-server-end-point,,')
  const final = dec(await scram.clientFinal(enc(GOOD_FIRST)))
  const ref = reference(SECRET, `n=,r=${NONCE}`, GOOD_FIRST, Buffer.concat([Buffer.from('p=tls-server-end-point,,'), bindingData]))
  assert.equal(final, ref.clientFinal)
  scram.verifyServerFinal(enc(ref.serverFinal))
})

// chooseSaslMechanism: every combination of offered list × channel_binding × TLS × binding data.
const PLAIN = 'SCRAM-SHA-256'
const PLUS = 'SCRAM-SHA-256-PLUS'
const OFFERED: Record<string, readonly string[]> = {
  plain: [PLAIN],
  plus: [PLUS],
  both: [PLUS, PLAIN],
  none: [],
}
// Expected outcome per row, for offered = plain | plus | both | none.
// 'n' / 'y' = SCRAM-SHA-256 with that gs2 flag, 'P' = SCRAM-SHA-256-PLUS, otherwise an error pattern.
const NO_MECH = /no supported SASL mechanism: the server offered no mechanism/
const NO_TLS = /does not use TLS/
const NO_DATA = /no channel binding data is available/
const NO_PLUS = /server does not offer SCRAM-SHA-256-PLUS/
const DISABLED = /only offers SCRAM-SHA-256-PLUS, but channel_binding=disable/
type Outcome = 'n' | 'y' | 'P' | RegExp
const TABLE: Array<[mode: 'disable' | 'prefer' | 'require', tls: boolean, data: boolean, plain: Outcome, plus: Outcome, both: Outcome, none: Outcome]> = [
  ['disable', false, false, 'n', DISABLED, 'n', NO_MECH],
  ['disable', false, true, 'n', DISABLED, 'n', NO_MECH],
  ['disable', true, false, 'n', DISABLED, 'n', NO_MECH],
  ['disable', true, true, 'n', DISABLED, 'n', NO_MECH],
  ['prefer', false, false, 'n', NO_TLS, 'n', NO_MECH],
  ['prefer', false, true, 'n', NO_TLS, 'n', NO_MECH],
  ['prefer', true, false, 'n', NO_DATA, 'n', NO_MECH],
  ['prefer', true, true, 'y', 'P', 'P', NO_MECH],
  ['require', false, false, NO_TLS, NO_TLS, NO_TLS, NO_TLS],
  ['require', false, true, NO_TLS, NO_TLS, NO_TLS, NO_TLS],
  ['require', true, false, NO_PLUS, NO_DATA, NO_DATA, NO_PLUS],
  ['require', true, true, NO_PLUS, 'P', 'P', NO_PLUS],
]

for (const [channelBinding, tls, bindingDataAvailable, ...outcomes] of TABLE) {
  const names = ['plain', 'plus', 'both', 'none'] as const
  names.forEach((name, i) => {
    const expected = outcomes[i]!
    test(`chooseSaslMechanism(${name}, channel_binding=${channelBinding}, tls=${tls}, data=${bindingDataAvailable})`, () => {
      const settings = { channelBinding, tls, bindingDataAvailable }
      // Order and unrelated mechanisms must not matter.
      const lists = [OFFERED[name]!, [...OFFERED[name]!].reverse(), ['OAUTHBEARER', ...OFFERED[name]!, 'SCRAM-SHA-1']]
      for (const offered of lists) {
        if (expected instanceof RegExp) {
          const method = expected === NO_MECH ? 'SASL' : PLUS
          if (expected === NO_MECH && offered.length > 0) {
            assert.throws(() => chooseSaslMechanism(offered, settings), isAuthError(/no supported SASL mechanism: the server offered "OAUTHBEARER", "SCRAM-SHA-1"/, method))
          } else {
            assert.throws(() => chooseSaslMechanism(offered, settings), isAuthError(expected, method))
          }
        } else if (expected === 'P') {
          assert.deepEqual(chooseSaslMechanism(offered, settings), { mechanism: PLUS, clientSupportsBinding: true })
        } else {
          assert.deepEqual(chooseSaslMechanism(offered, settings), { mechanism: PLAIN, clientSupportsBinding: expected === 'y' })
        }
      }
    })
  })
}

test('chooseSaslMechanism names what the server offered', () => {
  assert.throws(
    () => chooseSaslMechanism(['SCRAM-SHA-256'], { channelBinding: 'require', tls: true, bindingDataAvailable: true }),
    isAuthError(/offered "SCRAM-SHA-256"\)/, PLUS),
  )
  assert.throws(
    () => chooseSaslMechanism(['X-1', 'X-2'], { channelBinding: 'prefer', tls: true, bindingDataAvailable: true }),
    isAuthError(/offered "X-1", "X-2"; pipegres supports SCRAM-SHA-256 and SCRAM-SHA-256-PLUS/, 'SASL'),
  )
  const many = Array.from({ length: 20 }, (_, i) => `M${i}`)
  assert.throws(
    () => chooseSaslMechanism(many, { channelBinding: 'prefer', tls: false, bindingDataAvailable: false }),
    isAuthError(/"M7", and 12 more/, 'SASL'),
  )
  assert.throws(
    () => chooseSaslMechanism([PLAIN], { channelBinding: 'sometimes' as never, tls: false, bindingDataAvailable: false }),
    isAuthError(/unknown channel_binding setting "sometimes"/, 'SASL'),
  )
})
