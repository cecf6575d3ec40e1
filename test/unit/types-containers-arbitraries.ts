// fast-check arbitraries shared by the container property tests (unit and integration).

import fc from 'fast-check'
import { Range } from '../../src/types/range.js'

/** Strings rich in the characters the literals treat specially (never NUL, which PostgreSQL text cannot hold). */
export const trickyString = fc.string({
  unit: fc.oneof(
    fc.constantFrom('"', '\\', '{', '}', '(', ')', '[', ']', ',', ';', ' ', '\t', '\n', '\r', '\v', '\f', 'N', 'U', 'L', 'n', 'u', 'l', 'é', '😀'),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }).filter((s) => !s.includes('\0')),
  ),
  maxLength: 12,
})

/** A rectangular nested array of `element` values, 1 to `maxDims` dimensions. */
export function rectangular<T>(element: fc.Arbitrary<T>, maxDims = 4, maxLen = 4): fc.Arbitrary<unknown[]> {
  return fc.array(fc.integer({ min: 1, max: maxLen }), { minLength: 1, maxLength: maxDims }).chain((dims) => {
    const total = dims.reduce((a, b) => a * b, 1)
    return fc.array(element, { minLength: total, maxLength: total }).map((flat) => reshape(flat, dims))
  })
}

function reshape<T>(flat: T[], dims: number[]): unknown[] {
  if (dims.length === 1) return flat
  const [n, ...rest] = dims
  const size = flat.length / n!
  return Array.from({ length: n! }, (_, i) => reshape(flat.slice(i * size, (i + 1) * size), rest))
}

export const int4OrNull = fc.option(fc.integer({ min: -2147483648, max: 2147483647 }), { nil: null, freq: 5 })
export const textOrNull = fc.option(trickyString, { nil: null, freq: 5 })

export function withLowerBounds(value: unknown[], lbs: number[]): unknown[] {
  Object.defineProperty(value, 'lowerBounds', { value: lbs, enumerable: false })
  return value
}

export const boundsArb = fc.constantFrom('[)', '[]', '(]', '()') as fc.Arbitrary<'[)' | '[]' | '(]' | '()'>

export function rangeArb<T>(bound: fc.Arbitrary<T>): fc.Arbitrary<Range<T>> {
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(Range.empty<T>()) },
    { weight: 9, arbitrary: fc.tuple(fc.option(bound, { nil: null }), fc.option(bound, { nil: null }), boundsArb).map(([l, u, b]) => new Range<T>(l, u, b)) },
  )
}

