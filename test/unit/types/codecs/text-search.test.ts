import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { CodecError, defaultTypeOptions, type Codec, type Decoder } from '../../../../src/types/codec.js'
import { registerTextSearchCodecs, tsqueryCodec, tsvectorCodec } from '../../../../src/types/codecs/text-search.js'

// tsvector and tsquery on exact bytes, without a server.

function decode(f: Decoder | undefined, bytes: Uint8Array | string): unknown {
  const v = typeof bytes === 'string' ? Buffer.from(bytes) : bytes
  // NULs around the value: a decoder that looked past either end for a terminator would find one.
  const buf = new Uint8Array(v.length + 6)
  buf.set(v, 3)
  return f!(buf, 3, 3 + v.length)
}

const u16 = (n: number) => [(n >> 8) & 255, n & 255]
const i32 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]
const cstr = (s: string) => [...Buffer.from(s), 0]

/** tsvector bytes from [lexeme, [position, weight 0-3]...] entries. */
function tsvector(...entries: [string, ...[number, number][]][]): Uint8Array {
  const out = i32(entries.length)
  for (const [lexeme, ...positions] of entries) {
    out.push(...cstr(lexeme), ...u16(positions.length))
    for (const [pos, weight] of positions) out.push(...u16((weight << 14) | pos))
  }
  return new Uint8Array(out)
}

type Query =
  | { value: string; weight?: number; prefix?: boolean }
  | { not: Query }
  | { op: 'and' | 'or'; left: Query; right: Query }
  | { phrase: number; left: Query; right: Query }

const val = (value: string, weight = 0, prefix = false): Query => ({ value, weight, prefix })
const and = (left: Query, right: Query): Query => ({ op: 'and', left, right })
const or = (left: Query, right: Query): Query => ({ op: 'or', left, right })
const not = (q: Query): Query => ({ not: q })
const phrase = (left: Query, right: Query, distance = 1): Query => ({ phrase: distance, left, right })

/** The items of the binary format: an operator, then its right operand, then its left. */
function items(q: Query, out: number[] = []): number[] {
  if ('value' in q) out.push(1, q.weight ?? 0, q.prefix ? 1 : 0, ...cstr(q.value))
  else if ('not' in q) {
    out.push(2, 1)
    items(q.not, out)
  } else if ('op' in q) {
    out.push(2, q.op === 'and' ? 2 : 3)
    items(q.right, out)
    items(q.left, out)
  } else {
    out.push(2, 4, ...u16(q.phrase))
    items(q.right, out)
    items(q.left, out)
  }
  return out
}

function count(q: Query): number {
  if ('value' in q) return 1
  if ('not' in q) return 1 + count(q.not)
  return 1 + count(q.left) + count(q.right)
}

function tsquery(q: Query | null): Uint8Array {
  return new Uint8Array(q === null ? i32(0) : [...i32(count(q)), ...items(q)])
}

test('registers tsvector and tsquery by OID; parameters go as text only', () => {
  const table = new Map<number, Codec>()
  registerTextSearchCodecs(table, defaultTypeOptions)
  assert.equal(table.get(3614), tsvectorCodec)
  assert.equal(table.get(3615), tsqueryCodec)
  for (const c of [tsvectorCodec, tsqueryCodec]) {
    assert.equal(c.encodeBinary, undefined)
    assert.equal(c.preferBinary, false, 'the text is cheaper to decode than the binary is to rebuild')
    assert.equal(c.encodeText("'a' & 'b'"), "'a' & 'b'")
    assert.throws(() => c.encodeText(['a']), new RegExp(`^CodecError: ${c.name} needs a string; got an array$`))
    assert.throws(() => c.encodeText(null), CodecError)
  }
})

test('tsvector binary: quoting, positions and weights as the server prints them', () => {
  const cases: [Uint8Array, string][] = [
    [tsvector(), ''],
    [tsvector(['a', [1, 3]], ['cat', [2, 0], [3, 2]], ['fat', [4, 0]]), "'a':1A 'cat':2,3B 'fat':4"],
    [tsvector(['x']), "'x'"],
    [tsvector(['x'], ['y', [1, 1]]), "'x' 'y':1C"],
    [tsvector(["it's"]), "'it''s'"],
    [tsvector(['a\\b']), "'a\\\\b'"],
    [tsvector(["''"]), "''''''"],
    [tsvector(["\\'"]), "'\\\\'''"],
    [tsvector(['café', [16383, 1]]), "'café':16383C"],
    [tsvector(['日本語', [1, 0], [2, 1], [3, 2], [4, 3]]), "'日本語':1,2C,3B,4A"],
    [tsvector(['a b', [1, 0]], [':1', [2, 0]]), "'a b':1 ':1':2"],
  ]
  for (const [bytes, text] of cases) {
    assert.equal(decode(tsvectorCodec.decodeBinary, bytes), text, text)
    assert.equal(decode(tsvectorCodec.decodeText, text), text, text)
  }
})

test('malformed tsvector binary values are refused', () => {
  assert.throws(() => decode(tsvectorCodec.decodeBinary, new Uint8Array([0, 0, 0])), /malformed binary tsvector: 3 bytes/)
  assert.throws(() => decode(tsvectorCodec.decodeBinary, new Uint8Array(i32(-1))), /-1 lexemes/)
  assert.throws(() => decode(tsvectorCodec.decodeBinary, new Uint8Array([...i32(1), 0x61, 0x62])), /lexeme past the end/)
  assert.throws(() => decode(tsvectorCodec.decodeBinary, new Uint8Array([...i32(1), 0x61, 0, ...u16(2), ...u16(1)])), /positions past the end/)
  assert.throws(() => decode(tsvectorCodec.decodeBinary, new Uint8Array([...i32(1), 0x61, 0, ...u16(0), 9])), /trailing bytes/)
  assert.throws(() => decode(tsvectorCodec.decodeBinary, new Uint8Array([...i32(2), 0x61, 0, ...u16(0)])), /lexeme past the end/)
  assert.throws(() => decode(tsvectorCodec.decodeBinary, new Uint8Array(i32(0x7fffffff))), CodecError)
  const valid = tsvector(['ab', [1, 0], [2, 3]], ['c'])
  for (let n = 0; n < valid.length; n++) assert.throws(() => tsvectorCodec.decodeBinary!(valid, 0, n), CodecError, `prefix of ${n}`)
})

// [query, text as PostgreSQL prints it]
const queries: [Query | null, string][] = [
  [null, ''],
  [val('a'), "'a'"],
  [and(val('a'), val('b')), "'a' & 'b'"],
  [and(val('a'), or(val('b'), not(val('c')))), "'a' & ( 'b' | !'c' )"],
  [and(or(val('a'), val('b')), val('c')), "( 'a' | 'b' ) & 'c'"],
  [or(val('a'), and(val('b'), val('c'))), "'a' | 'b' & 'c'"],
  [and(and(val('a'), val('b')), val('c')), "'a' & 'b' & 'c'"],
  [and(val('a'), and(val('b'), val('c'))), "'a' & 'b' & 'c'"],
  [or(val('a'), or(val('b'), val('c'))), "'a' | 'b' | 'c'"],
  [phrase(val('a'), val('b')), "'a' <-> 'b'"],
  [phrase(val('a'), val('b'), 2), "'a' <2> 'b'"],
  [phrase(val('a'), val('b'), 0), "'a' <0> 'b'"],
  [phrase(val('a'), val('b'), 16384), "'a' <16384> 'b'"],
  [phrase(phrase(val('a'), val('b')), val('c')), "'a' <-> 'b' <-> 'c'"],
  [phrase(val('a'), phrase(val('b'), val('c'))), "'a' <-> ( 'b' <-> 'c' )"],
  [phrase(val('a'), and(val('b'), val('c'))), "'a' <-> ( 'b' & 'c' )"],
  [phrase(or(val('a'), val('b')), val('c'), 3), "( 'a' | 'b' ) <3> 'c'"],
  [and(phrase(val('a'), val('b')), phrase(val('c'), val('d'))), "'a' <-> 'b' & 'c' <-> 'd'"],
  [or(not(val('a')), val('b')), "!'a' | 'b'"],
  [not(and(val('a'), val('b'))), "!( 'a' & 'b' )"],
  [not(phrase(val('a'), val('b'))), "!( 'a' <-> 'b' )"],
  [not(not(val('a'))), "!!'a'"],
  [phrase(not(val('a')), not(val('b'))), "!'a' <-> !'b'"],
  [val('pre', 0, true), "'pre':*"],
  [val('x', 12), "'x':AB"],
  [val('x', 15, true), "'x':*ABCD"],
  [val('x', 1), "'x':D"],
  [val('x', 2), "'x':C"],
  [val("it's"), "'it''s'"],
  [val('a\\b'), "'a\\\\b'"],
  [val('日本'), "'日本'"],
  [and(not(or(val('a', 8), val('b', 0, true))), phrase(val('c'), not(val('d')), 5)), "!( 'a':A | 'b':* ) & 'c' <5> !'d'"],
]

test('tsquery binary: every operator, weights, prefixes and PostgreSQL parenthesization', () => {
  for (const [q, text] of queries) {
    assert.equal(decode(tsqueryCodec.decodeBinary, tsquery(q)), text, text)
    assert.equal(decode(tsqueryCodec.decodeText, text), text, text)
  }
})

test('a deeply nested tsquery decodes without recursion', () => {
  const n = 20000
  const operand = (i: number) => [1, 0, 0, ...cstr(`w${i % 10}`)]
  // ((w0 & w1) & w2) & ...: each AND is followed by its right operand, the left chain comes last.
  const leftChain: number[] = i32(2 * n - 1)
  for (let i = n - 1; i >= 1; i--) leftChain.push(2, 2, ...operand(i))
  leftChain.push(...operand(0))
  const l = decode(tsqueryCodec.decodeBinary, new Uint8Array(leftChain)) as string
  assert.equal(l.length, n * 4 + (n - 1) * 3)
  assert.ok(l.startsWith("'w0' & 'w1' & 'w2' & "))
  assert.ok(l.endsWith(" & 'w8' & 'w9'"))
  // ... <-> (w2 <-> (w1 <-> w0)): all operators first, then the operands from the innermost out.
  const rightChain: number[] = i32(2 * n - 1)
  for (let i = 1; i < n; i++) rightChain.push(2, 4, 0, 1)
  for (let i = 0; i < n; i++) rightChain.push(...operand(i))
  const r = decode(tsqueryCodec.decodeBinary, new Uint8Array(rightChain)) as string
  assert.equal(r.split('( ').length - 1, n - 2)
  assert.ok(r.startsWith("'w9' <-> ( 'w8' <-> ( "))
  assert.ok(r.endsWith("'w1' <-> 'w0'" + ' )'.repeat(n - 2)))
})

test('malformed tsquery binary values are refused', () => {
  const bad: [number[], RegExp][] = [
    [[0, 0], /malformed binary tsquery: 2 bytes/],
    [i32(-1), /-1 items/],
    [i32(5), /5 items in 4 bytes/],
    [[...i32(0), 1], /trailing bytes/],
    [[...i32(1), 3, 0], /unknown item type 3/],
    [[...i32(2), 2, 5, 1, 0, 0, 0x61, 0], /unknown operator 5/],
    [[...i32(2), 2, 0, 1, 0, 0, 0x61, 0], /unknown operator 0/],
    [[...i32(1), 1, 0, 0, 0x61], /operand past the end/],
    [[...i32(1), 1, 0], /operand past the end/],
    [[...i32(1), 2, 4, 0], /phrase distance past the end/],
    [[...i32(2), 2, 2, 1, 0, 0, 0x61, 0], /operator without two operands/],
    [[...i32(1), 2, 1], /operator without an operand/],
    [[...i32(2), 1, 0, 0, 0x61, 0, 1, 0, 0, 0x62, 0], /operands without an operator/],
    [[...i32(1), 1, 0, 0, 0x61, 0, 7], /trailing bytes/],
  ]
  for (const [bytes, message] of bad) assert.throws(() => decode(tsqueryCodec.decodeBinary, new Uint8Array(bytes)), message, String(message))
  const valid = tsquery(and(val('ab', 4, true), phrase(val('c'), not(val('d')), 3)))
  for (let n = 0; n < valid.length; n++) assert.throws(() => tsqueryCodec.decodeBinary!(valid, 0, n), CodecError, `prefix of ${n}`)
})

/** A recursive printer following PostgreSQL's infix(), to cross-check the iterative decoder. */
function reference(q: Query, parent = -1, rightOfPhrase = false): string {
  if ('value' in q) {
    let s = `'${q.value.replaceAll("'", "''").replaceAll('\\', '\\\\')}'`
    const w = q.weight ?? 0
    if (w || q.prefix) s += ':' + (q.prefix ? '*' : '') + (w & 8 ? 'A' : '') + (w & 4 ? 'B' : '') + (w & 2 ? 'C' : '') + (w & 1 ? 'D' : '')
    return s
  }
  if ('not' in q) {
    const s = '!' + reference(q.not, 4)
    return 4 < parent ? `( ${s} )` : s
  }
  const isPhrase = 'phrase' in q
  const priority = isPhrase ? 3 : q.op === 'and' ? 2 : 1
  const op = isPhrase ? (q.phrase === 1 ? '<->' : `<${q.phrase}>`) : q.op === 'and' ? '&' : '|'
  const s = `${reference(q.left, priority)} ${op} ${reference(q.right, priority, isPhrase)}`
  return priority < parent || (isPhrase && rightOfPhrase) ? `( ${s} )` : s
}

const lexeme = fc.string({ unit: fc.constantFrom('a', 'b', "'", '\\', ' ', 'é', '日'), minLength: 1, maxLength: 4 })
const { query } = fc.letrec<{ query: Query }>((tie) => ({
  query: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ value: lexeme, weight: fc.integer({ min: 0, max: 15 }), prefix: fc.boolean() }),
    fc.record({ not: tie('query') }),
    fc.record({ op: fc.constantFrom('and' as const, 'or' as const), left: tie('query'), right: tie('query') }),
    fc.record({ phrase: fc.integer({ min: 0, max: 16384 }), left: tie('query'), right: tie('query') }),
  ),
}))

test('property: random query trees print as PostgreSQL prints them', () => {
  fc.assert(
    fc.property(query, (q) => {
      assert.equal(decode(tsqueryCodec.decodeBinary, tsquery(q)), reference(q))
    }),
    { numRuns: 1000 },
  )
})
