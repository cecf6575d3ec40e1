import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { md5PasswordMessage } from '../../../src/auth/index.js'
import { AuthError } from '../../../src/errors.js'

// Literals computed independently with Python's hashlib.
test('md5PasswordMessage matches fixed known values', () => {
  assert.equal(md5PasswordMessage('alice', 'secret', new Uint8Array([1, 2, 3, 4])), 'md598a0412b9c31436fc53776e863350083')
  assert.equal(
    md5PasswordMessage('bób', 'pässwörd', new Uint8Array([0xde, 0xad, 0xbe, 0xef])),
    'md5ae994654d0b9b40d6c2bb34b237eeba6',
  )
})

test('md5PasswordMessage follows the recipe step by step', () => {
  const user = 'postgres'
  const password = 'correct horse battery staple'
  const salt = new Uint8Array([0x9a, 0x00, 0xff, 0x10])
  const inner = createHash('md5').update(Buffer.from(password + user, 'utf8')).digest('hex')
  const outer = createHash('md5').update(Buffer.concat([Buffer.from(inner, 'ascii'), salt])).digest('hex')
  const message = md5PasswordMessage(user, password, salt)
  assert.equal(message, 'md5' + outer)
  assert.match(message, /^md5[0-9a-f]{32}$/)
})

test('md5PasswordMessage depends on every input', () => {
  const base = md5PasswordMessage('u', 'p', new Uint8Array([1, 2, 3, 4]))
  assert.notEqual(md5PasswordMessage('v', 'p', new Uint8Array([1, 2, 3, 4])), base)
  assert.notEqual(md5PasswordMessage('u', 'q', new Uint8Array([1, 2, 3, 4])), base)
  assert.notEqual(md5PasswordMessage('u', 'p', new Uint8Array([1, 2, 3, 5])), base)
})

test('md5PasswordMessage refuses a salt that is not 4 bytes, without naming the password', () => {
  for (const length of [0, 3, 5]) {
    assert.throws(
      () => md5PasswordMessage('u', 'hunter2-secret', new Uint8Array(length)),
      (error: unknown) => {
        assert.ok(error instanceof AuthError)
        assert.equal(error.method, 'MD5')
        assert.equal(error.code, 'PG_AUTH')
        assert.ok(!error.message.includes('hunter2-secret'))
        return true
      },
    )
  }
})
