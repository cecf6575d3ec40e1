import { createHash } from 'node:crypto'
import { AuthError } from '../errors.js'

const utf8 = new TextEncoder()

/**
 * The PasswordMessage payload for AuthenticationMD5Password:
 * `'md5' + hex(md5(hex(md5(password + user)) + salt))`, strings as UTF-8. The password is
 * not SASLprep'ed: the server's md5 verifier was made from the raw bytes.
 */
export function md5PasswordMessage(user: string, password: string, salt: Uint8Array): string {
  if (salt.length !== 4) {
    throw new AuthError('MD5', `the server sent a ${salt.length}-byte MD5 salt; the protocol uses 4 bytes`)
  }
  const inner = md5Hex(utf8.encode(password + user))
  const outerInput = new Uint8Array(inner.length + 4)
  outerInput.set(utf8.encode(inner), 0)
  outerInput.set(salt, inner.length)
  return 'md5' + md5Hex(outerInput)
}

function md5Hex(data: Uint8Array): string {
  let hash
  try {
    // Throws on OpenSSL builds in FIPS mode, where MD5 is disabled.
    hash = createHash('md5')
  } catch (cause) {
    throw new AuthError('MD5', 'MD5 password authentication is unavailable: this Node.js build does not provide MD5 (FIPS mode?)', { cause })
  }
  return hash.update(data).digest('hex')
}
