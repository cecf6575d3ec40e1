import { ArgumentError } from '../errors.js'
import { utf8Length } from '../protocol/utf8.js'
import { resolveCopyOptions, type CopyFormatOptions, type ResolvedCopyOptions } from './options.js'

// COPY statements are built from names and options, never from values: the
// names are quoted here, the table is checked to be nothing but a (qualified)
// name, and the options are written as escape-string literals, which read the
// same whatever standard_conforming_strings says.

/** PostgreSQL keeps identifiers to NAMEDATALEN - 1 bytes and silently cuts longer ones. */
const MAX_IDENTIFIER_BYTES = 63

/**
 * A quoted SQL identifier: double quotes, inner quotes doubled. Refuses what
 * the server would reject or silently change: an empty name, a NUL, more than
 * 63 bytes (which the server would truncate into possibly another column's name).
 */
export function quoteColumnName(name: string): string {
  if (typeof name !== 'string') throw new ArgumentError(`a column name must be a string; got ${name === null ? 'null' : typeof name}`)
  if (name.length === 0) throw new ArgumentError('a column name cannot be empty')
  if (name.includes('\0')) throw new ArgumentError('a column name cannot contain a NUL character')
  if (utf8Length(name) > MAX_IDENTIFIER_BYTES) {
    throw new ArgumentError(`column name ${JSON.stringify(name.slice(0, 80))} is longer than PostgreSQL's ${MAX_IDENTIFIER_BYTES} bytes`)
  }
  return `"${name.replaceAll('"', '""')}"`
}

// One to three identifiers separated by dots, each either quoted (with doubled
// inner quotes) or a plain unquoted identifier: exactly what `regclass::text`
// prints, and never anything that could end the name early.
const PART = '(?:"(?:[^"\\u0000]|"")+"|[A-Za-z_\\u0080-\\uffff][A-Za-z0-9_$\\u0080-\\uffff]*)'
const QUALIFIED_NAME = new RegExp(`^${PART}(?:\\.${PART}){0,2}$`)

/** Checks that `table` is a table name in SQL syntax (quoted where needed), so that it cannot carry anything else. */
export function checkTableName(table: string): string {
  if (typeof table !== 'string' || !QUALIFIED_NAME.test(table)) {
    const shown = typeof table === 'string' ? JSON.stringify(table.slice(0, 80)) : String(table)
    throw new ArgumentError(`COPY table must be a table name in SQL syntax, quoted where needed (such as "public"."my table"); got ${shown}`)
  }
  return table
}

/** A one-character option as an escape-string literal. */
function charLiteral(c: string): string {
  const code = c.charCodeAt(0)
  if (c === '\\' || c === "'") return `E'\\${c}'`
  if (code < 0x20 || code === 0x7f) return `E'\\x${code.toString(16).padStart(2, '0')}'`
  return `E'${c}'`
}

function optionList(o: ResolvedCopyOptions): string {
  let s = `FORMAT ${o.format}`
  if (o.given.delimiter !== undefined) s += `, DELIMITER ${charLiteral(o.given.delimiter)}`
  if (o.given.quote !== undefined) s += `, QUOTE ${charLiteral(o.given.quote)}`
  if (o.given.escape !== undefined) s += `, ESCAPE ${charLiteral(o.given.escape)}`
  return s
}

/**
 * `COPY table ("a", "b") FROM STDIN (FORMAT ...)`. `table` is a name in SQL
 * syntax, quoted where needed (as `$1::regclass::text` gives it); `columns`
 * are exact column names, quoted here; without them every column is copied in
 * table order. Options are checked (ArgumentError); binary is the default format.
 */
export function copyFromStatement(table: string, columns: readonly string[] | undefined, options?: CopyFormatOptions): string {
  const o = resolveCopyOptions(options, 'binary')
  checkTableName(table)
  let list = ''
  if (columns !== undefined) {
    if (!Array.isArray(columns) || columns.length === 0) throw new ArgumentError('COPY columns must be a non-empty array of column names')
    list = ` (${columns.map((c) => quoteColumnName(c)).join(', ')})`
  }
  return `COPY ${table}${list} FROM STDIN (${optionList(o)})`
}

/**
 * `COPY (query) TO STDOUT (FORMAT ...)`. The query goes in as written, minus
 * trailing semicolons; the closing parenthesis is on a line of its own, so a
 * query ending in a `--` comment cannot swallow it. Binary is the default format.
 */
export function copyToStatement(query: string, options?: CopyFormatOptions): string {
  const o = resolveCopyOptions(options, 'binary')
  return `COPY (${copyQueryBody(query)}\n) TO STDOUT (${optionList(o)})`
}

/** The query of a COPY (query) TO, checked, without trailing semicolons: it goes inside parentheses. */
export function copyQueryBody(query: string): string {
  if (typeof query !== 'string') throw new ArgumentError(`COPY query must be a string; got ${query === null ? 'null' : typeof query}`)
  const body = query.replace(/[\s;]+$/, '')
  if (body.trim().length === 0) throw new ArgumentError('COPY query cannot be empty')
  if (body.includes('\0')) throw new ArgumentError('COPY query cannot contain a NUL character')
  return body
}
