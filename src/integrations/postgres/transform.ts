// postgres.js's name-case helpers (toCamel, fromCamel, camel, ...) and the
// `transform` option they plug into: column names renamed both ways, values
// and rows passed through functions, `undefined` given a stand-in.

export type NameFn = ((name: string) => string) & { column?: ColumnTransform; value?: ValueTransform }
export interface ColumnTransform {
  /** Result column name → the key the row gets. */
  from?: (name: string) => string
  /** A key given to a helper (sql(object)) → the column name sent. */
  to?: (name: string) => string
}
export interface ColumnInfo {
  name: string
  type: number
  table: number
  number: number
}
export interface ValueTransform {
  from?: (value: unknown, column: ColumnInfo) => unknown
  to?: (value: unknown) => unknown
}
export interface RowTransform {
  from?: (row: Record<string, unknown>) => unknown
}

/** The transform option as postgres.js takes it (functions or { from, to } objects). */
export interface TransformOption {
  undefined?: unknown
  column?: ((name: string) => string) | ColumnTransform
  value?: ((value: unknown, column: ColumnInfo) => unknown) | ValueTransform
  row?: ((row: Record<string, unknown>) => unknown) | RowTransform
}

/** The transform option normalised: what the query and result code read. */
export interface Transform {
  undefined: unknown
  column: { from: ((name: string) => string) | undefined; to: ((name: string) => string) | undefined }
  value: { from: ((value: unknown, column: ColumnInfo) => unknown) | undefined; to: ((value: unknown) => unknown) | undefined }
  row: { from: ((row: Record<string, unknown>) => unknown) | undefined }
  /** True when results need more than pipegres's own rows (renamed keys, changed values or rows). */
  results: boolean
}

const fn = <T>(v: unknown, what: string): T | undefined => {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'function') throw new TypeError(`transform.${what} must be a function`)
  return v as T
}

export function normalizeTransform(t: TransformOption | undefined): Transform {
  // A name function (postgres.toCamel) carries its column and value transforms as properties.
  const o = (t ?? {}) as TransformOption
  if (typeof o !== 'object' && typeof o !== 'function') throw new TypeError('transform must be an object such as { column: { from, to } } or postgres.camel')
  const col = typeof o.column === 'function' ? { from: o.column } : (o.column ?? {})
  const val = typeof o.value === 'function' ? { from: o.value } : (o.value ?? {})
  const row = typeof o.row === 'function' ? { from: o.row } : (o.row ?? {})
  const out: Transform = {
    undefined: o.undefined,
    column: { from: fn(col.from, 'column.from'), to: fn(col.to, 'column.to') },
    value: { from: fn(val.from, 'value.from'), to: fn(val.to, 'value.to') },
    row: { from: fn(row.from, 'row.from') },
    results: false,
  }
  out.results = out.column.from !== undefined || out.value.from !== undefined || out.row.from !== undefined
  return out
}

function upperAfterUnderscore(x: string, first: boolean): string {
  let out = first ? x.charAt(0).toUpperCase() : x.charAt(0)
  for (let i = 1; i < x.length; i++) {
    const c = x[i]!
    if (c === '_' && i + 1 < x.length) out += x[++i]!.toUpperCase()
    else out += c
  }
  return out
}

export const toCamel: NameFn = (x) => upperAfterUnderscore(x, false)
export const toPascal: NameFn = (x) => upperAfterUnderscore(x, true)
export const toKebab: NameFn = (x) => x.replace(/_/g, '-')
export const fromCamel: NameFn = (x) => x.replace(/([A-Z])/g, '_$1').toLowerCase()
export const fromPascal: NameFn = (x) => (x.charAt(0) + x.slice(1).replace(/([A-Z])/g, '_$1')).toLowerCase()
export const fromKebab: NameFn = (x) => x.replace(/-/g, '_')

/** A value transform renaming the keys of json and jsonb values, deeply (other values pass unchanged). */
function jsonKeys(rename: (name: string) => string): (value: unknown, column: ColumnInfo) => unknown {
  const walk = (v: unknown): unknown => {
    if (typeof v !== 'object' || v === null) return v
    if (Array.isArray(v)) return v.map(walk)
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) out[rename(k)] = walk(x)
    return out
  }
  return (value, column) => (column.type === 114 || column.type === 3802 ? walk(value) : value)
}

toCamel.column = { from: toCamel }
toCamel.value = { from: jsonKeys(toCamel) }
fromCamel.column = { to: fromCamel }
toPascal.column = { from: toPascal }
toPascal.value = { from: jsonKeys(toPascal) }
fromPascal.column = { to: fromPascal }
toKebab.column = { from: toKebab }
toKebab.value = { from: jsonKeys(toKebab) }
fromKebab.column = { to: fromKebab }

/** Both ways: result columns renamed from snake_case, helper keys to it, json keys too. */
export const camel: TransformOption = { column: { from: toCamel, to: fromCamel }, value: { from: jsonKeys(toCamel) } }
export const pascal: TransformOption = { column: { from: toPascal, to: fromPascal }, value: { from: jsonKeys(toPascal) } }
export const kebab: TransformOption = { column: { from: toKebab, to: fromKebab }, value: { from: jsonKeys(toKebab) } }
