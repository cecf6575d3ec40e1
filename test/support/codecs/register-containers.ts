import type { Codec, ResolvedTypeOptions } from '../../../src/types/codec.js'
import { registerArrays } from '../../../src/types/codecs/array.js'
import { registerMultiranges } from '../../../src/types/codecs/multirange.js'
import { registerRanges } from '../../../src/types/codecs/range.js'
import { registerRecord } from '../../../src/types/codecs/record.js'

/** Every built-in container type (ranges, multiranges, record, arrays) built on the codecs already in `table`, in the order the built-in table adds them. */
export function registerContainers(table: Map<number, Codec>, options: ResolvedTypeOptions): void {
  registerRanges(table, options)
  registerMultiranges(table, options)
  registerRecord(table, options)
  registerArrays(table, options)
}
