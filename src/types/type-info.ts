import { BUILTIN_TYPES } from './builtin-types.js'

/**
 * What the client knows of a type from the catalog: enough to build its codec
 * from the codecs of the types it is made of. Built-in types come from the
 * generated table; others are learned from pg_type the first time they are seen.
 */
export interface TypeInfo {
  oid: number
  /** Unqualified name ('int4', 'mood'). */
  name: string
  /** Schema, for user types ('public'); 'pg_catalog' for built-ins. */
  schema: string
  /** b base, c composite, d domain, e enum, p pseudo, r range, m multirange; 'A' marks an array type. */
  kind: 'b' | 'c' | 'd' | 'e' | 'p' | 'r' | 'm' | 'A'
  /** Element type of an array. */
  elem: number
  /** Array delimiter of the element type (',' except for box). */
  delimiter: string
  /** Base type of a domain. */
  base: number
  /** Subtype of a range; the range of a multirange. */
  subtype: number
  /** Attributes of a composite type, in order, without dropped ones. */
  attributes: readonly { name: string; oid: number }[]
}

function builtinInfo(row: (typeof BUILTIN_TYPES)[number]): TypeInfo {
  const [oid, name, , elem, delim, kind, category, len, rangeSubtype] = row
  // A true array has category 'A' and variable length; fixed-length types with an
  // element type (point, name, ...) are subscriptable base types, not arrays.
  const isArray = category === 'A' && len === -1
  return {
    oid,
    name,
    schema: 'pg_catalog',
    kind: isArray ? 'A' : (kind as TypeInfo['kind']),
    elem: isArray ? elem : 0,
    delimiter: delim,
    base: 0,
    subtype: rangeSubtype,
    attributes: [],
  }
}

// The maps below are built by their first use (the first query's types), not at import.

let infos: ReadonlyMap<number, TypeInfo> | undefined
let oids: ReadonlyMap<string, number> | undefined

/** Built-in types by OID, with multiranges pointing at their range. */
export function builtinInfos(): ReadonlyMap<number, TypeInfo> {
  return (infos ??= makeInfos())
}

/** Built-in type OIDs by name, including 'int4[]' style array names, for typed parameters. */
export function builtinOids(): ReadonlyMap<string, number> {
  return (oids ??= makeOids())
}

function makeInfos(): ReadonlyMap<number, TypeInfo> {
  const map = new Map<number, TypeInfo>()
  for (const row of BUILTIN_TYPES) map.set(row[0], builtinInfo(row))
  for (const row of BUILTIN_TYPES) {
    const multirange = row[9]
    const info = map.get(multirange)
    if (multirange !== 0 && info !== undefined) info.subtype = row[0]
  }
  return map
}

function makeOids(): ReadonlyMap<string, number> {
  const map = new Map<string, number>()
  for (const row of BUILTIN_TYPES) {
    const [oid, name, array] = row
    if (!name.startsWith('_')) {
      map.set(name, oid)
      if (array !== 0) map.set(`${name}[]`, array)
    }
  }
  for (const [alias, name] of [
    ['integer', 'int4'],
    ['int', 'int4'],
    ['smallint', 'int2'],
    ['bigint', 'int8'],
    ['real', 'float4'],
    ['double precision', 'float8'],
    ['boolean', 'bool'],
    ['decimal', 'numeric'],
    ['character varying', 'varchar'],
    ['character', 'bpchar'],
    ['timestamp without time zone', 'timestamp'],
    ['timestamp with time zone', 'timestamptz'],
    ['time without time zone', 'time'],
    ['time with time zone', 'timetz'],
  ] as const) {
    const oid = map.get(name)!
    map.set(alias, oid)
    const arrayOid = map.get(`${name}[]`)
    if (arrayOid !== undefined) map.set(`${alias}[]`, arrayOid)
  }
  return map
}
