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

import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

export type BundleTarget = 'workerd' | 'browser' | 'node'

export interface BundleReport {
  /** The minified bundle, in bytes, and gzipped (level 9). */
  bytes: number
  gzip: number
  /** Source files in the bundle, relative to the repository (esbuild's metafile inputs), each with the bytes it has in the output. */
  inputs: string[]
  inputBytes: Record<string, number>
  /** Modules left for the runtime to provide, sorted. */
  external: string[]
}

/** What an application loads up front when its bundler splits at import() (see split()); `lazy` is the rest, loaded on first use. */
export interface SplitReport extends BundleReport {
  /** The chunks loaded only through import(), with the source files in them. */
  lazy: { bytes: number; gzip: number; inputs: string[] }
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
  const inputBytes = Object.fromEntries(Object.entries(out.inputs).map(([file, v]) => [file, v.bytesInOutput]))
  return { code, bytes: code.length, gzip: gzipSync(code, { level: 9 }).length, inputs: Object.keys(result.metafile.inputs), inputBytes, external }
}

/**
 * Bundles like bundle(), but split at each import() (esbuild --splitting, as
 * Vite and webpack do by default): the report is of what the entry loads up
 * front, its file and the chunks it imports statically; what pipegres loads
 * on first use (COPY's row formats, the password handshakes, TLS) is `lazy`.
 */
export async function split(entry: string, target: BundleTarget): Promise<SplitReport> {
  const esbuild = await import('esbuild')
  const source = entry.startsWith('export ') ? entry : !entry.startsWith('/') && !entry.startsWith('.') ? `export * from ${JSON.stringify(entry)}` : undefined
  const outdir = mkdtempSync(join(tmpdir(), 'pipegres-split-'))
  try {
    const result = await esbuild.build({
      ...(source !== undefined ? { stdin: { contents: source, resolveDir: root, loader: 'js' } } : { entryPoints: [entry] }),
      bundle: true,
      splitting: true,
      outdir,
      write: false,
      format: 'esm',
      platform: target === 'node' ? 'node' : target === 'browser' ? 'browser' : 'neutral',
      target: 'es2022',
      conditions: target === 'workerd' ? ['workerd', 'worker', 'browser'] : target === 'browser' ? ['browser'] : [],
      mainFields: target === 'node' ? ['module', 'main'] : ['browser', 'module', 'main'],
      external: target === 'browser' ? [] : target === 'workerd' ? ['cloudflare:*', 'node:*'] : ['node:*'],
      minify: true,
      metafile: true,
      logLevel: 'silent',
    })
    const outputs = result.metafile.outputs
    const code = new Map(result.outputFiles.map((f) => [f.path, f.contents]))
    const contents = (name: string): Uint8Array => code.get(join(process.cwd(), name)) ?? code.get(name) ?? new Uint8Array()
    const entryName = Object.keys(outputs).find((o) => outputs[o]!.entryPoint !== undefined)!
    const upFront = new Set<string>()
    const lazy = new Set<string>()
    const visit = (name: string): void => {
      if (upFront.has(name)) return
      upFront.add(name)
      for (const i of outputs[name]!.imports) {
        if (i.external) continue
        if (i.kind === 'dynamic-import') lazy.add(i.path)
        else visit(i.path)
      }
    }
    visit(entryName)
    // A lazy chunk's own static imports are lazy too, unless loaded up front anyway.
    for (const name of lazy) for (const i of outputs[name]!.imports) if (!i.external && !upFront.has(i.path)) lazy.add(i.path)
    const measure = (names: Iterable<string>) => {
      let bytes = 0
      let gzip = 0
      const inputBytes: Record<string, number> = {}
      const external = new Set<string>()
      for (const name of names) {
        const c = contents(name)
        bytes += c.length
        gzip += gzipSync(c, { level: 9 }).length
        for (const [file, v] of Object.entries(outputs[name]!.inputs)) inputBytes[file] = (inputBytes[file] ?? 0) + v.bytesInOutput
        for (const i of outputs[name]!.imports) if (i.external) external.add(i.path)
      }
      return { bytes, gzip, inputs: Object.keys(inputBytes), inputBytes, external: [...external].sort() }
    }
    const later = measure([...lazy].filter((n) => !upFront.has(n)))
    return { ...measure(upFront), lazy: { bytes: later.bytes, gzip: later.gzip, inputs: later.inputs } }
  } finally {
    rmSync(outdir, { recursive: true, force: true })
  }
}

const kib = (n: number): string => `${(n / 1024).toFixed(1)} KiB`

async function main(): Promise<void> {
  const cases: [string, BundleTarget][] = [
    ['pipegres', 'workerd'],
    ["export { connect, createPool } from 'pipegres'", 'workerd'],
    ["export { connect } from 'pipegres'", 'workerd'],
    ['pipegres/replication', 'workerd'],
    ['pipegres/wire', 'workerd'],
    ['pipegres/wire', 'browser'],
    ['pipegres', 'node'],
    ["export { connect, createPool } from 'pipegres'", 'node'],
    ["export { connect } from 'pipegres'", 'node'],
  ]
  const { version } = (await import('esbuild')) as { version: string }
  console.log(`esbuild ${version}, --bundle --minify --format=esm, gzip -9; "up front": split at import() (--splitting), what loads before first use`)
  for (const [entry, target] of cases) {
    const r = await bundle(entry, target)
    const s = await split(entry, target)
    const name = entry.startsWith('export ') ? `{ ${/\{ (.*) \}/.exec(entry)![1]} } of ${/'(.*)'/.exec(entry)![1]}` : entry
    console.log(
      `${`${name} (${target})`.padEnd(44)} ${kib(r.bytes).padStart(10)} minified ${kib(r.gzip).padStart(10)} gzipped;` +
        ` up front ${kib(s.bytes).padStart(10)} ${kib(s.gzip).padStart(10)} gzipped   runtime modules: ${r.external.join(' ') || 'none'}`,
    )
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(err)
    process.exitCode = 1
  })
}
