import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isConnectionUrl, parseUrl, redactUrl } from '../../../src/config/parse-url.js'
import { assertConfigError } from '../../support/assert-config.js'

describe('parseUrl', () => {
  const cases: Array<[string, Record<string, string>]> = [
    ['postgres://u:p@h:5433/db', { user: 'u', password: 'p', host: 'h', port: '5433', dbname: 'db' }],
    ['postgresql://u:p@h:5433/db', { user: 'u', password: 'p', host: 'h', port: '5433', dbname: 'db' }],
    ['POSTGRES://h/db', { host: 'h', dbname: 'db' }],
    ['postgres://h', { host: 'h' }],
    ['postgres://h/', { host: 'h' }],
    ['postgres://', {}],
    ['postgres:///db', { dbname: 'db' }],
    ['postgres://u@h', { user: 'u', host: 'h' }],
    ['postgres://u:@h', { user: 'u', host: 'h' }],
    ['postgres://:pw@h', { password: 'pw', host: 'h' }],
    ['postgres://@h', { host: 'h' }],
    // percent-decoding of every part
    ['postgres://us%40er:p%3Aw%2Fd%3F@h/d%20b', { user: 'us@er', password: 'p:w/d?', host: 'h', dbname: 'd b' }],
    ['postgres://u:a%2Bb+c@h', { user: 'u', password: 'a+b+c', host: 'h' }],
    ['postgres://%C3%A9t%C3%A9@h/caf%C3%A9', { user: 'été', host: 'h', dbname: 'café' }],
    ['postgres://été@h/café', { user: 'été', host: 'h', dbname: 'café' }],
    // an unencoded '@' or ':' in the password still works: the last '@' ends the user info
    ['postgres://u:p@ss@h/db', { user: 'u', password: 'p@ss', host: 'h', dbname: 'db' }],
    ['postgres://u:a:b@h', { user: 'u', password: 'a:b', host: 'h' }],
    // IPv6
    ['postgres://[::1]:5433/db', { host: '::1', port: '5433', dbname: 'db' }],
    ['postgres://[2001:db8::1]/db', { host: '2001:db8::1', dbname: 'db' }],
    ['postgres://u@[fe80::1%25eth0]:5432', { user: 'u', host: 'fe80::1%eth0', port: '5432' }],
    // several hosts, each with an optional port
    ['postgres://h1:5432,h2:5433/db', { host: 'h1,h2', port: '5432,5433', dbname: 'db' }],
    ['postgres://h1,h2:5433/db', { host: 'h1,h2', port: ',5433', dbname: 'db' }],
    ['postgres://h1:5433,h2/db', { host: 'h1,h2', port: '5433,', dbname: 'db' }],
    ['postgres://h1,h2,h3/db', { host: 'h1,h2,h3', dbname: 'db' }],
    ['postgres://[::1]:1,[::2]:2,h3/db', { host: '::1,::2,h3', port: '1,2,', dbname: 'db' }],
    ['postgres://:5433/db', { port: '5433', dbname: 'db' }],
    ['postgres://:5433,:5434/db', { host: ',', port: '5433,5434', dbname: 'db' }],
    // unix-socket directories
    ['postgres://%2Fvar%2Frun%2Fpostgresql/db', { host: '/var/run/postgresql', dbname: 'db' }],
    ['postgres://%2Ftmp:5433/db', { host: '/tmp', port: '5433', dbname: 'db' }],
    ['postgres:///db?host=/var/run/postgresql', { dbname: 'db', host: '/var/run/postgresql' }],
    ['postgres:///db?host=%2Fvar%2Frun%2Fpostgresql&port=5433', { dbname: 'db', host: '/var/run/postgresql', port: '5433' }],
    ['postgres://%40abstract/db', { host: '@abstract', dbname: 'db' }],
    // query parameters
    ['postgres://h/db?sslmode=require&application_name=my%20app', { host: 'h', dbname: 'db', sslmode: 'require', application_name: 'my app' }],
    ['postgres://h/db?dbname=other&host=h2', { host: 'h2', dbname: 'other' }],
    ['postgres://h?sslmode=disable', { host: 'h', sslmode: 'disable' }],
    ['postgres://h/db?', { host: 'h', dbname: 'db' }],
    ['postgres://h/db?sslmode=disable&', { host: 'h', dbname: 'db', sslmode: 'disable' }],
    ['postgres://h/db?options=-c%20search_path%3Dapp', { host: 'h', dbname: 'db', options: '-c search_path=app' }],
    ['postgres://h/db?application_name=', { host: 'h', dbname: 'db', application_name: '' }],
    ['postgres://h/db?ssl=true', { host: 'h', dbname: 'db', sslmode: 'require' }],
    ['postgres://h/db?ssl=false', { host: 'h', dbname: 'db', ssl: 'false' }],
    ['postgres://h/db?sslmode=disable&sslmode=require', { host: 'h', dbname: 'db', sslmode: 'require' }],
    // the path runs to '?', slashes included, as in libpq
    ['postgres://h/a/b', { host: 'h', dbname: 'a/b' }],
    ['postgres://h/db#frag', { host: 'h', dbname: 'db#frag' }],
  ]
  for (const [url, expected] of cases) {
    test(url, () => {
      assert.deepEqual({ ...parseUrl(url) }, expected)
    })
  }

  test('returns a null-prototype record', () => {
    assert.equal(Object.getPrototypeOf(parseUrl('postgres://h/db')), null)
  })
})

describe('parseUrl errors', () => {
  const cases: Array<{ url: string; setting: string; includes?: string[]; excludes?: string[] }> = [
    { url: 'mysql://h/db', setting: 'connectionString', includes: ['postgres://'] },
    { url: 'postgres://h%zz/db', setting: 'host', includes: ['%zz', 'host'] },
    { url: 'postgres://h%2/db', setting: 'host', includes: ['percent-encoding'] },
    { url: 'postgres://h/d%G1', setting: 'dbname', includes: ['%G1', 'database name'] },
    { url: 'postgres://u%zz@h/db', setting: 'user', includes: ['%zz', 'user'] },
    { url: 'postgres://u:Sec%zzret@h/db', setting: 'password', includes: ['password'], excludes: ['Sec', '%zz', 'ret'] },
    { url: 'postgres://h/db%00', setting: 'dbname', includes: ['%00'] },
    { url: 'postgres://h/%C3%28', setting: 'dbname', includes: ['UTF-8'] },
    { url: 'postgres://h/db?application_name=%ZZ', setting: 'application_name', includes: ['%ZZ', 'application_name'] },
    { url: 'postgres://h/db?password=Sec%ZZret', setting: 'password', excludes: ['Sec', 'ret', '%ZZ'] },
    { url: 'postgres://[::1/db', setting: 'host', includes: ['"]"', '[::1'] },
    { url: 'postgres://u:Sup3rS3cret@[::1/db', setting: 'host', includes: ['"]"', 'postgres://u:***@[::1/db'], excludes: ['Sup3rS3cret'] },
    { url: 'postgres://[]/db', setting: 'host', includes: ['empty IPv6'] },
    { url: 'postgres://[::1]x/db', setting: 'host', includes: ['"x"', 'IPv6'] },
    { url: 'postgres://h:abc/db', setting: 'port', includes: ['"abc"', 'port'] },
    { url: 'postgres://h:5432,h2:x1/db', setting: 'port', includes: ['"x1"'] },
    { url: 'postgres://h:-1/db', setting: 'port', includes: ['"-1"'] },
    // a '/' in an unencoded password splits the authority early: nothing of it may be echoed
    { url: 'postgres://u:Zq9/Xy7@h/db', setting: 'port', includes: ['port', 'percent-encode'], excludes: ['Zq9', 'Xy7'] },
    { url: 'postgres://u:Zq9?Xy7@h/db', setting: 'port', excludes: ['Zq9', 'Xy7'] },
    // regression: the suspicion check once sliced the redacted URL by the unredacted authority's length
    { url: 'postgres://u:averyveryverylongpassword@[::1/db?user=me@corp', setting: 'host', excludes: ['averyveryverylongpassword', '::1'] },
    { url: 'postgres://h/db?sslmode', setting: 'sslmode', includes: ['"sslmode"', 'missing "="'] },
    { url: 'postgres://h/db?&sslmode=require', setting: 'connectionString', includes: ['missing "="'] },
    { url: 'postgres://h/db?options=-c%20a=b', setting: 'options', includes: ['"options"', 'extra "="'] },
    { url: 'postgres://h/db?password=Pass=Word', setting: 'password', excludes: ['Pass', 'Word'] },
    // an unencoded '&' inside a password makes its tail look like a parameter
    { url: 'postgres://h/db?password=Zq9&Xy7&sslmode=require', setting: 'password', includes: ['%26'], excludes: ['Zq9', 'Xy7'] },
  ]
  for (const c of cases) {
    test(c.url, () => assertConfigError(() => parseUrl(c.url), c.setting, c.includes, c.excludes))
  }
})

describe('redactUrl', () => {
  const cases: Array<[string, string]> = [
    ['postgres://u:secret@h/db', 'postgres://u:***@h/db'],
    ['postgres://u:sec@ret@h:5432/db?sslmode=require', 'postgres://u:***@h:5432/db?sslmode=require'],
    ['postgres://u@h/db', 'postgres://u@h/db'],
    ['postgres://h/db?password=secret&sslmode=require', 'postgres://h/db?password=***&sslmode=require'],
    ['postgres://h/db?sslmode=require&sslpassword=secret', 'postgres://h/db?sslmode=require&sslpassword=***'],
    ['postgresql://u:a:b@[::1]/db', 'postgresql://u:***@[::1]/db'],
    ['host=h password=x', '***'],
  ]
  for (const [url, expected] of cases) {
    test(url, () => assert.equal(redactUrl(url), expected))
  }
})

describe('isConnectionUrl', () => {
  const cases: Array<[string, boolean]> = [
    ['postgres://h', true],
    ['postgresql://', true],
    ['PostgreSQL://h', true],
    ['postgres:/h', false],
    ['host=h', false],
    ['postgresx://h', false],
    ['', false],
  ]
  for (const [s, expected] of cases) {
    test(JSON.stringify(s), () => assert.equal(isConnectionUrl(s), expected))
  }
})
