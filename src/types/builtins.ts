import { typeOptionsKey, type Codec, type ResolvedTypeOptions } from './codec.js'
import { registerBitStringCodecs } from './codecs/bit-string.js'
import { registerContainers } from './codecs/containers.js'
import { registerDateCodecs } from './codecs/date.js'
import { registerGeometricCodecs } from './codecs/geometric.js'
import { registerIntervalCodecs } from './codecs/interval.js'
import { registerMacAddressCodecs } from './codecs/mac-address.js'
import { registerNetworkCodecs } from './codecs/network.js'
import { registerScalars } from './codecs/scalars.js'
import { registerTemporalCodecs } from './codecs/temporal.js'
import { registerTextSearchCodecs } from './codecs/text-search.js'
import { registerTimeCodecs } from './codecs/time.js'
import { registerTimestampCodecs } from './codecs/timestamp.js'

const tables = new Map<string, ReadonlyMap<number, Codec>>()

/**
 * The codecs of every built-in type for one set of options, built once and
 * shared (read-only) by every view with those options. Containers come last:
 * arrays, ranges and multiranges are built on the element codecs.
 */
export function builtinCodecs(options: ResolvedTypeOptions): ReadonlyMap<number, Codec> {
  const key = typeOptionsKey(options)
  let table = tables.get(key)
  if (table === undefined) {
    const t = new Map<number, Codec>()
    registerScalars(t, options)
    registerDateCodecs(t, options)
    registerTimeCodecs(t, options)
    registerTimestampCodecs(t, options)
    registerIntervalCodecs(t, options)
    registerTemporalCodecs(t, options)
    registerNetworkCodecs(t, options)
    registerMacAddressCodecs(t, options)
    registerBitStringCodecs(t, options)
    registerGeometricCodecs(t, options)
    registerTextSearchCodecs(t, options)
    registerContainers(t, options)
    tables.set(key, t)
    table = t
  }
  return table
}
