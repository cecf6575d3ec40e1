import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { X509Certificate, createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { tlsServerEndPointHash } from '../../../src/auth/index.js'
import { AuthError } from '../../../src/errors.js'

let dir = ''

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'pipegres-auth-cb-'))
  openssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', join(dir, 'rsa.key'))
})

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
})

function openssl(...args: string[]): string {
  return execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

let serial = 0
/** A self-signed certificate made by openssl; returns its DER bytes and openssl's description of its signature algorithm. */
function certificate(keyArgs: string[], signArgs: string[]): { der: Uint8Array; algorithm: string } {
  const file = join(dir, `cert-${++serial}.pem`)
  openssl('req', '-x509', ...keyArgs, '-out', file, '-subj', '/CN=pipegres test', '-days', '1', ...signArgs)
  const der = new Uint8Array(new X509Certificate(readFileSync(file)).raw)
  const text = openssl('x509', '-in', file, '-noout', '-text')
  const match = /Signature Algorithm: *(\S+)/.exec(text)
  assert.ok(match, 'openssl printed no signature algorithm')
  return { der, algorithm: match[1]! }
}

const rsaKey = () => ['-key', join(dir, 'rsa.key')]
const newKey = (...args: string[]) => ['-newkey', ...args, '-nodes', '-keyout', join(dir, `key-${++serial}.pem`)]

const sha = (name: string, der: Uint8Array) => new Uint8Array(createHash(name).update(der).digest())

const CASES: Array<[name: string, key: () => string[], sign: string[], opensslName: string, hash: string]> = [
  ['RSA with SHA-256', rsaKey, ['-sha256'], 'sha256WithRSAEncryption', 'sha256'],
  ['RSA with SHA-384', rsaKey, ['-sha384'], 'sha384WithRSAEncryption', 'sha384'],
  ['RSA with SHA-512', rsaKey, ['-sha512'], 'sha512WithRSAEncryption', 'sha512'],
  ['RSA with SHA-224', rsaKey, ['-sha224'], 'sha224WithRSAEncryption', 'sha224'],
  ['RSA with SHA-1 (hashed with SHA-256)', rsaKey, ['-sha1'], 'sha1WithRSAEncryption', 'sha256'],
  ['RSA with MD5 (hashed with SHA-256)', rsaKey, ['-md5'], 'md5WithRSAEncryption', 'sha256'],
  ['RSA with SHA-512/256', rsaKey, ['-sha512-256'], 'sha512-256WithRSAEncryption', 'sha512-256'],
  ['RSA with SHA3-256', rsaKey, ['-sha3-256'], 'RSA-SHA3-256', 'sha3-256'],
  ['ECDSA P-256 with SHA-256', () => newKey('ec', '-pkeyopt', 'ec_paramgen_curve:P-256'), ['-sha256'], 'ecdsa-with-SHA256', 'sha256'],
  ['ECDSA P-384 with SHA-384', () => newKey('ec', '-pkeyopt', 'ec_paramgen_curve:P-384'), ['-sha384'], 'ecdsa-with-SHA384', 'sha384'],
  ['ECDSA P-256 with SHA-512', () => newKey('ec', '-pkeyopt', 'ec_paramgen_curve:P-256'), ['-sha512'], 'ecdsa-with-SHA512', 'sha512'],
  ['ECDSA P-256 with SHA-1 (hashed with SHA-256)', () => newKey('ec', '-pkeyopt', 'ec_paramgen_curve:P-256'), ['-sha1'], 'ecdsa-with-SHA1', 'sha256'],
  ['RSASSA-PSS with SHA-384', rsaKey, ['-sha384', '-sigopt', 'rsa_padding_mode:pss'], 'rsassaPss', 'sha384'],
  ['RSASSA-PSS with SHA-512', rsaKey, ['-sha512', '-sigopt', 'rsa_padding_mode:pss'], 'rsassaPss', 'sha512'],
  ['RSASSA-PSS with the default SHA-1 (hashed with SHA-256)', rsaKey, ['-sha1', '-sigopt', 'rsa_padding_mode:pss'], 'rsassaPss', 'sha256'],
]

for (const [name, key, sign, opensslName, hash] of CASES) {
  test(`tls-server-end-point hash of a certificate signed with ${name}`, () => {
    const { der, algorithm } = certificate(key(), sign)
    assert.equal(algorithm, opensslName)
    const result = tlsServerEndPointHash(der)
    assert.ok(result instanceof Uint8Array)
    assert.deepEqual(result, sha(hash, der))
  })
}

for (const [name, algorithm] of [['ed25519', 'Ed25519'], ['ed448', 'Ed448']] as const) {
  test(`a certificate signed with ${algorithm} cannot be used for channel binding`, () => {
    const { der } = certificate(newKey(name), [])
    assert.throws(
      () => tlsServerEndPointHash(der),
      (error: unknown) => {
        assert.ok(error instanceof AuthError)
        assert.equal(error.method, 'SCRAM-SHA-256-PLUS')
        assert.equal(error.message, `channel binding is not possible with a certificate signed with ${algorithm}`)
        return true
      },
    )
  })
}

/** Asserts that `der` is rejected with an AuthError (and not any other kind of failure). */
function assertRejected(der: Uint8Array, pattern: RegExp = /./, label = '') {
  assert.throws(
    () => tlsServerEndPointHash(der),
    (error: unknown) => {
      assert.ok(error instanceof AuthError, `${label}: expected AuthError, got ${String(error)}`)
      assert.equal(error.method, 'SCRAM-SHA-256-PLUS')
      assert.match(error.message, pattern, label)
      return true
    },
  )
}

test('every truncation of a real certificate is rejected', () => {
  for (const [key, sign] of [[rsaKey(), ['-sha256']], [newKey('ec', '-pkeyopt', 'ec_paramgen_curve:P-384'), ['-sha384']]] as const) {
    const { der } = certificate([...key], [...sign])
    for (let length = 0; length < der.length; length++) {
      assertRejected(der.subarray(0, length), /malformed server certificate|not possible/, `length ${length}`)
    }
    assertRejected(Uint8Array.of(...der, 0), /data after the end of the Certificate/, 'trailing byte')
  }
})

/** A small deterministic PRNG so a failure can be reproduced. */
function xorshift(seed: number): () => number {
  let state = seed
  return () => {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    return (state >>> 0) / 2 ** 32
  }
}

test('mutated certificates and random bytes only ever yield a hash or an AuthError', () => {
  const { der } = certificate(rsaKey(), ['-sha256'])
  const random = xorshift(0x5eed)
  const attempt = (input: Uint8Array, label: string) => {
    try {
      const result = tlsServerEndPointHash(input)
      assert.ok(result instanceof Uint8Array && result.length >= 28, label)
    } catch (error) {
      assert.ok(error instanceof AuthError, `${label}: ${String(error)}`)
    }
  }
  for (let i = 0; i < 3000; i++) {
    const mutated = der.slice()
    const flips = 1 + Math.floor(random() * 3)
    for (let f = 0; f < flips; f++) mutated[Math.floor(random() * mutated.length)] = Math.floor(random() * 256)
    attempt(mutated, `mutation ${i}`)
  }
  for (let i = 0; i < 2000; i++) {
    const bytes = new Uint8Array(Math.floor(random() * 64))
    for (let j = 0; j < bytes.length; j++) bytes[j] = Math.floor(random() * 256)
    if (bytes.length > 0 && random() < 0.5) bytes[0] = 0x30
    attempt(bytes, `random ${i}`)
  }
})

// Hand-built DER, to reach algorithms openssl will not sign with and malformed shapes.
function tlv(tag: number, ...content: Uint8Array[]): Uint8Array {
  const body = Buffer.concat(content)
  const length = body.length < 0x80 ? [body.length] : body.length < 0x100 ? [0x81, body.length] : [0x82, body.length >> 8, body.length & 255]
  return new Uint8Array(Buffer.concat([Buffer.from([tag, ...length]), body]))
}
const hex = (text: string) => new Uint8Array(Buffer.from(text, 'hex'))
const oid = (content: string) => tlv(0x06, hex(content))
const TBS = tlv(0x30, tlv(0x02, hex('01')))
const SIGNATURE = tlv(0x03, hex('00abcdef'))
const cert = (algorithm: Uint8Array) => tlv(0x30, TBS, algorithm, SIGNATURE)
const PSS = '2a864886f70d01010a'

test('hand-built certificates: signature algorithms openssl does not sign with here', () => {
  const table: Array<[string, Uint8Array, string]> = [
    ['sha256WithRSA with NULL parameters', tlv(0x30, oid('2a864886f70d01010b'), hex('0500')), 'sha256'],
    ['sha1WithRSASignature (OIW)', tlv(0x30, oid('2b0e03021d')), 'sha256'],
    ['dsa-with-sha1', tlv(0x30, oid('2a8648ce380403')), 'sha256'],
    ['dsa-with-sha256', tlv(0x30, oid('608648016503040302')), 'sha256'],
    ['ecdsa-with-SHA224', tlv(0x30, oid('2a8648ce3d040301')), 'sha224'],
    ['ecdsa-with-sha3-512', tlv(0x30, oid('60864801650304030c')), 'sha3-512'],
    ['RSA with SHA3-384', tlv(0x30, oid('60864801650304030f')), 'sha3-384'],
    ['PSS with SHA-256', tlv(0x30, oid(PSS), tlv(0x30, tlv(0xa0, tlv(0x30, oid('608648016503040201'), hex('0500'))))), 'sha256'],
    ['PSS with SHA-512 and no NULL', tlv(0x30, oid(PSS), tlv(0x30, tlv(0xa0, tlv(0x30, oid('608648016503040203'))))), 'sha512'],
    ['PSS with SHA-224', tlv(0x30, oid(PSS), tlv(0x30, tlv(0xa0, tlv(0x30, oid('608648016503040204'))))), 'sha224'],
    ['PSS with SHA-1 spelled out', tlv(0x30, oid(PSS), tlv(0x30, tlv(0xa0, tlv(0x30, oid('2b0e03021a'))))), 'sha256'],
    ['PSS with all defaults', tlv(0x30, oid(PSS), tlv(0x30)), 'sha256'],
    ['PSS with only a salt length', tlv(0x30, oid(PSS), tlv(0x30, tlv(0xa2, tlv(0x02, hex('20'))))), 'sha256'],
  ]
  for (const [name, algorithm, hash] of table) {
    const der = cert(algorithm)
    assert.deepEqual(tlsServerEndPointHash(der), sha(hash, der), name)
  }
})

test('hand-built certificates: unknown or unusable algorithms', () => {
  assertRejected(cert(tlv(0x30, oid('2a0304'))), /^channel binding is not possible with a certificate signed with an unknown algorithm \(OID 1\.2\.3\.4\)$/)
  assertRejected(cert(tlv(0x30, oid('2a811c'))), /unknown algorithm \(OID 1\.2\.156\)/)
  assertRejected(cert(tlv(0x30, oid('8837'))), /unknown algorithm \(OID 2\.999\)/)
  assertRejected(cert(tlv(0x30, oid('2a86'))), /unknown algorithm \(OID 0x2a86\)/) // unterminated arc
  assertRejected(cert(tlv(0x30, oid(''))), /unknown algorithm \(OID 0x\)/)
  assertRejected(
    cert(tlv(0x30, oid(PSS), tlv(0x30, tlv(0xa0, tlv(0x30, oid('2a0305')))))),
    /RSASSA-PSS using an unknown hash \(OID 1\.2\.3\.5\)/,
  )
})

test('hand-built certificates: malformed structures', () => {
  const sha256Rsa = tlv(0x30, oid('2a864886f70d01010b'))
  const cases: Array<[string, Uint8Array, RegExp]> = [
    ['empty input', new Uint8Array(0), /Certificate is missing/],
    ['not a SEQUENCE', hex('310100'), /Certificate has tag 0x31, expected 0x30/],
    ['indefinite length', Uint8Array.of(0x30, 0x80, ...TBS, ...sha256Rsa, ...SIGNATURE, 0, 0), /invalid length encoding/],
    ['five length bytes', hex('3085000000000100'), /invalid length encoding/],
    ['a length far beyond the input', hex('3084ffffffff3000'), /Certificate is truncated/],
    ['a length byte missing', hex('30'), /Certificate is truncated/],
    ['long-form length bytes missing', hex('308201'), /Certificate is truncated/],
    ['empty Certificate', tlv(0x30), /tbsCertificate is missing/],
    ['no signatureAlgorithm', tlv(0x30, TBS), /signatureAlgorithm is missing/],
    ['no signatureValue', tlv(0x30, TBS, sha256Rsa), /signatureValue is missing/],
    ['signatureValue not a BIT STRING', tlv(0x30, TBS, sha256Rsa, tlv(0x04, hex('00'))), /signatureValue has tag 0x4/],
    ['an extra element after signatureValue', tlv(0x30, TBS, sha256Rsa, SIGNATURE, tlv(0x05)), /data after the signatureValue/],
    ['an empty AlgorithmIdentifier', cert(tlv(0x30)), /signature algorithm OID is missing/],
    ['an AlgorithmIdentifier without an OID', cert(tlv(0x30, tlv(0x05))), /signature algorithm OID has tag 0x5/],
    ['an OID overrunning its AlgorithmIdentifier', cert(Uint8Array.of(0x30, 0x04, 0x06, 0x09, 0x2a, 0x86)), /signature algorithm OID is truncated/],
    ['PSS without parameters', cert(tlv(0x30, oid(PSS))), /RSASSA-PSS parameters is missing/],
    ['PSS with NULL parameters', cert(tlv(0x30, oid(PSS), hex('0500'))), /RSASSA-PSS parameters has tag 0x5/],
    ['PSS with data after the parameters', cert(tlv(0x30, oid(PSS), tlv(0x30), hex('0500'))), /data after the RSASSA-PSS parameters/],
    ['PSS with an empty hashAlgorithm', cert(tlv(0x30, oid(PSS), tlv(0x30, tlv(0xa0)))), /RSASSA-PSS hashAlgorithm is missing/],
    ['PSS hashAlgorithm without an OID', cert(tlv(0x30, oid(PSS), tlv(0x30, tlv(0xa0, tlv(0x30))))), /RSASSA-PSS hash OID is missing/],
    ['PSS hashAlgorithm overrunning', cert(tlv(0x30, oid(PSS), tlv(0x30, Uint8Array.of(0xa0, 0x05, 0x30, 0x03)))), /RSASSA-PSS hashAlgorithm is truncated/],
  ]
  for (const [name, der, pattern] of cases) assertRejected(der, pattern, name)
})

test('the result is a plain Uint8Array of the digest length', () => {
  const der = cert(tlv(0x30, oid('2a864886f70d01010c')))
  const result = tlsServerEndPointHash(der)
  assert.equal(Object.getPrototypeOf(result), Uint8Array.prototype)
  assert.equal(result.length, 48)
})
