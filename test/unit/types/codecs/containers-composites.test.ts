import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CodecError, defaultTypeOptions, type Codec } from '../../../../src/types/codec.js'
import { arrayCodec } from '../../../../src/types/codecs/array.js'
import { compositeCodec } from '../../../../src/types/codecs/composite.js'
import {
  formatArrayLiteral,
  formatCompositeLiteral,
  parseArrayLiteral,
  parseCompositeLiteral,
  parseRangeLiteral,
  quoteArrayElement,
  quoteCompositeField,
  quoteRangeBound,
} from '../../../../src/types/codecs/literal.js'
import { recordCodec, registerRecord } from '../../../../src/types/codecs/record.js'
import { Range } from '../../../../src/types/range.js'
import { bool, bytes, decodeAt, encodeBinary, int4, testTable, text, utf8 } from '../../../support/codecs/container-elements.js'

// Composite types and anonymous records on exact bytes, and the literal helpers.

const pair = compositeCodec('pair', [
  { name: 'a', oid: 23, codec: int4 },
  { name: 'b', oid: 25, codec: text },
])

const decodeText = (c: Codec, s: string) => decodeAt(c.decodeText, utf8(s))
const decodeBinary = (c: Codec, b: Uint8Array) => decodeAt(c.decodeBinary!, b)

test('binary composites: count, then (type OID, length, bytes) per attribute', () => {
  const wire = bytes(2, 23, 4, 7, 25, 3, 'a b')
  assert.deepStrictEqual(decodeBinary(pair, wire), { a: 7, b: 'a b' })
  assert.deepStrictEqual(encodeBinary(pair, { a: 7, b: 'a b' }), wire)
  assert.deepStrictEqual(encodeBinary(pair, [7, 'a b']), wire)
  const nulls = bytes(2, 23, -1, 25, -1)
  assert.deepStrictEqual(decodeBinary(pair, nulls), { a: null, b: null })
  assert.deepStrictEqual(encodeBinary(pair, { a: null }), nulls)
  assert.deepStrictEqual(encodeBinary(pair, {}), nulls)
  assert.deepStrictEqual(encodeBinary(pair, [null, undefined]), nulls)
  assert.deepStrictEqual(encodeBinary(pair, { b: '' }), bytes(2, 23, -1, 25, 0))
  // Keys come out in attribute order.
  assert.deepStrictEqual(Object.keys(decodeBinary(pair, wire) as object), ['a', 'b'])
})

test('composite parameters: strings and attributes that need text go as text; bad values throw', () => {
  assert.equal(encodeBinary(pair, '(1,x)'), false)
  assert.equal(pair.encodeText('(1,x)'), '(1,x)')
  assert.equal(encodeBinary(pair, { a: '1', b: 'x' }), false)
  assert.equal(pair.encodeText({ a: '1', b: 'x' }), '(1,x)')
  assert.throws(() => encodeBinary(pair, { a: 1, c: 2, d: 3 }), { name: 'CodecError', message: 'pair has no attributes "c", "d"' })
  assert.throws(() => pair.encodeText({ a: 1, c: 2 }), { name: 'CodecError', message: 'pair has no attribute "c"' })
  assert.throws(() => encodeBinary(pair, [1]), { name: 'CodecError', message: /pair needs 2 values when given as an array; got 1/ })
  for (const bad of [5, true, null, new Date(0), Uint8Array.of(1)]) {
    assert.throws(() => encodeBinary(pair, bad), { name: 'CodecError', message: /pair needs an object, an array or a string; got / })
    assert.throws(() => pair.encodeText(bad), /pair needs an object/)
  }
  assert.throws(() => encodeBinary(pair, { a: 2 ** 31 }), { name: 'CodecError', message: 'out of range for int4' })
  assert.throws(() => encodeBinary(pair, { b: 5 }), /text needs a string/)
})

test('binary composites: wrong column count, wrong type OID, truncation', () => {
  assert.throws(() => decodeBinary(pair, bytes(1, 23, 4, 7)), { name: 'CodecError', message: 'binary pair value has 1 columns where the type has 2' })
  assert.throws(() => decodeBinary(pair, bytes(2, 23, 4, 7, 1043, 1, 'x')), {
    name: 'CodecError',
    message: 'binary pair value has type OID 1043 for attribute "b" where OID 25 was expected',
  })
  const wire = bytes(2, 23, 4, 7, 25, 3, 'a b')
  for (let n = 0; n < wire.length; n++) assert.throws(() => decodeBinary(pair, wire.subarray(0, n)), CodecError, `truncated to ${n}`)
  assert.throws(() => decodeBinary(pair, bytes(wire, [0])), /after the last column/)
  assert.throws(() => decodeBinary(pair, bytes(2, 23, -2, 25, -1)), /column length -2/)
})

test('text composites: record_out quoting, NULL vs empty string', () => {
  const cases: [string, Record<string, unknown>][] = [
    ['(1,x)', { a: 1, b: 'x' }],
    ['(,)', { a: null, b: null }],
    ['(1,"")', { a: 1, b: '' }],
    ['(1,"a b")', { a: 1, b: 'a b' }],
    ['(1,"x""y")', { a: 1, b: 'x"y' }],
    ['(1,"a\\\\b")', { a: 1, b: 'a\\b' }],
    ['(1,"(,)")', { a: 1, b: '(,)' }],
    ['(1,"\t")', { a: 1, b: '\t' }],
    ['(1,é{}[];)', { a: 1, b: 'é{}[];' }],
  ]
  for (const [literal, value] of cases) {
    assert.deepStrictEqual(decodeText(pair, literal), value, literal)
    assert.equal(pair.encodeText(value), literal, literal)
  }
  // record_in also takes backslash escapes and quotes anywhere in a field.
  assert.deepStrictEqual(decodeText(pair, ' (1,a\\,b) '), { a: 1, b: 'a,b' })
  assert.deepStrictEqual(decodeText(pair, '(1,a"b,c"d)'), { a: 1, b: 'ab,cd' })
  assert.deepStrictEqual(decodeText(pair, '("1","x\\"y")'), { a: 1, b: 'x"y' })
})

test('malformed composite literals throw CodecError', () => {
  for (const literal of ['', '1,x', '(1,x', '(1)', '(1,x,y)', '(1,x)y', '(1,"x)', '(1,x\\', '((1,x)']) {
    assert.throws(() => decodeText(pair, literal), CodecError, JSON.stringify(literal))
  }
  assert.throws(() => decodeText(pair, '(1,x,y)'), /more than 2 fields/)
  assert.throws(() => decodeText(pair, '(1)'), /fewer than 2 fields/)
  const literal = utf8('(1,x)')
  for (const filler of [0x29, 0x2c, 0x22]) {
    const buf = new Uint8Array(literal.length + 4).fill(filler)
    buf.set(literal, 2)
    assert.deepStrictEqual(pair.decodeText(buf, 2, 2 + literal.length), { a: 1, b: 'x' })
    assert.throws(() => pair.decodeText(buf, 2, 2 + literal.length - 1), CodecError)
  }
})

test('nested composites and arrays inside composites', () => {
  const outer = compositeCodec('outer', [
    { name: 'p', oid: 900, codec: pair },
    { name: 'tags', oid: 1009, codec: arrayCodec(text, 25, ',') },
    { name: 'ok', oid: 16, codec: bool },
  ])
  const value = { p: { a: 1, b: 'x "q" y' }, tags: ['a b', null, '"'], ok: true }
  const literal = outer.encodeText(value)
  assert.equal(literal, '("(1,""x """"q"""" y"")","{""a b"",NULL,""\\\\""""}",t)')
  assert.deepStrictEqual(decodeText(outer, literal), value)
  assert.deepStrictEqual(decodeBinary(outer, encodeBinary(outer, value) as Uint8Array), value)
  assert.deepStrictEqual(decodeBinary(outer, encodeBinary(outer, { p: null, tags: [], ok: null }) as Uint8Array), { p: null, tags: [], ok: null })
  // A nested attribute that needs text makes the whole value go as text.
  assert.equal(encodeBinary(outer, { p: { a: '1' } }), false)
})

test('hostile attribute names become own properties and never touch the prototype', () => {
  const hostile = compositeCodec('hostile', [
    { name: '__proto__', oid: 25, codec: text },
    { name: 'constructor', oid: 23, codec: int4 },
    { name: 'we"ird', oid: 25, codec: text },
    { name: 'toString', oid: 25, codec: text },
  ])
  const check = (v: unknown) => {
    const o = v as Record<string, unknown>
    assert.equal(Object.getPrototypeOf(o), Object.prototype)
    assert.deepStrictEqual(Object.keys(o), ['__proto__', 'constructor', 'we"ird', 'toString'])
    assert.equal(Object.getOwnPropertyDescriptor(o, '__proto__')!.value, 'polluted')
    assert.equal(o.constructor, 5)
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  }
  const literal = '(polluted,5,x,y)'
  check(decodeText(hostile, literal))
  const value = JSON.parse('{"__proto__":"polluted","constructor":5,"we\\"ird":"x","toString":"y"}') as unknown
  const wire = encodeBinary(hostile, value) as Uint8Array
  check(decodeBinary(hostile, wire))
  assert.equal(hostile.encodeText(value), literal)
  // Inherited properties are not attribute values: a plain {} is all NULLs.
  assert.equal(hostile.encodeText({}), '(,,,)')
})

test('a composite over attributes without binary codecs is text-only', () => {
  const textOnly: Codec = { name: 'x', decodeText: () => 'x', encodeText: String }
  const c = compositeCodec('c', [
    { name: 'a', oid: 23, codec: int4 },
    { name: 'x', oid: 1, codec: textOnly },
  ])
  assert.equal(c.decodeBinary, undefined)
  assert.equal(c.encodeBinary, undefined)
  assert.equal(compositeCodec('d', [{ name: 'a', oid: 1, codec: { ...int4, preferBinary: false } }]).preferBinary, false)
  const empty = compositeCodec('e', [])
  assert.deepStrictEqual(decodeText(empty, '()'), {})
  assert.deepStrictEqual(decodeBinary(empty, bytes(0)), {})
  assert.equal(empty.encodeText({}), '()')
  assert.throws(() => decodeText(empty, '(1)'), CodecError)
})

test('anonymous records: binary fields decode by their own type OIDs', () => {
  const table = testTable()
  const record = recordCodec((oid) => table.get(oid))
  const chunk = bytes(4, 23, 4, 7, 25, 1, 'a', 23, -1, 600, 3, [1, 2, 3])
  const v = record.decodeBinary!(chunk, 0, chunk.length) as unknown[]
  assert.deepStrictEqual(v, [7, 'a', null, Uint8Array.from([1, 2, 3])])
  chunk.fill(0)
  assert.deepStrictEqual(v[3], Uint8Array.from([1, 2, 3]), 'unknown-type bytes are a copy')
  // Text: strings only, since the text form has no types.
  assert.deepStrictEqual(decodeText(record, '(7,a,,"x""y","")'), ['7', 'a', null, 'x"y', ''])
  assert.deepStrictEqual(decodeText(record, '()'), [null])
  assert.deepStrictEqual(decodeBinary(record, bytes(0)), [])
  for (const bad of [[1], '(1)', {}]) {
    assert.throws(() => record.encodeText(bad), { name: 'CodecError', message: /PostgreSQL does not accept anonymous record parameters/ })
    assert.throws(() => encodeBinary(record, bad), /anonymous record/)
  }
  for (const literal of ['', '(', '(1', '(1,2)x', '1,2']) assert.throws(() => decodeText(record, literal), CodecError, literal)
  const wire = bytes(2, 23, 4, 7, 25, 1, 'a')
  for (let n = 0; n < wire.length; n++) assert.throws(() => decodeBinary(record, wire.subarray(0, n)), CodecError, `truncated to ${n}`)
  assert.throws(() => decodeBinary(record, bytes(-1)), CodecError)
  assert.throws(() => decodeBinary(record, bytes(1, 23, -5)), /column length -5/)
  assert.throws(() => decodeBinary(record, bytes(wire, [1])), /after the last column/)
})

test('registerRecord looks types up when rows are read, so later registrations count', () => {
  const table = new Map<number, Codec>()
  registerRecord(table, defaultTypeOptions)
  const record = table.get(2249)!
  const wire = bytes(1, 23, 4, 7)
  assert.deepStrictEqual(decodeBinary(record, wire), [Uint8Array.from([0, 0, 0, 7])])
  table.set(23, int4)
  assert.deepStrictEqual(decodeBinary(record, wire), [7])
})

test('literal helpers: quoting and string-level parsing and printing', () => {
  assert.equal(quoteArrayElement('a b', ','), '"a b"')
  assert.equal(quoteArrayElement('a;b', ','), 'a;b')
  assert.equal(quoteArrayElement('a;b', ';'), '"a;b"')
  assert.equal(quoteArrayElement('NULL', ','), '"NULL"')
  assert.equal(quoteArrayElement('"\\', ','), '"\\"\\\\"')
  assert.equal(quoteCompositeField('x"y\\'), '"x""y\\\\"')
  assert.equal(quoteCompositeField('[a]'), '[a]')
  assert.equal(quoteRangeBound('[a]'), '"[a]"')
  assert.equal(quoteCompositeField(''), '""')

  const arr = parseArrayLiteral('[0:1]={"a b",NULL}')
  assert.deepStrictEqual(arr, ['a b', null])
  assert.deepStrictEqual((arr as { lowerBounds?: number[] }).lowerBounds, [0])
  assert.deepStrictEqual(parseArrayLiteral('{a;b}', ';'), ['a', 'b'])
  assert.equal(formatArrayLiteral([['a b', null], [1, true]]), '{{"a b",NULL},{1,true}}')
  assert.equal(formatArrayLiteral([5n, new Date(0)]), '{5,1970-01-01T00:00:00.000Z}')
  assert.throws(() => formatArrayLiteral([{}]), CodecError)
  assert.deepStrictEqual(parseCompositeLiteral('(1,"a b",,"")'), ['1', 'a b', null, ''])
  assert.equal(formatCompositeLiteral(['1', 'a b', null, '']), '(1,"a b",,"")')
  assert.deepStrictEqual(parseRangeLiteral('["a b",)'), new Range('a b', null))
})
