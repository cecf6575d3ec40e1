// `npm run build`'s second half: each entry of package.json's `exports` ships as
// one ES module, bundled by esbuild from src/, with the code two entries share in
// chunks beside them (so `pipegres` and `pipegres/pg` hold one PgError class, not
// two). Loading two hundred modules cost Node's loader most of pipegres's import
// time (about 0.2 s above a bare `node`); one file costs a fraction of it. tsc
// still writes the `.d.ts` files (tsconfig.build.json). Plain JavaScript because
// it runs before anything under scripts/ is compiled.
//
// Source maps (dist/**/*.js.map, the sources inside) let `node --enable-source-maps`
// name src/ files in a stack trace; without it, the bundle's own file and line.

import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as esbuild from 'esbuild'

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
removeJs(join(root, 'dist'))
rmSync(join(root, 'dist', 'chunks'), { recursive: true, force: true })

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: entrySources(pkg.exports),
  outbase: 'src',
  outdir: 'dist',
  entryNames: '[dir]/[name]',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  // Node's modules, cloudflare:sockets, and every package (the integrations' optional peers) stay imports.
  platform: 'neutral',
  packages: 'external',
  external: ['node:*', 'cloudflare:*'],
  target: 'es2022',
  sourcemap: 'linked',
  sourcesContent: true,
  // Names kept, for readable stacks; white space and syntax minified: V8 must scan every byte of a
  // module when it compiles it, and that scan was most of the import time left.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
})

const outputs = Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js'))
console.log(`bundled ${entrySources(pkg.exports).length} entries into ${outputs.length} files in dist/`)
