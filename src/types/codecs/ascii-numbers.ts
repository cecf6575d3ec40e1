import { malformed, outOfRange } from './scalar-errors.js'

// Integers read straight from the ASCII digits of a text value, without making
// a string first. Strict: an optional '-' then digits, nothing else.

const TEN_POW_15 = 10n ** 15n

/**
 * An integer of at most 16 digits, checked against [min, max]. Up to 15 digits
 * every step is exact; a 16th digit may round, but rounding is monotonic, so
 * the range check still rejects every value beyond a safe-integer bound.
 */
export function parseIntText(buf: Uint8Array, start: number, end: number, name: string, min: number, max: number): number {
  let i = start
  const neg = end > start && buf[i] === 0x2d
  if (neg) i++
  if (i === end) throw malformed(name, 'no digits')
  if (end - i > 16) throw outOfRange(name)
  let n = 0
  for (; i < end; i++) {
    const d = buf[i]! - 0x30
    if (d < 0 || d > 9) throw malformed(name, 'not an integer')
    n = n * 10 + d
  }
  // 0 - n keeps "-0" from becoming the number -0.
  if (neg) n = 0 - n
  if (n < min || n > max) throw outOfRange(name)
  return n
}

/** An integer of any size up to 20 digits as a bigint, checked against [min, max]. */
export function parseBigIntText(buf: Uint8Array, start: number, end: number, name: string, min: bigint, max: bigint): bigint {
  let i = start
  const neg = end > start && buf[i] === 0x2d
  if (neg) i++
  const digits = end - i
  if (digits === 0) throw malformed(name, 'no digits')
  if (digits > 20) throw outOfRange(name)
  // Up to 15 digits a double is exact and one BigInt() call is the cheapest way
  // to a bigint; longer values are split into two exact halves.
  const split = digits > 15 ? end - 15 : i
  let hi = 0
  for (; i < split; i++) {
    const d = buf[i]! - 0x30
    if (d < 0 || d > 9) throw malformed(name, 'not an integer')
    hi = hi * 10 + d
  }
  let lo = 0
  for (; i < end; i++) {
    const d = buf[i]! - 0x30
    if (d < 0 || d > 9) throw malformed(name, 'not an integer')
    lo = lo * 10 + d
  }
  let v = digits > 15 ? BigInt(hi) * TEN_POW_15 + BigInt(lo) : BigInt(lo)
  if (neg) v = -v
  if (v < min || v > max) throw outOfRange(name)
  return v
}
