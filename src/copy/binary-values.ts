import type { Writer } from '../protocol/writer.js'
import { utf8Write } from '../protocol/utf8.js'
import type { TypeCatalog } from '../types/catalog.js'
import { CodecError, describeValue, type Codec, type ResolvedTypeOptions } from '../types/codec.js'
import { arrayCodec } from '../types/codecs/array.js'
import { compositeCodec } from '../types/codecs/composite.js'
import { multirangeCodec } from '../types/codecs/multirange.js'
import { rangeCodec } from '../types/codecs/range.js'
import type { TypeView } from '../types/view.js'
import { typeLabel } from './rows.js'

// Binary COPY cannot mix formats: every value of every row must be in its
// type's binary form, even where a query parameter would have gone as text for
// the server to parse (a string for an int4 column, say). Such a value is
// turned into the JS value the server would have made of it and written in
// binary, but only where the client can be sure to read it exactly as the
// server would have: every other case is an error suggesting format 'text',
// never a value the server would have understood differently.

/**
 * Scalar types whose text decoder accepts nothing the server's input function
 * would read differently: integers, float8 (parsed as strtod does), numeric,
 * bool ('t'/'f' only), uuid, bytea (hex or escape form), date, time, timetz
 * and timestamp in ISO form, network and MAC addresses, bit strings, pg_lsn.
 * Left out, among others: float4 (a decimal string rounded to double, then to
 * float32, is rounded twice); money (the codec reads minor units from output
 * that always shows every fractional digit); interval (the sign rules of its
 * text depend on IntervalStyle); json (JSON.parse rounds numbers); timestamptz
 * inside a container (the codec would read a time without offset as UTC, the
 * server in its TimeZone); composites (the server keeps spaces around fields);
 * text types inside containers, and every custom codec.
 */
const SAFE_SCALARS: ReadonlySet<number> = new Set([
  16, 17, 20, 21, 23, 26, 28, 29, 5069, 701, 1700, 2950, 1082, 1083, 1114, 1266, 869, 650, 829, 774, 1560, 1562, 3220,
])

const JSON_OID = 114
const JSONB_OID = 3802
const NAME_OID = 19
const DATE_OID = 1082
const TIMESTAMP_OID = 1114
const TIMESTAMPTZ_OID = 1184

const EXACT: ResolvedTypeOptions = { int8: 'bigint', numeric: 'string', timestamps: 'string', dates: 'string', temporal: false }
const DATED: ResolvedTypeOptions = { int8: 'bigint', numeric: 'string', timestamps: 'date', dates: 'date', temporal: false }

const TEXT_HINT = "; send the JS value the column's type decodes to, or use format: 'text' to let the server parse strings"

/** A UTC offset at the end ('+02', '-03:30', '+00 BC' style), or an infinity. */
const HAS_OFFSET = /[+-]\d\d(?::\d\d){0,2}(?: BC)?$|^-?infinity$/
/** ISO 8601 with a 'T' (and maybe 'Z'), as Date.toISOString() and the timestamps: 'string' option write it. */
const ISO_T = /^(\d{4,}-\d\d-\d\d)T(\d\d:\d\d:\d\d(?:\.\d{1,6})?)(Z|[+-]\d\d(?::\d\d){0,2})?( BC)?$/

/** The same instant in the form PostgreSQL prints, which is the form the codecs read. */
function serverTimestampText(s: string): string {
  const m = ISO_T.exec(s)
  if (m === null) return s
  return `${m[1]} ${m[2]}${m[3] === 'Z' ? '+00' : (m[3] ?? '')}${m[4] ?? ''}`
}

/** The microseconds beyond the millisecond in an exact timestamp string ('...:56.123456Z' gives 456). */
function subMillisecond(exact: string): number {
  const dot = exact.indexOf('.')
  if (dot < 0) return 0
  let us = 0
  let digits = true
  for (let k = 1; k <= 6; k++) {
    const c = exact.charCodeAt(dot + k) - 0x30
    digits &&= c >= 0 && c <= 9
    if (k > 3) us = us * 10 + (digits ? c : 0)
  }
  return us
}

let scratch: Uint8Array = new Uint8Array(256)

/** `s` as UTF-8 at the start of the shared scratch buffer; returns its length. */
function toScratch(s: string): number {
  if (scratch.length < s.length * 3) scratch = new Uint8Array(Math.max(s.length * 3, scratch.length * 2))
  return utf8Write(scratch, 0, s)
}

/** Structural equality of decoded values (primitives, arrays with their lower bounds, Dates, bytes, plain and class objects). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false
  if (a instanceof Date) return a.getTime() === (b as Date).getTime()
  if (a instanceof Uint8Array) {
    const c = b as Uint8Array
    if (a.length !== c.length) return false
    for (let i = 0; i < a.length; i++) if (a[i] !== c[i]) return false
    return true
  }
  if (Array.isArray(a)) {
    const c = b as unknown[]
    if (a.length !== c.length) return false
    for (let i = 0; i < a.length; i++) if (!sameValue(a[i], c[i])) return false
    return sameValue((a as { lowerBounds?: unknown }).lowerBounds, (c as { lowerBounds?: unknown }).lowerBounds)
  }
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  if (ka.length !== kb.length) return false
  for (const k of ka) {
    if (!Object.hasOwn(b, k) || !sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false
  }
  return true
}

/**
 * A date, timestamp or timestamptz codec whose binary encoder also takes the
 * exact strings its decoder gives (and the server's ISO form): a Date carries
 * the value to binary, the microseconds a Date cannot hold are added to it, and
 * the result is read back and compared before it is kept. A string it cannot
 * take exactly is an error, not a fallback to text, which binary COPY lacks.
 */
function temporalCodec(exact: Codec, dated: Codec, kind: 'date' | 'timestamp' | 'timestamptz'): Codec {
  const encode = exact.encodeBinary!
  const encodeDate = dated.encodeBinary!
  const decodeExact = exact.decodeBinary!
  const size = kind === 'date' ? 4 : 8
  const fail = (message: string, cause?: unknown) => new CodecError(`binary COPY cannot write this string as ${kind}: ${message}${TEXT_HINT}`, { cause })
  const writeString = (w: Writer, v: string): boolean => {
    const text = kind === 'date' ? v : serverTimestampText(v)
    if (kind === 'timestamptz' && !HAS_OFFSET.test(text)) throw fail('it has no UTC offset, and the server would read it in its TimeZone')
    const n = toScratch(text)
    let value: unknown
    let asDate: unknown
    try {
      value = exact.decodeText(scratch, 0, n)
      asDate = dated.decodeText(scratch, 0, n)
    } catch (err) {
      if (!(err instanceof CodecError)) throw err
      throw fail(err.message, err)
    }
    const before = w.length
    if (!encodeDate(w, asDate) || w.length - before !== size) throw fail('its binary form was not what was expected')
    if (size === 8 && asDate instanceof Date && typeof value === 'string') {
      // The Date floored the value to its millisecond: add back the rest, in the low word with its carry.
      const at = w.length - 4
      const buf = w.buf
      const p = w.pos - 4
      const sum = (((buf[p]! << 24) | (buf[p + 1]! << 16) | (buf[p + 2]! << 8) | buf[p + 3]!) >>> 0) + subMillisecond(value)
      if (sum > 0xffffffff) w.patch32(at - 4, ((buf[p - 4]! << 24) | (buf[p - 3]! << 16) | (buf[p - 2]! << 8) | buf[p - 1]!) + 1)
      w.patch32(at, sum >>> 0)
    }
    if (!sameValue(decodeExact(w.buf, w.pos - size, w.pos), value)) {
      w.truncate(before)
      throw fail('reading its binary form back does not give the same value')
    }
    return true
  }
  return { ...exact, encodeBinary: (w, v) => encode(w, v) || (typeof v === 'string' && writeString(w, v)) }
}

/**
 * The codecs binary COPY writes with: the catalog's, except that date and
 * timestamp values given as strings are written exactly wherever they sit
 * (in an array, a range, a composite...), rebuilding the containers around
 * them. Types without such parts keep the catalog's codec as it is.
 */
class CopyCodecs {
  private readonly exact: TypeView
  private readonly dated: TypeView
  private readonly built = new Map<number, Codec>()

  constructor(private readonly catalog: TypeCatalog) {
    this.exact = catalog.view(EXACT)
    this.dated = catalog.view(DATED)
  }

  codec(oid: number, depth = 0): Codec {
    let c = this.built.get(oid)
    if (c === undefined) {
      c = this.build(oid, depth)
      this.built.set(oid, c)
    }
    return c
  }

  private build(oid: number, depth: number): Codec {
    const exact = this.exact.codec(oid)
    const info = this.catalog.info(oid)
    if (depth > 8 || this.catalog.userCodec(oid, info) !== undefined) return exact
    if (oid === DATE_OID) return temporalCodec(exact, this.dated.codec(oid), 'date')
    if (oid === TIMESTAMP_OID) return temporalCodec(exact, this.dated.codec(oid), 'timestamp')
    if (oid === TIMESTAMPTZ_OID) return temporalCodec(exact, this.dated.codec(oid), 'timestamptz')
    if (info === undefined) return exact
    switch (info.kind) {
      case 'd':
        return this.codec(info.base, depth + 1)
      case 'A': {
        const element = this.codec(info.elem, depth + 1)
        return element === this.exact.codec(info.elem) ? exact : arrayCodec(element, info.elem, this.catalog.info(info.elem)?.delimiter ?? ',')
      }
      case 'r': {
        const sub = this.codec(info.subtype, depth + 1)
        return sub === this.exact.codec(info.subtype) ? exact : rangeCodec(sub, info.name)
      }
      case 'm': {
        const range = this.codec(info.subtype, depth + 1)
        return range === this.exact.codec(info.subtype) ? exact : multirangeCodec(range, info.name)
      }
      case 'c': {
        const attributes = info.attributes.map((a) => ({ name: a.name, oid: a.oid, codec: this.codec(a.oid, depth + 1) }))
        return attributes.every((a) => a.codec === this.exact.codec(a.oid)) ? exact : compositeCodec(info.name, attributes)
      }
      default:
        return exact
    }
  }

  /** True when the codec's text decoder reads every string it accepts as the server would (see SAFE_SCALARS). */
  parsable(oid: number, depth = 0): boolean {
    const info = this.catalog.info(oid)
    if (depth > 8 || this.catalog.userCodec(oid, info) !== undefined) return false
    if (SAFE_SCALARS.has(oid)) return true
    if (info === undefined) return false
    switch (info.kind) {
      case 'd':
        return this.parsable(info.base, depth + 1)
      case 'A':
        return this.parsable(info.elem, depth + 1)
      case 'r':
      case 'm':
        return this.parsable(info.subtype, depth + 1)
      case 'e':
        return true
      default:
        return false
    }
  }
}

/** How a value the codec will not write in binary is written instead. */
const enum Fallback {
  /** Through the codec's text decoder, where that reads as the server would; else an error. */
  Parsed,
  /** json: the binary form is the JSON text itself, so the text goes through unchanged (and unparsed). */
  JsonText,
  /** jsonb: version byte 1, then the text. */
  JsonbText,
  /** name: the binary form is the text. */
  PlainText,
}

/** The codecs of one binary COPY; built once per encoder. */
export function copyCodecs(catalog: TypeCatalog): CopyCodecs {
  return new CopyCodecs(catalog)
}

/** Writes the binary form of the non-null values of one column. */
export class BinaryValueWriter {
  readonly typeName: string
  private readonly codec: Codec
  private readonly fallback: Fallback
  private readonly parsable: boolean

  constructor(codecs: CopyCodecs, catalog: TypeCatalog, oid: number) {
    const view = catalog.view(EXACT)
    this.codec = codecs.codec(oid)
    this.typeName = typeLabel(view, oid)
    this.parsable = codecs.parsable(oid)
    const c = view.codec(oid)
    this.fallback =
      c === view.codec(JSON_OID) ? Fallback.JsonText : c === view.codec(JSONB_OID) ? Fallback.JsonbText : c === view.codec(NAME_OID) ? Fallback.PlainText : Fallback.Parsed
  }

  /**
   * Writes the binary form of `v` (not its length). Throws CodecError when it
   * has none the client can be sure of; may have written part of it then (the
   * row encoder truncates).
   */
  write(w: Writer, v: unknown): void {
    const encode = this.codec.encodeBinary
    if (encode !== undefined && encode(w, v)) return
    switch (this.fallback) {
      case Fallback.JsonText:
        w.str(this.codec.encodeText(v))
        return
      case Fallback.JsonbText: {
        const s = this.codec.encodeText(v)
        w.u8(1)
        w.str(s)
        return
      }
      case Fallback.PlainText:
        w.str(this.codec.encodeText(v))
        return
    }
    if (!this.parsable || encode === undefined) throw this.refused(v)
    // What the server would have parsed: the value's text, read back by the codec.
    const n = toScratch(typeof v === 'string' ? v : this.codec.encodeText(v))
    let value: unknown
    try {
      value = this.codec.decodeText(scratch, 0, n)
    } catch (err) {
      if (!(err instanceof CodecError)) throw err
      throw new CodecError(`binary COPY could not read the string as ${this.typeName}: ${err.message}${TEXT_HINT}`, { cause: err })
    }
    if (!encode(w, value)) throw this.refused(v)
  }

  private refused(v: unknown): CodecError {
    const what = typeof v === 'string' ? 'a string' : describeValue(v)
    return new CodecError(`binary COPY cannot write ${what} as ${this.typeName} without the server parsing it${TEXT_HINT}`)
  }
}
