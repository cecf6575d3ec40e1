// The connection service file (libpq's pg_service.conf): which files are
// searched, how a section is read, where its settings rank against the
// connection string and the environment, and what its errors say.

import assert from 'node:assert/strict'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { type ConnectOptions, type ResolveOptions, resolveConfig } from '../../../src/config/index.js'
import { parseServiceSection, serviceFiles } from '../../../src/config/service-file.js'
import type { ConnectionConfig } from '../../../src/config/types.js'
import { ConfigError } from '../../../src/errors.js'
import { assertConfigError } from '../../support/assert-config.js'

const dir = mkdtempSync(join(tmpdir(), 'pipegres-service-'))
after(() => rmSync(dir, { recursive: true, force: true }))

const home = join(dir, 'home')
const sysconf = join(dir, 'etc')
mkdirSync(home)
mkdirSync(sysconf)
const userFile = join(home, '.pg_service.conf')
const systemFile = join(sysconf, 'pg_service.conf')

writeFileSync(
  userFile,
  [
    '# the user file',
    '[shop]',
    'host=db.example.com',
    'port=6432',
    'dbname=shop',
    'user=app',
    'password=svc-secret',
    'application_name=from-service',
    '',
    '[bad-port]',
    'port=abc',
    '',
    '[only-user]',
    'host=user-host',
  ].join('\n'),
)
writeFileSync(systemFile, ['[only-user]', 'host=system-host', 'port=7777', '', '[only-system]', 'host=system-host', 'sslmode=require'].join('\n'))

const emptyHome = join(dir, 'empty-home')
mkdirSync(emptyHome)

function resolve(input?: string | ConnectOptions, env: Record<string, string> = {}, homedir = home): ConnectionConfig {
  const opts: ResolveOptions = { env, homedir, osUser: 'osuser' }
  return resolveConfig(input, opts)
}

/** A service file of its own for one test. */
function fileWith(name: string, lines: string[]): string {
  const file = join(dir, name)
  writeFileSync(file, lines.join('\n'))
  return file
}

describe('finding the service', () => {
  test('service= in a key=value string reads ~/.pg_service.conf', () => {
    const c = resolve('service=shop')
    assert.deepEqual(c.hosts, [{ host: 'db.example.com', port: 6432, hostaddr: undefined }])
    assert.equal(c.database, 'shop')
    assert.equal(c.user, 'app')
    assert.equal(c.password, 'svc-secret')
    assert.equal(c.applicationName, 'from-service')
    assert.deepEqual(c.service, { name: 'shop', file: userFile })
  })

  test('service in a URL, in the options, and PGSERVICE', () => {
    for (const c of [resolve('postgres:///?service=shop'), resolve({ service: 'shop' }), resolve(undefined, { PGSERVICE: 'shop' })]) {
      assert.equal(c.hosts[0]?.host, 'db.example.com')
      assert.equal(c.user, 'app')
    }
  })

  test('no service named: no file is read, and config.service is undefined', () => {
    assert.equal(resolve({ host: 'h' }).service, undefined)
    // servicefile alone names no service, as in libpq.
    assert.equal(resolve({ host: 'h', servicefile: join(dir, 'missing.conf') }).service, undefined)
  })

  test('servicefile (keyword or option), then PGSERVICEFILE, replace ~/.pg_service.conf', () => {
    const own = fileWith('own.conf', ['[shop]', 'host=own-host'])
    assert.equal(resolve(`service=shop servicefile=${own}`).hosts[0]?.host, 'own-host')
    assert.equal(resolve({ service: 'shop', servicefile: own }).hosts[0]?.host, 'own-host')
    assert.equal(resolve('service=shop', { PGSERVICEFILE: own }).hosts[0]?.host, 'own-host')
    // The servicefile setting wins over PGSERVICEFILE.
    assert.equal(resolve(`service=shop servicefile=${userFile}`, { PGSERVICEFILE: own }).hosts[0]?.host, 'db.example.com')
  })

  test('the system file (PGSYSCONFDIR/pg_service.conf) is searched after the user file', () => {
    const c = resolve('service=only-system', { PGSYSCONFDIR: sysconf })
    assert.equal(c.hosts[0]?.host, 'system-host')
    assert.equal(c.sslmode, 'require')
    assert.deepEqual(c.service, { name: 'only-system', file: systemFile })
  })

  test('the first file with the section is the only one read: sections are not merged across files', () => {
    const c = resolve('service=only-user', { PGSYSCONFDIR: sysconf })
    assert.equal(c.hosts[0]?.host, 'user-host')
    // port=7777 of the system file's section is not used.
    assert.equal(c.hosts[0]?.port, 5432)
  })

  test('a missing ~/.pg_service.conf is skipped for the system file', () => {
    const c = resolve('service=only-system', { PGSYSCONFDIR: sysconf }, emptyHome)
    assert.equal(c.hosts[0]?.host, 'system-host')
  })

  test('a file named by PGSERVICEFILE or servicefile must exist (libpq does not skip it)', () => {
    const missing = join(dir, 'missing.conf')
    assertConfigError(() => resolve('service=only-system', { PGSYSCONFDIR: sysconf, PGSERVICEFILE: missing }), 'PGSERVICEFILE', [
      `service file "${missing}" not found (named by PGSERVICEFILE)`,
    ])
    assertConfigError(() => resolve({ service: 'only-system', servicefile: missing }, { PGSYSCONFDIR: sysconf }), 'servicefile', ['named by servicefile'])
  })

  test('a named file without the section: the system file is searched next', () => {
    const own = fileWith('without.conf', ['[other]', 'host=x'])
    assert.equal(resolve('service=only-system', { PGSYSCONFDIR: sysconf, PGSERVICEFILE: own }).hosts[0]?.host, 'system-host')
  })

  test('the files searched, in order', () => {
    const lookup = { servicefile: undefined, homedir: home }
    const files = (l: Parameters<typeof serviceFiles>[0]) => serviceFiles(l).map((f) => f.file)
    assert.deepEqual(files({ ...lookup, env: {} }), [userFile])
    assert.deepEqual(files({ ...lookup, env: { PGSYSCONFDIR: sysconf } }), [userFile, systemFile])
    assert.deepEqual(serviceFiles({ ...lookup, env: { PGSERVICEFILE: '/x.conf' } }), [{ file: '/x.conf', namedBy: 'PGSERVICEFILE' }])
    assert.deepEqual(serviceFiles({ ...lookup, servicefile: '/y.conf', env: { PGSERVICEFILE: '/x.conf' } }), [{ file: '/y.conf', namedBy: 'servicefile' }])
  })
})

describe('precedence: options, connection string, service file, environment', () => {
  test('the connection string wins over the service file, which wins over the environment', () => {
    const env = { PGHOST: 'env-host', PGPORT: '1111', PGUSER: 'env-user', PGPASSWORD: 'env-pw', PGCONNECT_TIMEOUT: '7', PGAPPNAME: 'env-app' }
    const c = resolve('service=shop port=2222 user=string-user', env)
    assert.equal(c.hosts[0]?.port, 2222, 'string over service')
    assert.equal(c.user, 'string-user', 'string over service')
    assert.equal(c.hosts[0]?.host, 'db.example.com', 'service over PGHOST')
    assert.equal(c.password, 'svc-secret', 'service over PGPASSWORD')
    assert.equal(c.applicationName, 'from-service', 'service over PGAPPNAME')
    assert.equal(c.connectTimeout, 7000, 'the environment fills what the service leaves unset')
  })

  test('the options object wins over all of them', () => {
    const c = resolve({ connectionString: 'service=shop port=2222', port: 3333, host: 'option-host' }, { PGHOST: 'env-host' })
    assert.deepEqual(c.hosts, [{ host: 'option-host', port: 3333, hostaddr: undefined }])
  })

  test('an empty value in the service file gives the default, and the environment is not consulted (as in libpq)', () => {
    const file = fileWith('empty.conf', ['[e]', 'host=', 'user=svc'])
    const c = resolve(`service=e servicefile=${file}`, { PGHOST: 'env-host', PGPORT: '7000' })
    assert.equal(c.hosts[0]?.host, 'localhost')
    assert.equal(c.hosts[0]?.port, 7000, 'a setting the section lacks still comes from the environment')
    assert.equal(c.user, 'svc')
  })

  test('PGSERVICE loses to a service named in the string', () => {
    const own = fileWith('named.conf', ['[a]', 'host=a-host', '[b]', 'host=b-host'])
    assert.equal(resolve('service=b', { PGSERVICE: 'a', PGSERVICEFILE: own }).hosts[0]?.host, 'b-host')
  })
})

describe('reading a section as libpq does', () => {
  const read = (lines: string[], name = 's') => parseServiceSection(lines.join('\n'), name, '/f.conf', 'service')

  test('comments, blank lines, leading and trailing whitespace and CRLF line ends', () => {
    const s = read(['# c', '', '  [s]  ', '\thost=h1  \r', '   # another', 'port=5433\r', ''])
    assert.deepEqual(Object.fromEntries([...(s ?? [])].map(([k, v]) => [k, v.value])), { host: 'h1', port: '5433' })
    assert.equal(s?.get('port')?.line, 6)
  })

  test('the first line for a keyword wins, and only the first section of the name counts', () => {
    const s = read(['[s]', 'host=first', 'host=second', '[t]', 'host=t', '[s]', 'port=9'])
    assert.equal(s?.get('host')?.value, 'first')
    assert.equal(s?.has('port'), false)
  })

  test('the name must be followed by "]"; the rest of the line is ignored', () => {
    assert.equal(read(['[shop2]', 'host=x'], 'shop'), undefined)
    assert.equal(read(['[shop] # main', 'host=x'], 'shop')?.get('host')?.value, 'x')
    assert.equal(read(['[Shop]', 'host=x'], 'shop'), undefined, 'case-sensitive')
  })

  test('lines of other sections are not checked', () => {
    assert.equal(read(['[other]', 'no equals sign', 'frobnicate=1', 'ldap://example/x', '[s]', 'host=h'])?.get('host')?.value, 'h')
  })

  test('a value keeps everything after the first "=", spaces included', () => {
    assert.equal(read(['[s]', "options=-c search_path=a,b -c x='y z'"])?.get('options')?.value, "-c search_path=a,b -c x='y z'")
  })
})

describe('errors', () => {
  test('an unknown service names every file searched', () => {
    assertConfigError(() => resolve('service=nope', { PGSYSCONFDIR: sysconf }), 'service', [
      'definition of service "nope" not found',
      `"${userFile}"`,
      `"${systemFile}"`,
    ])
    assertConfigError(() => resolve({ service: 'nope' }, {}, emptyHome), 'service', [
      `"${join(emptyHome, '.pg_service.conf')}" (does not exist)`,
      'pipegres reads a system-wide pg_service.conf only from PGSYSCONFDIR',
    ])
  })

  test('a service named by PGSERVICE: the error names PGSERVICE', () => {
    assertConfigError(() => resolve(undefined, { PGSERVICE: 'nope' }), 'PGSERVICE', ['"nope" not found'])
  })

  test('a line without "=" names the file and the line, never the line itself', () => {
    const file = fileWith('noeq.conf', ['[s]', 'host=h', 'password hunter2-secret'])
    assertConfigError(() => resolve(`service=s servicefile=${file}`), 'service', [`syntax error in service file "${file}", line 3`], ['hunter2'])
  })

  test('an unknown keyword names it, the file and the line, and suggests a keyword', () => {
    const file = fileWith('unknown.conf', ['[s]', '', 'hots=h'])
    assertConfigError(() => resolve(`service=s servicefile=${file}`), 'service', ['line 3', 'unknown connection setting "hots"', 'did you mean "host"'])
  })

  test('spaces around "=" are a syntax error, as in libpq, and the message says why', () => {
    const file = fileWith('spaces.conf', ['[s]', 'host = h'])
    assertConfigError(() => resolve(`service=s servicefile=${file}`), 'service', ['line 2', 'no spaces are allowed around "="'])
  })

  test('nested service or servicefile lines', () => {
    for (const key of ['service', 'servicefile']) {
      const file = fileWith(`nested-${key}.conf`, ['[s]', `${key}=other`])
      assertConfigError(() => resolve(`service=s servicefile=${file}`), 'service', [`nested "${key}"`, 'line 2'])
    }
  })

  test('a keyword pipegres does not support names the keyword, the file and the line', () => {
    const file = fileWith('unsupported.conf', ['[s]', 'krbsrvname=postgres'])
    assertConfigError(() => resolve(`service=s servicefile=${file}`), 'krbsrvname', ['line 2', 'does not support', 'GSSAPI'])
  })

  test('LDAP lookups are refused with their own message', () => {
    const file = fileWith('ldap.conf', ['[s]', 'ldap://ldap.example.com/dc=example?uniqueMember?one?(cn=s)'])
    assertConfigError(() => resolve(`service=s servicefile=${file}`), 'service', ['does not support LDAP'])
  })

  test('a bad value names the setting, the service, the file and the line', () => {
    assertConfigError(() => resolve('service=bad-port'), 'port', ['invalid port "abc"', 'in service "bad-port"', userFile, 'line 11'])
  })

  test('a password value with a NUL is refused without showing it', () => {
    const file = fileWith('nul.conf', ['[s]', 'password=abc\0secret-tail'])
    assertConfigError(() => resolve(`service=s servicefile=${file}`), 'password', ['must not contain a NUL'], ['secret-tail'])
  })

  test('a service file that exists but cannot be read is an error, not skipped', () => {
    const asDir = join(dir, 'is-a-directory.conf')
    mkdirSync(asDir)
    assertConfigError(() => resolve({ service: 's', servicefile: asDir }), 'service', ['could not read service file', asDir])
    if (process.platform !== 'win32' && process.getuid?.() !== 0) {
      const locked = fileWith('locked.conf', ['[s]', 'host=h'])
      chmodSync(locked, 0o000)
      assertConfigError(() => resolve({ service: 's', servicefile: locked }), 'service', ['could not read service file'])
    }
  })

  test('the errors are ConfigErrors with code PG_CONFIG', () => {
    try {
      resolve('service=nope')
      assert.fail('resolved an unknown service')
    } catch (err) {
      assert.ok(err instanceof ConfigError)
      assert.equal(err.code, 'PG_CONFIG')
    }
  })
})

describe('a password from the service file stays hidden', () => {
  test('not printed with the config', async () => {
    const { inspect } = await import('node:util')
    const c = resolve('service=shop')
    assert.ok(!inspect(c, { depth: 5 }).includes('svc-secret'))
    assert.ok(!JSON.stringify(c).includes('svc-secret'))
  })
})
