// Module hooks of `npm run test:peers` (registered by loader.ts): every import
// of a swapped package, from a test, from pipegres, or from another package,
// resolves in the directory of the release under test, never in the
// project's node_modules. Each process logs the first resolution of each
// package, so that the script can show which release ran.

import { appendFileSync } from 'node:fs'
import { join, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { packageOf, type PeerSwap } from './swap.js'

interface ResolveContext {
  conditions: string[]
  importAttributes?: Record<string, string>
  parentURL?: string
}
type NextResolve = (specifier: string, context?: ResolveContext) => Promise<{ url: string; format?: string | null }>

let swap: PeerSwap | undefined
let from: string
const logged = new Set<string>()

export function initialize(data: PeerSwap): void {
  swap = data
  // A file inside the directory, as the importer: resolution then walks up from there.
  from = pathToFileURL(join(data.dir, 'peers.js')).href
}

export async function resolve(specifier: string, context: ResolveContext, next: NextResolve): Promise<{ url: string; format?: string | null }> {
  const name = packageOf(specifier)
  if (swap === undefined || name === undefined || !swap.packages.includes(name)) return next(specifier, context)
  const resolved = await next(specifier, { ...context, parentURL: from })
  const path = resolved.url.startsWith('file:') ? fileURLToPath(resolved.url) : resolved.url
  if (!path.startsWith(swap.dir + sep)) throw new Error(`test:peers: ${specifier} resolved to ${path}, outside ${swap.dir}`)
  if (!logged.has(name)) {
    logged.add(name)
    appendFileSync(swap.log, JSON.stringify({ pid: process.pid, package: name, url: resolved.url }) + '\n')
  }
  return resolved
}
