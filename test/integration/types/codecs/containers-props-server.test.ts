import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { defaultTypeOptions, type Codec } from '../../../../src/types/codec.js'
import { arrayCodec } from '../../../../src/types/codecs/array.js'
import { compositeCodec } from '../../../../src/types/codecs/composite.js'
import { registerContainers } from '../../../support/codecs/register-containers.js'
import { multirangeCodec } from '../../../../src/types/codecs/multirange.js'
import { rangeCodec } from '../../../../src/types/codecs/range.js'
import { Range } from '../../../../src/types/range.js'
import { int4OrNull, rangeArb, rectangular, textOrNull, trickyString, withLowerBounds } from '../../../support/fixtures/container-arbitraries.js'
import { testTable, text } from '../../../support/codecs/container-elements.js'
import { echoAll, lowerBoundsOf, run, typeOid } from '../../../support/codecs/container-checks.js'

// Random values through a real server: sent as parameters (binary, then text),
// read back in text and binary results. About 50 values per statement and a
// few statements per property, so the whole file stays fast.

const table = testTable()
registerContainers(table, defaultTypeOptions)
const codec = (oid: number): Codec => table.get(oid)!
const RUNS = { numRuns: 4 }
const batch = <T>(arb: fc.Arbitrary<T>) => fc.array(arb, { minLength: 50, maxLength: 50 })

/** Values sent both ways come back equal to what was sent (lower bounds included). */
async function echoesBack(c: Codec, oid: number, values: unknown[]): Promise<void> {
  for (const forceText of [false, true]) {
    const r = await echoAll(c, oid, values, forceText)
    assert.deepStrictEqual(r.decoded, values)
    values.forEach((v, i) => {
      const lbs = lowerBoundsOf(v)
      assert.deepStrictEqual(lowerBoundsOf(r.decoded[i]), lbs !== undefined && lbs.some((b) => b !== 1) ? lbs : undefined)
    })
  }
}

let textrangeOid = 0
let textmultirangeOid = 0
let rowOid = 0

before(async () => {
  await run('CREATE TYPE pg_temp.containers_props_textrange AS RANGE (subtype = text, multirange_type_name = pg_temp.containers_props_textmultirange)')
  textrangeOid = await typeOid('containers_props_textrange')
  textmultirangeOid = await typeOid('containers_props_textmultirange')
  await run('CREATE TYPE pg_temp.containers_props_row AS (a int4, b text, c text[])')
  rowOid = await typeOid('containers_props_row')
})

test('random int4[] values (NULLs, up to 4 dimensions, lower bounds) round-trip through the server', async () => {
  const arb = rectangular(int4OrNull).chain((v) =>
    fc.option(fc.array(fc.integer({ min: -100, max: 100 }), { minLength: depthOf(v), maxLength: depthOf(v) }), { nil: null }).map((lbs) =>
      lbs === null ? v : withLowerBounds(v, lbs),
    ),
  )
  await fc.assert(fc.asyncProperty(batch(fc.oneof(arb, fc.constant([]))), (values) => echoesBack(codec(1007), 1007, values)), RUNS)
})

function depthOf(v: unknown): number {
  let n = 0
  while (Array.isArray(v)) {
    n++
    v = v[0]
  }
  return n
}

test('random text[] values with quotes, backslashes, braces, spaces, NULL-words, non-ASCII round-trip', async () => {
  await fc.assert(fc.asyncProperty(batch(rectangular(textOrNull, 3)), (values) => echoesBack(codec(1009), 1009, values)), RUNS)
})

/** What PostgreSQL makes of an int4range: discrete, so canonical '[)'; empty when nothing is inside. */
function canonicalInt4(r: Range<number>): Range<number> {
  if (r.empty) return Range.empty()
  const lower = r.lower === null ? null : r.lowerInclusive ? r.lower : r.lower + 1
  const upper = r.upper === null ? null : r.upperInclusive ? r.upper + 1 : r.upper
  if (lower !== null && upper !== null && lower >= upper) return Range.empty()
  return new Range(lower, upper)
}

/** A range whose lower bound is not above its upper one (the server refuses those). */
function ordered<T>(bound: fc.Arbitrary<T>, compare: (a: T, b: T) => number): fc.Arbitrary<Range<T>> {
  return rangeArb(bound).map((r) => {
    if (r.lower !== null && r.upper !== null && compare(r.lower, r.upper) > 0) {
      const b = `${r.lowerInclusive ? '[' : '('}${r.upperInclusive ? ']' : ')'}` as '[)'
      return new Range(r.upper, r.lower, b)
    }
    return r
  })
}

test('random int4range values come back canonical, as the server computes them', async () => {
  const arb = ordered(fc.integer({ min: -1000, max: 1000 }), (a, b) => a - b)
  await fc.assert(
    fc.asyncProperty(batch(arb), async (values) => {
      for (const forceText of [false, true]) {
        const r = await echoAll(codec(3904), 3904, values, forceText)
        assert.deepStrictEqual(r.decoded, values.map(canonicalInt4))
      }
    }),
    RUNS,
  )
})

const utf8Compare = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))

test('random text ranges (continuous, collation C) keep their bounds; equal exclusive bounds are empty', async () => {
  const tr = rangeCodec(text, 'containers_props_textrange')
  const arb = ordered(trickyString, utf8Compare)
  const expected = (r: Range<string>) =>
    !r.empty && r.lower !== null && r.upper !== null && r.lower === r.upper && !(r.lowerInclusive && r.upperInclusive) ? Range.empty() : r
  await fc.assert(
    fc.asyncProperty(batch(arb), async (values) => {
      for (const forceText of [false, true]) {
        const r = await echoAll(tr, textrangeOid, values, forceText)
        assert.deepStrictEqual(r.decoded, values.map(expected))
      }
    }),
    RUNS,
  )
})

test('random int4 multiranges: the server merges them, and every point keeps its membership', async () => {
  const arb = fc.array(ordered(fc.integer({ min: -50, max: 50 }), (a, b) => a - b), { maxLength: 4 })
  const contains = (r: Range<number>, k: number) =>
    !r.empty &&
    (r.lower === null || k > r.lower || (r.lowerInclusive && k === r.lower)) &&
    (r.upper === null || k < r.upper || (r.upperInclusive && k === r.upper))
  await fc.assert(
    fc.asyncProperty(batch(arb), async (values) => {
      const binary = await echoAll(codec(4451), 4451, values)
      const textual = await echoAll(codec(4451), 4451, values, true)
      assert.deepStrictEqual(binary.printed, textual.printed)
      values.forEach((m, i) => {
        const back = binary.decoded[i] as Range<number>[]
        for (let k = -60; k <= 60; k++) {
          assert.equal(back.some((r) => contains(r, k)), m.some((r) => contains(r, k)), `${k} in ${textual.printed[i]}`)
        }
      })
    }),
    RUNS,
  )
})

test('random text multiranges round-trip as sets of points', async () => {
  const tmr = multirangeCodec(rangeCodec(text, 'containers_props_textrange'), 'containers_props_textmultirange')
  const arb = fc.array(
    trickyString.map((s) => new Range(s, s, '[]')),
    { maxLength: 4 },
  )
  // Single points never merge unless equal: the server returns them sorted and deduplicated.
  const expected = (m: Range<string>[]) => {
    const points = [...new Set(m.map((r) => r.lower!))].sort(utf8Compare)
    return points.map((p) => new Range(p, p, '[]'))
  }
  await fc.assert(
    fc.asyncProperty(batch(arb), async (values) => {
      for (const forceText of [false, true]) {
        const r = await echoAll(tmr, textmultirangeOid, values, forceText)
        assert.deepStrictEqual(r.decoded, values.map(expected))
      }
    }),
    RUNS,
  )
})

test('random composites with arrays inside, and arrays of them, round-trip', async () => {
  const c = compositeCodec('containers_props_row', [
    { name: 'a', oid: 23, codec: codec(23) },
    { name: 'b', oid: 25, codec: codec(25) },
    { name: 'c', oid: 1009, codec: codec(1009) },
  ])
  const row = fc.record({ a: int4OrNull, b: textOrNull, c: fc.option(rectangular(textOrNull, 2, 3), { nil: null }) }, { noNullPrototype: true })
  await fc.assert(fc.asyncProperty(batch(row), (values) => echoesBack(c, rowOid, values)), RUNS)
  const { rows } = await run(`SELECT typarray FROM pg_type WHERE oid = ${rowOid}`)
  const rowsOid = Number(rows[0]![0]!.toString())
  await fc.assert(fc.asyncProperty(batch(fc.array(fc.option(row, { nil: null }), { maxLength: 3 })), (values) => echoesBack(arrayCodec(c, rowOid, ','), rowsOid, values)), RUNS)
})
