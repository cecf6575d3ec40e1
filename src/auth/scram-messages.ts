// Parsers for the two SCRAM messages a server sends (RFC 5802 section 7). PostgreSQL sends
// neither extensions nor optional attributes, so, like libpq, anything beyond the attributes
// the grammar requires is refused rather than skipped: a server that sends it is not the
// PostgreSQL we expect, and ignoring data in an authentication exchange is how downgrades hide.

import { AuthError } from '../errors.js'
import { decodeBase64 } from './base64.js'

export interface ServerFirst {
  /** The combined nonce (client nonce + server nonce). */
  nonce: string
  salt: Uint8Array
  iterations: number
}

// RFC 5802 "printable": %x21-2B / %x2D-7E, i.e. visible ASCII except the comma.
const PRINTABLE = /^[\x21-\x2b\x2d-\x7e]+$/
const POSITIVE_NUMBER = /^[1-9][0-9]*$/

/** A SCRAM-SHA-256 ServerSignature is one HMAC-SHA-256 output. */
export const SERVER_SIGNATURE_LENGTH = 32

export function parseServerFirst(text: string, clientNonce: string, maxIterations: number, method: string): ServerFirst {
  const malformed = (what: string) => new AuthError(method, `malformed SCRAM server-first-message: ${what}`)
  if (text.startsWith('e=')) throw serverError(text, method)
  if (text.startsWith('m=')) {
    throw new AuthError(method, 'the server requires a SCRAM extension (m=) that this client does not support')
  }
  const parts = text.split(',')
  const nonce = attribute(parts, 0, 'r', 'nonce', malformed)
  const saltText = attribute(parts, 1, 's', 'salt', malformed)
  const iterationText = attribute(parts, 2, 'i', 'iteration count', malformed)
  if (parts.length > 3) throw malformed('unexpected data after the iteration count')

  if (!nonce.startsWith(clientNonce)) throw malformed('the nonce does not begin with the client nonce')
  if (nonce.length === clientNonce.length) throw malformed('the server added nothing to the client nonce')
  if (!PRINTABLE.test(nonce)) throw malformed('the nonce contains characters outside printable ASCII')

  const salt = decodeBase64(saltText)
  if (salt === undefined) throw malformed('the salt is not valid base64')
  if (salt.length === 0) throw malformed('the salt is empty')

  if (!POSITIVE_NUMBER.test(iterationText)) {
    throw malformed(`the iteration count ${quote(iterationText)} is not a positive integer`)
  }
  // A digit count check first keeps Number() exact: anything longer is over any sane limit.
  const iterations = iterationText.length <= 15 ? Number(iterationText) : Infinity
  if (iterations > maxIterations) {
    throw new AuthError(
      method,
      `the server asks for ${iterationText.length <= 20 ? iterationText : `${iterationText.slice(0, 20)}… (${iterationText.length} digits)`} PBKDF2 iterations, more than this client's limit of ${maxIterations} (maxIterations)`,
    )
  }
  return { nonce, salt, iterations }
}

/** Returns the ServerSignature carried by a server-final-message (`v=`). */
export function parseServerFinal(text: string, method: string): Uint8Array {
  const malformed = (what: string) => new AuthError(method, `malformed SCRAM server-final-message: ${what}`)
  if (text.startsWith('e=')) throw serverError(text, method)
  if (!text.startsWith('v=')) throw malformed(`expected a verifier (v=) or an error (e=), found ${quote(text)}`)
  const value = text.slice(2)
  if (value.includes(',')) throw malformed('unexpected data after the verifier')
  const signature = decodeBase64(value)
  if (signature === undefined) throw malformed('the verifier is not valid base64')
  if (signature.length !== SERVER_SIGNATURE_LENGTH) {
    throw malformed(`the verifier is ${signature.length} bytes long, not ${SERVER_SIGNATURE_LENGTH}`)
  }
  return signature
}

function attribute(
  parts: readonly string[],
  index: number,
  name: string,
  label: string,
  malformed: (what: string) => AuthError,
): string {
  const part = parts[index]
  if (part === undefined) throw malformed(`the ${label} (${name}=) is missing`)
  if (!part.startsWith(name + '=')) throw malformed(`expected the ${label} (${name}=), found ${quote(part)}`)
  return part.slice(2)
}

function serverError(text: string, method: string): AuthError {
  const comma = text.indexOf(',')
  const value = text.slice(2, comma === -1 ? undefined : comma)
  return new AuthError(method, `the server rejected the SCRAM exchange: ${quote(value)}`)
}

/** Server text in an error message: quoted, escaped and bounded, so it cannot forge lines or flood logs. */
function quote(text: string): string {
  return JSON.stringify(text.length > 64 ? text.slice(0, 64) + '…' : text)
}
