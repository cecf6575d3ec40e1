// Shared by the COPY data-format unit tests: encode rows to bytes, decode bytes
// (whole, or split at chosen points) back to rows.

import assert from 'node:assert/strict'
import { Writer } from '../../../src/protocol/writer.js'
import { loadExtraCodecs } from '../../../src/types/builtins.js'
import { TypeCatalog } from '../../../src/types/catalog.js'
import type { TypeOptions } from '../../../src/types/codec.js'
import { createCopyDecoder, createCopyEncoder, type CopyColumn, type CopyDecoder, type CopyDecoderOptions, type CopyFormatOptions, type CopyRow } from '../../../src/copy/format.js'

// Every built-in codec, as a connection has them once it has met a rarer type (COPY describes its columns first).
await loadExtraCodecs()
export const catalog = new TypeCatalog()

export const EXACT: TypeOptions = { int8: 'bigint', numeric: 'string', timestamps: 'string', dates: 'string' }

export function cols(...spec: [string, number][]): CopyColumn[] {
  return spec.map(([name, typeOid]) => ({ name, typeOid }))
}

/** The COPY data of these rows (header and trailer included), as a fresh array. */
export function encodeRows(columns: readonly CopyColumn[], rows: readonly CopyRow[], options: CopyFormatOptions = {}): Uint8Array {
  const enc = createCopyEncoder(columns, catalog, options)
  const w = new Writer(64)
  enc.writeHeader(w)
  for (const r of rows) enc.encodeRow(w, r)
  enc.writeTrailer(w)
  assert.equal(enc.rowCount, rows.length)
  return w.take().slice()
}

export function decoder(columns: readonly CopyColumn[], options: CopyDecoderOptions = {}, types: TypeOptions = {}): CopyDecoder {
  return createCopyDecoder(columns, catalog.view(types), { rowMode: 'array', ...options })
}

/** Decodes the bytes pushed as the given pieces (each a copy, so nothing can lean on neighbouring bytes). */
export function decodeChunks(columns: readonly CopyColumn[], chunks: readonly Uint8Array[], options: CopyDecoderOptions = {}, types: TypeOptions = {}): unknown[] {
  const dec = decoder(columns, options, types)
  const rows: unknown[] = []
  for (const c of chunks) {
    // Inside a larger buffer, with different bytes around it, as in a socket chunk.
    const padded = new Uint8Array(c.length + 6).fill(0x5c)
    padded.set(c, 3)
    dec.push(padded, 3, 3 + c.length, rows)
  }
  dec.finish()
  return rows
}

export function decodeBytes(columns: readonly CopyColumn[], bytes: Uint8Array, options: CopyDecoderOptions = {}, types: TypeOptions = {}): unknown[] {
  return decodeChunks(columns, [bytes], options, types)
}

/** Splits at the given offsets. */
export function splitAt(bytes: Uint8Array, ...at: number[]): Uint8Array[] {
  const out: Uint8Array[] = []
  let p = 0
  for (const k of at) {
    out.push(bytes.slice(p, k))
    p = k
  }
  out.push(bytes.slice(p))
  return out
}

/** Checks that every single split, and byte-by-byte delivery, decode to `expected`. */
export function assertEverySplit(columns: readonly CopyColumn[], bytes: Uint8Array, expected: unknown[], options: CopyDecoderOptions = {}, types: TypeOptions = {}): void {
  for (let k = 0; k <= bytes.length; k++) {
    assert.deepStrictEqual(decodeChunks(columns, splitAt(bytes, k), options, types), expected, `split at ${k}`)
  }
  const bytewise = Array.from({ length: bytes.length }, (_, i) => bytes.slice(i, i + 1))
  assert.deepStrictEqual(decodeChunks(columns, bytewise, options, types), expected, 'byte by byte')
}

export const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replace(/[\s_]/g, ''), 'hex'))
export const utf8 = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'utf8'))
export const text = (b: Uint8Array): string => Buffer.from(b).toString('utf8')
