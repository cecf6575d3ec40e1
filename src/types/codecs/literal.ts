import { utf8Length, utf8Read, utf8Write } from '../../protocol/utf8.js'
import { CodecError, describeValue } from '../codec.js'
import type { Range } from '../range.js'
import { formatArrayText, parseArrayText } from './array-text.js'
import { quoteCompositeField } from './literal-syntax.js'
import { parseRangeText } from './range.js'
import { parseRecordText } from './record.js'

// PostgreSQL's container literals at the level of strings, for code that meets
// them outside a codec (a custom type's text form, a value built by hand). The
// codecs themselves work on bytes with the same functions.

export { quoteArrayElement, quoteCompositeField, quoteRangeBound } from './literal-syntax.js'
export { formatArrayText, parseArrayText } from './array-text.js'
export { parseRangeText } from './range.js'
export { parseRecordText } from './record.js'

function bytesOf(text: string): Uint8Array {
  const buf = new Uint8Array(utf8Length(text))
  utf8Write(buf, 0, text)
  return buf
}

/**
 * Parses an array literal ('{a,"b c",NULL}', '[0:1]={1,2}') into nested arrays
 * of element strings, null for NULL; non-default lower bounds are in the
 * outermost array's non-enumerable `lowerBounds`.
 */
export function parseArrayLiteral(text: string, delimiter = ','): unknown[] {
  const buf = bytesOf(text)
  return parseArrayText(buf, 0, buf.length, utf8Read, delimiter.charCodeAt(0), 'array')
}

function scalarText(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return v
    case 'number':
    case 'bigint':
    case 'boolean':
      return String(v)
    default:
      if (v instanceof Date) return v.toISOString()
      throw new CodecError(`an array literal element needs a string, number, bigint, boolean or Date; got ${describeValue(v)}`)
  }
}

/** Prints nested arrays of strings (numbers, bigints, booleans, Dates; null for NULL) as an array literal. */
export function formatArrayLiteral(value: ArrayLike<unknown>, delimiter = ','): string {
  return formatArrayText(value, scalarText, delimiter, false, 'array')
}

/** Parses a composite literal ('(1,"a b",)') into its fields as strings, null for NULL. */
export function parseCompositeLiteral(text: string): (string | null)[] {
  const buf = bytesOf(text)
  return parseRecordText(buf, 0, buf.length)
}

/** Prints fields (strings, null for NULL) as a composite literal. */
export function formatCompositeLiteral(fields: readonly (string | null)[]): string {
  let s = '('
  for (let i = 0; i < fields.length; i++) {
    if (i > 0) s += ','
    const f = fields[i]
    if (f !== null && f !== undefined) s += quoteCompositeField(f)
  }
  return s + ')'
}

/** Parses a range literal ('[1,5)', '(,"a b"]', 'empty') into a Range of bound strings. */
export function parseRangeLiteral(text: string): Range<string> {
  const buf = bytesOf(text)
  return parseRangeText(buf, 0, buf.length, utf8Read, 'range') as Range<string>
}
