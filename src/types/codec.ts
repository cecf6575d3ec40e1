import type { Writer } from '../protocol/writer.js'

// The contract every type codec follows. A codec turns one column value (the
// bytes between start and end of a DataRow field, in text or binary format) into
// a JS value, and a JS value into a parameter's bytes. Codecs are plain objects
// of functions, built once per set of type options, so a decode plan is an array
// of functions called in a tight loop.

/** Decodes the bytes [start, end) of one non-NULL value. Throws on malformed input (never returns a corrupted value). */
export type Decoder = (buf: Uint8Array, start: number, end: number) => unknown

/**
 * Writes the binary form of a non-null value (its bytes only: the caller writes
 * the length) and returns true; or returns false, writing nothing, when the
 * value is better sent in text (typically a string, which the server parses).
 * Throws CodecError when the JS value cannot stand for this type.
 */
export type BinaryEncoder = (w: Writer, value: unknown) => boolean

/** The text form of a non-null value. Throws CodecError when the JS value cannot stand for this type. */
export type TextEncoder = (value: unknown) => string

export interface Codec {
  /** The PostgreSQL type name, for messages ('int4', 'timestamptz', '_text' for arrays is shown as 'text[]'). */
  readonly name: string
  readonly decodeText: Decoder
  /** Absent when the type has no binary codec: results are then requested in text. */
  readonly decodeBinary?: Decoder
  readonly encodeText: TextEncoder
  /** Absent when parameters of this type are always sent in text. */
  readonly encodeBinary?: BinaryEncoder
  /**
   * False when results should be requested in text even though a binary
   * decoder exists (e.g. regclass, whose text is a name but whose binary is an OID).
   */
  readonly preferBinary?: boolean
}

/**
 * A JS value that does not fit the type, or a malformed value from the server.
 * The query layer turns it into a ParameterError naming the parameter, or
 * rejects the query with it.
 */
export class CodecError extends Error {
  override get name(): string {
    return 'CodecError'
  }
}

/**
 * How some types come back (from the Node client and from pipegres/wire
 * alike); every choice is exact unless its documentation says otherwise.
 */
export interface TypeOptions {
  /** int8: 'bigint' (default, exact), 'number' (refuses values beyond ±2^53 rather than round them), or 'string'. */
  int8?: 'bigint' | 'number' | 'string'
  /** numeric: 'string' (default, exact: as PostgreSQL prints it) or 'number' (rounded to the nearest double). */
  numeric?: 'string' | 'number'
  /**
   * timestamp and timestamptz: 'date' (default; a Date keeps milliseconds, so
   * microseconds are dropped; the infinities are ±Infinity) or 'string'
   * (exact ISO 8601 with microseconds: '2024-02-29T12:34:56.123456Z' for
   * timestamptz, no zone for timestamp).
   */
  timestamps?: 'date' | 'string'
  /** date: 'string' (default, exact: '2024-02-29', '0044-03-15 BC', 'infinity') or 'date' (a Date at UTC midnight). */
  dates?: 'string' | 'date'
  /**
   * true: timestamptz, timestamp, date, time and interval come back as
   * Temporal.Instant, PlainDateTime, PlainDate, PlainTime and Duration
   * (exact to the microsecond; the infinities stay ±Infinity), taking
   * precedence over `timestamps` and `dates`. Needs the global Temporal
   * (Node 26 and later); without it the option is refused.
   */
  temporal?: boolean
}

export type ResolvedTypeOptions = Required<TypeOptions>

/**
 * The choices of each type option, its default first: what the Node
 * client's option checks and pipegres/wire's accept. The compiler holds it
 * to TypeOptions (every option, and nothing it does not allow).
 */
export const typeOptionChoices = {
  int8: ['bigint', 'number', 'string'],
  numeric: ['string', 'number'],
  timestamps: ['date', 'string'],
  dates: ['string', 'date'],
  temporal: [false, true],
} as const satisfies { readonly [K in keyof TypeOptions]-?: readonly NonNullable<TypeOptions[K]>[] }

export const defaultTypeOptions: ResolvedTypeOptions = {
  int8: typeOptionChoices.int8[0],
  numeric: typeOptionChoices.numeric[0],
  timestamps: typeOptionChoices.timestamps[0],
  dates: typeOptionChoices.dates[0],
  temporal: typeOptionChoices.temporal[0],
}

/** The cache key of a set of resolved options: one codec table and one view per key. */
export function typeOptionsKey(o: ResolvedTypeOptions): string {
  return `${o.int8}/${o.numeric}/${o.timestamps}/${o.dates}/${o.temporal}`
}

/**
 * What is wrong with `value` for the type option `name`, worded to follow
 * the option's name ("must be one of 'string', 'number'"); null when it is
 * one of its choices, or undefined. Each caller throws its own error with it.
 */
export function typeOptionFault(name: string, value: unknown): string | null {
  if (!Object.hasOwn(typeOptionChoices, name)) return `is not a type option (known: ${Object.keys(typeOptionChoices).join(', ')})`
  const choices: readonly unknown[] = typeOptionChoices[name as keyof TypeOptions]
  if (value === undefined) return null
  if (!choices.includes(value)) return `must be one of ${choices.map((c) => (typeof c === 'string' ? `'${c}'` : String(c))).join(', ')}`
  // Checked when the option is given, so that no query fails later for want of it.
  if (name === 'temporal' && value === true && !hasTemporal()) {
    return 'needs the global Temporal, which this runtime lacks (Node 26 and later have it); on an older runtime, install a Temporal polyfill as globalThis.Temporal before setting the option'
  }
  return null
}

/** Whether the runtime has the global Temporal (read each time: a polyfill may install it after this module loaded). */
export function hasTemporal(): boolean {
  return typeof (globalThis as { Temporal?: unknown }).Temporal === 'object'
}

/** Describes a JS value for error messages, without its content. */
export function describeValue(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  if (v instanceof Date) return 'a Date'
  if (v instanceof Uint8Array) return 'a Uint8Array'
  const t = typeof v
  if (t === 'object') {
    // Temporal's classes share their constructor names (PlainDate, Instant): the tag names them fully.
    const tag = (v as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag]
    if (typeof tag === 'string' && tag.startsWith('Temporal.')) return `a ${tag}`
    return `an object (${(v as object).constructor?.name ?? 'no prototype'})`
  }
  return t === 'undefined' ? 'undefined' : `a ${t}`
}
