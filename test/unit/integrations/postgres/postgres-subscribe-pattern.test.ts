// pipegres/postgres's sql.subscribe() without a server: the patterns it takes
// (postgres.js's `operation:schema.table=key`) and the `publications` option,
// each malformed one refused with its cause named.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parsePattern, publicationNames } from '../../../../src/integrations/postgres/subscribe-pattern.js'

test('a pattern is an operation, then optionally a table (schema public by default) and a key value', () => {
  assert.equal(parsePattern('*'), '*')
  assert.equal(parsePattern('insert'), 'insert')
  assert.equal(parsePattern('DELETE'), 'delete', 'the operation in any case')
  assert.equal(parsePattern('insert:users'), 'insert:public.users')
  assert.equal(parsePattern('*:users'), '*:public.users')
  assert.equal(parsePattern(':users'), '*:public.users', 'no operation: every one')
  assert.equal(parsePattern('update:app.users'), 'update:app.users')
  assert.equal(parsePattern('update:users=1'), 'update:public.users=1')
  assert.equal(parsePattern('delete:app.pairs=1,a'), 'delete:app.pairs=1,a', 'a key of several columns, comma-separated')
  assert.equal(parsePattern('update:users=a=b'), 'update:public.users=a=b', 'a key value may hold =')
  assert.equal(parsePattern(' insert:users '), 'insert:public.users')
})

test('a malformed pattern is refused with what is wrong with it', () => {
  const refused = (pattern: unknown, cause: RegExp): void => {
    assert.throws(() => parsePattern(pattern), (e: unknown) => e instanceof TypeError && cause.test(e.message), JSON.stringify(pattern))
  }
  refused('', /Malformed subscribe pattern "": give '\*' for every change/)
  refused('   ', /Malformed subscribe pattern/)
  refused('inserts', /the operation must be \*, insert, update or delete \(for every change to a table: '\*:inserts'\)/)
  refused('users', /'\*:users'/)
  refused('truncate:users', /the operation must be \*, insert, update or delete$/)
  refused('insert:', /no table after ':'/)
  refused('insert: =1', /no table after ':'/)
  refused('insert:.users', /neither part empty/)
  refused('insert:app.', /neither part empty/)
  refused('update:users=', /no primary key value after '='/)
  refused(42, /takes a pattern string .* not number/)
  refused(null, /not null/)
  refused(undefined, /not undefined/)
})

test('publications: comma-separated names, unquoted ones folded to lower case as the server folds them', () => {
  assert.deepEqual(publicationNames('alltables'), ['alltables'])
  assert.deepEqual(publicationNames('Orders, users'), ['orders', 'users'])
  assert.deepEqual(publicationNames('"Orders","a ""b"", c"'), ['Orders', 'a "b", c'])
  assert.deepEqual(publicationNames(['a', 'B']), ['a', 'b'], 'an array of names, as postgres.js sends one joined by commas')
})

test('malformed publications are refused with what is wrong with them', () => {
  const refused = (value: unknown, cause: RegExp): void => {
    assert.throws(() => publicationNames(value), (e: unknown) => e instanceof TypeError && /^publications /.test(e.message) && cause.test(e.message), JSON.stringify(value))
  }
  refused('', /a publication name is empty/)
  refused('a,,b', /a publication name is empty/)
  refused('a,', /a publication name is empty/)
  refused('"a', /a quoted name is not closed/)
  refused('"a" b', /expected ',' after "a"/)
  refused('""', /a publication name is empty/)
  refused(false, /give the publication names as a string/)
  refused([1], /give the publication names as a string/)
})
