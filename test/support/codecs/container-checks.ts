// Checking container codecs against a real server, many values per statement.

import assert from 'node:assert/strict'
import type { Codec } from '../../../src/types/codec.js'
import { rawConnection } from './raw-values.js'
import { param as encoded, type Param } from './type-roundtrip.js'
import { decodeAt } from './container-elements.js'

export const lowerBoundsOf = (v: unknown): number[] | undefined => (v as { lowerBounds?: number[] } | null)?.lowerBounds

/** Runs a statement (DDL included) and returns the rows' raw fields. */
export async function run(sql: string, format: 0 | 1 = 0, params: Param[] = []) {
  const c = await rawConnection()
  return c.run(sql, params, format)
}

/** The OID of a type by name (e.g. a type created in pg_temp). */
export async function typeOid(name: string): Promise<number> {
  const { rows } = await run(`SELECT '${name}'::regtype::oid`)
  return Number(rows[0]![0]!.toString())
}

/**
 * Decodes `SELECT expr, ...` with `codec` in text and in binary, checks that both
 * formats give identical values (lower bounds included), and returns them.
 */
export async function decodeBoth(codec: Codec, exprs: readonly string[]): Promise<unknown[]> {
  const sql = `SELECT ${exprs.join(', ')}`
  // One exchange at a time: the raw connection does not pipeline.
  const t = await run(sql, 0)
  const b = await run(sql, 1)
  return exprs.map((expr, i) => {
    const tb = t.rows[0]![i]!
    const bb = b.rows[0]![i]!
    if (tb === null || bb === null) {
      assert.equal(tb, bb)
      return null
    }
    const vt = decodeAt(codec.decodeText, tb)
    const vb = decodeAt(codec.decodeBinary!, bb)
    assert.deepStrictEqual(vt, vb, `text and binary differ for ${expr}`)
    assert.deepStrictEqual(lowerBoundsOf(vt), lowerBoundsOf(vb), `lower bounds differ for ${expr}`)
    return vt
  })
}

/** A parameter as the query layer sends it: null is SQL NULL, anything else goes through the codec. */
const param = (codec: Codec, oid: number, value: unknown, forceText: boolean): Param => (value === null ? { oid, format: 0, value: null } : encoded(codec, oid, value, forceText))

/**
 * Sends each value as a parameter of type `oid` (binary when the codec can, or
 * text when `forceText`) in one statement, and returns how the server prints
 * each one (its text) and the values decoded back from text and binary results
 * (checked identical).
 */
export async function echoAll(
  codec: Codec,
  oid: number,
  values: readonly unknown[],
  forceText = false,
): Promise<{ printed: (string | null)[]; decoded: unknown[]; formats: number[] }> {
  const params = values.map((v) => param(codec, oid, v, forceText))
  const cols = values.map((_, i) => `$${i + 1}`)
  const texts = await run(`SELECT ${cols.map((c) => `${c}::text`).join(', ')}`, 0, params)
  const t = await run(`SELECT ${cols.join(', ')}`, 0, params)
  const b = await run(`SELECT ${cols.join(', ')}`, 1, params)
  const decoded = values.map((_, i) => {
    const tb = t.rows[0]![i]!
    const bb = b.rows[0]![i]!
    if (tb === null || bb === null) return null
    const vt = decodeAt(codec.decodeText, tb)
    const vb = decodeAt(codec.decodeBinary!, bb)
    assert.deepStrictEqual(vt, vb)
    assert.deepStrictEqual(lowerBoundsOf(vt), lowerBoundsOf(vb))
    return vt
  })
  return { printed: texts.rows[0]!.map((f) => (f === null ? null : f.toString('utf8'))), decoded, formats: params.map((p) => p.format) }
}

