// What an application ships of pipegres when it bundles it: esbuild bundles of
// the package entries for each target, minified, with their sizes raw and
// gzipped, and the modules the runtime must provide (cloudflare:*, node:*).
//
//   npm run bundle-size   (npm run build && npm run build:all && node build/scripts/bundle-size.js)
//
// (the package entries are dist/'s, as an application resolves them.)
//
// Targets, as the usual tools bundle them:
//   workerd  Cloudflare Workers (wrangler): the `workerd` export condition, the
//            runtime's cloudflare:* and node:* (nodejs_compat) left external
//   browser  a browser application: the `browser` condition, nothing external
//   node     Node (for comparison): node:* external

import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

export type BundleTarget = 'workerd' | 'browser' | 'node'

export interface BundleReport {
  /** The minified bundle, in bytes, and gzipped (level 9). */
  bytes: number
  gzip: number
  /** Source files in the bundle, relative to the repository (esbuild's metafile inputs). */
  inputs: string[]
  /** Modules left for the runtime to provide, sorted. */
  external: string[]
}

/**
 * Bundles `entry` for `target`: a file, a specifier such as 'pipegres/wire'
 * (resolved from the repository through package.json's exports, everything it
 * exports kept), or the source of a module (`export { connect } from 'pipegres'`:
 * what an application that uses only those keeps after tree shaking).
 */
export async function bundle(entry: string, target: BundleTarget, options: { minify?: boolean; outfile?: string } = {}): Promise<BundleReport & { code: Uint8Array }> {
  const esbuild = await import('esbuild')
  const source = entry.startsWith('export ') ? entry : !entry.startsWith('/') && !entry.startsWith('.') ? `export * from ${JSON.stringify(entry)}` : undefined
  const result = await esbuild.build({
    // A package name resolves from the repository (the package names itself).
    ...(source !== undefined ? { stdin: { contents: source, resolveDir: root, loader: 'js' } } : { entryPoints: [entry] }),
    bundle: true,
    write: options.outfile !== undefined,
    ...(options.outfile === undefined ? {} : { outfile: options.outfile }),
    format: 'esm',
    platform: target === 'node' ? 'node' : target === 'browser' ? 'browser' : 'neutral',
    target: 'es2022',
    conditions: target === 'workerd' ? ['workerd', 'worker', 'browser'] : target === 'browser' ? ['browser'] : [],
    mainFields: target === 'node' ? ['module', 'main'] : ['browser', 'module', 'main'],
    external: target === 'browser' ? [] : target === 'workerd' ? ['cloudflare:*', 'node:*'] : ['node:*'],
    minify: options.minify ?? true,
    metafile: true,
    logLevel: 'silent',
  })
  const [outName, out] = Object.entries(result.metafile.outputs)[0]!
  const code = result.outputFiles?.[0]?.contents ?? readFileSync(join(process.cwd(), outName))
  const external = [...new Set(out.imports.filter((i) => i.external).map((i) => i.path))].sort()
  return { code, bytes: code.length, gzip: gzipSync(code, { level: 9 }).length, inputs: Object.keys(result.metafile.inputs), external }
}

const kib = (n: number): string => `${(n / 1024).toFixed(1)} KiB`

async function main(): Promise<void> {
  const cases: [string, BundleTarget][] = [
    ['pipegres', 'workerd'],
    ["export { connect, createPool } from 'pipegres'", 'workerd'],
    ['pipegres/wire', 'workerd'],
    ['pipegres/wire', 'browser'],
    ['pipegres', 'node'],
  ]
  const { version } = (await import('esbuild')) as { version: string }
  console.log(`esbuild ${version}, --bundle --minify --format=esm, gzip -9`)
  for (const [entry, target] of cases) {
    const r = await bundle(entry, target)
    const name = entry.startsWith('export ') ? `{ ${/\{ (.*) \}/.exec(entry)![1]} } of ${/'(.*)'/.exec(entry)![1]}` : entry
    console.log(`${`${name} (${target})`.padEnd(44)} ${kib(r.bytes).padStart(10)} minified ${kib(r.gzip).padStart(10)} gzipped   runtime modules: ${r.external.join(' ') || 'none'}`)
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(err)
    process.exitCode = 1
  })
}
