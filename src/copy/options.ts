import { ArgumentError } from '../errors.js'

// The options of COPY data that change its bytes, checked once by the rules
// PostgreSQL applies to them, so that a bad option fails before anything is
// sent and the encoders, the decoders and the COPY statement always agree.

export type CopyFormat = 'binary' | 'text' | 'csv'

export interface CopyFormatOptions {
  /** 'binary' (exact, and the fastest to write), 'text' or 'csv'. */
  format?: CopyFormat
  /** text and csv: the field separator, one ASCII character. Default: tab for text, ',' for csv. */
  delimiter?: string
  /** csv: the quoting character, one ASCII character. Default: '"'. */
  quote?: string
  /** csv: the character that makes the next quote (or itself) literal inside a quoted field. Default: the quote. */
  escape?: string
}

/** Options after defaults and checks; characters as byte values. */
export interface ResolvedCopyOptions {
  readonly format: CopyFormat
  /** The explicitly given options, for the COPY statement (PostgreSQL's own defaults need not be spelled out). */
  readonly given: { readonly delimiter?: string; readonly quote?: string; readonly escape?: string }
  readonly delimiter: number
  readonly quote: number
  readonly escape: number
}

const TAB = 0x09
const COMMA = 0x2c
const DOUBLE_QUOTE = 0x22

/**
 * Checks COPY options the way PostgreSQL does and fills in its defaults.
 * Throws ArgumentError naming the offending option.
 */
export function resolveCopyOptions(options: CopyFormatOptions | undefined, defaultFormat: CopyFormat): ResolvedCopyOptions {
  const o = options ?? {}
  const format = o.format ?? defaultFormat
  if (format !== 'binary' && format !== 'text' && format !== 'csv') {
    throw new ArgumentError(`COPY option format must be 'binary', 'text' or 'csv'; got ${describe(format)}`)
  }
  const delimiter = optionChar(o.delimiter, 'delimiter')
  const quote = optionChar(o.quote, 'quote')
  const escape = optionChar(o.escape, 'escape')
  if (format === 'binary' && delimiter !== undefined) {
    throw new ArgumentError(`COPY option delimiter does not apply to format 'binary'`)
  }
  if (format !== 'csv') {
    if (quote !== undefined) throw new ArgumentError(`COPY option quote applies only to format 'csv'`)
    if (escape !== undefined) throw new ArgumentError(`COPY option escape applies only to format 'csv'`)
  }
  const given: { delimiter?: string; quote?: string; escape?: string } = {}
  if (o.delimiter !== undefined) given.delimiter = o.delimiter
  if (o.quote !== undefined) given.quote = o.quote
  if (o.escape !== undefined) given.escape = o.escape
  if (format === 'binary') return { format, given, delimiter: -1, quote: -1, escape: -1 }

  const d = delimiter ?? (format === 'csv' ? COMMA : TAB)
  if (d === 0x0a || d === 0x0d) throw new ArgumentError('COPY option delimiter cannot be newline or carriage return')
  if (format === 'text') {
    // A backslash would be ambiguous, and a letter, digit or dot would collide
    // with the escapes (\n, \123, \x41) and the end-of-data marker (\.);
    // 'N' (and the backslash) would collide with the NULL marker \N.
    if ((d >= 0x61 && d <= 0x7a) || (d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x5c || d === 0x4e) {
      throw new ArgumentError(`COPY option delimiter cannot be ${JSON.stringify(String.fromCharCode(d))} in format 'text'`)
    }
    return { format, given, delimiter: d, quote: -1, escape: -1 }
  }
  const q = quote ?? DOUBLE_QUOTE
  if (q === d) throw new ArgumentError('COPY options delimiter and quote must be different characters')
  if (q === 0x0a || q === 0x0d) throw new ArgumentError('COPY option quote cannot be newline or carriage return')
  const e = escape ?? q
  if (e === 0x0a || e === 0x0d) throw new ArgumentError('COPY option escape cannot be newline or carriage return')
  return { format, given, delimiter: d, quote: q, escape: e }
}

/** The byte of a one-character option; undefined when the option is absent. */
function optionChar(value: unknown, option: string): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw new ArgumentError(`COPY option ${option} must be a string of one character; got ${describe(value)}`)
  // Only ASCII is one byte in UTF-8, the client encoding; NUL cannot be in a statement.
  const c = value.length === 1 ? value.charCodeAt(0) : -1
  if (c <= 0 || c >= 0x80) {
    throw new ArgumentError(`COPY option ${option} must be a single one-byte (ASCII, non-NUL) character; got ${JSON.stringify(value)}`)
  }
  return c
}

function describe(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : v === null ? 'null' : typeof v
}
