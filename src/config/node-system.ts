import { createRequire } from 'node:module'
import type { SystemAccess } from './system.js'

// node:fs and node:os are fetched when first asked for: an ES import of node:fs makes
// Node build every export of it (its streams included) at import, and most programs
// never read a file here (a service file, certificates) or need the user's name.
// The same holds for node:net (node-socket.ts): loading it costs about 2 ms, paid by the first connect, not the import.
const builtin = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule ?? createRequire(import.meta.url)

/** A module of Node's, loaded (synchronously) the first time it is asked for. */
export function nodeBuiltin<T>(id: 'node:fs' | 'node:os' | 'node:net'): T {
  return builtin(id) as T
}
const fs = (): typeof import('node:fs') => nodeBuiltin('node:fs')
const os = (): typeof import('node:os') => nodeBuiltin('node:os')

/** The machine as Node, Bun and Deno show it; installed by the Node entry. */
export const nodeSystem: SystemAccess = {
  userName: () => os().userInfo().username,
  homeDir: () => os().homedir(),
  readTextFile: (file) => fs().readFileSync(file, 'utf8'),
}
