import type { Codec, ResolvedTypeOptions } from '../codec.js'
import { registerBitStringCodecs } from './bit-string.js'
import { registerGeometricCodecs } from './geometric.js'
import { registerMacAddressCodecs } from './mac-address.js'
import { registerMultiranges } from './multirange.js'
import { registerNetworkCodecs } from './network.js'
import { registerRanges } from './range.js'
import { registerRecord } from './record.js'
import { registerTextSearchCodecs } from './text-search.js'

// The codecs loaded on first use (see builtins.ts): types most programs never
// meet, and the constructors of the codecs of types learned from pg_type.

/** Adds the rarer built-in codecs to `table`; arrays of them are added after (registerArrays). Ranges before multiranges. */
export function registerExtraCodecs(table: Map<number, Codec>, options: ResolvedTypeOptions): void {
  registerNetworkCodecs(table, options)
  registerMacAddressCodecs(table, options)
  registerBitStringCodecs(table, options)
  registerGeometricCodecs(table, options)
  registerTextSearchCodecs(table, options)
  registerRanges(table, options)
  registerMultiranges(table, options)
  registerRecord(table, options)
}

export { compositeCodec } from './composite.js'
export { multirangeCodec } from './multirange.js'
export { rangeCodec } from './range.js'
export { recordCodec } from './record.js'
