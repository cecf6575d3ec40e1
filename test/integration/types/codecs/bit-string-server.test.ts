import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { Codec } from '../../../../src/types/codec.js'
import { bitCodec, varbitCodec } from '../../../../src/types/codecs/bit-string.js'
import { echoParam } from '../../../support/codecs/raw-values.js'
import { echoAll, param, select, testType, type Param } from '../../../support/codecs/type-roundtrip.js'

// bit and varbit against what a real server sends and understands.

const BIT = 1560
const VARBIT = 1562

test('bit and varbit decode to strings of 0 and 1, from text and binary alike', async () => {
  const thousand = '1011001110001111'.repeat(62) + '10110011'
  await testType(bitCodec, BIT, [
    ["B'1'::bit", '1'],
    ["B'0'::bit(1)", '0'],
    ["B'101'::bit(3)", '101'],
    ["B'10100101'::bit(8)", '10100101'],
    ["B'111111111'::bit(9)", '111111111'],
    ["X'1F'::bit(8)", '00011111'],
    ["B'1'::bit(12)", '100000000000'],
    [`B'${thousand}'::bit(1000)`, thousand],
    ['1000::bit(1000)', '0'.repeat(990) + '1111101000'],
  ])
  await testType(varbitCodec, VARBIT, [
    ["''::varbit", ''],
    ["B''::bit varying(5)", ''],
    ["B'1'::varbit", '1'],
    ["B'0000000'::varbit", '0000000'],
    ["B'1010101011'::varbit", '1010101011'],
    ["X'DEADBEEF'::varbit", '11011110101011011011111011101111'],
    [`B'${thousand}'::varbit`, thousand],
    ["substring(B'110011'::varbit from 2 for 3)::varbit", '100'],
  ])
})

test('bit strings are sent in binary; other notations in text; the server reads both as written', async () => {
  const inputs: [Codec, number, string, boolean][] = [
    [varbitCodec, VARBIT, '', true],
    [varbitCodec, VARBIT, '1', true],
    [varbitCodec, VARBIT, '0110', true],
    [varbitCodec, VARBIT, '1'.repeat(1000), true],
    [bitCodec, BIT, '10100101', true],
    [bitCodec, BIT, '111111111', true],
    [bitCodec, BIT, '0'.repeat(999) + '1', true],
    [varbitCodec, VARBIT, 'X1F', false],
    [varbitCodec, VARBIT, 'x1f', false],
    [bitCodec, BIT, 'B101', false],
  ]
  const ours = inputs.map(([codec, oid, s, binary]) => {
    const p = param(codec, oid, s)
    assert.equal(p.format, binary ? 1 : 0, s)
    return p
  })
  const theirs = inputs.map(([, oid, s]): Param => ({ oid, format: 0, value: Buffer.from(s) }))
  const printed = await echoAll(ours)
  assert.deepEqual(printed, await echoAll(theirs))
  assert.deepEqual(printed.slice(0, 7), inputs.slice(0, 7).map(([, , s]) => s))
  assert.deepEqual(printed.slice(7), ['00011111', '00011111', '101'])
  await assert.rejects(echoParam(VARBIT, 0, param(varbitCodec, VARBIT, '10x').value, '$1'), /is not a valid binary digit/)
})

test('property: random bit strings round-trip through the server in both formats', async () => {
  const strings = fc.sample(
    fc.array(fc.constantFrom('0', '1'), { maxLength: 200 }).map((a) => a.join('')),
    { numRuns: 150, seed: 1562 },
  )
  const params = strings.map((s) => param(varbitCodec, VARBIT, s))
  for (const p of params) assert.equal(p.format, 1)
  const exprs = params.map((_, i) => `$${i + 1}`)
  const text = await select(exprs, params, 0)
  const binary = await select(exprs, params, 1)
  strings.forEach((s, i) => {
    assert.equal(text[i]!.toString(), s)
    assert.deepEqual(binary[i], Buffer.from(params[i]!.value!), 'the server sends the bytes it was sent')
    assert.equal(varbitCodec.decodeBinary!(binary[i]!, 0, binary[i]!.length), s)
    assert.equal(varbitCodec.decodeText(text[i]!, 0, text[i]!.length), s)
  })
})
