import { quoteRangeBound } from './codecs/literal-syntax.js'

/** Which bounds a range includes: '[' and ']' inclusive, '(' and ')' exclusive. */
export type RangeBounds = '[)' | '[]' | '(]' | '()'

/**
 * A value of a PostgreSQL range type (int4range, tstzrange, ...), with bounds of
 * the subtype's JS type. A null bound is unbounded on that side, and an
 * unbounded side is never inclusive (PostgreSQL normalises it the same way).
 * Note that discrete ranges come back canonical: int4range '[1,5]' is [1,6).
 */
export class Range<T> {
  lower: T | null
  upper: T | null
  lowerInclusive: boolean
  upperInclusive: boolean
  /** The empty range ('empty'): no bounds at all. */
  empty: boolean

  constructor(lower: T | null = null, upper: T | null = null, bounds: RangeBounds = '[)') {
    if (bounds !== '[)' && bounds !== '[]' && bounds !== '(]' && bounds !== '()') {
      throw new TypeError(`range bounds must be '[)', '[]', '(]' or '()'; got ${JSON.stringify(bounds)}`)
    }
    this.lower = lower ?? null
    this.upper = upper ?? null
    this.lowerInclusive = this.lower !== null && bounds[0] === '['
    this.upperInclusive = this.upper !== null && bounds[1] === ']'
    this.empty = false
  }

  /** The empty range. */
  static empty<T = never>(): Range<T> {
    const r = new Range<T>(null, null, '()')
    r.empty = true
    return r
  }

  /**
   * PostgreSQL's literal form ('[1,5)', '(,5]', 'empty'). Bounds print as
   * String(value), Dates as ISO 8601; the range codecs print bounds with the
   * subtype's own text encoder instead.
   */
  toString(): string {
    if (this.empty) return 'empty'
    return formatRange(this, boundText)
  }
}

function boundText(v: unknown): string {
  return v instanceof Date ? v.toISOString() : String(v)
}

/** The fields the range codecs read from a Range or from a plain object shaped like one. */
export interface RangeLike<T> {
  lower: T | null
  upper: T | null
  lowerInclusive: boolean
  upperInclusive: boolean
}

/** The literal of a non-empty range, bounds printed by `text`. */
export function formatRange<T>(r: RangeLike<T>, text: (v: T) => string): string {
  const lower = r.lower === null ? '' : quoteRangeBound(text(r.lower))
  const upper = r.upper === null ? '' : quoteRangeBound(text(r.upper))
  return `${r.lowerInclusive && r.lower !== null ? '[' : '('}${lower},${upper}${r.upperInclusive && r.upper !== null ? ']' : ')'}`
}
