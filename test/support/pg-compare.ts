// Running the same query through real pg and through pipegres/pg, and
// comparing what comes back. Values are compared with deepStrictEqual, except
// that an interval (a class of its own in each library) is compared by its
// own properties and its two text forms.

import assert from 'node:assert/strict'

interface IntervalLike {
  toPostgres(): string
  toISO(): string
}

function isInterval(v: unknown): v is IntervalLike {
  return typeof v === 'object' && v !== null && typeof (v as Partial<IntervalLike>).toPostgres === 'function' && typeof (v as Partial<IntervalLike>).toISO === 'function'
}

/** Makes values of both libraries comparable: intervals become plain descriptions. */
export function comparable(v: unknown): unknown {
  if (isInterval(v)) return { interval: { ...v }, postgres: v.toPostgres(), iso: v.toISO() }
  if (Array.isArray(v)) return v.map(comparable)
  if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, comparable(x)]))
  }
  return v
}

export interface Queryish {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; fields: unknown[]; command: string | null; rowCount: number | null }>
}

export function assertSameResult(
  ours: { rows: unknown[]; fields: unknown[]; command: unknown; rowCount: unknown },
  theirs: { rows: unknown[]; fields: unknown[]; command: unknown; rowCount: unknown },
  what: string,
): void {
  assert.deepStrictEqual(comparable(ours.rows), comparable(theirs.rows), `${what}: rows`)
  assert.deepStrictEqual(ours.fields.map((f) => ({ ...(f as object) })), theirs.fields.map((f) => ({ ...(f as object) })), `${what}: fields`)
  assert.equal(ours.command, theirs.command, `${what}: command`)
  assert.equal(ours.rowCount, theirs.rowCount, `${what}: rowCount`)
}
