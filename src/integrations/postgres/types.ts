import { TypedValue, type CustomType, type TypeOptions } from '../../index.js'

// The values postgres.js gives and takes, on pipegres's codecs. pipegres
// decodes results itself (in binary where it can), set up to give what
// postgres.js gives: int8 and numeric as strings, date, timestamp and
// timestamptz as Dates, json parsed, bytea as a Buffer. The types postgres.js
// leaves as the text PostgreSQL prints (interval, money, geometric types,
// ranges, record, void, ...) and those where pipegres's value would differ
// (float4, which binary gives as the exact float32; timestamp, which
// postgres.js reads in local time) are decoded from text here, as postgres.js
// does, arrays of them included. Types of the `types` option are registered
// the same way, by OID.

/** A type as postgres.js's `types` option gives it. */
export interface PostgresType {
  to: number
  from: number | number[] | null
  serialize?: (value: never) => unknown
  parse?: (text: string) => unknown
}

/** The type options under which pipegres's own decoding matches postgres.js's. */
export const typeOptions: TypeOptions = { int8: 'string', numeric: 'string', dates: 'date', timestamps: 'date' }

/** Element type → array type, for the built-in types (postgres.js learns them from pg_type; these are fixed). */
export const arrayOf: ReadonlyMap<number, number> = new Map([
  [16, 1000], [17, 1001], [18, 1002], [19, 1003], [20, 1016], [21, 1005], [23, 1007], [25, 1009], [26, 1028],
  [114, 199], [142, 143], [600, 1017], [601, 1018], [602, 1019], [603, 1020], [604, 1027], [628, 629], [650, 651],
  [700, 1021], [701, 1022], [718, 719], [774, 775], [790, 791], [829, 1040], [869, 1041], [1042, 1014], [1043, 1015],
  [1082, 1182], [1083, 1183], [1114, 1115], [1184, 1185], [1186, 1187], [1266, 1270], [1560, 1561], [1562, 1563],
  [1700, 1231], [2249, 2287], [2278, 0], [2950, 2951], [3220, 3221], [3614, 3643], [3615, 3645], [3802, 3807],
  [3904, 3905], [3906, 3907], [3908, 3909], [3910, 3911], [3912, 3913], [3926, 3927], [28, 1011], [29, 1012],
])

/** Types postgres.js leaves as PostgreSQL's text, where pipegres would give another value. */
const TEXT_TYPES = [
  1186, 790, 600, 601, 602, 603, 604, 628, 718, 2249, 28, 29, 5069, 22, 30, 2278,
  3904, 3906, 3908, 3910, 3912, 3926, 4451, 4532, 4533, 4534, 4535, 4536,
]

const identity = (x: string): string => x

/**
 * Parses an array's text form with `parse` for each element (box[] separates
 * its elements with ';', every other built-in type with ','). NULL elements
 * are null; nested arrays nest.
 */
export function parseArray(text: string, parse: (x: string) => unknown, delimiter = ','): unknown {
  let i = 0
  // A non-default lower bound prefix ('[0:2]={...}') is dropped, as postgres.js does.
  if (text.charCodeAt(0) === 91 /* [ */) i = text.indexOf('=') + 1
  const level = (): unknown[] => {
    const out: unknown[] = []
    i++ // the '{'
    while (i < text.length) {
      const c = text[i]
      if (c === '}') {
        i++
        return out
      }
      if (c === delimiter) {
        i++
        continue
      }
      if (c === '{') {
        out.push(level())
        continue
      }
      if (c === '"') {
        let s = ''
        i++
        while (i < text.length && text[i] !== '"') {
          if (text[i] === '\\') i++
          s += text[i]
          i++
        }
        i++
        out.push(parse(s))
        continue
      }
      let end = i
      while (end < text.length && text[end] !== delimiter && text[end] !== '}') end++
      const raw = text.slice(i, end)
      out.push(raw === 'NULL' ? null : parse(raw))
      i = end
    }
    return out
  }
  return level()
}

/** Writes an array's text form, each element through `serialize` (quoted, escaped). */
export function serializeArray(xs: unknown, serialize: (x: never) => unknown, delimiter = ','): string {
  if (!Array.isArray(xs)) return String(serialize(xs as never))
  const parts = xs.map((x) => {
    if (x === null || x === undefined) return 'NULL'
    if (x instanceof TypedValue) return `"${String(serialize(x.value as never)).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
    if (Array.isArray(x)) return serializeArray(x, serialize, delimiter)
    const v = x
    return `"${String(serialize(v as never)).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
  })
  return `{${parts.join(delimiter)}}`
}

/** A custom pipegres type for an element OID and its array, from a text parser and serializer. */
function textTypes(oid: number, parse: ((x: string) => unknown) | undefined, serialize: ((x: never) => unknown) | undefined): CustomType[] {
  const out: CustomType[] = [{ oid, parse, serialize: serialize === undefined ? undefined : (v) => String(serialize(v as never)) }]
  const array = arrayOf.get(oid)
  if (array !== undefined && array !== 0) {
    const delimiter = oid === 603 ? ';' : ','
    out.push({
      oid: array,
      parse: (t) => parseArray(t, parse ?? identity, delimiter),
      serialize: (v) => serializeArray(v, serialize ?? ((x: never) => String(x)), delimiter),
    })
  }
  return out
}

/** The custom pipegres types for postgres.js's defaults and the application's `types`. */
export function customTypes(user: Record<string, PostgresType>): CustomType[] {
  const byOid = new Map<number, CustomType>()
  const add = (ts: CustomType[]): void => {
    for (const t of ts) byOid.set(t.oid!, t)
  }
  for (const oid of TEXT_TYPES) add(textTypes(oid, undefined, undefined))
  add(textTypes(700, (x) => +x, undefined))
  add(textTypes(1114, (x) => new Date(x), (x: never) => ((x as unknown) instanceof Date ? (x as Date).toISOString() : String(x))))
  for (const [name, t] of Object.entries(user)) {
    if (t === null || typeof t !== 'object') throw new TypeError(`types.${name} must be an object { to, from, serialize, parse }`)
    const froms = t.from === null || t.from === undefined ? [] : Array.isArray(t.from) ? t.from : [t.from]
    for (const oid of froms) {
      if (!Number.isInteger(oid) || oid <= 0) throw new TypeError(`types.${name}.from must be type OIDs, not ${JSON.stringify(t.from)}`)
      add(textTypes(oid, t.parse, t.serialize))
    }
    if (Number.isInteger(t.to) && t.to > 0 && t.serialize !== undefined && !froms.includes(t.to)) add(textTypes(t.to, undefined, t.serialize))
  }
  return [...byOid.values()]
}

/**
 * The type postgres.js gives a parameter from its JS value: timestamptz for a
 * Date, bytea for bytes, bool, int8 for a bigint; 0 (the server infers it)
 * for anything else. Arrays take their first element's.
 */
export function inferType(x: unknown): number {
  if (x instanceof TypedValue) return x.oid
  if (x instanceof Date) return 1184
  if (x instanceof Uint8Array) return 17
  if (x === true || x === false) return 16
  if (typeof x === 'bigint') return 20
  if (Array.isArray(x)) return inferType(x[0])
  return 0
}

const TIMESTAMPTZ = 1184
const BYTEA = 17
const BOOL = 16
const INT8 = 20

/**
 * A parameter as pipegres gets it: the types postgres.js would send
 * explicitly (see inferType) are given with typed values, so that
 * `select ${true}` is a bool as it is there, not text.
 */
export function param(x: unknown): unknown {
  if (x === null || typeof x === 'string' || typeof x === 'number') return x
  if (x === true || x === false) return new TypedValue(x, BOOL, 'bool')
  if (x instanceof Date) return new TypedValue(x, TIMESTAMPTZ, 'timestamptz')
  if (typeof x === 'bigint') return new TypedValue(x, INT8, 'int8')
  if (x instanceof Uint8Array) return new TypedValue(x, BYTEA, 'bytea')
  return x
}

/** sql.array(xs, type?): an array parameter of the array type of `type` (or of its elements' inferred type, text by default). */
export function arrayParam(xs: unknown[], type: number | undefined, userTypes: ReadonlySet<number>): unknown {
  const elem = type ?? (xs.length > 0 ? inferType(xs) || 25 : 0)
  // Elements of a type of the application's keep their type: its serializer writes them.
  const unwrapped = xs[0] instanceof TypedValue && userTypes.has(xs[0].oid) ? xs : unwrap(xs)
  // An empty array of no given type: the server infers it, as postgres.js lets it.
  if (elem === 0) return unwrapped
  const array = arrayOf.get(elem) ?? elem
  return new TypedValue(unwrapped, array, `type ${array}`)
}

function unwrap(xs: unknown[]): unknown[] {
  return xs.map((x) => (x instanceof TypedValue ? x.value : Array.isArray(x) ? unwrap(x) : x))
}
