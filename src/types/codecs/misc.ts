import { CodecError, type Codec, type ResolvedTypeOptions } from '../codec.js'
import { malformed } from './scalar-errors.js'
import { textOnlyCodec, textOnlyParamCodec } from './text.js'

// void (what a function returning nothing gives back) and the system types that
// are read as strings only.

function decodeVoid(_buf: Uint8Array, start: number, end: number): null {
  if (end !== start) throw malformed('void', 'not empty')
  return null
}

export const voidCodec: Codec = {
  name: 'void',
  decodeText: decodeVoid,
  decodeBinary: decodeVoid,
  encodeText: () => {
    throw new CodecError('void values cannot be sent as parameters')
  },
}

// Their binary form is internal (statistics, snapshots) or absent (aclitem), so
// results come in text, as strings.
const TEXT_ONLY: readonly [number, string][] = [
  [1033, 'aclitem'],
  [2970, 'txid_snapshot'],
  [5038, 'pg_snapshot'],
  [3361, 'pg_ndistinct'],
  [3402, 'pg_dependencies'],
  [5017, 'pg_mcv_list'],
  [4600, 'pg_brin_bloom_summary'],
  [4601, 'pg_brin_minmax_multi_summary'],
]

export function registerMisc(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(2278, voidCodec) // void
  // pg_node_tree (view and default expressions in the catalogs): binary is the text.
  table.set(194, textOnlyParamCodec('pg_node_tree'))
  for (const [oid, name] of TEXT_ONLY) table.set(oid, textOnlyCodec(name))
}
