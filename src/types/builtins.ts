import { defaultTypeOptions, typeOptionsKey, type Codec, type ResolvedTypeOptions } from './codec.js'
import { registerArrays } from './codecs/array.js'
import { registerDateCodecs } from './codecs/date.js'
import { registerIntervalCodecs } from './codecs/interval.js'
import { registerScalars } from './codecs/scalars.js'
import { registerTemporalCodecs } from './codecs/temporal.js'
import { registerTimeCodecs } from './codecs/time.js'
import { registerTimestampCodecs } from './codecs/timestamp.js'

// The codecs of the built-in types, in two parts. The common ones (numbers,
// text, bytea, json, uuid, dates and times, and arrays of them) are here from
// the start. The rarer ones (network addresses, geometry, bit strings, text
// search, ranges, multiranges, records, composites: codecs/extra.ts) load the
// first time a connection meets one of their types, or any type it has to look
// up in pg_type: the exchange holds the rows meanwhile, as it does for a lookup.
// A program that never meets them never loads (or bundles up front) their code.

type Extra = typeof import('./codecs/extra.js')

const tables = new Map<string, { table: Map<number, Codec>; options: ResolvedTypeOptions }>()
let extra: Extra | null = null
let loading: Promise<void> | null = null
let coreOids: ReadonlySet<number> | null = null

/**
 * Bumped when the rarer codecs arrive: every catalog adds it to its version,
 * so the codecs and plans made before are made again.
 */
export let builtinsEpoch = 0

/**
 * The codecs of every built-in type loaded so far, for one set of options:
 * built once and shared (read-only) by every view with those options. Arrays
 * come last: they are built on their element codecs.
 */
export function builtinCodecs(options: ResolvedTypeOptions): ReadonlyMap<number, Codec> {
  const key = typeOptionsKey(options)
  let entry = tables.get(key)
  if (entry === undefined) {
    const t = new Map<number, Codec>()
    registerScalars(t, options)
    registerDateCodecs(t, options)
    registerTimeCodecs(t, options)
    registerTimestampCodecs(t, options)
    registerIntervalCodecs(t, options)
    registerTemporalCodecs(t, options)
    extra?.registerExtraCodecs(t, options)
    registerArrays(t, options)
    entry = { table: t, options }
    tables.set(key, entry)
  }
  return entry.table
}

/**
 * True when the built-in type `oid` (the caller knows it is one) has a codec
 * that has not loaded yet: a connection that meets it loads them
 * (loadExtraCodecs) before it reads the rows or writes a parameter that needs
 * it. Built-in types with no codec at all count too, until the load tells.
 */
export function awaitsCodec(oid: number): boolean {
  if (extra !== null) return false
  coreOids ??= new Set(builtinCodecs(defaultTypeOptions).keys())
  return !coreOids.has(oid)
}

/** The constructors of the codecs of composite, range, multirange and record types, once loaded (null before). */
export function extraCodecs(): Extra | null {
  return extra
}

/**
 * Loads the rarer codecs (once per process) and adds them to every table
 * built so far. Rejects only when the module cannot load (a bundle that lost
 * its chunk); a later call tries again.
 */
export function loadExtraCodecs(): Promise<void> {
  loading ??= import('./codecs/extra.js').then(
    (m) => {
      for (const { table, options } of tables.values()) {
        m.registerExtraCodecs(table, options)
        registerArrays(table, options)
      }
      extra = m
      builtinsEpoch++
    },
    (err: unknown) => {
      loading = null
      throw err
    },
  )
  return loading
}
