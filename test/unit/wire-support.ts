// Shared by the pipegres/wire unit tests: the recorded fixtures and small
// helpers to feed them through a parser.

import { WireParser, type WireEvent, type WireParserOptions } from '../../src/wire/index.js'
import * as pg15 from './fixtures/wire-pg15.js'
import * as pg18 from './fixtures/wire-pg18.js'
import type { WireFixtures } from './fixtures/wire-fixture-types.js'

export const RECORDINGS: { version: number; fixtures: WireFixtures }[] = [pg15, pg18]

export function bytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex, 'hex'))
}

export type ArrayEvent = WireEvent<unknown[]>

/** Every event of a whole stream, fed in the given chunks, with rows as arrays. */
export function parseChunks(chunks: Uint8Array[], options: WireParserOptions<'array'> = {}): ArrayEvent[] {
  const p = new WireParser<'array'>({ ...options, rowMode: 'array' })
  const events: ArrayEvent[] = []
  for (const c of chunks) events.push(...p.push(c))
  p.end()
  return events
}

export function parseAll(data: Uint8Array, options: WireParserOptions<'array'> = {}): ArrayEvent[] {
  return parseChunks([data], options)
}

export function rowsOf(events: ArrayEvent[]): unknown[][] {
  return events.flatMap((e) => (e.type === 'row' ? [e.row] : []))
}

/** Splits data at the given offsets (sorted, within (0, length)). */
export function splitAt(data: Uint8Array, cuts: number[]): Uint8Array[] {
  const out: Uint8Array[] = []
  let prev = 0
  for (const c of [...cuts, data.length]) {
    out.push(data.subarray(prev, c))
    prev = c
  }
  return out
}

/** The values of every DataRow as the raw strings the server sent (for text-format recordings). */
export function rawTexts(data: Uint8Array): (string | null)[][] {
  const rows: (string | null)[][] = []
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
  let p = 0
  while (p < view.length) {
    const type = String.fromCharCode(view[p]!)
    const len = view.readInt32BE(p + 1)
    if (type === 'D') {
      const n = view.readInt16BE(p + 5)
      let q = p + 7
      const row: (string | null)[] = []
      for (let i = 0; i < n; i++) {
        const l = view.readInt32BE(q)
        q += 4
        row.push(l < 0 ? null : view.toString('utf8', q, q + l))
        if (l > 0) q += l
      }
      rows.push(row)
    }
    p += 1 + len
  }
  return rows
}
