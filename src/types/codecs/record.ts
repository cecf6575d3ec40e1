import { utf8Read } from '../../protocol/utf8.js'
import { CodecError, type Codec, type ResolvedTypeOptions } from '../codec.js'
import { readInt32, readUint32 } from './binary.js'
import { COMMA, LPAREN, RPAREN, byteAt, decodeField, scanField, skipSpace } from './literal-syntax.js'

// The anonymous record type (ROW(1, 'a'), a function returning record). JS: an
// array of the field values.
// In binary each field carries its type OID, so fields decode with their own
// codecs (a field of a type without a binary codec comes back as a copy of its
// raw bytes). The text form carries no types: there every field is a string
// (null for NULL), and '()' reads as one NULL field, never as zero fields.
// Results of type record are therefore best requested in binary.
// PostgreSQL cannot read an anonymous record, so it is never a parameter.

export const RECORD_OID = 2249

export function recordCodec(lookup: (oid: number) => Codec | undefined): Codec {
  return {
    name: 'record',
    decodeText: parseRecordText,
    decodeBinary: (buf, start, end) => decodeRecordBinary(buf, start, end, lookup),
    encodeText: refuse,
    encodeBinary: refuse,
    preferBinary: true,
  }
}

function refuse(): never {
  throw new CodecError('PostgreSQL does not accept anonymous record parameters: cast to a named composite type instead')
}

export function parseRecordText(buf: Uint8Array, start: number, end: number): (string | null)[] {
  let p = skipSpace(buf, start, end)
  if (byteAt(buf, p, end) !== LPAREN) throw new CodecError('malformed record literal: it does not start with "("')
  p++
  const out: (string | null)[] = []
  for (;;) {
    p = scanField(buf, p, end, false, 'record')
    out.push(decodeField(buf, utf8Read) as string | null)
    const c = buf[p++]
    if (c === RPAREN) break
    if (c !== COMMA) throw new CodecError('malformed record literal')
  }
  if (skipSpace(buf, p, end) !== end) throw new CodecError('malformed record literal: junk after the closing ")"')
  return out
}

function decodeRecordBinary(buf: Uint8Array, start: number, end: number, lookup: (oid: number) => Codec | undefined): unknown[] {
  if (end - start < 4) throw new CodecError('malformed binary record: no column count')
  const n = readInt32(buf, start)
  let p = start + 4
  if (n < 0 || n * 8 > end - p) throw new CodecError(`malformed binary record: ${n} columns in ${end - p} bytes`)
  const out: unknown[] = new Array(n)
  for (let i = 0; i < n; i++) {
    if (end - p < 8) throw new CodecError('malformed binary record: truncated column')
    const oid = readUint32(buf, p)
    const len = readInt32(buf, p + 4)
    p += 8
    if (len === -1) {
      out[i] = null
      continue
    }
    if (len < 0 || len > end - p) throw new CodecError(`malformed binary record: column length ${len}`)
    const decode = lookup(oid)?.decodeBinary
    if (decode !== undefined) out[i] = decode(buf, p, p + len)
    else {
      const copy = new Uint8Array(len)
      copy.set(buf.subarray(p, p + len))
      out[i] = copy
    }
    p += len
  }
  if (p !== end) throw new CodecError(`malformed binary record: ${end - p} bytes after the last column`)
  return out
}

/**
 * Adds the record codec, whose fields decode with whatever codec `table` holds
 * for their type when the row is read (so types added later are seen).
 */
export function registerRecord(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  if (!table.has(RECORD_OID)) table.set(RECORD_OID, recordCodec((oid) => table.get(oid)))
}
