import { ParameterError } from '../errors.js'
import type { Writer } from '../protocol/writer.js'
import { CodecError } from './codec.js'
import { byteaHex } from './codecs/bytea.js'
import { temporalText } from './temporal-values.js'

// Parameters in text format, for executions where the server has not yet said
// which types it expects (the first execution of a statement, or prepare:false).
// The server parses the text as whatever type it inferred for the parameter.

function byteaText(b: Uint8Array, index: number): string {
  try {
    return byteaHex(b)
  } catch (err) {
    if (err instanceof CodecError) throw new ParameterError(index, `parameter $${index}: ${err.message}`, { cause: err })
    throw err
  }
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0')
}

/** An ISO timestamp with offset, including years outside 1..9999 (which toISOString writes in a form PostgreSQL rejects). */
export function dateText(d: Date, index: number): string {
  const t = d.getTime()
  if (Number.isNaN(t)) throw new ParameterError(index, `parameter $${index} is an invalid Date`)
  let y = d.getUTCFullYear()
  const bc = y <= 0
  if (bc) y = 1 - y
  return (
    `${pad(y, 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)} ` +
    `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.${pad(d.getUTCMilliseconds(), 3)}+00` +
    (bc ? ' BC' : '')
  )
}

/** The text of a Temporal value (see temporal-values.ts), or null for any other value. */
function temporalParamText(value: object, index: number): string | null {
  try {
    return temporalText(value)
  } catch (err) {
    if (err instanceof CodecError) throw new ParameterError(index, `parameter $${index}: ${err.message}`, { cause: err })
    throw err
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null'
  if (typeof v === 'object') return (v as object).constructor?.name ?? 'object'
  return typeof v
}

/** Text values must survive the trip: a NUL cannot be stored, a lone surrogate cannot be encoded as UTF-8. */
function checkString(s: string, index: number): void {
  if (s.includes('\0')) throw new ParameterError(index, `parameter $${index} contains a NUL character, which PostgreSQL text cannot hold`)
  if (!(s as unknown as { isWellFormed(): boolean }).isWellFormed()) {
    throw new ParameterError(index, `parameter $${index} is not valid Unicode (it contains a lone surrogate)`)
  }
}

/** The text form of a JS value, or null for SQL NULL. */
export function toText(value: unknown, index: number): string | null {
  switch (typeof value) {
    case 'string':
      checkString(value, index)
      return value
    case 'number':
      // String(-0) is '0': the sign of zero must survive.
      return Object.is(value, -0) ? '-0' : String(value)
    case 'bigint':
      return value.toString()
    case 'boolean':
      return value ? 't' : 'f'
    case 'undefined':
      return null
    case 'object':
      if (value === null) return null
      if (value instanceof Date) return dateText(value, index)
      if (value instanceof Uint8Array) return byteaText(value, index)
      if (Array.isArray(value)) return boundsDecoration(value) + arrayText(value, index)
      {
        const text = temporalParamText(value, index)
        if (text !== null) return text
      }
      if (ArrayBuffer.isView(value)) {
        throw new ParameterError(index, `parameter $${index} is a ${describe(value)}; only Uint8Array and Buffer can be sent as bytea`)
      }
      try {
        return JSON.stringify(value)
      } catch (err) {
        throw new ParameterError(index, `parameter $${index} could not be serialised as JSON: ${(err as Error).message}`, { cause: err })
      }
    default:
      throw new ParameterError(index, `parameter $${index} is a ${typeof value}, which cannot be sent to PostgreSQL`)
  }
}

function quoteElement(s: string): string {
  return '"' + s.replace(/[\\"]/g, '\\$&') + '"'
}

/** '[0:2]=' style prefix for an array whose `lowerBounds` (set when it was decoded) are not all 1. */
function boundsDecoration(a: readonly unknown[]): string {
  const lbs = (a as { lowerBounds?: unknown }).lowerBounds
  if (!Array.isArray(lbs)) return ''
  let out = ''
  let level: unknown = a
  for (const lb of lbs) {
    if (!Array.isArray(level) || !Number.isInteger(lb)) return ''
    out += `[${lb}:${lb + level.length - 1}]`
    level = level[0]
  }
  return out + '='
}

/** A PostgreSQL array literal; nested arrays become dimensions. */
function arrayText(a: readonly unknown[], index: number): string {
  let s = '{'
  for (let i = 0; i < a.length; i++) {
    if (i > 0) s += ','
    const v = a[i]
    if (Array.isArray(v)) s += arrayText(v, index)
    else {
      const t = toText(v, index)
      s += t === null ? 'NULL' : quoteElement(t)
    }
  }
  return s + '}'
}

/** Writes one Bind parameter in text format: its length, then its bytes (or -1 for NULL). */
export function writeTextParam(w: Writer, value: unknown, index: number): void {
  const t = toText(value, index)
  if (t === null) {
    w.i32(-1)
    return
  }
  const at = w.reserve32()
  const n = w.str(t)
  w.patch32(at, n)
}
