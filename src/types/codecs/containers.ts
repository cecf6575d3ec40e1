import type { Codec, ResolvedTypeOptions } from '../codec.js'
import { registerArrays } from './array.js'
import { registerMultiranges } from './multirange.js'
import { registerRanges } from './range.js'
import { registerRecord } from './record.js'

/**
 * Adds every built-in container type (ranges, multiranges, record, arrays)
 * built on the codecs already in `table`: call it after the scalar types are
 * registered. The order matters: ranges before multiranges, both before arrays.
 */
export function registerContainers(table: Map<number, Codec>, options: ResolvedTypeOptions): void {
  registerRanges(table, options)
  registerMultiranges(table, options)
  registerRecord(table, options)
  registerArrays(table, options)
}

export { arrayCodec, registerArrays } from './array.js'
export { compositeCodec, type CompositeAttribute } from './composite.js'
export { multirangeCodec, registerMultiranges } from './multirange.js'
export { rangeCodec, registerRanges } from './range.js'
export { recordCodec, registerRecord, RECORD_OID } from './record.js'
export { Range, type RangeBounds } from '../range.js'
