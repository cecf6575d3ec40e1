import { CodecError, describeValue, type Decoder } from '../codec.js'
import { MAX_DIMS, dimensionsOf, isLevel, isTopArray, lowerBoundsOf, raggedError, setLowerBounds } from './array-shape.js'
import type { ArrayValueMode } from './array-shape.js'
import {
  BACKSLASH,
  LBRACE,
  LBRACKET,
  QUOTE,
  RBRACE,
  RBRACKET,
  byteAt,
  isNullWord,
  isSpace,
  quoteArrayElement,
  releaseScratch,
  skipSpace,
  takeScratch,
  unescapeArrayElement,
} from './literal-syntax.js'

// The text form of arrays (array_out / array_in): optional dimension
// decoration '[l:u][l:u]=', then nested braces, elements separated by the
// type's delimiter, quoted with "" and escaped with backslashes, NULL for null.

const COLON = 0x3a
const EQUALS = 0x3d
const MINUS = 0x2d
const PLUS = 0x2b

/**
 * Parses an array literal from bytes, decoding each element's text with
 * `decode`. Elements without escapes are decoded straight from `buf`; escaped
 * ones from an unescaped copy.
 */
export function parseArrayText(buf: Uint8Array, start: number, end: number, decode: Decoder, delimiter: number, name: string): unknown[] {
  return new ArrayTextParser(buf, end, decode, delimiter, name).parse(start)
}

const stopTables = new Map<number, Uint8Array>()

/** A table marking the delimiter, braces, quote, backslash and whitespace: the bytes a plain element cannot hold. */
function stopBytes(delimiter: number): Uint8Array {
  let t = stopTables.get(delimiter)
  if (t === undefined) {
    t = new Uint8Array(256)
    for (const c of [delimiter, LBRACE, RBRACE, QUOTE, BACKSLASH, 0x20, 0x09, 0x0a, 0x0b, 0x0c, 0x0d]) t[c] = 1
    stopTables.set(delimiter, t)
  }
  return t
}

class ArrayTextParser {
  pos = 0
  /** Depth of the elements, once the first element is seen (0 before). */
  ndim = 0
  /** Length of each level, from the first complete one. */
  readonly dims: (number | undefined)[] = []

  /** Bytes that end an unquoted element or need a closer look (see stopBytes). */
  readonly stop: Uint8Array

  constructor(
    readonly buf: Uint8Array,
    readonly end: number,
    readonly decode: Decoder,
    readonly delimiter: number,
    readonly name: string,
  ) {
    this.stop = stopBytes(delimiter)
  }

  fail(what: string): CodecError {
    return new CodecError(`malformed ${this.name} literal: ${what}`)
  }

  parse(start: number): unknown[] {
    const buf = this.buf
    const end = this.end
    let p = skipSpace(buf, start, end)
    let lbs: number[] | null = null
    let ubs: number[] | null = null
    if (byteAt(buf, p, end) === LBRACKET) {
      lbs = []
      ubs = []
      while (byteAt(buf, p, end) === LBRACKET) {
        if (lbs.length === MAX_DIMS) throw this.fail(`more than ${MAX_DIMS} dimensions`)
        p = this.int(p + 1)
        let lb = 1
        let ub = this.lastInt
        if (byteAt(buf, p, end) === COLON) {
          lb = ub
          p = this.int(p + 1)
          ub = this.lastInt
        }
        if (byteAt(buf, p, end) !== RBRACKET) throw this.fail('bad dimension decoration')
        if (ub < lb - 1) throw this.fail('upper bound below lower bound')
        lbs.push(lb)
        ubs.push(ub)
        p = skipSpace(buf, p + 1, end)
      }
      if (byteAt(buf, p, end) !== EQUALS) throw this.fail('missing "=" after the dimensions')
      p = skipSpace(buf, p + 1, end)
    }
    if (byteAt(buf, p, end) !== LBRACE) throw this.fail('it does not start with "{"')
    this.pos = p
    const out = this.level(0)
    if (skipSpace(buf, this.pos, end) !== end) throw this.fail('junk after the closing "}"')
    if (lbs !== null) {
      if (lbs.length !== this.dims.length || out.length === 0) throw this.fail('the dimensions do not match the contents')
      for (let i = 0; i < lbs.length; i++) {
        if (ubs![i]! - lbs[i]! + 1 !== this.dims[i]) throw this.fail('the dimensions do not match the contents')
      }
      for (const lb of lbs) {
        if (lb !== 1) {
          setLowerBounds(out, lbs)
          break
        }
      }
    }
    return out
  }

  /** The value read by the last int() call. */
  lastInt = 0

  /** Reads a signed decimal int32 at p into lastInt; returns the position after it. */
  int(p: number): number {
    const buf = this.buf
    let neg = false
    const sign = byteAt(buf, p, this.end)
    if (sign === MINUS || sign === PLUS) {
      neg = sign === MINUS
      p++
    }
    const from = p
    let n = 0
    for (; p < this.end; p++) {
      const d = buf[p]! - 0x30
      if (d < 0 || d > 9) break
      n = n * 10 + d
      if (n > 2147483648) throw this.fail('dimension bound out of range')
    }
    if (p === from) throw this.fail('bad dimension decoration')
    n = neg ? -n : n
    if (n > 2147483647) throw this.fail('dimension bound out of range')
    this.lastInt = n
    return p
  }

  /** Parses one brace level at this.pos (a '{'). */
  level(depth: number): unknown[] {
    const buf = this.buf
    const end = this.end
    const out: unknown[] = []
    let p = skipSpace(buf, this.pos + 1, end)
    if (byteAt(buf, p, end) === RBRACE) {
      // '{}' is the empty array; PostgreSQL never prints an empty inner level.
      if (depth !== 0) throw this.fail('empty sub-array')
      this.pos = p + 1
      return out
    }
    for (;;) {
      if (p >= end) throw this.fail('unexpected end of input')
      if (buf[p] === LBRACE) {
        if (this.ndim !== 0 && depth + 1 >= this.ndim) throw this.fail('nesting does not match the other elements')
        if (depth + 1 >= MAX_DIMS) throw this.fail(`more than ${MAX_DIMS} dimensions`)
        this.pos = p
        out.push(this.level(depth + 1))
      } else {
        if (this.ndim === 0) this.ndim = depth + 1
        else if (this.ndim !== depth + 1) throw this.fail('nesting does not match the other elements')
        this.pos = p
        out.push(this.element())
      }
      p = this.pos
      let c = byteAt(buf, p, end)
      if (isSpace(c)) {
        p = skipSpace(buf, p, end)
        c = byteAt(buf, p, end)
      }
      if (c === this.delimiter) {
        p++
        if (isSpace(byteAt(buf, p, end))) p = skipSpace(buf, p, end)
      } else if (c === RBRACE) break
      else throw this.fail(c < 0 ? 'unexpected end of input' : `unexpected "${String.fromCharCode(c)}"`)
    }
    this.pos = p + 1
    // Inner levels complete first, so the outer lengths fill in later.
    const known = this.dims[depth]
    if (known === undefined) this.dims[depth] = out.length
    else if (known !== out.length) throw this.fail('sub-arrays have different lengths')
    return out
  }

  /** Parses one element at this.pos and leaves this.pos after it. */
  element(): unknown {
    const buf = this.buf
    const end = this.end
    const p = this.pos
    if (buf[p] !== QUOTE) {
      // What array_out prints: bytes up to the delimiter or '}', none special.
      const stop = this.stop
      let q = p
      while (q < end && stop[buf[q]!] === 0) q++
      const c = byteAt(buf, q, end)
      if (q > p && (c === this.delimiter || c === RBRACE)) {
        this.pos = q
        if (q - p === 4 && isNullWord(buf, p, q)) return null
        return this.decode(buf, p, q)
      }
      return this.unquotedSlow(p)
    }
    let q = p + 1
    let escaped = false
    for (;;) {
      if (q >= end) throw this.fail('unterminated quoted element')
      const c = buf[q]
      if (c === QUOTE) break
      if (c === BACKSLASH) {
        escaped = true
        q += 2
      } else q++
    }
    this.pos = q + 1
    return escaped ? this.unescaped(p + 1, q, true) : this.decode(buf, p + 1, q)
  }

  /** An unquoted element with whitespace or escapes in it, or a malformed one. */
  unquotedSlow(p: number): unknown {
    const buf = this.buf
    const end = this.end
    const delimiter = this.delimiter
    let escaped = false
    let q = p
    for (;;) {
      if (q >= end) throw this.fail('unexpected end of input')
      const c = buf[q]
      if (c === delimiter || c === RBRACE) break
      if (c === BACKSLASH) {
        escaped = true
        q += 2
      } else if (c === QUOTE || c === LBRACE) throw this.fail(`unexpected "${String.fromCharCode(c)}" in an element`)
      else q++
    }
    this.pos = q
    if (escaped) return this.unescaped(p, q, false)
    let e = q
    while (e > p && isSpace(buf[e - 1])) e--
    if (e === p) throw this.fail('empty element')
    if (isNullWord(buf, p, e)) return null
    return this.decode(buf, p, e)
  }

  unescaped(start: number, end: number, quoted: boolean): unknown {
    const scratch = takeScratch(end - start)
    const n = unescapeArrayElement(this.buf, start, end, quoted, scratch)
    const v = this.decode(scratch, 0, n)
    releaseScratch(scratch)
    return v
  }
}

/**
 * Prints an array value as an array literal, with `encode` giving each
 * non-null element's text. Checks the shape as it goes: rectangular, at most 6
 * dimensions; a `lowerBounds` property on the outermost array adds the
 * '[l:u]=' decoration.
 */
export function formatArrayText(
  value: unknown,
  encode: (v: unknown) => string,
  delimiter: string,
  arrayValued: ArrayValueMode,
  name: string,
): string {
  if (!isTopArray(value)) throw new CodecError(`${name} needs an array or a string; got ${describeValue(value)}`)
  const dims = dimensionsOf(value, arrayValued, name)
  const body = formatLevel(value, 0, dims, encode, delimiter, arrayValued, name)
  let total = 1
  for (const n of dims) total *= n
  if (total === 0) return '{}'
  const lbs = lowerBoundsOf(value, dims, name)
  if (lbs === null) return body
  let deco = ''
  for (let i = 0; i < dims.length; i++) deco += `[${lbs[i]!}:${lbs[i]! + dims[i]! - 1}]`
  return `${deco}=${body}`
}

function formatLevel(
  level: ArrayLike<unknown>,
  depth: number,
  dims: readonly number[],
  encode: (v: unknown) => string,
  delimiter: string,
  arrayValued: ArrayValueMode,
  name: string,
): string {
  let s = '{'
  const leaf = depth === dims.length - 1
  for (let i = 0; i < level.length; i++) {
    if (i > 0) s += delimiter
    const v = level[i]
    if (leaf) {
      if (isLevel(v, arrayValued)) throw raggedError(name, depth)
      s += v === null || v === undefined ? 'NULL' : quoteArrayElement(encode(v), delimiter)
    } else {
      if (!isLevel(v, arrayValued) || v.length !== dims[depth + 1]) throw raggedError(name, depth + 1)
      s += formatLevel(v, depth + 1, dims, encode, delimiter, arrayValued, name)
    }
  }
  return s + '}'
}
