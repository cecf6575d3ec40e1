import { CodecError, describeValue, type Codec } from '../codec.js'

// The shape of a JS value given for an array parameter: its dimensions, read
// from the first element at each level, and its lower bounds. The encoders then
// walk the value and check that every level matches (arrays are rectangular).

/** PostgreSQL's MAXDIM. */
export const MAX_DIMS = 6

/**
 * A codec whose JS values are themselves JS arrays (a multirange is Range[], a
 * composite may be given positionally, an lseg is [point, point]). Inside an
 * array parameter of such a type, a JS array is a further dimension only when
 * its first element is a JS array too; otherwise it is one element. With
 * 'always' (json, whose values are any JSON arrays, nested or not), an inner JS
 * array is always one element: such arrays have one dimension.
 */
export interface ArrayValuedCodec extends Codec {
  readonly valuesAreArrays: true | 'always'
}

/** How inner JS arrays of an array parameter are read: false, dimensions; true, see ArrayValuedCodec; 'always', elements. */
export type ArrayValueMode = boolean | 'always'

export function valuesAreArrays(c: Codec): ArrayValueMode {
  return (c as Partial<ArrayValuedCodec>).valuesAreArrays ?? false
}

/** The outermost level of an array value: a JS array or a typed array (Int32Array, Float64Array, ...). */
export function isTopArray(v: unknown): v is ArrayLike<unknown> {
  return Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView))
}

/**
 * Inner levels are JS arrays only: a Uint8Array inside a bytea[] is one element,
 * and so would be a typed array that some element type uses as its value.
 */
export function isLevel(v: unknown, arrayValued: ArrayValueMode): v is unknown[] {
  if (!Array.isArray(v) || arrayValued === 'always') return false
  return !arrayValued || (v.length > 0 && Array.isArray(v[0]))
}

/** Dimensions of an array value, read along its first elements; any 0 makes it an empty array. */
export function dimensionsOf(value: ArrayLike<unknown>, arrayValued: ArrayValueMode, name: string): number[] {
  const dims: number[] = []
  let level: ArrayLike<unknown> = value
  for (;;) {
    dims.push(level.length)
    if (dims.length > MAX_DIMS) throw new CodecError(`${name} value has more than ${MAX_DIMS} dimensions, the most PostgreSQL allows`)
    if (level.length === 0) break
    const first = level[0]
    if (!isLevel(first, arrayValued)) break
    level = first
  }
  return dims
}

/** The lower bounds an array value asks for (its `lowerBounds` property), or null for the default 1s. */
export function lowerBoundsOf(value: ArrayLike<unknown>, dims: readonly number[], name: string): number[] | null {
  const lbs = (value as { lowerBounds?: unknown }).lowerBounds
  if (lbs === undefined || lbs === null) return null
  if (!Array.isArray(lbs) || lbs.length !== dims.length) {
    throw new CodecError(`${name} value has lowerBounds that is not an array of ${dims.length} integers (one per dimension)`)
  }
  let custom = false
  for (let i = 0; i < dims.length; i++) {
    const lb: unknown = lbs[i]
    if (typeof lb !== 'number' || !Number.isInteger(lb)) {
      throw new CodecError(`${name} value has a lower bound that is not an integer; got ${describeValue(lb)}`)
    }
    if (lb < -2147483648 || lb + dims[i]! - 1 > 2147483647) throw new CodecError(`${name} value has lower bound ${lb}, out of range`)
    if (lb !== 1) custom = true
  }
  return custom ? (lbs as number[]) : null
}

export function raggedError(name: string, depth: number): CodecError {
  return new CodecError(`${name} value is not rectangular: the sub-arrays of dimension ${depth + 1} differ in length or depth`)
}

/** Attaches non-default lower bounds to a decoded array, out of the way of iteration and equality. */
export function setLowerBounds(out: unknown[], lbs: number[]): void {
  Object.defineProperty(out, 'lowerBounds', { value: lbs, enumerable: false, writable: true, configurable: true })
}
