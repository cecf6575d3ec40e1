import { TypedValue } from '../../index.js'
import { generic } from './errors.js'
import type { Transform } from './transform.js'
import { param } from './types.js'

// A tagged template turned into one statement: its text with $n for each
// value, and the values as pipegres takes them. A template of plain values
// has its text cached per call site (the strings array is the same object
// each time the template runs); fragments, identifiers and the helpers
// (sql(object), sql(array), sql('name')) are written in place, the helpers
// in the form the keyword before them asks for, as postgres.js does.

/** Something that is not a query: awaiting it is a mistake postgres.js names. */
class NotTagged {
  then(): never {
    throw notTagged()
  }
  catch(): never {
    throw notTagged()
  }
  finally(): never {
    throw notTagged()
  }
}

function notTagged(): Error {
  return generic('NOT_TAGGED_CALL', 'Query not called as a tagged template literal')
}

/** sql('name'): an identifier, quoted (a dot separates schema, table and column). */
export class Identifier extends NotTagged {
  readonly value: string
  constructor(name: string) {
    super()
    this.value = escapeIdentifier(name)
  }
}

/** sql(object | array, ...columns): written by the keyword before it (insert, update, select, in, values, ...). */
export class Builder extends NotTagged {
  constructor(
    readonly first: unknown,
    readonly rest: unknown[],
  ) {
    super()
  }
}

/** A template that is (or may be) written into another: what build() needs of a query. */
export interface Template {
  readonly strings: readonly string[]
  readonly args: readonly unknown[]
}

/** Marks the query class (defined in query.ts) so that a template can tell its fragments apart without importing it. */
export const isFragment = Symbol('pipegres.postgres.fragment')

export function escapeIdentifier(name: string): string {
  return '"' + String(name).replace(/"/g, '""').replace(/\./g, '"."') + '"'
}

/** The statement being written: text so far, values, and the transform options that apply. */
interface Out {
  values: unknown[]
  transform: Transform
}

const textCache = new WeakMap<readonly string[], string>()

/** The text of a template of plain values: $1, $2, ... in place of the values, cached per strings array. */
function plainText(strings: readonly string[]): string {
  let text = textCache.get(strings)
  if (text === undefined) {
    text = strings[0]!
    for (let i = 1; i < strings.length; i++) text += '$' + i + strings[i]
    textCache.set(strings, text)
  }
  return text
}

function special(v: unknown): boolean {
  return typeof v === 'object' && v !== null && (v instanceof Builder || v instanceof Identifier || (v as { [isFragment]?: boolean })[isFragment] === true || (Array.isArray(v) && v.length > 0 && (v[0] as { [isFragment]?: boolean })?.[isFragment] === true))
}

/**
 * The text and values of a template. `values` receives the values as
 * pipegres takes them; `args` are the template's own.
 */
export function build(t: Template, transform: Transform): { text: string; values: unknown[] } {
  const { strings, args } = t
  let plain = true
  for (let i = 0; i < args.length; i++) {
    if (special(args[i])) {
      plain = false
      break
    }
  }
  if (plain) return { text: plainText(strings), values: unsafeValues(args, transform) }
  const out: Out = { values: [], transform }
  return { text: write(t, out, ''), values: out.values }
}

/** A value as a parameter: undefined is refused (or replaced by transform.undefined), arrays are checked for it too. */
function value(v: unknown, transform: Transform): unknown {
  if (v === undefined) {
    if (transform.undefined === undefined) throw generic('UNDEFINED_VALUE', 'Undefined values are not allowed')
    return transform.undefined
  }
  if (Array.isArray(v)) return arrayValue(v, transform)
  if (v instanceof TypedValue && Array.isArray(v.value)) {
    const checked = arrayValue(v.value, transform)
    return checked === v.value ? v : new TypedValue(checked, v.oid, v.typeName)
  }
  return param(v)
}

function arrayValue(xs: unknown[], transform: Transform): unknown[] {
  let out = xs
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i]
    let y = x
    if (x === undefined) {
      if (transform.undefined === undefined) throw generic('UNDEFINED_VALUE', 'Undefined values are not allowed')
      y = transform.undefined
    } else if (Array.isArray(x)) y = arrayValue(x, transform)
    if (y !== x) {
      if (out === xs) out = xs.slice()
      out[i] = y
    }
  }
  return out
}

function push(out: Out, v: unknown): string {
  out.values.push(value(v, out.transform))
  return '$' + out.values.length
}

/** Writes a template into `out`, `before` being the text of the statement so far (where the helpers find their keyword). */
function write(t: Template, out: Out, before: string): string {
  const { strings, args } = t
  let text = strings[0]!
  for (let i = 1; i < strings.length; i++) {
    text += writeValue(args[i - 1], out, before + text) + strings[i]
  }
  return text
}

function writeValue(v: unknown, out: Out, before: string): string {
  if (typeof v === 'object' && v !== null) {
    if (v instanceof Builder) return writeBuilder(v, out, before)
    if (v instanceof Identifier) return v.value
    if ((v as { [isFragment]?: boolean })[isFragment] === true) return write(v as unknown as Template, out, before)
    if (Array.isArray(v) && v.length > 0 && (v[0] as { [isFragment]?: boolean })?.[isFragment] === true) {
      return v.map((f) => ' ' + write(f as Template, out, before)).join('')
    }
  }
  return push(out, v)
}

function columnName(out: Out, name: string): string {
  return escapeIdentifier(out.transform.column.to ? out.transform.column.to(name) : name)
}

function identifiers(names: unknown[], out: Out): string {
  return names.map((n) => columnName(out, String(n))).join(',')
}

/** A value inside a helper: a fragment or identifier is written in place, anything else is a parameter. */
function helperValue(v: unknown, out: Out, before: string): string {
  if (v instanceof Identifier) return v.value
  if (typeof v === 'object' && v !== null && (v as { [isFragment]?: boolean })[isFragment] === true) return write(v as unknown as Template, out, before)
  return push(out, v)
}

function columnsOf(b: Builder, sample: unknown): string[] {
  if (b.rest.length > 0) return (b.rest.flat() as unknown[]).map(String)
  return Object.keys(sample as object)
}

function rows(list: unknown[], columns: string[], out: Out): string {
  return list.map((row) => '(' + columns.map((c) => helperValue((row as Record<string, unknown>)[c], out, 'values')).join(',') + ')').join(',')
}

function valuesList(b: Builder, out: Out): string {
  const first = b.first as unknown[]
  const multi = Array.isArray(first[0])
  const columns = b.rest.length > 0 ? (b.rest.flat() as unknown[]).map(String) : Object.keys(multi ? first[0] as object : first)
  return rows(multi ? first : [first], columns, out)
}

function selectList(b: Builder, out: Out, before: string): string {
  if (typeof b.first === 'string') return identifiers([b.first, ...b.rest], out)
  if (Array.isArray(b.first)) return identifiers(b.first, out)
  const obj = b.first as Record<string, unknown>
  return columnsOf(b, obj).map((c) => helperValue(obj[c], out, before) + ' as ' + columnName(out, c)).join(',')
}

type Form = 'values' | 'in' | 'select' | 'update' | 'insert'

// The keywords a helper is written for, each as a whole word (or an opening parenthesis): the last one before it wins.
const keywords: [RegExp, Form][] = (
  [
    ['values', 'values'],
    ['in', 'in'],
    ['select', 'select'],
    ['as', 'select'],
    ['returning', 'select'],
    ['\\(', 'select'],
    ['update', 'update'],
    ['insert', 'insert'],
  ] as const
).map(([k, form]) => [new RegExp(`(?:^|[\\s(])${k}(?=$|[\\s(])`, 'gi'), form])

function formFor(before: string): Form | undefined {
  let best = -1
  let form: Form | undefined
  for (const [re, f] of keywords) {
    re.lastIndex = 0
    let m: RegExpExecArray | null
    let last = -1
    while ((m = re.exec(before)) !== null) {
      last = m.index
      if (m[0].length === 0) re.lastIndex++
      else re.lastIndex = m.index + 1
    }
    if (last > best) {
      best = last
      form = f
    }
  }
  return form
}

function writeBuilder(b: Builder, out: Out, before: string): string {
  const form = formFor(before)
  switch (form) {
    case undefined:
      return Array.isArray(b.first) ? identifiers(b.first, out) : identifiers([b.first, ...b.rest], out)
    case 'values':
      return valuesList(b, out)
    case 'in': {
      const list = valuesList(b, out)
      return list === '()' ? '(null)' : list
    }
    case 'select':
      return selectList(b, out, before)
    case 'update': {
      const obj = b.first as Record<string, unknown>
      return columnsOf(b, obj).map((c) => columnName(out, c) + '=' + helperValue(obj[c], out, 'values')).join(',')
    }
    case 'insert': {
      const list = Array.isArray(b.first) ? b.first : [b.first]
      const columns = columnsOf(b, list[0])
      return '(' + identifiers(columns, out) + ')values' + rows(list, columns, out)
    }
  }
}

/** unsafe()'s parameters as pipegres takes them. */
export function unsafeValues(args: readonly unknown[], transform: Transform): unknown[] {
  return converted(args, transform)
}

/**
 * The values as pipegres takes them: `args` itself when each is taken as it
 * is (strings, numbers, null: the usual case), else a copy with those that
 * are not converted. `args` is the query's own (a tagged template's rest
 * parameter, or unsafe()'s array, which postgres.js keeps as well).
 */
function converted(args: readonly unknown[], transform: Transform): unknown[] {
  let out: unknown[] | undefined
  for (let i = 0; i < args.length; i++) {
    const x = args[i]
    const v = value(x, transform)
    if (out === undefined) {
      if (v === x) continue
      out = args.slice(0, i)
    }
    out.push(v)
  }
  return out ?? (args as unknown[])
}

/** A template of plain values (no fragments or helpers): its values as pipegres takes them; undefined for any other. */
export function plainValues(t: Template, transform: Transform): unknown[] | undefined {
  const args = t.args
  for (let i = 0; i < args.length; i++) if (special(args[i])) return undefined
  return converted(args, transform)
}

export { plainText }
