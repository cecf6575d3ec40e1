import { ColumnTypeEnum, type ArgType, type ColumnType } from '@prisma/driver-adapter-utils'
import type { Field, TypeOptions } from '../../index.js'

// Prisma's query engine takes each column as one of its ColumnTypes, told by
// the type OID, and reads values in a few JS forms: numbers or strings for
// numbers (int8 as a string, to stay exact), strings for decimals, dates,
// times and datetimes, JSON as its text, bytes as a Uint8Array.

/** Type options under which pipegres values are what Prisma reads (exact strings for int8, numeric, timestamps, dates). */
export const prismaTypes: TypeOptions = { int8: 'string', numeric: 'string', timestamps: 'string', dates: 'string' }

type Convert = (v: unknown) => unknown

const jsonText: Convert = (v) => JSON.stringify(v)
/** Prisma reads a time with an offset as UTC, as its other PostgreSQL adapters do: the offset is dropped. */
const timeWithoutZone: Convert = (v) => (typeof v === 'string' ? v.replace(/[+-]\d{2}(:\d{2}){0,2}$/, '') : v)

function each(f: Convert): Convert {
  const walk = (v: unknown): unknown => (Array.isArray(v) ? v.map(walk) : v === null ? null : f(v))
  return walk
}

interface Column {
  type: ColumnType
  convert: Convert | null
}

// Built-in OIDs: scalar, then the array of it.
const builtins = new Map<number, Column>()
function add(oids: number[], type: ColumnType, convert: Convert | null = null): void {
  for (const oid of oids) builtins.set(oid, { type, convert })
}
add([21, 23], ColumnTypeEnum.Int32)
add([20, 26], ColumnTypeEnum.Int64)
add([700], ColumnTypeEnum.Float)
add([701], ColumnTypeEnum.Double)
add([1700], ColumnTypeEnum.Numeric)
add([16], ColumnTypeEnum.Boolean)
add([1082], ColumnTypeEnum.Date)
add([1083], ColumnTypeEnum.Time)
add([1266], ColumnTypeEnum.Time, timeWithoutZone)
add([1114, 1184], ColumnTypeEnum.DateTime)
add([114, 3802], ColumnTypeEnum.Json, jsonText)
add([2950], ColumnTypeEnum.Uuid)
// Text-like types pipegres reads as strings.
add([25, 1043, 1042, 19, 18, 142, 650, 869, 829, 774, 1560, 1562, 3220, 3614, 3615, 4072, 2205, 2206], ColumnTypeEnum.Text)
add([17], ColumnTypeEnum.Bytes)
add([1005, 1007], ColumnTypeEnum.Int32Array)
add([1016, 1028], ColumnTypeEnum.Int64Array)
add([1021], ColumnTypeEnum.FloatArray)
add([1022], ColumnTypeEnum.DoubleArray)
add([1231], ColumnTypeEnum.NumericArray)
add([1000], ColumnTypeEnum.BooleanArray)
add([1002], ColumnTypeEnum.CharacterArray)
add([1009, 1015, 1014, 1003, 143, 651, 1041, 1561, 1563, 1040, 775], ColumnTypeEnum.TextArray)
add([1182], ColumnTypeEnum.DateArray)
add([1183], ColumnTypeEnum.TimeArray)
add([1270], ColumnTypeEnum.TimeArray, each(timeWithoutZone))
add([1115, 1185], ColumnTypeEnum.DateTimeArray)
add([199, 3807], ColumnTypeEnum.JsonArray, each(jsonText))
add([1001], ColumnTypeEnum.BytesArray)
add([2951], ColumnTypeEnum.UuidArray)

/** Types of the server's own catalog end below this OID; above it are the database's own (enums, domains, extensions). */
const FIRST_USER_OID = 16384

export class UnsupportedColumn extends Error {
  constructor(readonly field: Field) {
    super(`column "${field.name}" has a type (OID ${field.typeOid}) that Prisma does not read`)
  }
}

/** The column types of a result and, for the few whose values need reshaping, how. */
export function columnsOf(fields: readonly Field[]): { types: ColumnType[]; converts: [number, Convert][] } {
  const types: ColumnType[] = []
  const converts: [number, Convert][] = []
  fields.forEach((f, i) => {
    const known = builtins.get(f.typeOid)
    if (known !== undefined) {
      types.push(known.type)
      if (known.convert !== null) converts.push([i, known.convert])
      return
    }
    // Enums, domains over text, extension types (citext, ...): pipegres gives
    // strings for the types it does not know; the engine decides by the schema.
    if (f.typeOid >= FIRST_USER_OID) {
      types.push(ColumnTypeEnum.Text)
      converts.push([i, each((v) => (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : JSON.stringify(v)))])
      return
    }
    throw new UnsupportedColumn(f)
  })
  return { types, converts }
}

const twoDigits = (n: number): string => String(n).padStart(2, '0')

/** A Date as the time of day of its UTC clock, 'HH:MM:SS.mmm'. */
function utcTime(d: Date): string {
  return `${twoDigits(d.getUTCHours())}:${twoDigits(d.getUTCMinutes())}:${twoDigits(d.getUTCSeconds())}.${String(d.getUTCMilliseconds()).padStart(3, '0')}`
}

function mapOne(arg: unknown, type: ArgType): unknown {
  if (arg === null || arg === undefined) return null
  if (arg instanceof Date) {
    const db = type.dbType?.toUpperCase()
    if (db === 'TIME' || db === 'TIMETZ') return utcTime(arg)
    if (db === 'DATE') return arg.toISOString().slice(0, 10)
    return arg
  }
  // Serialised raw-query parameters carry bytes as base64.
  if (type.scalarType === 'bytes' && typeof arg === 'string') return Buffer.from(arg, 'base64')
  return arg
}

/** Prisma's arguments as pipegres parameters: mostly as they are, since pipegres encodes by the server's parameter types. */
export function mapArgs(args: readonly unknown[], types: readonly ArgType[]): unknown[] {
  return args.map((arg, i) => {
    const type = types[i] ?? { scalarType: 'unknown', arity: 'scalar' }
    if (Array.isArray(arg) && type.arity === 'list') return arg.map((a) => mapOne(a, type))
    return mapOne(arg, type)
  })
}
