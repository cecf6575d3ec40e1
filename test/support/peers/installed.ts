// Which release of a package the code under test loads. Found through the
// module resolution itself (import.meta.resolve, which runs the hooks of
// `npm run test:peers`: see loader.ts beside this file), not by reading the
// repository's node_modules, so that a test that depends on the release sees
// the one it runs against.

import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export interface InstalledPackage {
  /** The directory holding the package's package.json. */
  dir: string
  version: string
}

/** The package `name` as an import of it from the test files resolves. */
export function installedPackage(name: string): InstalledPackage {
  let dir = dirname(fileURLToPath(import.meta.resolve(name)))
  for (;;) {
    const file = join(dir, 'package.json')
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string }
      // Some packages keep a package.json of their own in dist/ (a "type" only): go on up to the package's.
      if (manifest.name === name && typeof manifest.version === 'string') return { dir, version: manifest.version }
    }
    const up = dirname(dir)
    if (up === dir) throw new Error(`no package.json of ${name} above ${fileURLToPath(import.meta.resolve(name))}`)
    dir = up
  }
}

/** Whether version `a` (major.minor.patch, no prerelease) is at least `b`. */
export function atLeast(a: string, b: string): boolean {
  const x = a.split(/[.-]/).map(Number)
  const y = b.split(/[.-]/).map(Number)
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) > (y[i] ?? 0)
  return true
}
