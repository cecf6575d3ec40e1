// The size of what a browser loads for pipegres/wire: every compiled module
// reachable from build/src/wire/index.js through relative imports, in bytes,
// and gzipped. A bundler would drop comments and unused exports, so the raw
// figure is an upper bound; "code only" strips comments and indentation as a
// rough stand-in for minification. When the bun devDependency is installed,
// its bundler gives the figure a browser application would actually ship:
// tree-shaken, minified, gzipped.
//
//   npx tsc -p tsconfig.json && node build/scripts/wire-size.js [entry.js]

import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

// Static imports and re-exports; the wire entry has no dynamic ones.
const importPattern = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/g

export interface ModuleSize {
  file: string
  bytes: number
}

export interface WireSize {
  modules: ModuleSize[]
  bytes: number
  gzip: number
  codeOnlyBytes: number
  codeOnlyGzip: number
  /** bun build --minify --target=browser of the entry, or null without bun. */
  bundled: { bytes: number; gzip: number } | null
}

/** The compiled modules reachable from `entry`, each once, in the order first reached. */
export function reachableModules(entry: string): string[] {
  const seen = new Set<string>()
  const visit = (file: string): void => {
    if (seen.has(file)) return
    seen.add(file)
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(importPattern)) {
      const spec = m[1]!
      if (!spec.startsWith('.')) throw new Error(`${relative(root, file)} imports '${spec}', which a browser cannot load`)
      visit(resolve(dirname(file), spec))
    }
  }
  visit(entry)
  return [...seen]
}

/** Drops the source map reference, comments and leading whitespace: a crude minification that keeps the code valid. */
function codeOnly(text: string): string {
  return text
    .replace(/\/\/# sourceMappingURL=.*$/gm, '')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join('\n')
}

/** The entry bundled and minified by bun, as a browser application would ship it. */
function bundle(entry: string): { bytes: number; gzip: number } | null {
  const bun = join(root, 'node_modules', '.bin', 'bun')
  if (!existsSync(bun)) return null
  const r = spawnSync(bun, ['build', entry, '--minify', '--target=browser'], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 })
  if (r.error || r.status !== 0) throw new Error(`bun build failed: ${r.error?.message ?? r.stderr.toString()}`)
  return { bytes: r.stdout.length, gzip: gzipSync(r.stdout, { level: 9 }).length }
}

export function wireSize(entry = join(root, 'build', 'src', 'wire', 'index.js')): WireSize {
  const files = reachableModules(entry)
  const texts = files.map((f) => readFileSync(f, 'utf8'))
  const all = texts.join('\n')
  const stripped = texts.map(codeOnly).join('\n')
  return {
    modules: files.map((f, i) => ({ file: relative(root, f), bytes: Buffer.byteLength(texts[i]!) })),
    bytes: Buffer.byteLength(all),
    gzip: gzipSync(all, { level: 9 }).length,
    codeOnlyBytes: Buffer.byteLength(stripped),
    codeOnlyGzip: gzipSync(stripped, { level: 9 }).length,
    bundled: bundle(entry),
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const entry = process.argv[2] !== undefined ? resolve(process.argv[2]) : undefined
  const size = wireSize(entry)
  for (const m of size.modules) console.log(`${String(m.bytes).padStart(8)}  ${m.file}`)
  console.log(`${size.modules.length} modules: ${size.bytes} bytes, ${size.gzip} gzipped`)
  console.log(`code only (comments and indentation stripped): ${size.codeOnlyBytes} bytes, ${size.codeOnlyGzip} gzipped`)
  if (size.bundled) console.log(`bundled (bun build --minify --target=browser): ${size.bundled.bytes} bytes, ${size.bundled.gzip} gzipped`)
}
