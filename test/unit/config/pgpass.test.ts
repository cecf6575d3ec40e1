import assert from 'node:assert/strict'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { findPassword, passwordFromPassfile } from '../../../src/config/pgpass.js'

describe('findPassword', () => {
  // [name, file text, host, port, database, user, expected]
  const cases: Array<[string, string, string, number, string, string, string | undefined]> = [
    ['exact match', 'db:5432:app:alice:pw1\n', 'db', 5432, 'app', 'alice', 'pw1'],
    ['no match', 'db:5432:app:alice:pw1\n', 'other', 5432, 'app', 'alice', undefined],
    ['port must match', 'db:5433:app:alice:pw1\n', 'db', 5432, 'app', 'alice', undefined],
    ['database must match', 'db:5432:other:alice:pw1\n', 'db', 5432, 'app', 'alice', undefined],
    ['user must match', 'db:5432:app:bob:pw1\n', 'db', 5432, 'app', 'alice', undefined],
    ['wildcard host', '*:5432:app:alice:pw', 'anything', 5432, 'app', 'alice', 'pw'],
    ['wildcard port', 'db:*:app:alice:pw', 'db', 6000, 'app', 'alice', 'pw'],
    ['wildcard database', 'db:5432:*:alice:pw', 'db', 5432, 'x', 'alice', 'pw'],
    ['wildcard user', 'db:5432:app:*:pw', 'db', 5432, 'app', 'anyone', 'pw'],
    ['all wildcards', '*:*:*:*:pw', 'h', 1, 'd', 'u', 'pw'],
    ['first match wins', 'db:5432:app:alice:first\n*:*:*:*:second\ndb:5432:app:alice:third', 'db', 5432, 'app', 'alice', 'first'],
    ['specific after wildcard loses', '*:*:*:*:wild\ndb:5432:app:alice:specific', 'db', 5432, 'app', 'alice', 'wild'],
    ['skips non-matching lines', 'x:1:y:z:no\ndb:5432:app:alice:yes', 'db', 5432, 'app', 'alice', 'yes'],
    ['comments are skipped', '# db:5432:app:alice:commented\ndb:5432:app:alice:real', 'db', 5432, 'app', 'alice', 'real'],
    ['a "#" inside a field is not a comment', 'd#b:5432:app:alice:pw', 'd#b', 5432, 'app', 'alice', 'pw'],
    ['blank lines are skipped', '\n\n\ndb:5432:app:alice:pw\n\n', 'db', 5432, 'app', 'alice', 'pw'],
    ['CRLF line ends', 'x:1:y:z:no\r\ndb:5432:app:alice:pw\r\n', 'db', 5432, 'app', 'alice', 'pw'],
    ['escaped colon in the password', 'db:5432:app:alice:a\\:b', 'db', 5432, 'app', 'alice', 'a:b'],
    ['escaped backslash in the password', 'db:5432:app:alice:a\\\\b', 'db', 5432, 'app', 'alice', 'a\\b'],
    ['other escapes in the password drop the backslash', 'db:5432:app:alice:a\\xb', 'db', 5432, 'app', 'alice', 'axb'],
    ['password ends at an unescaped colon, as in libpq', 'db:5432:app:alice:pw:extra', 'db', 5432, 'app', 'alice', 'pw'],
    ['trailing backslash is kept', 'db:5432:app:alice:pw\\', 'db', 5432, 'app', 'alice', 'pw\\'],
    ['spaces are part of the password', 'db:5432:app:alice: p w ', 'db', 5432, 'app', 'alice', ' p w '],
    ['escaped colon in the database', 'db:5432:a\\:b:alice:pw', 'db', 5432, 'a:b', 'alice', 'pw'],
    ['escaped backslash in the user', 'db:5432:app:dom\\\\alice:pw', 'db', 5432, 'app', 'dom\\alice', 'pw'],
    ['IPv6 host with escaped colons', '\\:\\:1:5432:app:alice:pw', '::1', 5432, 'app', 'alice', 'pw'],
    ['an escaped star is a literal star', '\\*:5432:app:alice:pw', 'db', 5432, 'app', 'alice', undefined],
    ['an escaped star matches a literal star', '\\*:5432:app:alice:pw', '*', 5432, 'app', 'alice', 'pw'],
    ['a star inside a field is literal', 'd*:5432:app:alice:pw', 'db', 5432, 'app', 'alice', undefined],
    ['a line with too few fields never matches', 'db:5432:app:alice\ndb:5432:app:alice:pw', 'db', 5432, 'app', 'alice', 'pw'],
    ['an empty password counts as none', 'db:5432:app:alice:', 'db', 5432, 'app', 'alice', undefined],
    ['an empty password still wins first', 'db:5432:app:alice:\n*:*:*:*:later', 'db', 5432, 'app', 'alice', undefined],
    ['empty file', '', 'db', 5432, 'app', 'alice', undefined],
    ['the default socket directory matches localhost', 'localhost:5432:app:alice:pw', '/var/run/postgresql', 5432, 'app', 'alice', 'pw'],
    ['/tmp matches localhost', 'localhost:5432:app:alice:pw', '/tmp', 5432, 'app', 'alice', 'pw'],
    ['/run/postgresql/ matches localhost', 'localhost:5432:app:alice:pw', '/run/postgresql/', 5432, 'app', 'alice', 'pw'],
    ['a socket directory matches its own path', '/srv/pg:5432:app:alice:pw', '/srv/pg', 5432, 'app', 'alice', 'pw'],
    ['another socket directory does not match localhost', 'localhost:5432:app:alice:pw', '/srv/pg', 5432, 'app', 'alice', undefined],
    ['localhost does not match a TCP host name', 'localhost:5432:app:alice:pw', 'db', 5432, 'app', 'alice', undefined],
    ['UTF-8 passwords', 'db:5432:app:alice:pässwörd', 'db', 5432, 'app', 'alice', 'pässwörd'],
  ]
  for (const [name, text, host, port, database, user, expected] of cases) {
    test(name, () => assert.equal(findPassword(text, host, port, database, user), expected))
  }
})

describe('passwordFromPassfile', () => {
  let dir = ''
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'pipegres-pgpass-'))
  })
  after(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  async function passfile(name: string, text: string, mode: number): Promise<string> {
    const file = path.join(dir, name)
    await writeFile(file, text)
    await chmod(file, mode)
    return file
  }

  test('reads a private file', async () => {
    const file = await passfile('private', '# comment\ndb:5432:app:alice:secret\n', 0o600)
    assert.equal(await passwordFromPassfile(file, 'db', 5432, 'app', 'alice'), 'secret')
    assert.equal(await passwordFromPassfile(file, 'db', 5432, 'app', 'bob'), undefined)
  })

  test('a read-only private file is fine', async () => {
    const file = await passfile('readonly', 'db:5432:app:alice:secret\n', 0o400)
    assert.equal(await passwordFromPassfile(file, 'db', 5432, 'app', 'alice'), 'secret')
  })

  test('a missing file gives undefined', async () => {
    assert.equal(await passwordFromPassfile(path.join(dir, 'does-not-exist'), 'db', 5432, 'app', 'alice'), undefined)
  })

  test('a directory gives undefined and a warning', async () => {
    const sub = path.join(dir, 'a-directory')
    await mkdir(sub)
    const warnings: string[] = []
    assert.equal(await passwordFromPassfile(sub, 'db', 5432, 'app', 'alice', (m) => warnings.push(m)), undefined)
    assert.equal(warnings.length, 1)
  })

  for (const mode of [0o644, 0o640, 0o604, 0o660, 0o610, 0o601, 0o700 | 0o070]) {
    test(`a file with mode ${mode.toString(8)} is ignored, with a warning`, { skip: process.platform === 'win32' }, async () => {
      const file = await passfile(`mode-${mode.toString(8)}`, 'db:5432:app:alice:secret\n', mode)
      const warnings: string[] = []
      assert.equal(await passwordFromPassfile(file, 'db', 5432, 'app', 'alice', (m) => warnings.push(m)), undefined)
      assert.equal(warnings.length, 1)
      assert.ok(warnings[0]?.includes('group or world'))
      assert.ok(!warnings[0]?.includes('secret'))
    })
  }

  test('no warning callback is needed', async () => {
    const file = await passfile('loose-no-warn', 'db:5432:app:alice:secret\n', 0o644)
    assert.equal(await passwordFromPassfile(file, 'db', 5432, 'app', 'alice'), undefined)
  })

  test('socket directory lookup through a real file', async () => {
    const file = await passfile('socket', 'localhost:5432:*:alice:sockpw\n', 0o600)
    assert.equal(await passwordFromPassfile(file, '/var/run/postgresql', 5432, 'app', 'alice'), 'sockpw')
  })
})
