import { ArgumentError } from '../errors.js'
import { hexUpper, parseLsn } from './codecs/lsn.js'

// A WAL position. PostgreSQL prints it as two hex halves, 'hi/lo' without
// leading zeros ('16/B374D848'), the form pg_lsn uses: the same formatting
// and parsing code serves both.

const UINT64_MAX = (1n << 64n) - 1n

/**
 * A write-ahead log position (PostgreSQL's `pg_lsn` / XLogRecPtr). Immutable.
 * `String(lsn)` and JSON give PostgreSQL's form, `16/B374D848`; `lsn.value`
 * is the 64-bit position as a bigint; `<` and `>` compare (through valueOf),
 * and `Lsn.compare` sorts; `a.equals(b)` tests equality (`===` compares objects).
 */
export class Lsn {
  /** 0/0: InvalidXLogRecPtr, "no position". */
  static readonly ZERO = new Lsn(0n)

  private constructor(readonly value: bigint) {}

  /** From a bigint, a string such as '16/B374D848' (any case, leading zeros allowed), or an Lsn. */
  static from(v: bigint | string | Lsn): Lsn {
    if (v instanceof Lsn) return v
    if (typeof v === 'bigint') {
      if (v < 0n || v > UINT64_MAX) throw new ArgumentError(`an LSN must be from 0 to 2^64-1, got ${v}`)
      return v === 0n ? Lsn.ZERO : new Lsn(v)
    }
    if (typeof v === 'string') {
      const parts = parseLsn(v.trim())
      if (parts === null) throw new ArgumentError(`not an LSN: ${JSON.stringify(v.slice(0, 40))} (expected hex 'hi/lo', such as '16/B374D848')`)
      return new Lsn((BigInt(parts[0]) << 32n) | BigInt(parts[1]))
    }
    throw new ArgumentError(`an LSN is a bigint or a string such as '16/B374D848', got ${typeof v}`)
  }

  /** Orders two positions: negative, zero or positive, for Array#sort. */
  static compare(a: Lsn, b: Lsn): number {
    return a.value < b.value ? -1 : a.value > b.value ? 1 : 0
  }

  static max(a: Lsn, b: Lsn): Lsn {
    return a.value >= b.value ? a : b
  }

  equals(other: Lsn | bigint | string): boolean {
    return Lsn.from(other).value === this.value
  }

  /** This position plus `bytes`. */
  plus(bytes: number | bigint): Lsn {
    return Lsn.from(this.value + BigInt(bytes))
  }

  /** Makes `a < b` and `a > b` compare positions. */
  valueOf(): bigint {
    return this.value
  }

  toString(): string {
    return hexUpper(Number(this.value >> 32n)) + '/' + hexUpper(Number(this.value & 0xffffffffn))
  }

  toJSON(): string {
    return this.toString()
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `Lsn(${this.toString()})`
  }
}

/** An Lsn straight from a 64-bit wire value (never out of range). */
export function lsnOf(v: bigint): Lsn {
  return v === 0n ? Lsn.ZERO : Lsn.from(v)
}
