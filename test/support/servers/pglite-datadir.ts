// The data directory the PGlite test runs (and pglite.test.ts) start from. A new PGlite runs initdb
// in a second WebAssembly instance before it starts: errors/server-errors.test.ts
// cost about 10 s of CPU that way, and 3.5 s when PGlite loads the tarball of a
// data directory that initdb made (measured on Node 20). So initdb runs once per
// PGlite version, and its result is kept in .tmp/pglite/ (git-ignored) for every
// later process; scripts/run-tests.ts makes it before the files start, a file
// run on its own makes it on first use. Nothing is in it but what initdb made.

import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import type { PGlite } from '@electric-sql/pglite'
import { repoRoot } from '../paths.js'
import { installedPackage } from '../peers/installed.js'

/**
 * The version of the @electric-sql/pglite that imports load (the dev dependency, or
 * the release `npm run test:peers` runs): a data directory is only loaded by the PGlite that made it.
 */
export function pgliteVersion(): string {
  return installedPackage('@electric-sql/pglite').version
}

/** Where the tarball for the installed PGlite is kept. */
export function dataDirTarball(): string {
  return join(process.env.PIPEGRES_PGLITE_CACHE || join(repoRoot, '.tmp', 'pglite'), `datadir-${pgliteVersion()}.tar.gz`)
}

/**
 * The path of the tarball, made first if it is missing: a fresh PGlite's data
 * directory, dumped right after initdb. Written under a name of its own and then
 * renamed, so that files starting side by side never read half a tarball.
 */
export async function ensureDataDirTarball(): Promise<string> {
  const file = dataDirTarball()
  if (existsSync(file)) return file
  const { PGlite } = await import('@electric-sql/pglite')
  const pglite = await PGlite.create()
  try {
    const dump = await pglite.dumpDataDir('gzip')
    mkdirSync(join(file, '..'), { recursive: true })
    const partial = `${file}.${process.pid}.partial`
    writeFileSync(partial, new Uint8Array(await dump.arrayBuffer()))
    renameSync(partial, file)
  } finally {
    await pglite.close()
  }
  return file
}

/** Drops a tarball PGlite could not load, so that the next process makes it again. */
export function discardDataDirTarball(): void {
  rmSync(dataDirTarball(), { force: true })
}

/**
 * A PGlite started from the tarball (made first if missing), for a test that
 * needs an instance but does not test how one is created.
 */
export async function openCachedPGlite(): Promise<PGlite> {
  // WebAssembly stays on V8's baseline compiler: a test file runs each statement a few
  // times, and the optimizing tier-up of PGlite's 8.7 MB module cost more CPU than it saved
  // (copy/copy-in.test.ts: 8.5 s of CPU with it, 5.1 s without, measured on Node 20).
  // Set before PGlite compiles its module; the flag touches WebAssembly only.
  setFlagsFromString('--liftoff-only')
  const { PGlite } = await import('@electric-sql/pglite')
  const tarball = await ensureDataDirTarball()
  try {
    return await PGlite.create({ loadDataDir: new Blob([await readFile(tarball)]) })
  } catch (err) {
    discardDataDirTarball()
    throw new Error(`PGlite could not load the data directory ${tarball} (removed; the next run makes it again): ${(err as Error).message}`, { cause: err })
  }
}
