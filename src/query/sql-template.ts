import { ArgumentError } from '../errors.js'

// The sql tagged template: every interpolated value becomes a $n parameter, so
// no value is ever spliced into SQL text. Only two things are spliced: other
// fragments (their parameters renumbered) and identifiers (quoted).

/** A piece of SQL with its own parameters, built with fragment`...`, to be embedded in sql`...`. */
export class Fragment {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
  ) {}
}

/** A quoted identifier (table or column name), built with identifier(). */
export class Identifier {
  readonly quoted: string
  constructor(parts: readonly string[]) {
    if (parts.length === 0) throw new ArgumentError('identifier() needs at least one name')
    this.quoted = parts.map(quoteIdentifier).join('.')
  }
}

/** Quotes a name as a PostgreSQL identifier: "name", with embedded quotes doubled. */
export function quoteIdentifier(name: string): string {
  if (typeof name !== 'string' || name.length === 0) throw new ArgumentError('an identifier must be a non-empty string')
  if (name.includes('\0')) throw new ArgumentError('an identifier cannot contain a NUL character')
  return '"' + name.replace(/"/g, '""') + '"'
}

/** A SQL fragment for composing queries: sql`SELECT * FROM t WHERE ${fragment`a = ${x}`}`. */
export function fragment(strings: TemplateStringsArray, ...values: unknown[]): Fragment {
  return new Fragment(strings, values)
}

/** A table or column name, optionally schema-qualified: identifier('public', 'users') is "public"."users". */
export function identifier(...parts: string[]): Identifier {
  return new Identifier(parts)
}

// Without fragments or identifiers, the text depends only on the call site's
// strings array, which the language hands over as the same object every time.
const textCache = new WeakMap<TemplateStringsArray, string>()

function plainText(strings: readonly string[]): string {
  let text = strings[0]!
  for (let i = 1; i < strings.length; i++) text += '$' + i + strings[i]!
  return text
}

/** Turns a tagged template into query text with $n placeholders and its parameter values. */
export function buildQuery(strings: TemplateStringsArray, values: readonly unknown[]): { text: string; values: unknown[] } {
  if (!Array.isArray(strings) || !('raw' in strings)) throw new ArgumentError('sql must be used as a tagged template: sql`SELECT ...`')
  let composed = false
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    if (v instanceof Fragment || v instanceof Identifier) {
      composed = true
      break
    }
  }
  if (!composed) {
    let text = textCache.get(strings)
    if (text === undefined) {
      text = plainText(strings)
      textCache.set(strings, text)
    }
    return { text, values: values as unknown[] }
  }
  const out: unknown[] = []
  const text = compose(strings, values, out)
  return { text, values: out }
}

function compose(strings: readonly string[], values: readonly unknown[], out: unknown[]): string {
  let text = strings[0]!
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    if (v instanceof Fragment) text += compose(v.strings, v.values, out)
    else if (v instanceof Identifier) text += v.quoted
    else {
      out.push(v)
      text += '$' + out.length
    }
    text += strings[i + 1]!
  }
  return text
}
