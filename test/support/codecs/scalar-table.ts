// Shared by the scalar codec tests (unit and integration): a codec table built
// the way the registry builds it, and decode/encode helpers that catch codecs
// reading outside their span or writing when they say they did not.

import assert from 'node:assert/strict'
import { Writer } from '../../../src/protocol/writer.js'
import { defaultTypeOptions, type Codec, type Decoder, type TypeOptions } from '../../../src/types/codec.js'
import { registerScalars } from '../../../src/types/codecs/scalars.js'

export function scalarTable(options: TypeOptions = {}): Map<number, Codec> {
  const table = new Map<number, Codec>()
  registerScalars(table, { ...defaultTypeOptions, ...options })
  return table
}

const tables = new Map<string, Map<number, Codec>>()

/** The codec for a type OID under the given options. */
export function codecOf(oid: number, options: TypeOptions = {}): Codec {
  const key = JSON.stringify(options)
  let table = tables.get(key)
  if (!table) tables.set(key, (table = scalarTable(options)))
  const c = table.get(oid)
  if (!c) throw new Error(`no scalar codec for OID ${oid}`)
  return c
}

export const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/[\s_]/g, ''), 'hex')
export const ascii = (s: string): Buffer => Buffer.from(s, 'utf8')

function run(decoder: Decoder, value: Uint8Array, fill: number): { ok: true; v: unknown } | { ok: false; e: unknown } {
  // The value sits inside a larger buffer, as in a socket chunk.
  const buf = new Uint8Array(value.length + 10).fill(fill)
  buf.set(value, 3)
  try {
    return { ok: true, v: decoder(buf, 3, 3 + value.length) }
  } catch (e) {
    return { ok: false, e }
  }
}

/**
 * Decodes `value` placed in the middle of two buffers with different bytes
 * around it; a decoder that reads outside its span would see the difference.
 * Throws what the decoder threw.
 */
export function decode(decoder: Decoder | undefined, value: Uint8Array | string): unknown {
  assert.ok(decoder, 'decoder exists')
  const b = typeof value === 'string' ? ascii(value) : value
  // Zero, a digit that is also an octal digit, a hex letter, a high byte.
  const [a, ...others] = [0x00, 0x37, 0x61, 0xff].map((fill) => run(decoder, b, fill))
  for (const o of others) {
    assert.equal(o!.ok, a!.ok, 'same outcome whatever surrounds the value')
    if (o!.ok) assert.deepStrictEqual((o as { v: unknown }).v, (a as { v: unknown }).v, 'same value whatever surrounds the value')
    else assert.equal(String((o as { e: unknown }).e), String((a as { e: unknown }).e))
  }
  if (!a!.ok) throw (a as { e: unknown }).e
  return (a as { v: unknown }).v
}

/**
 * The bytes encodeBinary writes after other bytes already in the writer, or
 * false when it declines (having written nothing).
 */
export function encodeBinary(codec: Codec, value: unknown): Buffer | false {
  assert.ok(codec.encodeBinary, `${codec.name} has a binary encoder`)
  const w = new Writer(16)
  w.bytes(Uint8Array.of(0xaa, 0xbb, 0xcc))
  const wrote = codec.encodeBinary(w, value)
  const out = Buffer.from(w.take())
  assert.deepEqual(out.subarray(0, 3), Buffer.from([0xaa, 0xbb, 0xcc]), 'bytes before the value are untouched')
  if (!wrote) {
    assert.equal(out.length, 3, 'nothing written when the encoder declines')
    return false
  }
  return out.subarray(3)
}

/** Asserts that the value is refused with a CodecError whose message matches. */
export function assertCodecError(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.equal((err as Error).name, 'CodecError', `a CodecError, got ${String(err)}`)
    assert.match((err as Error).message, message)
    return true
  })
}

/** PostgreSQL's text for digits × 10^(exp - fracLen) with dscale max(0, fracLen - exp), computed with bigints as an oracle. */
export function canonicalNumeric(neg: boolean, intDigits: string, fracDigits: string, exp: number): string {
  const n = BigInt((intDigits + fracDigits) || '0')
  const shift = exp - fracDigits.length
  const sign = neg && n !== 0n ? '-' : ''
  if (shift >= 0) return sign + (n * 10n ** BigInt(shift)).toString()
  const scale = -shift
  const s = n.toString().padStart(scale + 1, '0')
  return `${sign}${s.slice(0, -scale)}.${s.slice(-scale)}`
}
