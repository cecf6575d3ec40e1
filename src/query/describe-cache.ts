import type { FieldDescription } from '../protocol/backend.js'
import type { TypeCatalog } from '../types/catalog.js'
import type { TypeView } from '../types/view.js'

interface Described {
  fields: readonly FieldDescription[]
  /** Result formats for `view` as of catalog version `version`. */
  view: TypeView | null
  version: number
  formats: number[]
}

/**
 * The result columns of unnamed statements (prepare: false, or a connection
 * behind a transaction-mode pooler), by query text: from the second execution
 * on, Bind can ask for binary columns, as a named statement's would, without
 * an extra round trip. The portal is still described (Describe P), and rows
 * are decoded by that description, so a text whose columns changed since is
 * decoded right; only the formats asked for come from here. Bounded, least
 * recently used first out.
 */
export class DescribeCache {
  private readonly map = new Map<string, Described>()

  constructor(readonly capacity: number) {}

  /** Result formats for `key`'s columns under `view`, or null when `key` was never described (empty: all text). */
  formats(key: string, view: TypeView, catalog: TypeCatalog): number[] | null {
    const d = this.map.get(key)
    if (d === undefined) return null
    this.map.delete(key)
    this.map.set(key, d)
    if (d.view !== view || d.version !== catalog.version) {
      d.formats = view.resultFormats(d.fields)
      d.view = view
      d.version = catalog.version
    }
    return d.formats
  }

  /** Remembers `key`'s columns, from a portal's RowDescription (or NoData: no columns). */
  learn(key: string, fields: readonly FieldDescription[]): void {
    const d = this.map.get(key)
    if (d !== undefined && sameColumns(d.fields, fields)) return
    this.map.delete(key)
    this.map.set(key, { fields, view: null, version: -1, formats: [] })
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value!)
  }

  /** Forgets `key`: its formats no longer fit its columns. */
  forget(key: string): void {
    this.map.delete(key)
  }

  get size(): number {
    return this.map.size
  }
}

function sameColumns(a: readonly FieldDescription[], b: readonly FieldDescription[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i]!.typeOid !== b[i]!.typeOid) return false
  return true
}
