import type { ReplicationConnection } from './replication-connection.js'
import type { TypeCatalog } from '../types/catalog.js'
import { loadExtraCodecs } from '../types/builtins.js'
import type { TypeInfo } from '../types/type-info.js'

// Before a stream starts, the types of the published columns that the
// catalog does not know (enums, domains, composites, ranges of the
// application's own) are looked up over the replication connection itself:
// its walsender takes SQL through the simple protocol, and the values then
// decode as a query's would. A type added while streaming stays unknown and
// decodes as the text PostgreSQL prints.

const sqlList = (items: readonly string[]): string => items.map((s) => `'${s.replaceAll("'", "''")}'`).join(', ')

/** Column types of every table of the publications. */
function publishedTypesSql(publications: readonly string[]): string {
  return `SELECT DISTINCT a.atttypid::int8 AS oid
  FROM pg_catalog.pg_publication_tables pt
  JOIN pg_catalog.pg_namespace n ON n.nspname = pt.schemaname
  JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename
  JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  WHERE pt.pubname IN (${sqlList(publications)})`
}

/** The types asked for and what they are built from, one row each; multiranges (pg_range.rngmultitypid) exist from PostgreSQL 14. */
function typeInfoSql(oids: readonly number[], multirange: boolean): string {
  return `WITH RECURSIVE need(oid) AS (
    SELECT unnest(ARRAY[${oids.join(',')}]::oid[])
    UNION
    SELECT part.oid FROM need JOIN pg_catalog.pg_type t ON t.oid = need.oid
    CROSS JOIN LATERAL (
      SELECT t.typelem UNION ALL SELECT t.typbasetype
      UNION ALL SELECT r.rngsubtype FROM pg_catalog.pg_range r WHERE r.rngtypid = t.oid
      ${multirange ? 'UNION ALL SELECT r.rngtypid FROM pg_catalog.pg_range r WHERE r.rngmultitypid = t.oid' : ''}
      UNION ALL SELECT a.atttypid FROM pg_catalog.pg_attribute a WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
    ) part(oid)
    WHERE part.oid <> 0
  )
  SELECT t.oid::int8 AS oid, t.typname::text AS name, s.nspname::text AS schema, t.typtype::text AS kind,
         t.typcategory::text AS category, t.typlen::int4 AS len, t.typelem::int8 AS elem, e.typdelim::text AS delimiter,
         t.typbasetype::int8 AS base, COALESCE(r.rngsubtype, ${multirange ? 'm.rngtypid, ' : ''}0)::int8 AS subtype,
         ARRAY(SELECT a.attname::text FROM pg_catalog.pg_attribute a WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) AS attnames,
         ARRAY(SELECT a.atttypid::int8 FROM pg_catalog.pg_attribute a WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) AS atttypes
    FROM need JOIN pg_catalog.pg_type t ON t.oid = need.oid
    JOIN pg_catalog.pg_namespace s ON s.oid = t.typnamespace
    LEFT JOIN pg_catalog.pg_type e ON e.oid = t.typelem
    LEFT JOIN pg_catalog.pg_range r ON r.rngtypid = t.oid
    ${multirange ? 'LEFT JOIN pg_catalog.pg_range m ON m.rngmultitypid = t.oid' : ''}`
}

interface InfoRow {
  oid: bigint
  name: string
  schema: string
  kind: string
  category: string
  len: number
  elem: bigint
  delimiter: string | null
  base: bigint
  subtype: bigint
  attnames: string[]
  atttypes: bigint[]
}

/** Teaches the catalog the published column types it does not know. Failures leave them unknown (text). */
export async function learnPublishedTypes(conn: ReplicationConnection, catalog: TypeCatalog, publications: readonly string[]): Promise<void> {
  try {
    const rows = await conn.command<{ oid: bigint }>(publishedTypesSql(publications))
    let unknown = rows.map((r) => Number(r.oid)).filter((oid) => !catalog.knows(oid))
    if (unknown.length === 0) return
    // Built-in types whose codecs load on first use, and the codecs of composites and ranges (see types/builtins.ts).
    await loadExtraCodecs().catch(() => undefined)
    unknown = unknown.filter((oid) => !catalog.knows(oid))
    if (unknown.length === 0) return
    const infos = (await conn.command<InfoRow>(typeInfoSql(unknown, conn.serverMajor >= 14))).filter((r) => !catalog.knows(Number(r.oid))).map(toInfo)
    if (infos.length > 0) catalog.learn(infos)
  } catch {
    // The stream works without: unknown types decode as text.
  }
}

function toInfo(r: InfoRow): TypeInfo {
  const isArray = r.category === 'A' && r.len === -1 && r.elem !== 0n
  return {
    oid: Number(r.oid),
    name: r.name,
    schema: r.schema,
    kind: isArray ? 'A' : (r.kind as TypeInfo['kind']),
    elem: isArray ? Number(r.elem) : 0,
    delimiter: r.delimiter ?? ',',
    base: Number(r.base),
    subtype: Number(r.subtype),
    attributes: r.attnames.map((name, i) => ({ name, oid: Number(r.atttypes[i] ?? 0) })),
  }
}
