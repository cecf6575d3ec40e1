import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { defaultTypeOptions, type Codec } from '../../../../src/types/codec.js'
import { arrayCodec } from '../../../../src/types/codecs/array.js'
import { compositeCodec } from '../../../../src/types/codecs/composite.js'
import { registerContainers } from '../../../support/codecs/register-containers.js'
import { Range } from '../../../../src/types/range.js'
import { fetchValue } from '../../../support/codecs/raw-values.js'
import { decodeAt, testTable } from '../../../support/codecs/container-elements.js'
import { decodeBoth, echoAll, run, typeOid } from '../../../support/codecs/container-checks.js'

// Composite types (created in pg_temp, so nothing outlives the session) and
// anonymous records against a real server.

const table = testTable()
registerContainers(table, defaultTypeOptions)
const codec = (oid: number): Codec => table.get(oid)!

let pair: Codec
let pairOid = 0
let pairArrayOid = 0
let nested: Codec
let nestedOid = 0
let hostile: Codec
let hostileOid = 0

async function arrayOf(oid: number): Promise<number> {
  const { rows } = await run(`SELECT typarray FROM pg_type WHERE oid = ${oid}`)
  return Number(rows[0]![0]!.toString())
}

before(async () => {
  await run('CREATE TYPE pg_temp.containers_pair AS (a int4, b text)')
  pairOid = await typeOid('containers_pair')
  pairArrayOid = await arrayOf(pairOid)
  pair = compositeCodec('containers_pair', [
    { name: 'a', oid: 23, codec: codec(23) },
    { name: 'b', oid: 25, codec: codec(25) },
  ])
  await run('CREATE TYPE pg_temp.containers_nested AS (p containers_pair, tags text[], ps containers_pair[], r int4range, ok bool)')
  nestedOid = await typeOid('containers_nested')
  nested = compositeCodec('containers_nested', [
    { name: 'p', oid: pairOid, codec: pair },
    { name: 'tags', oid: 1009, codec: codec(1009) },
    { name: 'ps', oid: pairArrayOid, codec: arrayCodec(pair, pairOid, ',') },
    { name: 'r', oid: 3904, codec: codec(3904) },
    { name: 'ok', oid: 16, codec: codec(16) },
  ])
  await run('CREATE TYPE pg_temp.containers_hostile AS ("__proto__" text, "constructor" int4, "we""ird" text, "a,b" text, "toString" text)')
  hostileOid = await typeOid('containers_hostile')
  hostile = compositeCodec('containers_hostile', [
    { name: '__proto__', oid: 25, codec: codec(25) },
    { name: 'constructor', oid: 23, codec: codec(23) },
    { name: 'we"ird', oid: 25, codec: codec(25) },
    { name: 'a,b', oid: 25, codec: codec(25) },
    { name: 'toString', oid: 25, codec: codec(25) },
  ])
})

test('composites: NULL attributes, empty strings, quoting, non-ASCII', async () => {
  const cases: [string, unknown][] = [
    ["ROW(1, 'a b')::containers_pair", { a: 1, b: 'a b' }],
    ['ROW(NULL, NULL)::containers_pair', { a: null, b: null }],
    ["ROW(2, '')::containers_pair", { a: 2, b: '' }],
    ["ROW(3, 'x\"y\\z(,)')::containers_pair", { a: 3, b: 'x"y\\z(,)' }],
    ["ROW(-4, 'é😀')::containers_pair", { a: -4, b: 'é😀' }],
    ['NULL::containers_pair', null],
  ]
  const values = await decodeBoth(pair, cases.map(([e]) => e))
  cases.forEach(([e, v], i) => assert.deepStrictEqual(values[i], v, e))
})

test('nested composites, arrays inside composites, arrays of composites', async () => {
  const expr =
    "ROW(ROW(1, 'a \"b\"')::containers_pair, ARRAY['x y', NULL, '\\'], ARRAY[ROW(2, 'c')::containers_pair, NULL, ROW(NULL, ',')::containers_pair], '[1,5]'::int4range, true)::containers_nested"
  const expected = {
    p: { a: 1, b: 'a "b"' },
    tags: ['x y', null, '\\'],
    ps: [{ a: 2, b: 'c' }, null, { a: null, b: ',' }],
    r: new Range(1, 6),
    ok: true,
  }
  const [v, empty, arr] = await decodeBoth(nested, [expr, 'ROW(NULL, NULL, NULL, NULL, NULL)::containers_nested', expr])
  assert.deepStrictEqual(v, expected)
  assert.deepStrictEqual(empty, { p: null, tags: null, ps: null, r: null, ok: null })
  assert.deepStrictEqual(arr, expected)
  const pairs = arrayCodec(pair, pairOid, ',')
  const [list] = await decodeBoth(pairs, ["ARRAY[ROW(1,'a'), NULL, ROW(2,'b c'), ROW(NULL,'')]::containers_pair[]"])
  assert.deepStrictEqual(list, [{ a: 1, b: 'a' }, null, { a: 2, b: 'b c' }, { a: null, b: '' }])
})

test('hostile attribute names are own properties; the prototype is untouched', async () => {
  const [v] = await decodeBoth(hostile, ["ROW('polluted', 5, 'w', 'ab', 'ts')::containers_hostile"])
  const o = v as Record<string, unknown>
  assert.equal(Object.getPrototypeOf(o), Object.prototype)
  assert.deepStrictEqual(Object.keys(o), ['__proto__', 'constructor', 'we"ird', 'a,b', 'toString'])
  assert.equal(Object.getOwnPropertyDescriptor(o, '__proto__')!.value, 'polluted')
  assert.equal(({} as Record<string, unknown>).polluted, undefined)
  for (const forceText of [false, true]) {
    const r = await echoAll(hostile, hostileOid, [o], forceText)
    assert.deepStrictEqual(r.printed, ['(polluted,5,w,ab,ts)'])
    assert.deepStrictEqual(r.decoded, [o])
  }
})

test('composite parameters: objects, positional arrays, NULLs, nesting, text fallback', async () => {
  const values: unknown[] = [{ a: 1, b: 'a b' }, [2, 'x"y'], { a: null }, {}, { b: '' }, { a: 3, b: '\\(,)' }]
  for (const forceText of [false, true]) {
    const r = await echoAll(pair, pairOid, values, forceText)
    assert.deepStrictEqual(r.formats, values.map(() => (forceText ? 0 : 1)))
    assert.deepStrictEqual(r.printed, ['(1,"a b")', '(2,"x""y")', '(,)', '(,)', '(,"")', '(3,"\\\\(,)")'])
    assert.deepStrictEqual(r.decoded, [
      { a: 1, b: 'a b' },
      { a: 2, b: 'x"y' },
      { a: null, b: null },
      { a: null, b: null },
      { a: null, b: '' },
      { a: 3, b: '\\(,)' },
    ])
  }
  const mixed = await echoAll(pair, pairOid, [{ a: '7', b: 'x' }, '(8,y)'])
  assert.deepStrictEqual(mixed.formats, [0, 0])
  assert.deepStrictEqual(mixed.decoded, [{ a: 7, b: 'x' }, { a: 8, b: 'y' }])
  const deep = {
    p: { a: 1, b: 'q"q' },
    tags: [['a', 'b'], ['c', null]],
    ps: [{ a: 2, b: null }, null],
    r: new Range(null, 3),
    ok: false,
  }
  for (const forceText of [false, true]) assert.deepStrictEqual((await echoAll(nested, nestedOid, [deep], forceText)).decoded, [deep])
  const pairs = arrayCodec(pair, pairOid, ',')
  for (const forceText of [false, true]) {
    const r = await echoAll(pairs, pairArrayOid, [[{ a: 1, b: 'x' }, [2, 'y'], null]], forceText)
    assert.deepStrictEqual(r.decoded, [[{ a: 1, b: 'x' }, { a: 2, b: 'y' }, null]])
  }
})

test('the server checks what the binary encoder writes: column count and types', async () => {
  // A codec that disagrees with the type's attributes is refused by record_recv.
  const wrong = compositeCodec('containers_pair', [{ name: 'a', oid: 23, codec: codec(23) }])
  await assert.rejects(echoAll(wrong, pairOid, [{ a: 1 }]), /SQLSTATE 22P03|SQLSTATE 42804/)
  const wrongType = compositeCodec('containers_pair', [
    { name: 'a', oid: 20, codec: codec(20) },
    { name: 'b', oid: 25, codec: codec(25) },
  ])
  await assert.rejects(echoAll(wrongType, pairOid, [{ a: 1n, b: 'x' }]), /SQLSTATE 42804/)
})

test('anonymous records: typed fields in binary, strings in text', async () => {
  const record = codec(2249)
  const expr = "ROW(1, 'a b'::text, NULL::int4, 2.5::float8, ARRAY[1,2], '[1,2]'::int4range, 'lit', ROW(3, 'x'::text))"
  const b = decodeAt(record.decodeBinary!, (await fetchValue(expr, 1))!)
  // 'lit' is of type unknown, which the test table reads as text.
  assert.deepStrictEqual(b, [1, 'a b', null, 2.5, [1, 2], new Range(1, 3), 'lit', [3, 'x']])
  const t = decodeAt(record.decodeText, (await fetchValue(expr, 0))!)
  assert.deepStrictEqual(t, ['1', 'a b', null, '2.5', '{1,2}', '[1,3)', 'lit', '(3,x)'])
  // A field of a type the lookup does not know: its raw bytes.
  const raw = decodeAt(record.decodeBinary!, (await fetchValue("ROW('10:00'::time)", 1))!)
  assert.deepStrictEqual(raw, [Uint8Array.of(0, 0, 0, 0x08, 0x61, 0xc4, 0x68, 0x00)])
  assert.deepStrictEqual(decodeAt(record.decodeBinary!, (await fetchValue('ROW()', 1))!), [])
  assert.deepStrictEqual(decodeAt(record.decodeText, (await fetchValue('ROW()', 0))!), [null])
  // A named composite read through record (e.g. a row of a table) in binary: by its attributes' types.
  assert.deepStrictEqual(decodeAt(record.decodeBinary!, (await fetchValue("ROW(1, 'a')::containers_pair::record", 1))!), [1, 'a'])
})
