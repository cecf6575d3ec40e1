import { ArgumentError, ParameterError } from '../errors.js'
import type { Writer } from '../protocol/writer.js'
import { CodecError } from '../types/codec.js'
import { isTemporalParam } from '../types/temporal-params.js'
import { toText } from '../types/text-params.js'
import type { TypeCatalog } from '../types/catalog.js'
import type { TypeView } from '../types/view.js'
import { TypedValue } from './typed.js'

// Turning a query's values into Bind parameters: by the types the server
// described, or as untyped text before a description is known.

/**
 * True when some value cannot be sent as untyped text without knowing its
 * parameter's type: a plain object could be json, a point, a composite; an
 * Interval or Range needs its type's text form. Strings, numbers, bigints,
 * booleans, Dates, Temporal values, bytes and arrays of those have one text
 * form for any type.
 */
export function needsTypes(values: readonly unknown[], declared: readonly number[]): boolean {
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    if (typeof v === 'object' && v !== null && (declared[i] ?? 0) === 0 && !(v instanceof TypedValue) && !plainText(v)) return true
  }
  return false
}

/**
 * True when some value is an object that only its parameter's codec can
 * write, and the catalog does not know that type yet (a type to look up, or a
 * built-in whose codec has not loaded): such a query is described and its
 * types learned before it is bound, however its statement was cached.
 */
export function awaitsTypes(values: readonly unknown[], types: readonly number[], catalog: TypeCatalog): boolean {
  for (let i = 0; i < values.length; i++) {
    let v = values[i]
    if (v instanceof TypedValue) v = v.value
    if (typeof v === 'object' && v !== null && !plainText(v) && !catalog.knows(types[i] ?? 0)) return true
  }
  return false
}

/** Bytes beyond this go in binary, after a describe: as text they would take twice the room (`\x` hex). */
const MAX_TEXT_BYTEA = 64 * 1024

function plainText(v: object): boolean {
  if (v instanceof Date || isTemporalParam(v)) return true
  if (v instanceof Uint8Array) return v.length <= MAX_TEXT_BYTEA
  if (!Array.isArray(v)) return false
  for (const e of v) if (typeof e === 'object' && e !== null && !plainText(e)) return false
  return true
}

/**
 * Makes room for a big parameter set at once: growing the message value by
 * value would leave a trail of ever larger discarded buffers.
 */
export function presize(w: Writer, values: readonly unknown[]): void {
  if (values.length < 8) return
  let total = 0
  for (const v of values) {
    if (typeof v === 'string') total += v.length
    else if (v instanceof Uint8Array) total += v.length
  }
  if (total > 1024 * 1024) w.ensure(total + 4 * values.length + 64)
}

/** Query text goes out as a C string: a NUL would silently cut it short. */
export function checkText(text: string): void {
  if (text.includes('\0')) throw new ArgumentError('query text cannot contain a NUL character')
}

/** The statement takes `types.length` parameters: as many values must be given. */
export function checkCount(values: readonly unknown[], types: readonly number[]): void {
  const n = values.length
  if (n !== types.length) {
    throw new ArgumentError(`the query has ${types.length} parameter${types.length === 1 ? '' : 's'} but ${n} value${n === 1 ? ' was' : 's were'} given`)
  }
}

/** Writes values[i] as type `oid` (0: not known yet, sent as untyped text); returns its format. */
export function writeParam(w: Writer, view: TypeView, values: readonly unknown[], i: number, oid: number): number {
  let v = values[i]
  if (v instanceof TypedValue) v = v.value
  if (v === null || v === undefined) {
    w.i32(-1)
    return 0
  }
  const at = w.reserve32()
  let format: number
  if (oid === 0) {
    w.str(toText(v, i + 1)!)
    format = 0
  } else {
    try {
      format = view.writeParam(w, v, oid)
    } catch (err) {
      if (err instanceof CodecError) {
        throw new ParameterError(i + 1, `parameter $${i + 1} (${view.typeName(oid)}): ${err.message}`, { cause: err })
      }
      throw err
    }
  }
  w.patch32(at, w.length - at - 4)
  return format
}
