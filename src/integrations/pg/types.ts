import { builtinParsers, parseArray, type TextParser } from './parsers.js'

// pg's type-parser registry: one global table (pg.types), overridden per client
// or pool by the `types` option and client.setTypeParser(). Results are always
// requested in text, so 'binary' parsers can be registered but are never used.

export type TypeFormat = 'text' | 'binary'

/** What pg accepts as the `types` option of a client, a pool or a query. */
export interface TypeParserSource {
  getTypeParser(oid: number, format?: TypeFormat): TextParser
}

const textParsers = new Map<number, TextParser>(builtinParsers)
const binaryParsers = new Map<number, TextParser>()

/** The identity parser pg uses for types it has no parser for. */
const noParse: TextParser = (t) => String(t)

function table(format: TypeFormat | undefined): Map<number, TextParser> | undefined {
  if (format === undefined || format === 'text') return textParsers
  if (format === 'binary') return binaryParsers
  return undefined
}

function checkOid(oid: unknown): number {
  if (typeof oid !== 'number' || !Number.isInteger(oid) || oid < 0) throw new TypeError(`setTypeParser needs a type OID (a non-negative integer), not ${JSON.stringify(oid)}`)
  return oid
}

export function getTypeParser(oid: number, format?: TypeFormat): TextParser {
  return table(format)?.get(oid) ?? noParse
}

export function setTypeParser(oid: number, format: TypeFormat | TextParser, parser?: TextParser): void {
  const [fmt, fn] = typeof format === 'function' ? ['text' as const, format] : [format, parser]
  if (typeof fn !== 'function') throw new TypeError('setTypeParser needs a parser function')
  const t = table(fmt)
  if (t === undefined) throw new TypeError(`setTypeParser: format must be 'text' or 'binary', not ${JSON.stringify(fmt)}`)
  t.set(checkOid(oid), fn)
}

/** Built-in type OIDs by name, as pg.types.builtins gives them. */
export const builtins = Object.freeze({
  BOOL: 16, BYTEA: 17, CHAR: 18, INT8: 20, INT2: 21, INT4: 23, REGPROC: 24, TEXT: 25, OID: 26, TID: 27, XID: 28, CID: 29,
  JSON: 114, XML: 142, PG_NODE_TREE: 194, SMGR: 210, PATH: 602, POLYGON: 604, CIDR: 650, FLOAT4: 700, FLOAT8: 701,
  ABSTIME: 702, RELTIME: 703, TINTERVAL: 704, CIRCLE: 718, MACADDR8: 774, MONEY: 790, MACADDR: 829, INET: 869,
  ACLITEM: 1033, BPCHAR: 1042, VARCHAR: 1043, DATE: 1082, TIME: 1083, TIMESTAMP: 1114, TIMESTAMPTZ: 1184,
  INTERVAL: 1186, TIMETZ: 1266, BIT: 1560, VARBIT: 1562, NUMERIC: 1700, REFCURSOR: 1790, REGPROCEDURE: 2202,
  REGOPER: 2203, REGOPERATOR: 2204, REGCLASS: 2205, REGTYPE: 2206, UUID: 2950, TXID_SNAPSHOT: 2970, PG_LSN: 3220,
  PG_NDISTINCT: 3361, PG_DEPENDENCIES: 3402, TSVECTOR: 3614, TSQUERY: 3615, GTSVECTOR: 3642, REGCONFIG: 3734,
  REGDICTIONARY: 3769, JSONB: 3802, REGNAMESPACE: 4089, REGROLE: 4096,
})

/** pg.types: the global registry. */
export const types = {
  getTypeParser,
  setTypeParser,
  builtins,
  arrayParser: {
    create(source: string, transform?: TextParser): { parse(): unknown[] } {
      return { parse: () => parseArray(source, transform) }
    },
  },
}

/**
 * Per client (or pool) parsers over another source (the `types` option, or
 * the global registry): what client.setTypeParser() changes.
 */
export class TypeOverrides implements TypeParserSource {
  private readonly text = new Map<number, TextParser>()
  private readonly binary = new Map<number, TextParser>()

  constructor(private readonly base: TypeParserSource = types) {}

  setTypeParser(oid: number, format: TypeFormat | TextParser, parser?: TextParser): void {
    const [fmt, fn] = typeof format === 'function' ? ['text' as const, format] : [format, parser]
    if (typeof fn !== 'function') throw new TypeError('setTypeParser needs a parser function')
    const t = fmt === 'binary' ? this.binary : fmt === 'text' ? this.text : undefined
    if (t === undefined) throw new TypeError(`setTypeParser: format must be 'text' or 'binary', not ${JSON.stringify(fmt)}`)
    t.set(checkOid(oid), fn)
  }

  getTypeParser(oid: number, format: TypeFormat = 'text'): TextParser {
    return (format === 'binary' ? this.binary : this.text).get(oid) ?? this.base.getTypeParser(oid, format)
  }
}

/** Checks a `types` option: anything with a getTypeParser function, as in pg. */
export function typeSource(v: unknown, where: string): TypeParserSource | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof (v as Partial<TypeParserSource>).getTypeParser !== 'function') throw new TypeError(`${where} needs a getTypeParser(oid, format) function`)
  return v as TypeParserSource
}
