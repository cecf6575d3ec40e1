// The types pipegres/wire decodes from binary. A server that forwards raw
// protocol messages to a browser asks for binary results only for these
// columns and text for the rest, so that every column the browser receives is
// one it can decode exactly. No imports: the server side reads this list
// without loading the parser.

const SCALARS = [
  16, // bool
  17, // bytea
  18, // "char"
  19, // name
  20, // int8
  21, // int2
  23, // int4
  25, // text
  26, // oid
  114, // json
  700, // float4
  701, // float8
  1042, // bpchar
  1043, // varchar
  1082, // date
  1083, // time
  1114, // timestamp
  1184, // timestamptz
  1186, // interval
  1266, // timetz
  1700, // numeric
  2950, // uuid
  3802, // jsonb
]

const ARRAYS = [
  1000, // bool[]
  1001, // bytea[]
  1002, // "char"[]
  1003, // name[]
  1016, // int8[]
  1005, // int2[]
  1007, // int4[]
  1009, // text[]
  1028, // oid[]
  199, // json[]
  1021, // float4[]
  1022, // float8[]
  1014, // bpchar[]
  1015, // varchar[]
  1182, // date[]
  1183, // time[]
  1115, // timestamp[]
  1185, // timestamptz[]
  1187, // interval[]
  1270, // timetz[]
  1231, // numeric[]
  2951, // uuid[]
  3807, // jsonb[]
]

/** Type OIDs whose binary form pipegres/wire decodes; every other column should be sent as text. */
export const WIRE_BINARY_OIDS: ReadonlySet<number> = new Set([...SCALARS, ...ARRAYS])

/** Whether pipegres/wire decodes values of this type OID in binary. */
export function binaryDecodable(typeOid: number): boolean {
  return WIRE_BINARY_OIDS.has(typeOid)
}
