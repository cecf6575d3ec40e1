// tls-server-end-point channel binding data (RFC 5929 section 4.1): the hash of the server's
// DER certificate, using the hash of the certificate's signature algorithm, with MD5 and
// SHA-1 upgraded to SHA-256. Node's X509Certificate does not expose the signature algorithm,
// so this reads just enough DER to find it:
//   Certificate ::= SEQUENCE { tbsCertificate SEQUENCE, signatureAlgorithm AlgorithmIdentifier,
//                              signatureValue BIT STRING }
//   AlgorithmIdentifier ::= SEQUENCE { algorithm OBJECT IDENTIFIER, parameters ANY OPTIONAL }
// Every read is bounds-checked and every step moves forward, so hostile input can neither
// read out of bounds nor loop.

import { createHash } from 'node:crypto'
import { AuthError } from '../errors.js'

const METHOD = 'SCRAM-SHA-256-PLUS'

const SEQUENCE = 0x30
const OBJECT_IDENTIFIER = 0x06
const BIT_STRING = 0x03
const CONTEXT_0 = 0xa0

// Signature algorithm OIDs (DER content bytes in hex) → Node hash name. MD5 and SHA-1 already
// appear as sha256 per RFC 5929.
const SIGNATURE_HASHES = new Map<string, string>([
  ['2a864886f70d010104', 'sha256'], // md5WithRSAEncryption
  ['2a864886f70d010105', 'sha256'], // sha1WithRSAEncryption
  ['2b0e03021d', 'sha256'], // sha1WithRSASignature (OIW)
  ['2a864886f70d01010e', 'sha224'], // sha224WithRSAEncryption
  ['2a864886f70d01010b', 'sha256'], // sha256WithRSAEncryption
  ['2a864886f70d01010c', 'sha384'], // sha384WithRSAEncryption
  ['2a864886f70d01010d', 'sha512'], // sha512WithRSAEncryption
  ['2a864886f70d01010f', 'sha512-224'], // sha512-224WithRSAEncryption
  ['2a864886f70d010110', 'sha512-256'], // sha512-256WithRSAEncryption
  ['2a8648ce3d0401', 'sha256'], // ecdsa-with-SHA1
  ['2a8648ce3d040301', 'sha224'], // ecdsa-with-SHA224
  ['2a8648ce3d040302', 'sha256'], // ecdsa-with-SHA256
  ['2a8648ce3d040303', 'sha384'], // ecdsa-with-SHA384
  ['2a8648ce3d040304', 'sha512'], // ecdsa-with-SHA512
  ['2a8648ce380403', 'sha256'], // dsa-with-sha1
  ['608648016503040301', 'sha224'], // dsa-with-sha224
  ['608648016503040302', 'sha256'], // dsa-with-sha256
  ['608648016503040303', 'sha384'], // id-dsa-with-sha384
  ['608648016503040304', 'sha512'], // id-dsa-with-sha512
  ['608648016503040309', 'sha3-224'], // id-ecdsa-with-sha3-224
  ['60864801650304030a', 'sha3-256'], // id-ecdsa-with-sha3-256
  ['60864801650304030b', 'sha3-384'], // id-ecdsa-with-sha3-384
  ['60864801650304030c', 'sha3-512'], // id-ecdsa-with-sha3-512
  ['60864801650304030d', 'sha3-224'], // id-rsassa-pkcs1-v1_5-with-sha3-224
  ['60864801650304030e', 'sha3-256'], // id-rsassa-pkcs1-v1_5-with-sha3-256
  ['60864801650304030f', 'sha3-384'], // id-rsassa-pkcs1-v1_5-with-sha3-384
  ['608648016503040310', 'sha3-512'], // id-rsassa-pkcs1-v1_5-with-sha3-512
])

// Hash algorithm OIDs, for RSASSA-PSS whose hash lives in the parameters.
const HASHES = new Map<string, string>([
  ['2a864886f70d0205', 'sha256'], // md5
  ['2b0e03021a', 'sha256'], // sha1
  ['608648016503040201', 'sha256'],
  ['608648016503040202', 'sha384'],
  ['608648016503040203', 'sha512'],
  ['608648016503040204', 'sha224'],
  ['608648016503040205', 'sha512-224'],
  ['608648016503040206', 'sha512-256'],
  ['608648016503040207', 'sha3-224'],
  ['608648016503040208', 'sha3-256'],
  ['608648016503040209', 'sha3-384'],
  ['60864801650304020a', 'sha3-512'],
])

const RSASSA_PSS = '2a864886f70d01010a'

// Signature algorithms that hash nothing themselves (or hash internally), so RFC 5929 has
// no hash to pick.
const WITHOUT_HASH = new Map<string, string>([
  ['2b6570', 'Ed25519'],
  ['2b6571', 'Ed448'],
])

/** The tls-server-end-point channel binding data for a server certificate in DER form. */
export function tlsServerEndPointHash(derCertificate: Uint8Array): Uint8Array {
  const hashName = certificateHash(derCertificate)
  const digest = createHash(hashName).update(derCertificate).digest()
  return new Uint8Array(digest.buffer, digest.byteOffset, digest.length)
}

function certificateHash(der: Uint8Array): string {
  const certificate = readElement(der, 0, der.length, SEQUENCE, 'Certificate')
  if (certificate.end !== der.length) throw malformed('data after the end of the Certificate')
  const tbs = readElement(der, certificate.start, certificate.end, SEQUENCE, 'tbsCertificate')
  const algorithm = readElement(der, tbs.end, certificate.end, SEQUENCE, 'signatureAlgorithm')
  const signature = readElement(der, algorithm.end, certificate.end, BIT_STRING, 'signatureValue')
  if (signature.end !== certificate.end) throw malformed('data after the signatureValue')

  const oid = readElement(der, algorithm.start, algorithm.end, OBJECT_IDENTIFIER, 'signature algorithm OID')
  const oidHex = hex(der.subarray(oid.start, oid.end))
  const hash = SIGNATURE_HASHES.get(oidHex)
  if (hash !== undefined) return hash
  if (oidHex === RSASSA_PSS) return pssHash(der, oid.end, algorithm.end)
  throw new AuthError(
    METHOD,
    `channel binding is not possible with a certificate signed with ${WITHOUT_HASH.get(oidHex) ?? `an unknown algorithm (OID ${dottedOid(der.subarray(oid.start, oid.end))})`}`,
  )
}

/**
 * RSASSA-PSS-params ::= SEQUENCE { hashAlgorithm [0] EXPLICIT AlgorithmIdentifier DEFAULT sha1, ... }
 * (RFC 4055). The parameters must be present in a signature's AlgorithmIdentifier.
 */
function pssHash(der: Uint8Array, start: number, end: number): string {
  const params = readElement(der, start, end, SEQUENCE, 'RSASSA-PSS parameters')
  if (params.end !== end) throw malformed('data after the RSASSA-PSS parameters')
  if (params.start === params.end || der[params.start] !== CONTEXT_0) return 'sha256' // default SHA-1
  const explicit = readElement(der, params.start, params.end, CONTEXT_0, 'RSASSA-PSS hashAlgorithm')
  const hashAlgorithm = readElement(der, explicit.start, explicit.end, SEQUENCE, 'RSASSA-PSS hashAlgorithm')
  const oid = readElement(der, hashAlgorithm.start, hashAlgorithm.end, OBJECT_IDENTIFIER, 'RSASSA-PSS hash OID')
  const hash = HASHES.get(hex(der.subarray(oid.start, oid.end)))
  if (hash === undefined) {
    throw new AuthError(
      METHOD,
      `channel binding is not possible with a certificate signed with RSASSA-PSS using an unknown hash (OID ${dottedOid(der.subarray(oid.start, oid.end))})`,
    )
  }
  return hash
}

interface Element {
  /** Offset of the first content byte. */
  start: number
  /** Offset just past the last content byte. */
  end: number
}

/** Reads one definite-length element with the expected tag inside [pos, limit). */
function readElement(der: Uint8Array, pos: number, limit: number, tag: number, name: string): Element {
  if (pos >= limit) throw malformed(`${name} is missing`)
  if (der[pos] !== tag) throw malformed(`${name} has tag 0x${der[pos]!.toString(16)}, expected 0x${tag.toString(16)}`)
  pos++
  if (pos >= limit) throw malformed(`${name} is truncated`)
  const first = der[pos++]!
  let length = first
  if (first >= 0x80) {
    const count = first & 0x7f
    // 0x80 is BER's indefinite length, which DER forbids; more than four length bytes would
    // describe an element larger than any certificate.
    if (count === 0 || count > 4) throw malformed(`${name} has an invalid length encoding`)
    if (pos + count > limit) throw malformed(`${name} is truncated`)
    length = 0
    for (let i = 0; i < count; i++) length = length * 256 + der[pos++]!
  }
  if (length > limit - pos) throw malformed(`${name} is truncated`)
  return { start: pos, end: pos + length }
}

function malformed(what: string): AuthError {
  return new AuthError(METHOD, `malformed server certificate: ${what}`)
}

function hex(bytes: Uint8Array): string {
  let out = ''
  for (const byte of bytes) out += byte.toString(16).padStart(2, '0')
  return out
}

/** Dotted form of an OID for error messages; falls back to hex if the encoding is odd. */
function dottedOid(bytes: Uint8Array): string {
  const arcs: number[] = []
  let value = 0
  for (const byte of bytes) {
    value = value * 128 + (byte & 0x7f)
    if (value > Number.MAX_SAFE_INTEGER / 128) return `0x${hex(bytes)}`
    if ((byte & 0x80) === 0) {
      if (arcs.length === 0) arcs.push(value < 80 ? Math.floor(value / 40) : 2, value < 80 ? value % 40 : value - 80)
      else arcs.push(value)
      value = 0
    }
  }
  if (arcs.length === 0 || (bytes[bytes.length - 1]! & 0x80) !== 0) return `0x${hex(bytes)}`
  return arcs.join('.')
}
