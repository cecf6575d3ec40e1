// What `npm run test:peers` hands the processes of one run, in the
// PIPEGRES_PEERS variable: where the releases under test are installed, which
// packages come from there, and where to write what was loaded. Shared by the
// script (scripts/test-peers.ts), the loader and its hooks.

export const PEERS_ENV = 'PIPEGRES_PEERS'

export interface PeerSwap {
  /** The directory whose node_modules holds the releases under test. */
  dir: string
  /** The packages taken from there, whoever imports them. */
  packages: string[]
  /** A file each process appends its findings to, one JSON line each (a LoadRecord). */
  log: string
}

/** A line of the log: a package a process resolved, or a file of a swapped package loaded from elsewhere. */
export type LoadRecord = { pid: number; package: string; url: string } | { pid: number; stray: string }

/** The package a bare specifier names: `@scope/name/sub` → `@scope/name`, `name/sub` → `name`; undefined for anything else. */
export function packageOf(specifier: string): string | undefined {
  if (/^(\.|\/|[a-zA-Z][a-zA-Z0-9+.-]*:)/.test(specifier)) return undefined
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? (parts.length >= 2 ? `${parts[0]}/${parts[1]}` : undefined) : parts[0]
}
