/**
 * A money value as the server stores it: an integer count of the currency's
 * minor units (cents: $12.34 is 1234n). The number of fractional digits depends
 * on the server's lc_monetary, which the client cannot see, so the value is not
 * turned into a decimal. Being a class rather than a bare bigint, it can never be
 * mistaken for an amount in major units when sent back as a parameter.
 */
export class Money {
  constructor(readonly minorUnits: bigint) {}

  toString(): string {
    return String(this.minorUnits)
  }

  toJSON(): string {
    return String(this.minorUnits)
  }
}
