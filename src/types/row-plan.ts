import { ProtocolError } from '../errors.js'
import type { Decoder } from './codec.js'

/** The part of a RowDescription field the decoders need. */
export interface ColumnInfo {
  name: string
  typeOid: number
}

/**
 * How to turn a DataRow of one statement into a JS row: one decoder per column,
 * chosen once when the statement is described, then a tight loop per row.
 * DataRow structure is checked as it is read: a column count that differs from
 * the description, or a length that runs past the message, is a protocol
 * violation and never a half-read row.
 */
export class RowPlan {
  readonly count: number
  readonly names: readonly string[]
  readonly decoders: readonly Decoder[]
  /** False when a column is named __proto__, which plain assignment would turn into a prototype change. */
  private readonly plainKeys: boolean

  constructor(columns: readonly ColumnInfo[], decoders: readonly Decoder[]) {
    this.count = columns.length
    this.names = columns.map((c) => c.name)
    this.decoders = decoders
    this.plainKeys = !this.names.includes('__proto__')
  }

  private columnCount(buf: Uint8Array, start: number, end: number): void {
    if (end - start < 2) throw new ProtocolError('malformed DataRow message from server')
    const n = (buf[start]! << 8) | buf[start + 1]!
    if (n !== this.count) {
      throw new ProtocolError(`server sent a DataRow with ${n} columns where the RowDescription has ${this.count}`)
    }
  }

  object(buf: Uint8Array, start: number, end: number): Record<string, unknown> {
    this.columnCount(buf, start, end)
    const row: Record<string, unknown> = {}
    const names = this.names
    const decoders = this.decoders
    let p = start + 2
    for (let i = 0; i < this.count; i++) {
      if (p + 4 > end) throw truncated()
      const len = (buf[p]! << 24) | (buf[p + 1]! << 16) | (buf[p + 2]! << 8) | buf[p + 3]!
      p += 4
      let v: unknown = null
      if (len >= 0) {
        if (p + len > end) throw truncated()
        v = decoders[i]!(buf, p, p + len)
        p += len
      } else if (len !== -1) throw truncated()
      if (this.plainKeys) row[names[i]!] = v
      else Object.defineProperty(row, names[i]!, { value: v, enumerable: true, writable: true, configurable: true })
    }
    if (p !== end) throw truncated()
    return row
  }

  array(buf: Uint8Array, start: number, end: number): unknown[] {
    this.columnCount(buf, start, end)
    const row: unknown[] = new Array(this.count)
    const decoders = this.decoders
    let p = start + 2
    for (let i = 0; i < this.count; i++) {
      if (p + 4 > end) throw truncated()
      const len = (buf[p]! << 24) | (buf[p + 1]! << 16) | (buf[p + 2]! << 8) | buf[p + 3]!
      p += 4
      if (len >= 0) {
        if (p + len > end) throw truncated()
        row[i] = decoders[i]!(buf, p, p + len)
        p += len
      } else if (len === -1) row[i] = null
      else throw truncated()
    }
    if (p !== end) throw truncated()
    return row
  }
}

function truncated(): ProtocolError {
  return new ProtocolError('malformed DataRow message from server: a column length does not match the message length')
}
