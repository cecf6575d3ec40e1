// What pg's objects hold of a configuration must never print its secrets:
// util.inspect, JSON.stringify and string conversion skip non-enumerable
// properties, while code still reads them by name (pool.options.ssl.key).

/** node:tls options that hold a private key or what unlocks one. */
const TLS_SECRETS = ['key', 'passphrase', 'pfx'] as const

/** The object's own properties, non-enumerable ones included (a caller may have hidden its key already), as a new object. */
export function ownProperties(from: object): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key of Object.getOwnPropertyNames(from)) out[key] = (from as Record<string, unknown>)[key]
  return out
}

/** Makes `keys` of `target`, where present, non-enumerable. */
export function hide(target: object, keys: readonly string[]): void {
  for (const key of keys) {
    if (!Object.hasOwn(target, key)) continue
    Object.defineProperty(target, key, { value: (target as Record<string, unknown>)[key], enumerable: false, writable: true, configurable: true })
  }
}

/** pg's ssl setting as kept on a client or pool: a copy of an object with its keys and passphrase hidden; anything else as given. */
export function safeSsl(ssl: unknown): unknown {
  if (ssl === null || typeof ssl !== 'object') return ssl
  const copy = ownProperties(ssl)
  hide(copy, TLS_SECRETS)
  return copy
}

/** A copy of pg's configuration (a pool's options) with its password and TLS secrets hidden. */
export function safeConfig<T extends object>(config: T): T {
  const copy = ownProperties(config) as T & { ssl?: unknown }
  if (copy.ssl !== undefined) copy.ssl = safeSsl(copy.ssl)
  hide(copy, ['password'])
  return copy
}
