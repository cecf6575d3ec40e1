import { createRequire } from 'node:module'
import type { SystemAccess } from './system.js'

// node:fs and node:os are fetched when first asked for: an ES import of node:fs makes
// Node build every export of it (its streams included) at import, and most programs
// never read a file here (a service file, certificates) or need the user's name.
const builtin = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule ?? createRequire(import.meta.url)
const fs = (): typeof import('node:fs') => builtin('node:fs') as typeof import('node:fs')
const os = (): typeof import('node:os') => builtin('node:os') as typeof import('node:os')

/** The machine as Node, Bun and Deno show it; installed by the Node entry. */
export const nodeSystem: SystemAccess = {
  userName: () => os().userInfo().username,
  homeDir: () => os().homedir(),
  readTextFile: (file) => fs().readFileSync(file, 'utf8'),
}
