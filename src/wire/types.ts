import { binaryArrayDecoder, textArrayDecoder } from './arrays.js'
import type { ResolvedTypeOptions } from '../types/codec.js'
import { resolveTypeOptions, scalarTypes, type ScalarType } from './scalars.js'

// The decoders of every type pipegres/wire knows, scalars and their arrays,
// keyed by type OID. Built per set of type options.

/** [array type OID, element type OID] for every decoded array type. */
const ARRAY_OF: ReadonlyArray<readonly [number, number]> = [
  [1000, 16],
  [1001, 17],
  [1002, 18],
  [1003, 19],
  [1016, 20],
  [1005, 21],
  [1007, 23],
  [1009, 25],
  [1028, 26],
  [199, 114],
  [1021, 700],
  [1022, 701],
  [1014, 1042],
  [1015, 1043],
  [1182, 1082],
  [1183, 1083],
  [1115, 1114],
  [1185, 1184],
  [1187, 1186],
  [1270, 1266],
  [1231, 1700],
  [2951, 2950],
  [3807, 3802],
]

export function typeTable(o: ResolvedTypeOptions): Map<number, ScalarType> {
  const table = scalarTypes(o)
  for (const [arrayOid, elementOid] of ARRAY_OF) {
    const element = table.get(elementOid)!
    const name = `${element.name}[]`
    table.set(arrayOid, { name, text: textArrayDecoder(name, element.text), binary: binaryArrayDecoder(name, elementOid, element.binary) })
  }
  return table
}

let names: Map<number, string> | undefined

/** The name of a type pipegres/wire decodes ('int4', 'timestamptz[]'), or undefined for any other OID. */
export function wireTypeName(typeOid: number): string | undefined {
  names ??= new Map([...typeTable(resolveTypeOptions())].map(([oid, t]) => [oid, t.name]))
  return names.get(typeOid)
}
