import { test } from 'node:test'
import assert from 'node:assert/strict'
import { buildQuery, fragment, identifier, quoteIdentifier } from '../../../src/query/sql-template.js'
import { ArgumentError } from '../../../src/errors.js'

// The sql template without a server: values become numbered parameters,
// fragments nest and renumber, identifiers are quoted or refused.

function tag(strings: TemplateStringsArray, ...values: unknown[]): { strings: TemplateStringsArray; values: unknown[] } {
  return { strings, values }
}

test('sql template: values become numbered parameters, never text', () => {
  const evil = "'; DROP TABLE x; --"
  const t = tag`SELECT * FROM t WHERE a = ${1} AND b = ${evil} OR c = ${null}`
  assert.deepEqual(buildQuery(t.strings, t.values), { text: 'SELECT * FROM t WHERE a = $1 AND b = $2 OR c = $3', values: [1, evil, null] })
})

test('sql template: the text of a call site is computed once', () => {
  const run = (v: number) => {
    const t = tag`SELECT ${v}`
    return buildQuery(t.strings, t.values)
  }
  const a = run(1)
  const b = run(2)
  assert.equal(a.text, b.text)
  assert.deepEqual(b.values, [2])
})

test('sql template: fragments nest and renumber; identifiers are quoted', () => {
  const inner = fragment`x = ${'a'} AND y IN (${1}, ${2})`
  const outer = fragment`(${inner}) OR z = ${3}`
  const t = tag`SELECT ${identifier('my"col')} FROM ${identifier('s', 't')} WHERE ${outer} LIMIT ${10}`
  assert.deepEqual(buildQuery(t.strings, t.values), {
    text: 'SELECT "my""col" FROM "s"."t" WHERE (x = $1 AND y IN ($2, $3)) OR z = $4 LIMIT $5',
    values: ['a', 1, 2, 3, 10],
  })
})

test('identifiers: empty, NUL and non-strings are refused', () => {
  assert.equal(quoteIdentifier('simple'), '"simple"')
  assert.throws(() => identifier(), ArgumentError)
  assert.throws(() => identifier(''), ArgumentError)
  assert.throws(() => identifier('a\0b'), ArgumentError)
  assert.throws(() => identifier(5 as unknown as string), ArgumentError)
})
