import { readInt32 } from '../protocol/reader.js'
import { CodecError, type Decoder } from './codec.js'

// rowMode 'lazy': a row keeps its DataRow bytes and decodes a column each time
// it is read. Decoding every row of a large result up front makes every value
// an object that lives until the result ends; V8's young-generation collector
// copies each of them, then promotes them, which costs as much as decoding. A
// lazy row is one small object per row, and the values made on each read die
// young unless the caller keeps them. Caching them in the row would keep them
// alive as long as the row, which is the cost this mode exists to avoid.
//
// The columns are accessors on a prototype made once per row plan, so reading
// one by name is a monomorphic getter call. What that gives up, and why the
// mode is opt-in: the columns are not own properties, so spread, Object.keys()
// and structuredClone() do not see them, and an object value (a Date, JSON, an
// array, a Buffer) is a new one on every read. plainRow() gives a plain object;
// JSON.stringify() and console.log() show the values through toJSON and the
// inspect symbol.

/** A row of rowMode 'lazy': its columns read (decoding each time) like properties. */
export type LazyRow = Record<string, unknown>

const BYTES = Symbol('pipegres.lazyRow.bytes')
const AT = Symbol('pipegres.lazyRow.at')
const EXTRA = Symbol('pipegres.lazyRow.extra')
const PLAN = Symbol('pipegres.lazyRow.plan')

/** Marks a column not assigned by the caller: no value the caller can assign is it. */
const UNSET: unique symbol = Symbol('unset')

/** Rows this wide keep their columns' offsets once read: walking to a column would grow with the square of the width. */
const OFFSETS_FROM = 16

interface LazyPlan {
  readonly names: readonly string[]
  readonly decoders: readonly Decoder[]
}

interface RowState {
  /** The DataRow message, or the socket read holding it. */
  [BYTES]: Uint8Array
  /** Where the DataRow's column count starts in BYTES. */
  [AT]: number
  /**
   * Undefined until the caller assigns a column or a wide row is read: then
   * each column's assigned value (UNSET where none), then, for wide rows, the
   * offset of each column's length word.
   */
  [EXTRA]: unknown[] | undefined
}

type RowClass = new (bytes: Uint8Array, at: number) => LazyRow

/** What every lazy row inherits below its columns. */
const base: object = Object.create(Object.prototype, {
  toJSON: { value: function (this: LazyRow) { return plainRow(this) }, writable: true, configurable: true },
  // A symbol key: no column name can hide it.
  [Symbol.for('nodejs.util.inspect.custom')]: { value: function (this: LazyRow) { return plainRow(this) }, writable: true, configurable: true },
})

function extraOf(row: RowState, count: number): unknown[] {
  let extra = row[EXTRA]
  if (extra !== undefined) return extra
  extra = new Array<unknown>(count >= OFFSETS_FROM ? 2 * count : count).fill(UNSET)
  if (count >= OFFSETS_FROM) {
    const buf = row[BYTES]
    let p = row[AT] + 2
    for (let i = 0; i < count; i++) {
      extra[count + i] = p
      const len = readInt32(buf, p)
      p += 4 + (len > 0 ? len : 0)
    }
  }
  return (row[EXTRA] = extra)
}

function read(row: RowState, i: number, count: number, decode: Decoder, name: string): unknown {
  const buf = row[BYTES]
  let p: number
  const extra = row[EXTRA]
  if (extra !== undefined && extra[i] !== UNSET) return extra[i]
  if (count < OFFSETS_FROM) {
    // The DataRow's structure was checked when it arrived.
    p = row[AT] + 2
    for (let k = 0; k < i; k++) {
      const len = readInt32(buf, p)
      p += 4 + (len > 0 ? len : 0)
    }
  } else p = extraOf(row, count)[count + i] as number
  const len = readInt32(buf, p)
  if (len < 0) return null
  try {
    return decode(buf, p + 4, p + 4 + len)
  } catch (err) {
    // Read long after the query, the error names the column; every read of it throws the same.
    throw new CodecError(`column "${name}" of a lazy row cannot be decoded: ${(err as Error).message}`, { cause: err })
  }
}

/**
 * The class of one plan's lazy rows. Built from closures, not generated code,
 * so it works where code generation is forbidden, and no column name is ever
 * read as code: names are keys given to defineProperty, which makes even
 * `__proto__` an ordinary accessor. A name used twice reads its last column,
 * as in rowMode 'object'.
 */
export function lazyRowClass(plan: LazyPlan): RowClass {
  const count = plan.names.length
  const proto = Object.create(base) as object
  Object.defineProperty(proto, PLAN, { value: plan })
  plan.names.forEach((name, i) => {
    const decode = plan.decoders[i]!
    Object.defineProperty(proto, name, {
      get(this: RowState) {
        return read(this, i, count, decode, name)
      },
      set(this: RowState, value: unknown) {
        extraOf(this, count)[i] = value
      },
      enumerable: true,
      configurable: true,
    })
  })
  function LazyRowOf(this: RowState, bytes: Uint8Array, at: number): void {
    this[BYTES] = bytes
    this[AT] = at
    this[EXTRA] = undefined
  }
  LazyRowOf.prototype = proto
  return LazyRowOf as unknown as RowClass
}

/**
 * A plain object with every column of a row: for a lazy row, each column
 * decoded (spread, Object.keys() and structuredClone() then see them); any
 * other object is copied as it is. Columns keep the order of the result, and a
 * name used twice keeps its last value, as in rowMode 'object'.
 */
export function plainRow(row: object): Record<string, unknown> {
  const plan = (row as { [PLAN]?: LazyPlan })[PLAN]
  if (plan === undefined) return { ...(row as Record<string, unknown>) }
  const out: Record<string, unknown> = {}
  const lazy = row as Record<string, unknown>
  for (const name of plan.names) {
    // Assignment would turn a column named __proto__ into a prototype change.
    if (name === '__proto__') Object.defineProperty(out, name, { value: lazy[name], enumerable: true, writable: true, configurable: true })
    else out[name] = lazy[name]
  }
  return out
}

/** True for a row of rowMode 'lazy'. */
export function isLazyRow(row: unknown): row is LazyRow {
  return typeof row === 'object' && row !== null && (row as { [PLAN]?: LazyPlan })[PLAN] !== undefined
}
