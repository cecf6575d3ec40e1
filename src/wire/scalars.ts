import { CodecError, defaultTypeOptions, typeOptionChoices, typeOptionFault, type ResolvedTypeOptions, type TypeOptions } from '../types/codec.js'
import { INT64_MAX, INT64_MIN, readFloat32, readFloat64, readInt16, readInt32, readInt64, readUint16, readUint32 } from '../types/codecs/binary.js'
import { DATE_END_DAY, MIN_DAY, pgDateText, US_PER_DAY } from '../types/codecs/date.js'
import { offsetText, timeText } from '../types/codecs/time.js'
import { decodeUuidBinary } from '../types/codecs/uuid.js'
import { durationOf, instantOf, plainDateOf, plainDateTimeOf, plainTimeOf } from '../types/temporal-values.js'
import { utf8Text } from './bytes.js'
import { checkTimeText, parseDateText, parseTimestampText, toDate } from './calendar.js'
import { WireProtocolError } from './errors.js'
import { intervalOf, parseIntervalFields, parseIntervalText } from './interval.js'

// Decoders of single values, one pair per type: `text` takes the value as
// PostgreSQL prints it, `binary` its send format. Both must give the same
// JavaScript value for the same database value; every input is checked, so a
// value is either decoded exactly or refused.
//
// Fixed-width reads, calendar arithmetic, date and time printing and uuid
// formatting are the Node client's (types/codecs/). The checks and the text
// parsers stay here, for behaviour the Node codecs do not share: text
// decoders take strings, because a text array hands its elements over
// unescaped, while the codecs parse bytes; and every refusal is a
// WireProtocolError whose message ('malformed int4: 3 bytes where 4 were
// expected') applications and tests match, where the codecs throw CodecErrors
// worded for the Node client.

export type TextDecoderFn = (text: string) => unknown
export type BinaryDecoderFn = (b: Uint8Array, start: number, end: number) => unknown

export interface ScalarType {
  name: string
  text: TextDecoderFn
  binary: BinaryDecoderFn
}

/** How some types are represented in JavaScript: the Node client's TypeOptions. */
export type WireTypeOptions = TypeOptions

/** The options with their defaults filled in; a value that is not one of its option's choices throws a TypeError. */
export function resolveTypeOptions(o: WireTypeOptions = {}): ResolvedTypeOptions {
  const out: Record<string, unknown> = { ...defaultTypeOptions }
  // Only the known options are read: wire has always let other keys pass.
  for (const name of Object.keys(typeOptionChoices) as (keyof TypeOptions)[]) {
    const value = o[name]
    const fault = typeOptionFault(name, value)
    if (fault !== null) throw new TypeError(`types.${name} ${fault}`)
    if (value !== undefined) out[name] = value
  }
  return out as unknown as ResolvedTypeOptions
}

/** A Temporal value built by the Node client's builders, their refusals worded as wire's. */
function temporalValue<A extends unknown[]>(make: (...args: A) => unknown, ...args: A): unknown {
  try {
    return make(...args)
  } catch (err) {
    if (err instanceof CodecError) throw new WireProtocolError(err.message, { cause: err })
    throw err
  }
}

function malformed(what: string, detail: string): WireProtocolError {
  return new WireProtocolError(`malformed ${what}: ${detail}`)
}

function excerpt(text: string): string {
  return text.length > 60 ? `'${text.slice(0, 60)}...'` : `'${text}'`
}

function needLength(what: string, start: number, end: number, n: number): void {
  if (end - start !== n) throw malformed(what, `${end - start} bytes where ${n} were expected`)
}

// ---- integers ----

const INTEGER_RE = /^-?\d{1,20}$/

function textInteger(what: string, min: number, max: number): TextDecoderFn {
  return (text) => {
    const n = INTEGER_RE.test(text) ? Number(text) : NaN
    if (!(n >= min && n <= max)) throw malformed(what, excerpt(text))
    return n
  }
}


function int8Value(mode: ResolvedTypeOptions['int8']): (v: bigint) => unknown {
  if (mode === 'string') return (v) => v.toString()
  if (mode === 'number') {
    return (v) => {
      const n = Number(v)
      if (!Number.isSafeInteger(n)) throw new WireProtocolError(`int8 ${v} is beyond ±2^53, which a number cannot hold exactly; use the int8: 'bigint' or 'string' option`)
      return n
    }
  }
  return (v) => v
}

function int8Type(o: ResolvedTypeOptions): ScalarType {
  const out = int8Value(o.int8)
  return {
    name: 'int8',
    text: (text) => {
      if (!INTEGER_RE.test(text)) throw malformed('int8', excerpt(text))
      const v = BigInt(text)
      if (v < INT64_MIN || v > INT64_MAX) throw malformed('int8', excerpt(text))
      return out(v)
    },
    binary: (b, s, e) => {
      needLength('int8', s, e, 8)
      return out(readInt64(b, s))
    },
  }
}

// ---- floats ----

const FLOAT_RE = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

function parseFloatText(what: string, text: string): number {
  if (text === 'NaN') return NaN
  if (text === 'Infinity') return Infinity
  if (text === '-Infinity') return -Infinity
  if (!FLOAT_RE.test(text)) throw malformed(what, excerpt(text))
  return Number(text)
}

// ---- numeric ----

const NUMERIC_NEG = 0x4000
const NUMERIC_NAN = 0xc000
const NUMERIC_PINF = 0xd000
const NUMERIC_NINF = 0xf000
const NUMERIC_RE = /^-?\d+(?:\.\d+)?$/

/**
 * numeric_send's fields rebuilt into the text numeric_out prints: every digit,
 * the scale's trailing zeros included. Not the codec's numericBinaryToString:
 * that one drops digits beyond the scale, as numeric_recv does, where wire
 * refuses them (a stream that holds them was not written by numeric_send).
 */
export function numericText(b: Uint8Array, s: number, e: number): string {
  if (e - s < 8) throw malformed('numeric', 'shorter than its 8-byte header')
  const ndigits = readInt16(b, s)
  const weight = readInt16(b, s + 2)
  const sign = readUint16(b, s + 4)
  const dscale = readInt16(b, s + 6)
  if (ndigits < 0 || e - s !== 8 + 2 * ndigits) throw malformed('numeric', `${e - s} bytes for ${ndigits} digits`)
  if (sign === NUMERIC_NAN || sign === NUMERIC_PINF || sign === NUMERIC_NINF) {
    if (ndigits !== 0) throw malformed('numeric', 'a special value with digits')
    return sign === NUMERIC_NAN ? 'NaN' : sign === NUMERIC_PINF ? 'Infinity' : '-Infinity'
  }
  if ((sign !== 0 && sign !== NUMERIC_NEG) || dscale < 0) throw malformed('numeric', `sign 0x${sign.toString(16)}, scale ${dscale}`)
  // Base-10000 digit i is worth 10000^(weight - i); positions outside [0, ndigits) are zeros.
  const digit = (i: number): number => {
    if (i < 0 || i >= ndigits) return 0
    const d = readUint16(b, s + 8 + 2 * i)
    if (d > 9999) throw malformed('numeric', `base-10000 digit ${d}`)
    return d
  }
  let out = sign === NUMERIC_NEG ? '-' : ''
  if (weight < 0) out += '0'
  else {
    out += String(digit(0))
    for (let i = 1; i <= weight; i++) out += String(digit(i)).padStart(4, '0')
  }
  if (dscale > 0) {
    let frac = ''
    for (let i = weight + 1; frac.length < dscale; i++) frac += String(digit(i)).padStart(4, '0')
    out += '.' + frac.slice(0, dscale)
  }
  // A digit beyond the scale would have been dropped above: refuse rather than round.
  for (let i = Math.max(0, weight + 1 + Math.ceil(dscale / 4)); i < ndigits; i++) if (digit(i) !== 0) throw malformed('numeric', 'digits beyond its scale')
  if (dscale % 4 !== 0) {
    const last = weight + Math.ceil(dscale / 4)
    const d = digit(last)
    if (last >= 0 && d % 10 ** (4 - (dscale % 4)) !== 0) throw malformed('numeric', 'digits beyond its scale')
  }
  return out
}

function checkNumericText(text: string): string {
  if (text === 'NaN' || text === 'Infinity' || text === '-Infinity' || NUMERIC_RE.test(text)) return text
  throw malformed('numeric', excerpt(text))
}

// ---- text-like ----

const utf8Binary: BinaryDecoderFn = (b, s, e) => utf8Text(b, s, e)
const identity: TextDecoderFn = (text) => text

function textType(name: string): ScalarType {
  return { name, text: identity, binary: utf8Binary }
}

/** "char" is one byte; PostgreSQL prints byte 0 as '', ASCII as itself and others as an octal escape. */
function charBinary(b: Uint8Array, s: number, e: number): string {
  needLength('"char"', s, e, 1)
  const c = b[s]!
  if (c === 0) return ''
  if (c < 0x80) return String.fromCharCode(c)
  return '\\' + c.toString(8).padStart(3, '0')
}

// ---- bytea ----

function byteaText(text: string): Uint8Array {
  if (text.startsWith('\\x')) {
    const n = text.length - 2
    if (n % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text.slice(2))) throw malformed('bytea', excerpt(text))
    const out = new Uint8Array(n / 2)
    for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(2 + 2 * i, 2), 16)
    return out
  }
  // bytea_output = escape: printable ASCII as itself, '\\' for a backslash, '\ooo' for the rest.
  const out: number[] = []
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0x80) throw malformed('bytea', 'a non-ASCII character in escape format')
    if (c !== 0x5c) {
      out.push(c)
      continue
    }
    if (text[i + 1] === '\\') {
      out.push(0x5c)
      i++
      continue
    }
    const oct = text.slice(i + 1, i + 4)
    if (!/^[0-3][0-7]{2}$/.test(oct)) throw malformed('bytea', excerpt(text))
    out.push(parseInt(oct, 8))
    i += 3
  }
  return Uint8Array.from(out)
}

/**
 * A copy of b[s, e) as a plain Uint8Array. Not b.slice(): on a Node Buffer
 * that gives a view of the chunk (keeping all of it alive, and changing with
 * it), and any slice() keeps the Buffer subclass.
 */
export function copyBytes(b: Uint8Array, s: number, e: number): Uint8Array {
  const out = new Uint8Array(e - s)
  out.set(b.subarray(s, e))
  return out
}

// ---- uuid ----

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

function uuidBinary(b: Uint8Array, s: number, e: number): string {
  // Checked here first, for wire's message; the codec then only formats.
  needLength('uuid', s, e, 16)
  return decodeUuidBinary(b, s, e)
}

// ---- json ----

function parseJson(what: string, text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw malformed(what, `not JSON: ${excerpt(text)}`)
  }
}

// ---- date and time ----

const I32_MAX = 2147483647
const I32_MIN = -2147483648
const US_PER_DAY_N = BigInt(US_PER_DAY)
/** First day past timestamp's range, 294277-01-01. */
const TIMESTAMP_END_DAY = 106_751_983

function dateType(o: ResolvedTypeOptions): ScalarType {
  const out = (day: number): unknown => {
    if (day === Infinity || day === -Infinity) return o.dates === 'date' || o.temporal ? day : day > 0 ? 'infinity' : '-infinity'
    if (o.temporal) return temporalValue(plainDateOf, day)
    return o.dates === 'date' ? toDate(day, 0, `date ${pgDateText(day)}`) : pgDateText(day)
  }
  return {
    name: 'date',
    text: (text) => {
      const day = parseDateText(text)
      return o.dates === 'string' && !o.temporal ? text : out(day)
    },
    binary: (b, s, e) => {
      needLength('date', s, e, 4)
      const day = readInt32(b, s)
      if (day === I32_MAX) return out(Infinity)
      if (day === I32_MIN) return out(-Infinity)
      if (day < MIN_DAY || day >= DATE_END_DAY) throw malformed('date', `day ${day} is out of range`)
      return out(day)
    },
  }
}

function timestampType(zoned: boolean, o: ResolvedTypeOptions): ScalarType {
  const name = zoned ? 'timestamptz' : 'timestamp'
  const out = (day: number, us: number): unknown => {
    if (day === Infinity || day === -Infinity) {
      return o.timestamps === 'string' && !o.temporal ? (day > 0 ? 'infinity' : '-infinity') : day
    }
    if (o.temporal) return temporalValue(zoned ? instantOf : plainDateTimeOf, name, day, us)
    const text = pgDateText(day, 'T' + timeText(us) + (zoned ? 'Z' : ''))
    return o.timestamps === 'string' ? text : toDate(day, us, `${name} ${text}`)
  }
  return {
    name,
    text: (text) => {
      const [day, us] = parseTimestampText(text, zoned)
      return out(day, us)
    },
    binary: (b, s, e) => {
      needLength(name, s, e, 8)
      const v = readInt64(b, s)
      if (v === INT64_MAX) return out(Infinity, 0)
      if (v === INT64_MIN) return out(-Infinity, 0)
      let day = v / US_PER_DAY_N
      let us = v - day * US_PER_DAY_N
      // BigInt division truncates: step back a day for times before 2000.
      if (us < 0n) {
        us += US_PER_DAY_N
        day -= 1n
      }
      if (day < MIN_DAY || day >= TIMESTAMP_END_DAY) throw malformed(name, `${v} µs from 2000-01-01 is out of range`)
      return out(Number(day), Number(us))
    },
  }
}

function timeBinary(b: Uint8Array, s: number): string {
  const us = readInt64(b, s)
  if (us < 0n || us > US_PER_DAY_N) throw malformed('time', `${us} µs is not a time of day`)
  return timeText(Number(us))
}

const timeType: ScalarType = {
  name: 'time',
  text: (text) => checkTimeText(text, false),
  binary: (b, s, e) => {
    needLength('time', s, e, 8)
    return timeBinary(b, s)
  },
}

/** Microseconds since midnight of a checked 'HH:MM:SS[.ffffff]'. */
function timeUs(text: string): number {
  const frac = text.length > 8 ? Number(text.slice(9).padEnd(6, '0')) : 0
  return ((Number(text.slice(0, 2)) * 60 + Number(text.slice(3, 5))) * 60 + Number(text.slice(6, 8))) * 1000000 + frac
}

const timeTemporalType: ScalarType = {
  name: 'time',
  text: (text) => temporalValue(plainTimeOf, timeUs(checkTimeText(text, false))),
  binary: (b, s, e) => {
    needLength('time', s, e, 8)
    return temporalValue(plainTimeOf, timeUs(timeBinary(b, s)))
  },
}

const timetzType: ScalarType = {
  name: 'timetz',
  text: (text) => checkTimeText(text, true),
  binary: (b, s, e) => {
    needLength('timetz', s, e, 12)
    // The zone is stored in seconds west of UTC; it is printed as an offset east.
    const west = readInt32(b, s + 8)
    if (west > 15 * 3600 + 59 * 60 + 59 || west < -(15 * 3600 + 59 * 60 + 59)) throw malformed('timetz', `zone offset ${west} s`)
    return timeBinary(b, s) + offsetText(-west)
  },
}

const intervalType: ScalarType = {
  name: 'interval',
  text: parseIntervalText,
  binary: (b, s, e) => {
    needLength('interval', s, e, 16)
    return intervalOf(readInt64(b, s), readInt32(b, s + 8), readInt32(b, s + 12))
  },
}

const intervalTemporalType: ScalarType = {
  name: 'interval',
  text: (text) => {
    const f = parseIntervalFields(text)
    return typeof f === 'number' ? f : temporalValue(durationOf, f[0], f[1], f[2])
  },
  binary: (b, s, e) => {
    needLength('interval', s, e, 16)
    const us = readInt64(b, s)
    const days = readInt32(b, s + 8)
    const months = readInt32(b, s + 12)
    if (us === INT64_MAX && days === I32_MAX && months === I32_MAX) return Infinity
    if (us === INT64_MIN && days === I32_MIN && months === I32_MIN) return -Infinity
    return temporalValue(durationOf, months, days, us)
  },
}

/** Every scalar type decoded, by OID, for one set of options. */
export function scalarTypes(o: ResolvedTypeOptions): Map<number, ScalarType> {
  const numericOut = o.numeric === 'number' ? Number : (t: string) => t
  const types: ScalarType[] = [
    {
      name: 'bool',
      text: (text) => {
        if (text === 't') return true
        if (text === 'f') return false
        throw malformed('bool', excerpt(text))
      },
      binary: (b, s, e) => {
        needLength('bool', s, e, 1)
        if (b[s]! > 1) throw malformed('bool', `byte ${b[s]}`)
        return b[s] === 1
      },
    },
    { name: 'bytea', text: byteaText, binary: copyBytes },
    { name: 'char', text: identity, binary: charBinary },
    textType('name'),
    int8Type(o),
    {
      name: 'int2',
      text: textInteger('int2', -32768, 32767),
      binary: (b, s, e) => {
        needLength('int2', s, e, 2)
        return readInt16(b, s)
      },
    },
    {
      name: 'int4',
      text: textInteger('int4', I32_MIN, I32_MAX),
      binary: (b, s, e) => {
        needLength('int4', s, e, 4)
        return readInt32(b, s)
      },
    },
    textType('text'),
    {
      name: 'oid',
      text: textInteger('oid', 0, 4294967295),
      binary: (b, s, e) => {
        needLength('oid', s, e, 4)
        return readUint32(b, s)
      },
    },
    { name: 'json', text: (text) => parseJson('json', text), binary: (b, s, e) => parseJson('json', utf8Text(b, s, e)) },
    {
      name: 'float4',
      // The float4 nearest to the printed digits, the value binary gives too.
      text: (text) => Math.fround(parseFloatText('float4', text)),
      binary: (b, s, e) => {
        needLength('float4', s, e, 4)
        return readFloat32(b, s)
      },
    },
    {
      name: 'float8',
      text: (text) => parseFloatText('float8', text),
      binary: (b, s, e) => {
        needLength('float8', s, e, 8)
        return readFloat64(b, s)
      },
    },
    textType('bpchar'),
    textType('varchar'),
    dateType(o),
    o.temporal ? timeTemporalType : timeType,
    timestampType(false, o),
    timestampType(true, o),
    o.temporal ? intervalTemporalType : intervalType,
    timetzType,
    { name: 'numeric', text: (text) => numericOut(checkNumericText(text)), binary: (b, s, e) => numericOut(numericText(b, s, e)) },
    {
      name: 'uuid',
      text: (text) => {
        if (!UUID_RE.test(text)) throw malformed('uuid', excerpt(text))
        return text
      },
      binary: uuidBinary,
    },
    {
      name: 'jsonb',
      text: (text) => parseJson('jsonb', text),
      binary: (b, s, e) => {
        if (e - s < 1 || b[s] !== 1) throw malformed('jsonb', e - s < 1 ? 'empty' : `unknown format version ${b[s]}`)
        return parseJson('jsonb', utf8Text(b, s + 1, e))
      },
    },
  ]
  const oids = [16, 17, 18, 19, 20, 21, 23, 25, 26, 114, 700, 701, 1042, 1043, 1082, 1083, 1114, 1184, 1186, 1266, 1700, 2950, 3802]
  return new Map(oids.map((oid, i) => [oid, types[i]!]))
}
