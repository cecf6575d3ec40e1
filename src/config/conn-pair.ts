/** One keyword=value setting read from a connection string, in the order written. */
export interface ConnPair {
  key: string
  value: string
  /**
   * The key directly follows an unquoted password value (or an unencoded one in
   * a URL query). A malformed key there is most likely the rest of a password
   * containing a space or '&', so errors about it must not echo it.
   */
  afterSecret: boolean
  /** A URL path database name: never expanded as a nested connection string. */
  plain: boolean
}

/** Fold pairs into a record, later settings overriding earlier ones, as libpq does. */
export function foldPairs(pairs: readonly ConnPair[]): Record<string, string> {
  // Null prototype: keys come from user input and must never reach Object.prototype.
  const out: Record<string, string> = Object.create(null)
  for (const { key, value } of pairs) out[key] = value
  return out
}
