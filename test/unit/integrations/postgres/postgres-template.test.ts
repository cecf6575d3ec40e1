// pipegres/postgres without a server: how templates and helpers become one
// statement (text and values), and the name-case helpers.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { TypedValue } from '../../../../src/index.js'
import { build, Builder, Identifier } from '../../../../src/integrations/postgres/build.js'
import { normalizeTransform, toCamel, fromCamel, toPascal, fromPascal, toKebab, fromKebab } from '../../../../src/integrations/postgres/transform.js'

const plain = normalizeTransform(undefined)
const tpl = (strings: TemplateStringsArray, ...args: unknown[]) => ({ strings, args })

test('a template of plain values is its text with $n, cached per call site', () => {
  const run = (id: number) => build(tpl`select * from t where id = ${id} and ok = ${true}`, plain)
  const a = run(1)
  const b = run(2)
  assert.equal(a.text, 'select * from t where id = $1 and ok = $2')
  assert.equal(a.text, b.text)
  assert.equal(b.values[0], 2)
  assert.ok(b.values[1] instanceof TypedValue && (b.values[1] as TypedValue).oid === 16)
})

test('helpers take the form of the last keyword before them', () => {
  const rows = [{ a: 1, b: 'x' }, { a: 2, b: 'y' }]
  assert.equal(build(tpl`insert into t ${new Builder(rows, [])}`, plain).text, 'insert into t ("a","b")values($1,$2),($3,$4)')
  assert.equal(build(tpl`update t set ${new Builder({ a: 1, b: 2 }, ['b'])}`, plain).text, 'update t set "b"=$1')
  assert.equal(build(tpl`select 1 in (1) as x from t where x in ${new Builder([], [])}`, plain).text, 'select 1 in (1) as x from t where x in (null)')
  assert.equal(build(tpl`select ${new Builder(['a', 'b'], [])} from ${new Identifier('s.t')}`, plain).text, 'select "a","b" from "s"."t"')
})

test('undefined is refused unless the transform gives it a value', () => {
  assert.throws(() => build(tpl`select ${undefined}`, plain), { code: 'UNDEFINED_VALUE' })
  assert.throws(() => build(tpl`select ${[1, undefined]}`, plain), { code: 'UNDEFINED_VALUE' })
  assert.deepEqual(build(tpl`select ${undefined}`, normalizeTransform({ undefined: null })).values, [null])
})

test('name-case helpers', () => {
  assert.equal(toCamel('hello_world'), 'helloWorld')
  assert.equal(fromCamel('helloWorld'), 'hello_world')
  assert.equal(toPascal('hello_world'), 'HelloWorld')
  assert.equal(fromPascal('HelloWorld'), 'hello_world')
  assert.equal(toKebab('hello_world'), 'hello-world')
  assert.equal(fromKebab('hello-world'), 'hello_world')
  const t = normalizeTransform(toCamel as never)
  assert.equal(t.column.from, toCamel)
  assert.equal(t.results, true)
})
