// `npm run build`'s second half: each entry of package.json's `exports` ships as
// one ES module, bundled by Rollup from what tsc compiled of src/ (tsc -p
// tsconfig.build.json writes the JavaScript to build/package/, with source maps,
// and the `.d.ts` files to dist/), with the code that entries share in chunks
// beside them (so `pipegres` and `pipegres/pg` hold one PgError class, not two).
// tsc's JavaScript, not a per-file transpiler's: tsc puts the values of `const
// enum` members in place across files, as in the code the tests and benchmarks
// run. Plain JavaScript because it runs before anything under scripts/ is compiled.
//
// Why Rollup and these chunks: Node's loader spends about a millisecond per
// module file (resolving, reading, linking), more than compiling a file's code
// costs. Two hundred modules cost pipegres 0.2 s at import; one file costs a
// fraction of it. So `import 'pipegres'` loads four files: its entry, the
// Node platform shared with the other Node entries, `chunks/core-*.js`,
// everything the Node and the Workers entries have in common, and of that what
// `pipegres/wire` uses (`chunks/wire-*.js`, free of node: imports for a
// browser). Code loaded on first use (COPY's formats, the rarer codecs, the
// password handshakes, TLS) stays in chunks of its own that import the core,
// which is loaded by then: Rollup places code shared by an entry and what it
// loads later in the entry's chunk, where esbuild's splitting made a chunk for
// every combination of users.
//
// Source maps (dist/**/*.js.map, the sources inside) let `node --enable-source-maps`
// name src/ files in a stack trace; without it, the bundle's own file and line.

import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as esbuild from 'esbuild'
import { rollup } from 'rollup'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))

/** Every JavaScript file the exports name, as the source it is built from: `./dist/wire/index.js` → `src/wire/index.ts`. */
export function entrySources(exports) {
  const files = new Set()
  for (const target of Object.values(exports)) {
    for (const [condition, path] of Object.entries(target)) {
      if (condition === 'types') continue
      if (!path.startsWith('./dist/') || !path.endsWith('.js')) throw new Error(`package.json exports ${path}: entries are ./dist/**/*.js`)
      files.add(`src/${path.slice('./dist/'.length, -'.js'.length)}.ts`)
    }
  }
  return [...files].sort()
}

/** Removes the JavaScript an earlier build left in `dir` (tsc, declarations only, ran just before: its .d.ts stay). */
function removeJs(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) removeJs(path)
    else if (/\.js(\.map)?$/.test(entry.name)) rmSync(path)
  }
}

const compiled = join(root, 'build', 'package')

/** Rollup reads tsc's source maps too, so that the bundle's map leads back to src/. */
const compiledMaps = {
  name: 'compiled-maps',
  load(id) {
    if (!id.startsWith(compiled) || !id.endsWith('.js')) return null
    const code = readFileSync(id, 'utf8').replace(/\n\/\/# sourceMappingURL=[^\n]*\s*$/, '\n')
    const mapFile = `${id}.map`
    return { code, map: existsSync(mapFile) ? JSON.parse(readFileSync(mapFile, 'utf8')) : null }
  },
}

// White space minified, names kept for readable stacks: V8 must scan every byte of a module when it compiles it.
// Not the syntax: esbuild would then drop the name of a class expression that nothing inside
// uses, and Rollup writes a class whose name another module of the bundle shares as
// `let Client$1 = class Client ...`, so Client.name (and util.inspect, and stacks) would read
// Client$1. The syntax pass saved 3% of the bytes and nothing measurable at import.
const minify = {
  name: 'minify',
  async renderChunk(code, chunk) {
    const r = await esbuild.transform(code, { format: 'esm', target: 'es2022', minifyWhitespace: true, legalComments: 'none', sourcemap: 'external', sourcefile: chunk.fileName })
    return { code: r.code, map: r.map }
  },
}

const entries = entrySources(pkg.exports)
const input = Object.fromEntries(entries.map((file) => [file.slice('src/'.length, -'.ts'.length), join(compiled, `${file.slice('src/'.length, -'.ts'.length)}.js`)]))
const nodeEntry = join(compiled, 'index.js')
const workersEntry = join(compiled, 'workerd', 'index.js')
const wireEntry = join(compiled, 'wire', 'index.js')

/** The modules a module reaches through static imports, itself included. */
function reached(start, getModuleInfo) {
  const seen = new Set()
  const todo = [start]
  while (todo.length > 0) {
    const id = todo.pop()
    if (seen.has(id)) continue
    seen.add(id)
    for (const next of getModuleInfo(id)?.importedIds ?? []) todo.push(next)
  }
  return seen
}

let chunks = null
removeJs(join(root, 'dist'))
rmSync(join(root, 'dist', 'chunks'), { recursive: true, force: true })
const bundle = await rollup({
  input,
  plugins: [compiledMaps],
  // Node's modules, cloudflare:sockets, and every package (the integrations' optional peers) stay imports.
  external: (id) => !id.startsWith('.') && !id.startsWith('/') && !id.startsWith('\0'),
  // Module-level code runs in import order and nothing is left out for having no visible effect: as tsc's output runs.
  treeshake: { moduleSideEffects: true },
  onwarn(warning, warn) {
    // Import circles between modules inside a chunk are Rollup's to order, as they were Node's before bundling.
    if (warning.code === 'CIRCULAR_DEPENDENCY') return
    warn(warning)
  },
})
const { output } = await bundle.write({
  dir: join(root, 'dist'),
  format: 'es',
  entryFileNames: '[name].js',
  chunkFileNames: 'chunks/[name]-[hash].js',
  sourcemap: true,
  generatedCode: 'es2015',
  plugins: [minify],
  manualChunks(id, { getModuleInfo }) {
    // What the Node and the Workers entries share, in one chunk that each imports whole; of it, what
    // pipegres/wire uses in a chunk of its own, which a browser loads without the rest (nor its node: imports).
    chunks ??= (() => {
      const workers = reached(workersEntry, getModuleInfo)
      const wire = reached(wireEntry, getModuleInfo)
      const core = new Set([...reached(nodeEntry, getModuleInfo)].filter((m) => workers.has(m) && m !== workersEntry))
      return { core, wire }
    })()
    if (id === wireEntry) return undefined
    return chunks.wire.has(id) ? 'wire' : chunks.core.has(id) ? 'core' : undefined
  },
})
await bundle.close()
console.log(`bundled ${entries.length} entries into ${output.filter((o) => o.type === 'chunk').length} files in dist/`)
