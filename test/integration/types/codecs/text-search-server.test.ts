import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { Codec } from '../../../../src/types/codec.js'
import { tsqueryCodec, tsvectorCodec } from '../../../../src/types/codecs/text-search.js'
import { decodeBoth, testType, textParam, type Param } from '../../../support/codecs/type-roundtrip.js'

// tsvector and tsquery against what a real server sends: the binary decoders
// must rebuild exactly the text the server prints.

const TEXT = 25
const TSVECTOR = 3614
const TSQUERY = 3615

/** Decodes every expression from text and from binary; both must give the server's text. Returns it. */
async function decodePrinted(codec: Codec, exprs: string[], params: Param[] = []): Promise<string[]> {
  return (await decodeBoth(codec, exprs, params, { asPrinted: true })) as string[]
}

test('tsvector decodes to the text the server prints, from text and binary alike', async () => {
  await testType(tsvectorCodec, TSVECTOR, [
    ["''::tsvector", ''],
    ["'a fat cat sat on a mat and ate a fat rat'::tsvector", "'a' 'and' 'ate' 'cat' 'fat' 'mat' 'on' 'rat' 'sat'"],
    ["'a:1A cat:2,3B fat:4'::tsvector", "'a':1A 'cat':2,3B 'fat':4"],
    ["'a:3,1,2,2 b:5D,6C'::tsvector", "'a':1,2,3 'b':5,6C"],
    ["'a:16383C b:20000'::tsvector", "'a':16383C 'b':16383"],
    ["to_tsvector('english', 'The Fat Rats ate the rats')", "'ate':4 'fat':2 'rat':3,6"],
    ["setweight(to_tsvector('english', 'fat cat'), 'A')", "'cat':2A 'fat':1A"],
    ["$q$'it''s' 'a\\\\b'$q$::tsvector", "'a\\\\b' 'it''s'"],
    ["$q$'a b' 'c:d' '\\\\' '''' x\\:y$q$::tsvector", "'''' '\\\\' 'a b' 'c:d' 'x:y'"],
    ["'café:1 日本語:2,3 ünïcödé'::tsvector", "'café':1 'ünïcödé' '日本語':2,3"],
    ["strip('a:1A b:2'::tsvector)", "'a' 'b'"],
  ], { asPrinted: true })
})

test('tsquery decodes to the text the server prints, with its parentheses', async () => {
  await testType(tsqueryCodec, TSQUERY, [
    ["''::tsquery", ''],
    ["'a'::tsquery", "'a'"],
    ["'a & (b | !c)'::tsquery", "'a' & ( 'b' | !'c' )"],
    ["'(a | b) & c'::tsquery", "( 'a' | 'b' ) & 'c'"],
    ["'a | b & c'::tsquery", "'a' | 'b' & 'c'"],
    ["'a & b & c'::tsquery", "'a' & 'b' & 'c'"],
    ["'a & (b & c)'::tsquery", "'a' & 'b' & 'c'"],
    ["'a | (b | c)'::tsquery", "'a' | 'b' | 'c'"],
    ["'a <-> b'::tsquery", "'a' <-> 'b'"],
    ["'a <2> b'::tsquery", "'a' <2> 'b'"],
    ["'a <0> b'::tsquery", "'a' <0> 'b'"],
    ["'a <16384> b'::tsquery", "'a' <16384> 'b'"],
    ["'a <-> b <-> c'::tsquery", "'a' <-> 'b' <-> 'c'"],
    ["'a <-> (b <-> c)'::tsquery", "'a' <-> ( 'b' <-> 'c' )"],
    ["'a <-> (b & c)'::tsquery", "'a' <-> ( 'b' & 'c' )"],
    ["'(a | b) <3> c'::tsquery", "( 'a' | 'b' ) <3> 'c'"],
    ["'a <-> b & c <-> d'::tsquery", "'a' <-> 'b' & 'c' <-> 'd'"],
    ["'!a | b'::tsquery", "!'a' | 'b'"],
    ["'!(a & b)'::tsquery", "!( 'a' & 'b' )"],
    ["'!(a <-> b)'::tsquery", "!( 'a' <-> 'b' )"],
    ["'!!a'::tsquery", "!!'a'"],
    ["'!a <-> !b'::tsquery", "!'a' <-> !'b'"],
    ["'pre:*'::tsquery", "'pre':*"],
    ["'x:AB'::tsquery", "'x':AB"],
    ["'x:*dcba'::tsquery", "'x':*ABCD"],
    ["$q$'it''s' & 'a\\\\b' & 'a b'$q$::tsquery", "'it''s' & 'a\\\\b' & 'a b'"],
    ["'café & 日本語:*'::tsquery", "'café' & '日本語':*"],
    ["to_tsquery('english', 'The & Fat & Rats')", "'fat' & 'rat'"],
    ["to_tsquery('english', '!(fat | rats) <-> cats:*B')", "!( 'fat' | 'rat' ) <-> 'cat':*B"],
    ["plainto_tsquery('english', 'The Fat Rats')", "'fat' & 'rat'"],
    ["phraseto_tsquery('english', 'The Fat of the Rats')", "'fat' <3> 'rat'"],
    ["websearch_to_tsquery('english', '\"fat rat\" or -cat')", "'fat' <-> 'rat' | !'cat'"],
    ["tsquery_phrase('a'::tsquery, 'b | c'::tsquery, 5)", "'a' <5> ( 'b' | 'c' )"],
    ["'a'::tsquery && !!'b'::tsquery", "'a' & !'b'"],
    ["!!('a <-> b'::tsquery || 'c'::tsquery)", "!( 'a' <-> 'b' | 'c' )"],
  ], { asPrinted: true })
})

test('deeply nested queries decode alike in both formats', async () => {
  const ops = ['&', '|', '<->', '<7>']
  let q = 'w0'
  for (let i = 1; i < 300; i++) q = i % 3 === 0 ? `!(${q}) ${ops[i % 4]} w${i}` : `w${i} ${ops[i % 4]} (${q})`
  let chain = 'w0'
  for (let i = 1; i < 2000; i++) chain += ` & w${i}`
  const [nested, flat] = await decodePrinted(tsqueryCodec, [`'${q}'::tsquery`, `'${chain}'::tsquery`])
  assert.equal(nested!.split('( ').length - 1, nested!.split(' )').length - 1)
  assert.ok(nested!.split('( ').length > 150)
  assert.ok(nested!.startsWith("'w299' <7> ( 'w298' <-> ( !( 'w296' & 'w295' <7> ( !( 'w293' | 'w292' & !( "))
  assert.equal(flat, chain.replace(/w\d+/g, "'$&'"))
})

/** A lexeme or operand as tsvector/tsquery input: quoted, with quote and backslash escaped. */
const quote = (s: string) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`
const lexeme = fc.string({ unit: fc.constantFrom('a', 'b', 'z', "'", '\\', ' ', ':', '&', 'é', '日', '😀'), minLength: 1, maxLength: 5 })

type Query = { text: string }
const { query } = fc.letrec<{ query: Query }>((tie) => ({
  query: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc
      .tuple(lexeme, fc.boolean(), fc.subarray(['A', 'B', 'C', 'D']))
      .map(([l, prefix, weights]) => ({ text: quote(l) + (prefix || weights.length ? ':' + (prefix ? '*' : '') + weights.join('') : '') })),
    tie('query').map((q) => ({ text: `!( ${q.text} )` })),
    fc
      .tuple(tie('query'), fc.constantFrom('&', '|', '<->', '<0>', '<2>', '<16384>'), tie('query'))
      .map(([l, op, r]) => ({ text: `( ${l.text} ${op} ${r.text} )` })),
  ),
}))

test('property: random query trees print the same from binary as the server prints them', async () => {
  const queries = fc.sample(query, { numRuns: 200, seed: 3615 })
  const params = queries.map((q) => textParam(TSQUERY, tsqueryCodec.encodeText(q.text)))
  await decodePrinted(
    tsqueryCodec,
    params.map((_, i) => `$${i + 1}`),
    params,
  )
})

test('property: random text through to_tsquery, plainto_tsquery, phraseto_tsquery and websearch_to_tsquery', async () => {
  const word = fc.constantFrom('the', 'fat', 'rats', 'cat', 'and', 'a', 'of', 'running', 'jumped', 'over', 'lazy', 'dogs', 'café', 'x')
  const words = fc.array(word, { minLength: 1, maxLength: 8 })
  const functions = ['plainto_tsquery', 'phraseto_tsquery', 'websearch_to_tsquery']
  const inputs = fc.sample(
    fc.tuple(fc.constantFrom('english', 'simple'), fc.integer({ min: 0, max: 3 }), words, fc.array(fc.constantFrom(' & ', ' | ', ' <-> ', ' <2> ', ' & !', ' or -'), { minLength: 8, maxLength: 8 })),
    { numRuns: 150, seed: 25 },
  )
  const exprs: string[] = []
  const params: Param[] = []
  for (const [config, f, ws, ops] of inputs) {
    // to_tsquery needs operators between words; the others take free text.
    const text = f === 3 ? ws.map((w, i) => (i === 0 ? w : ops[i]!.replace(' or -', ' | !') + w)).join('') : ws.map((w, i) => (i === 0 ? w : f === 2 ? ops[i]!.replace(/[&|<>\d!]/g, '') + w : ' ' + w)).join('')
    params.push(textParam(TEXT, text))
    exprs.push(`${f === 3 ? 'to_tsquery' : functions[f]}('${config}', $${params.length})`)
  }
  const printed = await decodePrinted(tsqueryCodec, exprs, params)
  // Stop words alone give an empty query; most inputs must give more than that.
  assert.ok(printed.filter((s) => s.includes('&') || s.includes('<')).length > 50)
})

test('property: random tsvectors print the same from binary as the server prints them', async () => {
  const entry = fc.tuple(lexeme, fc.array(fc.tuple(fc.integer({ min: 1, max: 16383 }), fc.constantFrom('', 'A', 'B', 'C', 'D')), { maxLength: 5 }))
  const vectors = fc.sample(fc.array(entry, { maxLength: 10 }), { numRuns: 150, seed: 3614 })
  const params = vectors.map((v): Param => {
    const text = v.map(([l, positions]) => quote(l) + (positions.length ? ':' + positions.map(([p, w]) => `${p}${w}`).join(',') : '')).join(' ')
    return textParam(TSVECTOR, tsvectorCodec.encodeText(text))
  })
  const printed = await decodePrinted(
    tsvectorCodec,
    params.map((_, i) => `$${i + 1}`),
    params,
  )
  assert.ok(printed.some((s) => s.includes("''")) && printed.some((s) => s.includes('\\\\')) && printed.some((s) => /\d+A/.test(s)))
})
