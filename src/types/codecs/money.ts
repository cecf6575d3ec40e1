import type { Writer } from '../../protocol/writer.js'
import type { Codec, ResolvedTypeOptions } from '../codec.js'
import { expectLength, INT64_MAX, INT64_MIN, writeInt64 } from './binary.js'
import { readInt64Fast } from './integers.js'
import { Money } from '../money.js'
import { malformed, outOfRange, wrongType } from './scalar-errors.js'

// money as a Money holding the currency's MINOR units (cents for '$1.23' → 123n),
// which is exactly what the server stores: binary money is that int64. The
// text form depends on the server's lc_monetary ('$1,234.56', '-$1.00',
// '($1.00)', '1.234,56 €'); stripping everything but the digits and the sign
// gives the same integer, because the text always shows every fractional digit
// the locale has.
//
// Parameters: a Money is minor units, sent in binary. A number, a bigint or a
// string is sent as text and parsed by the server in its locale, so it is in
// MAJOR units ('12.34' or 12.34 mean $12.34): the same meaning whether or not
// the parameter's type is known yet. A Money cannot be written as text without
// knowing the locale's number of fractional digits, so encodeText refuses it.

function decodeMoneyText(buf: Uint8Array, start: number, end: number): Money {
  let neg = false
  // Up to 15 digits accumulate exactly in a double; the rest go into a bigint.
  let head = 0n
  let n = 0
  let count = 0
  let digits = 0
  for (let i = start; i < end; i++) {
    const c = buf[i]!
    const d = c - 0x30
    if (d >= 0 && d <= 9) {
      n = n * 10 + d
      digits++
      if (++count === 15) {
        head = head * 1000000000000000n + BigInt(n)
        n = 0
        count = 0
      }
    } else if (c === 0x2d /* - */ || c === 0x28 /* ( */) neg = true
  }
  if (digits === 0) throw malformed('money', 'no digits')
  if (digits > 19) throw outOfRange('money')
  let v = head === 0n ? BigInt(n) : head * 10n ** BigInt(count) + BigInt(n)
  if (neg) v = -v
  if (v < INT64_MIN || v > INT64_MAX) throw outOfRange('money')
  return new Money(v)
}

export const moneyCodec: Codec = {
  name: 'money',
  decodeText: decodeMoneyText,
  decodeBinary: (buf, start, end) => {
    expectLength('money', start, end, 8)
    return new Money(readInt64Fast(buf, start))
  },
  encodeText: (v) => {
    if (typeof v === 'string') return v
    if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'bigint') return String(v)
    throw wrongType('money', 'a number, a bigint or a string in major units (a Money goes only in binary)', v)
  },
  encodeBinary: (w: Writer, v) => {
    if (v instanceof Money) {
      if (v.minorUnits < INT64_MIN || v.minorUnits > INT64_MAX) throw outOfRange('money')
      writeInt64(w, v.minorUnits)
      return true
    }
    if (typeof v === 'string' || typeof v === 'bigint' || (typeof v === 'number' && Number.isFinite(v))) return false
    throw wrongType('money', 'a Money (minor units), or a number, a bigint or a string in major units', v)
  },
}

export function registerMoney(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(790, moneyCodec) // money
}
