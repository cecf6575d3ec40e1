import type { Writer } from '../../protocol/writer.js'
import { BUILTIN_TYPES } from '../builtin-types.js'
import { CodecError, describeValue, type BinaryEncoder, type Codec, type Decoder, type ResolvedTypeOptions } from '../codec.js'
import { MAX_DIMS, dimensionsOf, isLevel, isTopArray, lowerBoundsOf, raggedError, setLowerBounds, valuesAreArrays } from './array-shape.js'
import type { ArrayValueMode } from './array-shape.js'
import { formatArrayText, parseArrayText } from './array-text.js'
import { readInt32, readUint32 } from './binary.js'

// Arrays of any element type. JS: nested arrays, one level per dimension, null
// for NULL elements, [] for an empty array. Lower bounds other than 1 are kept
// in a non-enumerable `lowerBounds` property of the outermost array, and an
// encoder honours the same property.
//
// Binary (array_send): int32 ndim, int32 has-nulls flag, uint32 element OID,
// ndim x (int32 length, int32 lower bound), then each element as int32 length
// (-1 for NULL) and its bytes. An empty array has ndim 0 and nothing else.

/** record[]: a pseudo-type in the catalog, but a real column type (SELECT ARRAY[ROW(1)]). */
const RECORD_ARRAY_OID = 2287

/**
 * The codec of `element[]`. `elementOid` is checked against the element type of
 * binary values (0 skips the check) and sent in binary parameters; `delimiter`
 * separates elements in text (',' for every built-in type but box, ';').
 */
export function arrayCodec(element: Codec, elementOid: number, delimiter: string): Codec {
  const name = `${element.name}[]`
  const arrayValued = valuesAreArrays(element)
  const delimiterCode = delimiter.charCodeAt(0)
  const decodeElementText = element.decodeText
  const decodeElementBinary = element.decodeBinary
  const encodeElementText = element.encodeText
  const encodeElementBinary = element.encodeBinary
  return {
    name,
    decodeText: (buf, start, end) => parseArrayText(buf, start, end, decodeElementText, delimiterCode, name),
    decodeBinary: decodeElementBinary && ((buf, start, end) => decodeArrayBinary(buf, start, end, decodeElementBinary, elementOid, name)),
    encodeText(value) {
      if (typeof value === 'string') return value
      return formatArrayText(value, encodeElementText, delimiter, arrayValued, name)
    },
    encodeBinary:
      encodeElementBinary &&
      ((w, value) => {
        if (typeof value === 'string') return false
        return encodeArrayBinary(w, value, encodeElementBinary, elementOid, arrayValued, name)
      }),
    preferBinary: element.preferBinary !== false,
  }
}

function malformed(name: string, what: string): CodecError {
  return new CodecError(`malformed binary ${name}: ${what}`)
}

function decodeArrayBinary(buf: Uint8Array, start: number, end: number, decode: Decoder, elementOid: number, name: string): unknown[] {
  if (end - start < 12) throw malformed(name, `${end - start} bytes, too short for an array header`)
  const ndim = readInt32(buf, start)
  const flags = readInt32(buf, start + 4)
  const oid = readUint32(buf, start + 8)
  if (ndim < 0 || ndim > MAX_DIMS) throw malformed(name, `${ndim} dimensions`)
  if (flags !== 0 && flags !== 1) throw malformed(name, `flags ${flags}`)
  if (elementOid !== 0 && oid !== elementOid) {
    throw new CodecError(`binary ${name} value has elements of type OID ${oid} where OID ${elementOid} was expected`)
  }
  let p = start + 12
  if (ndim === 0) {
    if (p !== end) throw malformed(name, 'bytes after an empty array')
    return []
  }
  if (end - p < ndim * 8) throw malformed(name, 'truncated dimensions')
  const dims: number[] = new Array(ndim)
  const lbs: number[] = new Array(ndim)
  let total = 1
  let customBounds = false
  for (let i = 0; i < ndim; i++, p += 8) {
    const n = readInt32(buf, p)
    const lb = readInt32(buf, p + 4)
    if (n < 0) throw malformed(name, `dimension of length ${n}`)
    dims[i] = n
    lbs[i] = lb
    total *= n
    if (lb !== 1) customBounds = true
  }
  // Every element takes at least its 4-byte length: this bounds the allocation below.
  if (total * 4 > end - p) throw malformed(name, `${total} elements do not fit in ${end - p} bytes`)
  if (total === 0) {
    if (p !== end) throw malformed(name, 'bytes after an empty array')
    return []
  }
  let out: unknown[]
  if (ndim === 1) {
    out = new Array(total)
    for (let i = 0; i < total; i++) {
      if (end - p < 4) throw malformed(name, 'truncated element')
      const len = readInt32(buf, p)
      p += 4
      if (len === -1) out[i] = null
      else {
        if (len < 0 || len > end - p) throw malformed(name, `element length ${len}`)
        out[i] = decode(buf, p, p + len)
        p += len
      }
    }
  } else {
    const reader = new NestedReader(buf, end, p, dims, decode, name)
    out = reader.level(0)
    p = reader.pos
  }
  if (p !== end) throw malformed(name, `${end - p} bytes after the last element`)
  if (customBounds) setLowerBounds(out, lbs)
  return out
}

class NestedReader {
  constructor(
    readonly buf: Uint8Array,
    readonly end: number,
    public pos: number,
    readonly dims: readonly number[],
    readonly decode: Decoder,
    readonly name: string,
  ) {}

  level(depth: number): unknown[] {
    const n = this.dims[depth]!
    const out: unknown[] = new Array(n)
    if (depth < this.dims.length - 1) {
      for (let i = 0; i < n; i++) out[i] = this.level(depth + 1)
      return out
    }
    const buf = this.buf
    const end = this.end
    let p = this.pos
    for (let i = 0; i < n; i++) {
      if (end - p < 4) throw malformed(this.name, 'truncated element')
      const len = readInt32(buf, p)
      p += 4
      if (len === -1) out[i] = null
      else {
        if (len < 0 || len > end - p) throw malformed(this.name, `element length ${len}`)
        out[i] = this.decode(buf, p, p + len)
        p += len
      }
    }
    this.pos = p
    return out
  }
}

function encodeArrayBinary(
  w: Writer,
  value: unknown,
  encode: BinaryEncoder,
  elementOid: number,
  arrayValued: ArrayValueMode,
  name: string,
): boolean {
  if (!isTopArray(value)) throw new CodecError(`${name} needs an array or a string; got ${describeValue(value)}`)
  const dims = dimensionsOf(value, arrayValued, name)
  const ndim = dims.length
  let total = 1
  for (const n of dims) total *= n
  const mark = w.length
  try {
    if (total === 0) {
      // Nothing to write, but a ragged value is still an error.
      writeLevel(w, value, 0, dims, encode, arrayValued, name)
      w.i32(0)
      w.i32(0)
      w.i32(elementOid)
      return true
    }
    const lbs = lowerBoundsOf(value, dims, name)
    w.i32(ndim)
    const flags = w.reserve32()
    w.i32(elementOid)
    for (let i = 0; i < ndim; i++) {
      w.i32(dims[i]!)
      w.i32(lbs === null ? 1 : lbs[i]!)
    }
    const nulls = writeLevel(w, value, 0, dims, encode, arrayValued, name)
    if (nulls < 0) {
      w.truncate(mark)
      return false
    }
    w.patch32(flags, nulls > 0 ? 1 : 0)
    return true
  } catch (e) {
    w.truncate(mark)
    throw e
  }
}

/** Writes the elements of one level; returns the number of NULLs, or -1 when an element asked to go as text. */
function writeLevel(
  w: Writer,
  level: ArrayLike<unknown>,
  depth: number,
  dims: readonly number[],
  encode: BinaryEncoder,
  arrayValued: ArrayValueMode,
  name: string,
): number {
  let nulls = 0
  const n = level.length
  if (depth < dims.length - 1) {
    const inner = dims[depth + 1]!
    for (let i = 0; i < n; i++) {
      const v = level[i]
      if (!isLevel(v, arrayValued) || v.length !== inner) throw raggedError(name, depth + 1)
      const r = writeLevel(w, v, depth + 1, dims, encode, arrayValued, name)
      if (r < 0) return r
      nulls += r
    }
    return nulls
  }
  for (let i = 0; i < n; i++) {
    const v = level[i]
    if (v === null || v === undefined) {
      w.i32(-1)
      nulls++
      continue
    }
    if (isLevel(v, arrayValued)) throw raggedError(name, depth)
    const at = w.reserve32()
    if (!encode(w, v)) return -1
    w.patch32(at, w.length - at - 4)
  }
  return nulls
}

/**
 * Adds the codec of every built-in array type whose element codec is already in
 * `table`; call it after the element types (ranges and multiranges included)
 * are registered. int2vector and oidvector are left out: their binary form is an
 * array's, but their text is space-separated.
 */
export function registerArrays(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  const delimiters = new Map<number, string>()
  for (const row of BUILTIN_TYPES) delimiters.set(row[0], row[4])
  for (const [oid, typname, , elem, , , category, len] of BUILTIN_TYPES) {
    const isArray = (category === 'A' && len === -1 && typname.startsWith('_')) || oid === RECORD_ARRAY_OID
    if (!isArray || elem === 0 || table.has(oid)) continue
    const element = table.get(elem)
    if (element === undefined) continue
    table.set(oid, arrayCodec(element, elem, delimiters.get(elem) ?? ','))
  }
}
