import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ArgumentError } from '../../../src/errors.js'
import { copyFromStatement, copyToStatement, createCopyDecoder, createCopyEncoder, quoteColumnName, resolveCopyOptions, type CopyFormatOptions } from '../../../src/copy/format.js'
import { catalog, cols } from '../../support/codecs/copy-data.js'

// The options and statements around COPY data, without a server: every rule
// PostgreSQL checks of an option, naming it, and the COPY statements built
// with quoted columns, checked table names and options as escape strings.

const T = cols(['t', 25])

test('options: defaults, and every rule PostgreSQL checks, naming the option', () => {
  assert.deepStrictEqual(resolveCopyOptions(undefined, 'binary'), { format: 'binary', given: {}, delimiter: -1, quote: -1, escape: -1 })
  assert.deepStrictEqual(resolveCopyOptions({ format: 'text' }, 'binary'), { format: 'text', given: {}, delimiter: 9, quote: -1, escape: -1 })
  assert.deepStrictEqual(resolveCopyOptions({ format: 'csv' }, 'binary'), { format: 'csv', given: {}, delimiter: 44, quote: 34, escape: 34 })
  assert.deepStrictEqual(resolveCopyOptions({ format: 'csv', quote: "'" }, 'binary').escape, 39)
  const bad: [unknown, RegExp][] = [
    [{ format: 'xml' }, /option format must be 'binary', 'text' or 'csv'/],
    [{ format: 'text', delimiter: '' }, /option delimiter must be a single one-byte/],
    [{ format: 'text', delimiter: '||' }, /option delimiter must be a single one-byte/],
    [{ format: 'text', delimiter: 'é' }, /option delimiter must be a single one-byte/],
    [{ format: 'text', delimiter: '\0' }, /option delimiter must be a single one-byte/],
    [{ format: 'text', delimiter: 9 }, /option delimiter must be a string/],
    [{ format: 'text', delimiter: '\n' }, /delimiter cannot be newline or carriage return/],
    [{ format: 'csv', delimiter: '\r' }, /delimiter cannot be newline or carriage return/],
    [{ format: 'text', delimiter: '\\' }, /delimiter cannot be "\\\\"/],
    [{ format: 'text', delimiter: 'a' }, /delimiter cannot be "a"/],
    [{ format: 'text', delimiter: '5' }, /delimiter cannot be "5"/],
    [{ format: 'text', delimiter: '.' }, /delimiter cannot be "\."/],
    [{ format: 'text', delimiter: 'N' }, /delimiter cannot be "N"/],
    [{ format: 'binary', delimiter: ',' }, /option delimiter does not apply to format 'binary'/],
    [{ format: 'text', quote: '"' }, /option quote applies only to format 'csv'/],
    [{ format: 'binary', escape: '"' }, /option escape applies only to format 'csv'/],
    [{ format: 'csv', quote: ',' }, /delimiter and quote must be different/],
    [{ format: 'csv', delimiter: '"' }, /delimiter and quote must be different/],
    [{ format: 'csv', quote: '\n' }, /quote cannot be newline/],
    [{ format: 'csv', escape: '\r' }, /escape cannot be newline/],
  ]
  for (const [options, message] of bad) {
    assert.throws(() => resolveCopyOptions(options as CopyFormatOptions, 'binary'), (e: unknown) => e instanceof ArgumentError && message.test(e.message), JSON.stringify(options))
    assert.throws(() => createCopyEncoder(T, catalog, options as CopyFormatOptions), ArgumentError)
    assert.throws(() => createCopyDecoder(T, catalog.view(), options as CopyFormatOptions), ArgumentError)
  }
  // In CSV the letters and the backslash are fine.
  assert.equal(resolveCopyOptions({ format: 'csv', delimiter: 'a', quote: '\\' }, 'csv').delimiter, 0x61)
})

test('statements: quoted columns, checked table names, options as escape strings', () => {
  assert.equal(copyFromStatement('public.t', ['a', 'B b', 'q"x']), 'COPY public.t ("a", "B b", "q""x") FROM STDIN (FORMAT binary)')
  assert.equal(copyFromStatement('"my schema"."T"', undefined, { format: 'csv' }), 'COPY "my schema"."T" FROM STDIN (FORMAT csv)')
  assert.equal(copyFromStatement('t', ['a'], { format: 'text', delimiter: '\t' }), "COPY t (\"a\") FROM STDIN (FORMAT text, DELIMITER E'\\x09')")
  assert.equal(
    copyFromStatement('t', ['a'], { format: 'csv', delimiter: "'", quote: '\\', escape: '|' }),
    "COPY t (\"a\") FROM STDIN (FORMAT csv, DELIMITER E'\\'', QUOTE E'\\\\', ESCAPE E'|')",
  )
  assert.equal(copyToStatement('SELECT 1'), 'COPY (SELECT 1\n) TO STDOUT (FORMAT binary)')
  assert.equal(copyToStatement('SELECT 1 ;; \n', { format: 'csv', delimiter: ',' }), "COPY (SELECT 1\n) TO STDOUT (FORMAT csv, DELIMITER E',')")
  assert.equal(copyToStatement('SELECT 1 -- note', { format: 'text' }), 'COPY (SELECT 1 -- note\n) TO STDOUT (FORMAT text)')
  for (const table of ['', 't; DROP TABLE x', 't --', '"unterminated', 'a.b.c.d', '"a"b', 't(x)', '1t', 'a..b', ' t', '"\0"']) {
    assert.throws(() => copyFromStatement(table, ['a']), (e: unknown) => e instanceof ArgumentError && /COPY table must be a table name/.test(e.message), table)
  }
  for (const table of ['t', 'T_1$', 'é', 'db.s.t', '"a ""b"""."c.d"', '"x;y"']) assert.ok(copyFromStatement(table, undefined).startsWith(`COPY ${table} `))
  assert.throws(() => copyFromStatement('t', []), /non-empty array/)
  assert.throws(() => copyFromStatement('t', ['']), /cannot be empty/)
  assert.throws(() => copyFromStatement('t', ['a\0']), /NUL/)
  assert.throws(() => copyFromStatement('t', ['x'.repeat(64)]), /longer than PostgreSQL's 63 bytes/)
  assert.equal(quoteColumnName('é'.repeat(31)), `"${'é'.repeat(31)}"`)
  assert.throws(() => quoteColumnName('é'.repeat(32)), /63 bytes/)
  assert.throws(() => copyToStatement('  ;  '), /cannot be empty/)
  assert.throws(() => copyToStatement(42 as unknown as string), /must be a string/)
  assert.throws(() => copyToStatement('SELECT 1', { format: 'binary', quote: '"' }), /quote applies only/)
})
