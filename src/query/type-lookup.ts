import type { Request } from '../connection/request.js'
import type { TypeInfo } from '../types/type-info.js'
import type { TypeView } from '../types/view.js'
import { ExtendedRequest } from './extended-request.js'
import type { TypeLookup } from './session.js'

// The catalog query that teaches a session the types it meets for the first
// time. Apart from the session, which it is handed to: a lookup is an
// extended query, and extended queries already depend on the session.

/** One round trip for every type asked for and every type they are made of. */
export const lookupTypeInfos: TypeLookup = (oids: readonly number[], serverMajor: number, view: TypeView, send: (req: Request) => void): Promise<TypeInfo[]> => {
  const req = ExtendedRequest.query(typeLookupSql(serverMajor), [oids], { rowMode: 'object', prepare: false, view }, null)
  send(req)
  return req.promise.then((result) => (result.rows as LookupRow[]).map(toTypeInfo))
}

interface LookupRow {
  oid: number
  name: string
  schema: string
  kind: string
  category: string
  len: number
  elem: number
  delimiter: string | null
  base: number
  subtype: number
  attnames: string[]
  atttypes: number[]
}

function toTypeInfo(r: LookupRow): TypeInfo {
  const isArray = r.category === 'A' && r.len === -1 && r.elem !== 0
  return {
    oid: r.oid,
    name: r.name,
    schema: r.schema,
    kind: isArray ? 'A' : (r.kind as TypeInfo['kind']),
    elem: isArray ? r.elem : 0,
    delimiter: r.delimiter ?? ',',
    base: r.base,
    subtype: r.subtype,
    attributes: r.attnames.map((name, i) => ({ name, oid: r.atttypes[i]! })),
  }
}

/**
 * Every type asked for, and every type those are made of (array elements,
 * domain bases, range subtypes, the range of a multirange, composite
 * attributes), in one round trip. Multiranges exist from PostgreSQL 14.
 */
function typeLookupSql(major: number): string {
  const multirange = major >= 14
  return `WITH RECURSIVE wanted(oid) AS (
  SELECT unnest($1::oid[])
  UNION
  SELECT dep.oid FROM wanted w JOIN pg_catalog.pg_type t ON t.oid = w.oid
  CROSS JOIN LATERAL (
    SELECT t.typelem WHERE t.typelem <> 0
    UNION ALL SELECT t.typbasetype WHERE t.typbasetype <> 0
    UNION ALL SELECT r.rngsubtype FROM pg_catalog.pg_range r WHERE r.rngtypid = t.oid
    ${multirange ? 'UNION ALL SELECT r.rngtypid FROM pg_catalog.pg_range r WHERE r.rngmultitypid = t.oid' : ''}
    UNION ALL SELECT a.atttypid FROM pg_catalog.pg_attribute a WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
  ) dep(oid)
)
SELECT t.oid AS oid, t.typname::text AS name, n.nspname::text AS schema, t.typtype::text AS kind,
       t.typcategory::text AS category, t.typlen::int AS len, t.typelem AS elem,
       e.typdelim::text AS delimiter, t.typbasetype AS base,
       COALESCE(r.rngsubtype, ${multirange ? 'm.rngtypid, ' : ''}0::oid) AS subtype,
       ARRAY(SELECT a.attname::text FROM pg_catalog.pg_attribute a
              WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) AS attnames,
       ARRAY(SELECT a.atttypid FROM pg_catalog.pg_attribute a
              WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) AS atttypes
  FROM wanted w
  JOIN pg_catalog.pg_type t ON t.oid = w.oid
  JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
  LEFT JOIN pg_catalog.pg_type e ON e.oid = t.typelem
  LEFT JOIN pg_catalog.pg_range r ON r.rngtypid = t.oid
  ${multirange ? 'LEFT JOIN pg_catalog.pg_range m ON m.rngmultitypid = t.oid' : ''}`
}
