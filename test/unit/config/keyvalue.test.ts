import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { parseConnectionString } from '../../../src/config/connection-string.js'
import { UNSUPPORTED_KEYWORDS } from '../../../src/config/keywords.js'
import { parseKeyValue } from '../../../src/config/parse-keyvalue.js'
import { assertConfigError } from '../../support/assert-config.js'

describe('parseKeyValue', () => {
  const cases: Array<[string, Record<string, string>]> = [
    ['', {}],
    ['   \t\n ', {}],
    ['host=h', { host: 'h' }],
    ['host=h port=5432 dbname=db', { host: 'h', port: '5432', dbname: 'db' }],
    ['host = h   port= 1 user =u', { host: 'h', port: '1', user: 'u' }],
    ['\thost=h\n\rport=1\f\vuser=u ', { host: 'h', port: '1', user: 'u' }],
    ["password='a b c'", { password: 'a b c' }],
    ["password = 'a b' user=u", { password: 'a b', user: 'u' }],
    ["password='it\\'s'", { password: "it's" }],
    ["password='back\\\\slash'", { password: 'back\\slash' }],
    ["password='x\\y'", { password: 'xy' }],
    ["application_name=''", { application_name: '' }],
    ["application_name='' user=u", { application_name: '', user: 'u' }],
    ['application_name=', { application_name: '' }],
    ['application_name= user=u', { application_name: 'user=u' }],
    ['options=a\\ b', { options: 'a b' }],
    ["options=it\\'s", { options: "it's" }],
    ['options=-csearch_path=app', { options: '-csearch_path=app' }],
    ['password=a=b=c', { password: 'a=b=c' }],
    ["password=a'b", { password: "a'b" }],
    ['host=a host=b', { host: 'b' }],
    ['host=/var/run/postgresql', { host: '/var/run/postgresql' }],
    ['host=h1,h2 port=5432,5433', { host: 'h1,h2', port: '5432,5433' }],
    ['host=::1', { host: '::1' }],
    // keys are taken as written; checking them is parseConnectionString's job
    ['Host=h', { Host: 'h' }],
  ]
  for (const [s, expected] of cases) {
    test(JSON.stringify(s), () => assert.deepEqual({ ...parseKeyValue(s) }, expected))
  }
})

describe('parseKeyValue errors', () => {
  const cases: Array<{ s: string; setting: string; includes?: string[]; excludes?: string[] }> = [
    { s: 'host', setting: 'connectionString', includes: ['missing "="', '"host"'] },
    { s: 'host=a junk', setting: 'connectionString', includes: ['"junk"'] },
    { s: 'host=a port 5432', setting: 'connectionString', includes: ['"port"'] },
    { s: "application_name='abc", setting: 'application_name', includes: ['unterminated', 'application_name'] },
    { s: "password='Zq9Xy7", setting: 'password', includes: ['unterminated'], excludes: ['Zq9Xy7'] },
    { s: "password='Zq9\\'", setting: 'password', excludes: ['Zq9'] },
    // an unquoted password with a space: its tail must not be echoed
    { s: 'password=Zq9 Xy7', setting: 'password', includes: ['quote'], excludes: ['Zq9', 'Xy7'] },
    { s: 'host=h password=Zq9 Xy7 user=u', setting: 'password', excludes: ['Zq9', 'Xy7'] },
    { s: 'sslpassword=Zq9 Xy7', setting: 'sslpassword', excludes: ['Zq9', 'Xy7'] },
  ]
  for (const c of cases) {
    test(JSON.stringify(c.s), () => assertConfigError(() => parseKeyValue(c.s), c.setting, c.includes, c.excludes))
  }
})

describe('parseConnectionString', () => {
  const cases: Array<[string, string, Record<string, string>]> = [
    ['key=value string', 'host=h dbname=db', { host: 'h', dbname: 'db' }],
    ['URL', 'postgres://u@h/db', { user: 'u', host: 'h', dbname: 'db' }],
    ['empty string', '', {}],
    ['pipegres keywords', 'prepare=false statement_cache_size=0', { prepare: 'false', statement_cache_size: '0' }],
    ['gssencmode is a known keyword', 'gssencmode=disable', { gssencmode: 'disable' }],
    ['nested key=value in dbname', "dbname='host=h2 port=5433 dbname=inner'", { host: 'h2', port: '5433', dbname: 'inner' }],
    ['nested URL in dbname', 'dbname=postgres://u@h2:5433/inner', { user: 'u', host: 'h2', port: '5433', dbname: 'inner' }],
    [
      'settings before the nested string are overridden by it, settings after override it',
      "host=a user=x dbname='host=b port=1' port=2",
      { host: 'b', user: 'x', port: '2' },
    ],
    ['only the first dbname is expanded', "dbname=plain dbname='host=x'", { dbname: 'host=x' }],
    ['a nested dbname is not expanded again', "dbname='dbname=\\'host=x\\''", { dbname: 'host=x' }],
    ['a nested string in a URL query is expanded', 'postgres://h/?dbname=host%3Dh2%20dbname%3Dinner', { host: 'h2', dbname: 'inner' }],
    ['a URL path database name is never expanded', 'postgres://h/a%3Db', { host: 'h', dbname: 'a=b' }],
    ['the path dbname counts as the first one', 'postgres://h/db?dbname=host%3Dx', { host: 'h', dbname: 'host=x' }],
    ['a plain dbname stays', 'dbname=mydb', { dbname: 'mydb' }],
  ]
  for (const [name, s, expected] of cases) {
    test(name, () => assert.deepEqual({ ...parseConnectionString(s) }, expected))
  }

  test('returns a null-prototype record', () => {
    assert.equal(Object.getPrototypeOf(parseConnectionString('host=h')), null)
  })
})

describe('parseConnectionString errors', () => {
  const cases: Array<{ name: string; s: string; setting: string; includes?: string[]; excludes?: string[] }> = [
    { name: 'unknown key, with a suggestion', s: 'sslmod=require', setting: 'sslmod', includes: ['unknown connection setting "sslmod"', 'did you mean "sslmode"'] },
    { name: 'unknown key, no suggestion', s: 'frobnicate=1', setting: 'frobnicate', includes: ['unknown connection setting "frobnicate"'], excludes: ['did you mean'] },
    { name: 'keywords are case-sensitive', s: 'Host=h', setting: 'Host', includes: ['"Host"', 'did you mean "host"'] },
    { name: 'unknown URL query parameter', s: 'postgres://h/db?sslmod=require', setting: 'sslmod', includes: ['"sslmod"'] },
    { name: 'unknown key in a nested string', s: "dbname='hots=x'", setting: 'hots', includes: ['"hots"'] },
    { name: 'ssl other than true', s: 'postgres://h/db?ssl=1', setting: 'ssl', includes: ['sslmode'] },
    { name: 'other URL scheme', s: 'mysql://u:Zq9Xy7@h/db', setting: 'connectionString', includes: ['"mysql:"'], excludes: ['Zq9Xy7'] },
    { name: 'unknown key after an unquoted password', s: 'password=Zq9 Xy7=1', setting: 'password', excludes: ['Zq9', 'Xy7'] },
    { name: 'unknown query key after a password', s: 'postgres://h/db?password=Zq9&Xy7=1', setting: 'password', excludes: ['Zq9', 'Xy7'] },
  ]
  for (const c of cases) {
    test(c.name, () => assertConfigError(() => parseConnectionString(c.s), c.setting, c.includes, c.excludes))
  }

  for (const keyword of UNSUPPORTED_KEYWORDS.keys()) {
    if (keyword === 'ssl') continue
    test(`unsupported libpq keyword ${keyword}`, () =>
      assertConfigError(() => parseConnectionString(`${keyword}=x`), keyword, [`does not support the connection setting "${keyword}"`]))
  }
})
