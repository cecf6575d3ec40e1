// Row objects for results that are kept (query() collects every row until the
// caller drops the result). Nearly all of the time such a read costs on V8 is
// the young-generation collector copying rows that survive it: every row and
// value is copied once within the young generation and once more into the old
// one. An object literal has an allocation site, which V8 watches: when most of
// what a site allocates survives, optimized code allocates it in the old
// generation directly (pretenuring), and the copies of the row objects stop.
// A constructor call (RowPlan's rowMaker) has no such site.
//
// The reader is generated per column list and decoder list, so each column's
// decoder call has one target, which the compiler can inline; the shared loop
// of RowPlan.decode calls every decoder of every statement from one site.
//
// Streams keep RowPlan's constructor rows: a stream's rows die young, and a
// pretenured site would send them to the old generation, where they are
// collected far more slowly.

import type { Decoder } from './codec.js'

export type RowReader = (buf: Uint8Array, start: number, end: number) => Record<string, unknown>

/** What a reader throws; passed in so that the generated code names no module. */
export interface ReaderErrors {
  malformed(): Error
  count(n: number, expected: number): Error
  truncated(): Error
}

/** Readers by column names and decoders; bounded, as an application may make up column names without end. */
const readers = new Map<string, RowReader>()
const MAX_READERS = 512
/** A number per decoder function, for the cache key. */
const decoderIds = new WeakMap<Decoder, number>()
let nextDecoderId = 0

function idOf(d: Decoder): number {
  let id = decoderIds.get(d)
  if (id === undefined) decoderIds.set(d, (id = nextDecoderId++))
  return id
}

/**
 * The reader for rows of these columns, or null where code cannot be generated
 * (a content security policy, --disallow-code-generation-from-strings) or a
 * column is named __proto__ (a literal's `__proto__:` sets the prototype).
 * Names are embedded as JSON string literals, so no column name can be read as
 * code; decoders and errors come in as arguments.
 */
export function rowReader(names: readonly string[], decoders: readonly Decoder[], errors: ReaderErrors): RowReader | null {
  if (names.includes('__proto__')) return null
  const key = `${names.join('\0')}\x01${decoders.map(idOf).join(',')}`
  const known = readers.get(key)
  if (known !== undefined) return known
  const n = names.length
  const lines = [
    'return function readRow(buf, start, end) {',
    'if (end - start < 2) throw errors.malformed()',
    `const n = (buf[start] << 8) | buf[start + 1]`,
    `if (n !== ${n}) throw errors.count(n, ${n})`,
    'let p = start + 2',
    'let len = 0',
  ]
  for (let i = 0; i < n; i++) {
    lines.push(
      `let v${i} = null`,
      'if (p + 4 > end) throw errors.truncated()',
      'len = (buf[p] << 24) | (buf[p + 1] << 16) | (buf[p + 2] << 8) | buf[p + 3]',
      'p += 4',
      `if (len >= 0) { if (p + len > end) throw errors.truncated(); v${i} = d${i}(buf, p, p + len); p += len }`,
      'else if (len !== -1) throw errors.truncated()',
    )
  }
  lines.push('if (p !== end) throw errors.truncated()', `return { ${names.map((name, i) => `${JSON.stringify(name)}: v${i}`).join(', ')} }`, '}')
  let reader: RowReader
  try {
    const factory = new Function('errors', ...decoders.map((_, i) => `d${i}`), lines.join('\n')) as (...args: unknown[]) => RowReader
    reader = factory(errors, ...decoders)
  } catch {
    return null
  }
  if (readers.size >= MAX_READERS) readers.clear()
  readers.set(key, reader)
  return reader
}
