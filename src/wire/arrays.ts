import { MAX_DIMS } from '../types/codecs/array-shape.js'
import { readInt32, readUint32 } from '../types/codecs/binary.js'
import { WireProtocolError } from './errors.js'
import type { BinaryDecoderFn, TextDecoderFn } from './scalars.js'

// Arrays of any dimension, as nested JS arrays with null for NULL elements.
// Lower bounds other than 1 ('[0:2]={...}') are kept in a non-enumerable
// `lowerBounds` property of the outer array, as the Node client does.
//
// Binary: int32 ndim, int32 has-nulls flag, element type OID, then (size,
// lower bound) per dimension, then each element as int32 length (-1 for NULL)
// and bytes. Text: optional '[l:u]...=' bounds, then nested braces with
// elements separated by commas, double-quoted with backslash escapes when
// needed, and an unquoted NULL for NULL.
//
// Not the codecs' array decoders (types/codecs/array.ts, array-text.ts): the
// text parser here hands elements to string decoders (see scalars.ts), and
// both keep wire's messages and its read-only `lowerBounds`.

function malformed(what: string, detail: string): WireProtocolError {
  return new WireProtocolError(`malformed ${what}: ${detail}`)
}

function withBounds(arr: unknown[], lowerBounds: number[]): unknown[] {
  if (lowerBounds.some((l) => l !== 1)) Object.defineProperty(arr, 'lowerBounds', { value: lowerBounds, enumerable: false })
  return arr
}

/** Splits a flat list of elements into nested arrays of the given sizes. */
function nest(flat: unknown[], dims: number[]): unknown[] {
  let level: unknown[] = flat
  for (let d = dims.length - 1; d > 0; d--) {
    const size = dims[d]!
    const next: unknown[] = []
    for (let i = 0; i < level.length; i += size) next.push(level.slice(i, i + size))
    level = next
  }
  return level
}

export function binaryArrayDecoder(name: string, elementOid: number, element: BinaryDecoderFn): BinaryDecoderFn {
  return (b, s, e) => {
    if (e - s < 12) throw malformed(name, 'shorter than its 12-byte header')
    const ndim = readInt32(b, s)
    const flags = readInt32(b, s + 4)
    const oid = readUint32(b, s + 8)
    if (ndim < 0 || ndim > MAX_DIMS) throw malformed(name, `${ndim} dimensions`)
    if (flags !== 0 && flags !== 1) throw malformed(name, `flags ${flags}`)
    if (oid !== elementOid) throw malformed(name, `element type OID ${oid} where ${elementOid} was expected`)
    let p = s + 12
    if (e - p < 8 * ndim) throw malformed(name, 'truncated dimensions')
    const dims: number[] = []
    const lowerBounds: number[] = []
    let count = ndim === 0 ? 0 : 1
    for (let d = 0; d < ndim; d++) {
      const size = readInt32(b, p)
      lowerBounds.push(readInt32(b, p + 4))
      p += 8
      if (size < 0) throw malformed(name, `dimension of size ${size}`)
      dims.push(size)
      count *= size
    }
    // Each element takes at least its 4-byte length: a count the bytes cannot hold is a lie.
    if (count > (e - p) / 4) throw malformed(name, `${count} elements in ${e - p} bytes`)
    const flat: unknown[] = new Array(count)
    for (let i = 0; i < count; i++) {
      if (e - p < 4) throw malformed(name, 'truncated element')
      const len = readInt32(b, p)
      p += 4
      if (len === -1) {
        flat[i] = null
        continue
      }
      if (len < 0 || len > e - p) throw malformed(name, `element of length ${len} with ${e - p} bytes left`)
      flat[i] = element(b, p, p + len)
      p += len
    }
    if (p !== e) throw malformed(name, `${e - p} bytes after the last element`)
    if (ndim === 0) return []
    return withBounds(nest(flat, dims), lowerBounds)
  }
}

const BOUNDS_RE = /^((?:\[-?\d+(?::-?\d+)?\])+)=/

/** A parsed text array: nested arrays of element strings (null for NULL). */
type TextTree = (TextTree | string | null)[]

export function textArrayDecoder(name: string, element: TextDecoderFn): TextDecoderFn {
  return (text) => {
    let pos = 0
    let declared: { lower: number; size: number }[] | null = null
    const bounds = BOUNDS_RE.exec(text)
    if (bounds) {
      declared = []
      for (const m of bounds[1]!.matchAll(/\[(-?\d+)(?::(-?\d+))?\]/g)) {
        const lower = m[2] === undefined ? 1 : Number(m[1])
        const upper = Number(m[2] ?? m[1])
        declared.push({ lower, size: upper - lower + 1 })
      }
      pos = bounds[0].length
    }
    const fail = (detail: string): never => {
      throw malformed(name, `${detail} at offset ${pos} of '${text.length > 80 ? text.slice(0, 80) + '...' : text}'`)
    }

    // Reads one brace level starting at text[pos] === '{'.
    const level = (depth: number): TextTree => {
      if (depth > MAX_DIMS) fail('too many dimensions')
      if (text[pos] !== '{') fail("'{' expected")
      pos++
      const items: TextTree = []
      if (text[pos] === '}') {
        pos++
        return items
      }
      for (;;) {
        if (text[pos] === '{') items.push(level(depth + 1))
        else items.push(elementAt())
        const c = text[pos]
        pos++
        if (c === '}') return items
        if (c !== ',') fail("',' or '}' expected")
      }
    }

    const elementAt = (): string | null => {
      if (text[pos] === '"') {
        pos++
        let out = ''
        for (;;) {
          if (pos >= text.length) fail('unterminated quoted element')
          const c = text[pos]!
          if (c === '"') {
            pos++
            return out
          }
          if (c === '\\') {
            pos++
            if (pos >= text.length) fail('unterminated quoted element')
          }
          out += text[pos]
          pos++
        }
      }
      let out = ''
      let escaped = false
      while (pos < text.length) {
        const c = text[pos]!
        if (c === ',' || c === '}' || c === '{' || c === '"') break
        if (c === '\\') {
          pos++
          if (pos >= text.length) fail('dangling backslash')
          escaped = true
        }
        out += text[pos]
        pos++
      }
      if (!escaped) {
        out = out.trim()
        if (out.length === 0) fail('empty unquoted element')
        if (out.toUpperCase() === 'NULL') return null
      }
      return out
    }

    const tree = level(1)
    if (pos !== text.length) fail('text after the array')

    // Every element at one depth must be of one kind and every sub-array of one size.
    const dims: number[] = []
    let leafDepth = -1
    const measure = (node: TextTree, depth: number): void => {
      if (dims.length === depth) dims.push(node.length)
      else if (dims[depth] !== node.length) fail('sub-arrays of different sizes')
      const nested = node.length > 0 && Array.isArray(node[0])
      for (const child of node) {
        if (Array.isArray(child) !== nested) fail('elements and sub-arrays mixed')
        if (nested) measure(child as TextTree, depth + 1)
      }
      if (nested) return
      if (leafDepth === -1) leafDepth = depth
      else if (leafDepth !== depth) fail('sub-arrays of different depths')
    }
    if (tree.length === 0) {
      if (declared) fail('bounds on an empty array')
      return []
    }
    measure(tree, 0)
    if (declared && (declared.length !== dims.length || declared.some((d, i) => d.size !== dims[i]))) fail('bounds that do not match the elements')

    const decode = (node: TextTree): unknown[] => node.map((x) => (x === null ? null : Array.isArray(x) ? decode(x) : element(x)))
    return withBounds(decode(tree), declared ? declared.map((d) => d.lower) : dims.map(() => 1))
  }
}
