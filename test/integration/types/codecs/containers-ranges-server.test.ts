import { test } from 'node:test'
import assert from 'node:assert/strict'
import { defaultTypeOptions, type Codec } from '../../../../src/types/codec.js'
import { arrayCodec } from '../../../../src/types/codecs/array.js'
import { registerContainers } from '../../../support/codecs/register-containers.js'
import { multirangeCodec } from '../../../../src/types/codecs/multirange.js'
import { rangeCodec } from '../../../../src/types/codecs/range.js'
import { Range } from '../../../../src/types/range.js'
import { testTable, text } from '../../../support/codecs/container-elements.js'
import { decodeBoth, echoAll, run, typeOid } from '../../../support/codecs/container-checks.js'

// Ranges and multiranges against a real server (multiranges exist since 14).

const table = testTable()
registerContainers(table, defaultTypeOptions)
const codec = (oid: number): Codec => table.get(oid)!

async function checkDecoded(oid: number, cases: [string, unknown][]): Promise<void> {
  const values = await decodeBoth(codec(oid), cases.map(([expr]) => expr))
  cases.forEach(([expr, expected], i) => assert.deepStrictEqual(values[i], expected, expr))
}

test('int4range and int8range: canonical forms, empty, unbounded sides', async () => {
  await checkDecoded(3904, [
    ["'[1,5]'::int4range", new Range(1, 6)],
    ["'(1,5)'::int4range", new Range(2, 5)],
    ["'(1,5]'::int4range", new Range(2, 6)],
    ["'(,5]'::int4range", new Range(null, 6)],
    ["'[,5)'::int4range", new Range(null, 5)],
    ["'[3,)'::int4range", new Range(3, null)],
    ["'(,)'::int4range", new Range(null, null)],
    ["'empty'::int4range", Range.empty()],
    ["'[5,5)'::int4range", Range.empty()],
    ["int4range(-2147483648, 2147483647)", new Range(-2147483648, 2147483647)],
  ])
  await checkDecoded(3926, [
    ["'[-9223372036854775808,9223372036854775807)'::int8range", new Range(-9223372036854775808n, 9223372036854775807n)],
    ["'[1,1]'::int8range", new Range(1n, 2n)],
  ])
})

test('numrange, daterange, tsrange, tstzrange: continuous subtypes keep their bounds', async () => {
  await checkDecoded(3906, [
    ["'[1.5,2.25]'::numrange", new Range('1.5', '2.25', '[]')],
    ["'(,1.5)'::numrange", new Range(null, '1.5')],
    ["'(\"1e3\",)'::numrange", new Range('1000', null, '()')],
    ["'(-0.000001,0]'::numrange", new Range('-0.000001', '0', '(]')],
    ["'[NaN,NaN]'::numrange", new Range('NaN', 'NaN', '[]')],
  ])
  await checkDecoded(3912, [
    ["'[2024-01-01,2024-02-01]'::daterange", new Range('2024-01-01', '2024-02-02')],
    ["'[-infinity,infinity]'::daterange", new Range('-infinity', 'infinity', '[]')],
    ["'(,2024-02-29]'::daterange", new Range(null, '2024-03-01')],
  ])
  await checkDecoded(3908, [
    ["'[\"2024-01-01\",\"2024-01-02 00:00:00.5\")'::tsrange", new Range('2024-01-01 00:00:00', '2024-01-02 00:00:00.5')],
    ["'[-infinity,infinity]'::tsrange", new Range('-infinity', 'infinity', '[]')],
    // PostgreSQL finds this one empty.
    ["'(infinity,infinity]'::tsrange", Range.empty()],
  ])
  await checkDecoded(3910, [["'[2024-01-01 00:00:00+00,)'::tstzrange", new Range('2024-01-01 00:00:00+00', null)]])
})

test('a range over text: bounds quoted and escaped as range_out does', async () => {
  await run('CREATE TYPE pg_temp.containers_textrange AS RANGE (subtype = text)')
  const oid = await typeOid('containers_textrange')
  const tr = rangeCodec(text, 'containers_textrange')
  const cases: [string | null, string | null][] = [
    ['a b', 'c,d'],
    ['', 'x"y\\z'],
    ['[', ']'],
    ['(', ')'],
    [',', null],
    [null, 'é😀'],
    ['plain', 'word'],
  ]
  // Functions in pg_temp are found only when qualified.
  const lit = (s: string | null) => (s === null ? 'NULL' : `'${s}'::text`)
  const exprs = cases.map(([l, u]) => `pg_temp.containers_textrange(${lit(l)}, ${lit(u)})`)
  const values = await decodeBoth(tr, exprs)
  cases.forEach(([l, u], i) => assert.deepStrictEqual(values[i], new Range(l, u), exprs[i]))
  // Encoded by us, printed by the server, identical.
  const r = await echoAll(tr, oid, values, true)
  assert.deepStrictEqual(r.decoded, values)
  assert.deepStrictEqual(r.printed, values.map((v) => tr.encodeText(v)))
  assert.deepStrictEqual((await echoAll(tr, oid, values)).decoded, values)
  // Its multirange, created with it.
  const mrOid = await typeOid('containers_textmultirange')
  const tmr = multirangeCodec(tr, 'containers_textmultirange')
  const m = [new Range('a]', 'b)'), new Range('c\\', 'd"')]
  for (const forceText of [false, true]) {
    const back = await echoAll(tmr, mrOid, [m, []], forceText)
    assert.deepStrictEqual(back.decoded, [m, []])
  }
})

test('multiranges: merged and sorted by the server, empty, unbounded', async () => {
  await checkDecoded(4451, [
    ["'{[1,3), [5,7)}'::int4multirange", [new Range(1, 3), new Range(5, 7)]],
    ["'{[1,2],[3,4]}'::int4multirange", [new Range(1, 5)]],
    ["'{[5,7),[1,3)}'::int4multirange", [new Range(1, 3), new Range(5, 7)]],
    ["'{}'::int4multirange", []],
    ["'{empty}'::int4multirange", []],
    ["'{(,0),[10,)}'::int4multirange", [new Range(null, 0), new Range(10, null)]],
  ])
  await checkDecoded(4536, [["'{[1,3)}'::int8multirange", [new Range(1n, 3n)]]])
  await checkDecoded(4532, [["'{[1.5,2.5],(3,)}'::nummultirange", [new Range('1.5', '2.5', '[]'), new Range('3', null, '()')]]])
  await checkDecoded(4535, [["'{[2024-01-01,2024-01-31]}'::datemultirange", [new Range('2024-01-01', '2024-02-01')]]])
  await checkDecoded(4533, [["'{[\"2024-01-01 00:00:00\",\"2024-01-02 00:00:00\")}'::tsmultirange", [new Range('2024-01-01 00:00:00', '2024-01-02 00:00:00')]]])
  await checkDecoded(4534, [["'{[2024-01-01 00:00:00+00,)}'::tstzmultirange", [new Range('2024-01-01 00:00:00+00', null)]]])
})

test('range parameters: binary, text, plain objects, bounds that go as text, canonicalisation', async () => {
  const values: unknown[] = [
    new Range(1, 5, '[]'),
    new Range(1, 5, '()'),
    new Range(null, 5, '(]'),
    new Range(3, null),
    new Range(null, null),
    Range.empty(),
    { lower: 1, upper: 2, lowerInclusive: true, upperInclusive: true },
    { lower: 7, upper: 9 },
    { empty: true },
    new Range(5, 5),
  ]
  const printed = ['[1,6)', '[2,5)', '(,6)', '[3,)', '(,)', 'empty', '[1,3)', '[7,9)', 'empty', 'empty']
  for (const forceText of [false, true]) {
    const r = await echoAll(codec(3904), 3904, values, forceText)
    assert.deepStrictEqual(r.formats, values.map(() => (forceText ? 0 : 1)))
    assert.deepStrictEqual(r.printed, printed)
  }
  const mixed = await echoAll(codec(3904), 3904, [new Range<unknown>('1', 5), '[1,5]', new Range<unknown>(1, '5', '(]')])
  assert.deepStrictEqual(mixed.formats, [0, 0, 0])
  assert.deepStrictEqual(mixed.printed, ['[1,5)', '[1,6)', '[2,6)'])
  // Bounds that only go as text (dates and timestamps given as strings here).
  const dates = await echoAll(codec(3912), 3912, [new Range('2024-01-01', '2024-01-31', '[]'), new Range(null, 'infinity')])
  assert.deepStrictEqual(dates.printed, ['[2024-01-01,2024-02-01)', '(,infinity)'])
  const ts = await echoAll(codec(3908), 3908, [new Range('2024-01-01 00:00:00', '2024-01-01 00:00:01.25')])
  assert.deepStrictEqual(ts.printed, ['["2024-01-01 00:00:00","2024-01-01 00:00:01.25")'])
  const big = await echoAll(codec(3926), 3926, [new Range(-9223372036854775808n, 9223372036854775807n)])
  assert.deepStrictEqual(big.formats, [1])
  assert.deepStrictEqual(big.decoded, [new Range(-9223372036854775808n, 9223372036854775807n)])
})

test('multirange parameters in both formats', async () => {
  const values: unknown[] = [[new Range(5, 7), new Range(1, 3, '[]')], [], [Range.empty(), { lower: null, upper: 0 }]]
  for (const forceText of [false, true]) {
    const r = await echoAll(codec(4451), 4451, values, forceText)
    assert.deepStrictEqual(r.printed, ['{[1,4),[5,7)}', '{}', '{(,0)}'])
  }
  const arr = arrayCodec(codec(4451), 4451, ',')
  for (const forceText of [false, true]) {
    const r = await echoAll(arr, 6150, [[[new Range(1, 2)], [], null]], forceText)
    assert.deepStrictEqual(r.decoded, [[[new Range(1, 2)], [], null]])
  }
})
