// Codecs against a real server, both ways. testType() takes a list of
// [SQL literal, expected JS value] pairs and checks that the literal's value,
// as the server sends it in text and in binary, decodes to the expected value,
// and that the expected value, encoded by the codec and sent as a parameter,
// is the value the literal stands for and comes back as itself. The smaller
// pieces are exported for tests that check one direction or random values.

import assert from 'node:assert/strict'
import { Writer } from '../../../src/protocol/writer.js'
import type { Codec } from '../../../src/types/codec.js'
import { rawConnection, type RawConnection } from './raw-values.js'

/** A parameter of the extended protocol: type OID, format, and bytes (null for NULL). */
export interface Param {
  oid: number
  format: 0 | 1
  value: Uint8Array | null
}

/** The values of the one row of `SELECT <exprs>` in the given result format, with their columns' type OIDs. */
export async function selectRow(exprs: readonly string[], params: readonly Param[], format: 0 | 1, conn?: RawConnection): Promise<{ values: (Buffer | null)[]; oids: number[] }> {
  const c = conn ?? (await rawConnection())
  const { fields, rows } = await c.run(`SELECT ${exprs.join(', ')}`, [...params], format)
  return { values: rows[0]!, oids: fields.map((f) => f.typeOid) }
}

/** The values of the one row of `SELECT <exprs>`, none of which may be NULL. */
export async function select(exprs: readonly string[], params: readonly Param[], format: 0 | 1, conn?: RawConnection): Promise<Buffer[]> {
  const { values } = await selectRow(exprs, params, format, conn)
  return values.map((v, i) => {
    assert.ok(v !== null, `${exprs[i]} is not NULL`)
    return v
  })
}

/**
 * A parameter as the codec encodes it: binary when the codec takes the value,
 * else text (or text when forced). Every value goes through the codec, null
 * too, since for json it is a value and not SQL NULL.
 */
export function param(codec: Codec, oid: number, value: unknown, forceText = false): Param {
  const w = new Writer(64)
  if (!forceText && codec.encodeBinary?.(w, value)) return { oid, format: 1, value: w.take().slice() }
  return { oid, format: 0, value: Buffer.from(codec.encodeText(value)) }
}

/** A parameter in text, for the server to parse itself. */
export const textParam = (oid: number, text: string): Param => ({ oid, format: 0, value: Buffer.from(text) })

// Bytes around every value that a decoder reading out of bounds would trip over.
const BEFORE = Buffer.from('-9:')
const AFTER = Buffer.from(' BC:99.5+05')

/** Decodes `bytes` placed in the middle of a larger buffer, as in a socket chunk, and checks that the decoder left the chunk alone. */
export function decodeIn(decode: (buf: Uint8Array, start: number, end: number) => unknown, bytes: Uint8Array): unknown {
  const buf = Buffer.concat([BEFORE, bytes, AFTER])
  const before = Buffer.from(buf)
  const out = decode(buf, BEFORE.length, BEFORE.length + bytes.length)
  assert.deepEqual(buf, before, 'a decoder must not write into the chunk')
  return out
}

/** The values of the one row of `SELECT <exprs>` in text and in binary, none of them NULL. */
export async function fetchBoth(exprs: readonly string[], params: readonly Param[] = []): Promise<{ text: Buffer[]; binary: Buffer[] }> {
  // One raw connection runs one exchange at a time.
  const text = await select(exprs, params, 0)
  return { text, binary: await select(exprs, params, 1) }
}

export interface DecodeOptions {
  /** Every column must have this type. */
  oid?: number
  /** The text decoder must return the server's text unchanged (types decoded to their printed form). */
  asPrinted?: boolean
}

/**
 * Decodes each expression's value as the server sends it in text and (when the
 * codec has a binary decoder) in binary; both must decode to identical values.
 * Returns the values.
 */
export async function decodeBoth(codec: Codec, exprs: readonly string[], params: readonly Param[] = [], options: DecodeOptions = {}, conn?: RawConnection): Promise<unknown[]> {
  // One raw connection runs one exchange at a time.
  const text = await selectRow(exprs, params, 0, conn)
  const binary = codec.decodeBinary ? await selectRow(exprs, params, 1, conn) : undefined
  return exprs.map((sql, i) => {
    if (options.oid !== undefined) assert.equal(text.oids[i], options.oid, `${sql} has type ${options.oid}`)
    const t = text.values[i]!
    assert.ok(t !== null, `${sql} is not NULL`)
    const fromText = decodeIn(codec.decodeText, t)
    if (options.asPrinted) assert.equal(fromText, t.toString('utf8'), `${sql}: the text decoder returns the server's text`)
    if (binary) {
      const b = binary.values[i]!
      assert.ok(b !== null, `${sql} is not NULL in binary`)
      assert.deepStrictEqual(decodeIn(codec.decodeBinary!, b), fromText, `${sql} in binary`)
    }
    return fromText
  })
}

/** Cases: [SQL expression, the value it must decode to]. */
export type TypeCases = readonly (readonly [sql: string, expected: unknown])[]

/** Checks that each SQL expression decodes to its expected value from text and from binary alike. */
export async function checkDecoding(codec: Codec, cases: TypeCases, options: DecodeOptions = {}, conn?: RawConnection): Promise<void> {
  const decoded = await decodeBoth(
    codec,
    cases.map(([sql]) => sql),
    [],
    options,
    conn,
  )
  cases.forEach(([sql, expected], i) => assert.deepStrictEqual(decoded[i], expected, `${sql} in text`))
}

/** How the server prints each parameter back (its type's output function). */
export async function echoAll(params: readonly Param[]): Promise<string[]> {
  const out = await select(
    params.map((_, i) => `$${i + 1}`),
    params,
    0,
  )
  return out.map((b) => b.toString('utf8'))
}

/**
 * The round trip of a type: each [SQL literal, JS value] pair is checked both
 * ways. The literal decodes to the value from text and binary results; the
 * value, sent as a parameter of type `oid` the way the query layer sends it, is
 * printed by the server exactly as the literal is, and comes back as the value.
 */
export async function testType(codec: Codec, oid: number, cases: TypeCases, options: Omit<DecodeOptions, 'oid'> = {}): Promise<void> {
  await checkDecoding(codec, cases, { ...options, oid })
  const params = cases.map(([, value]) => param(codec, oid, value))
  const placeholders = params.map((_, i) => `$${i + 1}`)
  const printed = await select([...placeholders.map((p) => `${p}::text`), ...cases.map(([sql]) => `(${sql})::text`)], params, 0)
  cases.forEach(([sql], i) => assert.equal(printed[i]!.toString('utf8'), printed[cases.length + i]!.toString('utf8'), `${sql}: the value sent as a parameter is what the literal is`))
  const back = await decodeBoth(codec, placeholders, params, { ...options, oid })
  cases.forEach(([sql, expected], i) => assert.deepStrictEqual(back[i], expected, `${sql}: the value sent as a parameter comes back as itself`))
}
