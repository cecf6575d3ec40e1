// SCRAM-SHA-256 and SCRAM-SHA-256-PLUS (RFC 5802, RFC 7677) as PostgreSQL speaks them: the
// client-first-message carries an empty user name (`n=,`) because the server uses the one
// from the startup packet, and the only channel binding type is tls-server-end-point.
// A pure state machine: bytes in, bytes out; the connection wraps them in
// SASLInitialResponse / SASLResponse and feeds back AuthenticationSASLContinue / Final data.

import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto'
import { AuthError } from '../errors.js'
import { encodeBase64 } from './base64.js'
import { parseServerFinal, parseServerFirst } from './scram-messages.js'

export type ScramMechanism = 'SCRAM-SHA-256' | 'SCRAM-SHA-256-PLUS'

/**
 * The default ceiling on the server's iteration count. PostgreSQL defaults to 4096
 * (scram_iterations); 1,000,000 leaves room for hardened settings (OWASP suggests 600,000
 * for PBKDF2-HMAC-SHA256) while capping what a hostile server can make the client burn at
 * roughly 0.2 s of one libuv thread per connection attempt, instead of minutes at 2^31.
 */
export const DEFAULT_MAX_ITERATIONS = 1_000_000

export interface ScramOptions {
  password: string
  mechanism: ScramMechanism
  /** tls-server-end-point data for -PLUS (the hash of the server certificate); required for -PLUS */
  channelBindingData?: Uint8Array
  /** true when the connection is TLS and the client could bind but the server offered no -PLUS (gs2 flag 'y'); false → 'n' */
  clientSupportsBinding?: boolean
  /** for tests only: a fixed client nonce (printable ASCII without ',') */
  nonce?: string
  /** The user name for the client-first-message. PostgreSQL ignores it, so the default is ''; set only to reproduce RFC test vectors. */
  username?: string
  /** Refuse a server iteration count above this. Default {@link DEFAULT_MAX_ITERATIONS}. */
  maxIterations?: number
}

type State = 'initial' | 'first-sent' | 'deriving' | 'final-sent' | 'done' | 'failed'

const utf8Encoder = new TextEncoder()
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const NONCE = /^[\x21-\x2b\x2d-\x7e]+$/
const KEY_LENGTH = 32

export class ScramClient {
  readonly mechanism: ScramMechanism
  // Private fields keep the secrets out of util.inspect and JSON.stringify output.
  #password: string
  readonly #gs2Header: string
  readonly #bindingData: Uint8Array
  readonly #clientNonce: string
  readonly #clientFirstBare: string
  readonly #maxIterations: number
  #state: State = 'initial'
  #expectedServerSignature: Uint8Array | undefined

  constructor(opts: ScramOptions) {
    const mechanism = opts.mechanism
    if (mechanism !== 'SCRAM-SHA-256' && mechanism !== 'SCRAM-SHA-256-PLUS') {
      throw new AuthError('SASL', `unsupported SASL mechanism ${JSON.stringify(mechanism)}`)
    }
    this.mechanism = mechanism
    if (typeof opts.password !== 'string') throw new AuthError(mechanism, 'the password must be a string')
    this.#password = opts.password

    if (mechanism === 'SCRAM-SHA-256-PLUS') {
      if (!(opts.channelBindingData instanceof Uint8Array) || opts.channelBindingData.length === 0) {
        throw new AuthError(mechanism, 'SCRAM-SHA-256-PLUS needs channel binding data (the tls-server-end-point hash of the server certificate)')
      }
      this.#gs2Header = 'p=tls-server-end-point,,'
      this.#bindingData = opts.channelBindingData.slice()
    } else {
      this.#gs2Header = opts.clientSupportsBinding === true ? 'y,,' : 'n,,'
      this.#bindingData = new Uint8Array(0)
    }

    const maxIterations = opts.maxIterations ?? DEFAULT_MAX_ITERATIONS
    if (!Number.isSafeInteger(maxIterations) || maxIterations < 1) {
      throw new AuthError(mechanism, `maxIterations must be a positive integer, got ${String(maxIterations)}`)
    }
    this.#maxIterations = maxIterations

    // 18 random bytes make 24 base64 characters, all valid in a nonce; libpq uses the same.
    const nonce = opts.nonce ?? encodeBase64(randomBytes(18))
    if (!NONCE.test(nonce)) throw new AuthError(mechanism, 'the client nonce must be printable ASCII without commas')
    this.#clientNonce = nonce
    this.#clientFirstBare = `n=${escapeSaslName(opts.username ?? '', mechanism)},r=${nonce}`
  }

  /**
   * True once verifyServerFinal() has accepted the server's signature. The connection must
   * not accept AuthenticationOk before that: a server that skips AuthenticationSASLFinal has
   * not proved that it knows the password (nor, with -PLUS, that it holds the certificate).
   */
  get verified(): boolean {
    return this.#state === 'done'
  }

  /** The bytes for SASLInitialResponse (after the mechanism name and length). */
  clientFirst(): Uint8Array {
    if (this.#state !== 'initial') throw this.#outOfOrder('clientFirst()')
    this.#state = 'first-sent'
    return utf8Encoder.encode(this.#gs2Header + this.#clientFirstBare)
  }

  /**
   * Validates the AuthenticationSASLContinue data and returns the client-final-message for
   * SASLResponse. Async because PBKDF2 runs on the libuv thread pool, not the event loop.
   */
  async clientFinal(serverFirst: Uint8Array): Promise<Uint8Array> {
    if (this.#state !== 'first-sent') throw this.#outOfOrder('clientFinal()')
    // Set before the first await so a second concurrent call is refused.
    this.#state = 'deriving'
    const password = this.#password
    this.#password = ''
    try {
      const text = decodeUtf8(serverFirst, this.mechanism, 'server-first-message')
      const { nonce, salt, iterations } = parseServerFirst(text, this.#clientNonce, this.#maxIterations, this.mechanism)
      const saltedPassword = await deriveKey(utf8Encoder.encode(await prepared(password)), salt, iterations, this.mechanism)

      const channelBinding = new Uint8Array(this.#gs2Header.length + this.#bindingData.length)
      channelBinding.set(utf8Encoder.encode(this.#gs2Header), 0)
      channelBinding.set(this.#bindingData, this.#gs2Header.length)
      const withoutProof = `c=${encodeBase64(channelBinding)},r=${nonce}`
      const authMessage = `${this.#clientFirstBare},${text},${withoutProof}`

      const clientKey = hmac(saltedPassword, 'Client Key')
      const storedKey = createHash('sha256').update(clientKey).digest()
      const proof = hmac(storedKey, authMessage)
      for (let i = 0; i < proof.length; i++) proof[i]! ^= clientKey[i]!
      this.#expectedServerSignature = hmac(hmac(saltedPassword, 'Server Key'), authMessage)
      // Best effort only (copies may exist elsewhere), but no reason to keep keys around.
      saltedPassword.fill(0)
      clientKey.fill(0)

      this.#state = 'final-sent'
      return utf8Encoder.encode(`${withoutProof},p=${encodeBase64(proof)}`)
    } catch (error) {
      this.#state = 'failed'
      throw error
    }
  }

  /** Verifies the AuthenticationSASLFinal data; throws AuthError unless the server proved it knows the password. */
  verifyServerFinal(serverFinal: Uint8Array): void {
    if (this.#state !== 'final-sent') throw this.#outOfOrder('verifyServerFinal()')
    const expected = this.#expectedServerSignature!
    this.#expectedServerSignature = undefined
    try {
      const text = decodeUtf8(serverFinal, this.mechanism, 'server-final-message')
      const signature = parseServerFinal(text, this.mechanism)
      if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) {
        throw new AuthError(this.mechanism, 'the server signature is wrong: the server could not prove that it knows the password')
      }
      this.#state = 'done'
    } catch (error) {
      this.#state = 'failed'
      throw error
    }
  }

  #outOfOrder(step: string): AuthError {
    const state = {
      initial: 'clientFirst() has not been called',
      'first-sent': 'clientFinal() has not been called',
      deriving: 'clientFinal() has not finished',
      'final-sent': 'the exchange is waiting for verifyServerFinal()',
      done: 'the exchange is already complete',
      failed: 'the exchange has already failed',
    }[this.#state]
    return new AuthError(this.mechanism, `SCRAM steps called out of order: ${step} was called but ${state}`)
  }
}

/** RFC 5802 saslname: '=' and ',' are escaped as =3D and =2C. */
function escapeSaslName(name: string, method: string): string {
  if (name.includes('\0')) throw new AuthError(method, 'the SCRAM user name must not contain NUL')
  return name.replaceAll('=', '=3D').replaceAll(',', '=2C')
}

function decodeUtf8(bytes: Uint8Array, method: string, what: string): string {
  try {
    return utf8Decoder.decode(bytes)
  } catch (cause) {
    throw new AuthError(method, `malformed SCRAM ${what}: not valid UTF-8`, { cause })
  }
}

function hmac(key: Uint8Array, data: string): Uint8Array {
  return createHmac('sha256', key).update(data).digest()
}

function deriveKey(password: Uint8Array, salt: Uint8Array, iterations: number, method: string): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    pbkdf2(password, salt, iterations, KEY_LENGTH, 'sha256', (error, key) => {
      password.fill(0)
      if (error) reject(new AuthError(method, 'SCRAM key derivation (PBKDF2) failed', { cause: error }))
      else resolve(key)
    })
  })
}

/**
 * The password as SCRAM hashes it. SASLprep leaves pure ASCII untouched (as PostgreSQL does), so
 * its Unicode tables (about 13 KB of the bundle) load only for a password that needs them.
 */
async function prepared(password: string): Promise<string> {
  if (/^[\x00-\x7f]*$/.test(password)) return password
  const { saslprep } = await import('./saslprep.js')
  return saslprep(password)
}
