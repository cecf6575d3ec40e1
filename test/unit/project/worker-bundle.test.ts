// test-tags: slow
// What a bundler puts in a Worker or a browser bundle of pipegres, read from
// esbuild's metafile: the Workers entry (the `workerd` export condition) leaves
// out the modules only Node needs (the node:net/node:tls transport with its
// shared read buffer, the .pgpass reader, node:tls's options), and needs
// nothing of the runtime beyond cloudflare:sockets and the nodejs_compat
// modules (no node:net, node:tls, node:fs or node:os); pipegres/wire needs
// nothing at all. An application that imports only `connect` pays for no pool,
// no replication, and, until it first copies rows, no COPY row formats.

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { bundle, split, type BundleReport } from '../../../scripts/bundle-size.js'

const here = dirname(fileURLToPath(import.meta.url))
// Compiled to build/test/unit; the package's modules are build/src (the same code as dist/).
const built = join(here, '..', '..', '..', 'src')
const root = join(here, '..', '..', '..', '..')

/** The modules only Node needs, by file name. */
const NODE_ONLY = ['connection/node-socket.js', 'connection/node-platform.js', 'connection/tls-options.js', 'config/pgpass.js', 'config/node-system.js']

const has = (inputs: string[], file: string): boolean => inputs.some((i) => i.endsWith(`/src/${file}`))

/**
 * The files under these src/ folders or files that put code in a bundle. A
 * file none of whose code is used can still leave its import of a node:
 * module behind (about 40 bytes, `import{EventEmitter as x}from"node:events"`):
 * that is not counted.
 */
function carried(r: Pick<BundleReport, 'inputBytes'>, prefixes: readonly string[]): string[] {
  return Object.entries(r.inputBytes)
    .filter(([file, bytes]) => bytes > 64 && prefixes.some((p) => file.includes(`/src/${p}`)))
    .map(([file, bytes]) => `${file.replace(/^.*\/src\//, '')} (${bytes} bytes)`)
}

/** What a program that uses only connect() has no use for. */
const NOT_FOR_CONNECT = ['pool/', 'walsender/', 'replication/', 'connection/copy-both.js', 'protocol/sql-state.js']
/** COPY's row formats, loaded by copyFromRows() and copyToRows() on first use. */
const COPY_FORMATS = ['copy/format.js', 'copy/binary-format.js', 'copy/binary-values.js', 'copy/text-format.js', 'copy/csv-format.js', 'copy/delimited.js', 'copy/incremental.js']
/** The rarer built-in codecs, loaded when a connection first meets one of their types (types/builtins.ts). */
const RARE_CODECS = ['types/codecs/extra.js', 'types/codecs/network.js', 'types/codecs/geometric.js', 'types/codecs/mac-address.js', 'types/codecs/bit-string.js', 'types/codecs/text-search.js', 'types/codecs/range.js', 'types/codecs/multirange.js', 'types/codecs/record.js', 'types/codecs/composite.js']
/** Loaded when a connection first needs them: a password handshake, TLS. */
const ON_FIRST_USE = ['auth/scram.js', 'auth/md5.js', 'auth/saslprep-tables.js', 'auth/channel-binding.js', 'connection/node-tls.js', 'connection/tls-options.js', 'config/pgpass.js']

test('package.json sends the workerd condition of pipegres to the Workers entry', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, Record<string, string>> }
  const main = pkg.exports['.']!
  assert.equal(main.workerd, './dist/workerd/index.js')
  assert.equal(main.default, './dist/index.js')
  // Conditions are tried in order: workerd must come before default.
  assert.ok(Object.keys(main).indexOf('workerd') < Object.keys(main).indexOf('default'))
  assert.equal(pkg.exports['./cloudflare']?.default, './dist/workerd/cloudflare.js')
})

test('the Workers bundle leaves out the Node-only modules and needs only nodejs_compat modules', async () => {
  const r = await bundle(join(built, 'workerd', 'index.js'), 'workerd')
  for (const file of NODE_ONLY) assert.ok(!has(r.inputs, file), `the Workers bundle contains ${file}`)
  assert.ok(has(r.inputs, 'connection/cloudflare-socket.js'), 'the Workers bundle has the Cloudflare transport')
  // cloudflare:sockets is loaded by import() of a variable, which no bundler follows: it is not listed.
  // Modules nodejs_compat has had since its second version (compatibility date 2024-09-23): no node:net,
  // node:tls, node:fs or node:os, which came later or cannot serve a Worker.
  for (const m of r.external) assert.match(m, /^node:(events|stream|crypto|diagnostics_channel|path)$/, `the Workers bundle needs ${m}`)
})

test('the Node entry does bundle the Node transport (the check above can fail)', async () => {
  const r = await bundle(join(built, 'index.js'), 'node')
  for (const file of NODE_ONLY) assert.ok(has(r.inputs, file), `the Node bundle lacks ${file}`)
  assert.ok(r.external.includes('node:net') && r.external.includes('node:tls'))
})

test('pipegres/wire bundles for the browser with no runtime module at all', async () => {
  const r = await bundle(join(built, 'wire', 'index.js'), 'browser')
  assert.deepEqual(r.external, [])
  assert.ok(!r.inputs.some((i) => /\/src\/(connection|auth|config)\//.test(i)), 'wire pulls in no connection, auth or config code')
})

for (const [target, entry] of [['node', 'index.js'], ['workerd', 'workerd/index.js']] as const) {
  const connectOnly = `export { connect } from ${JSON.stringify(join(built, entry))}`

  test(`a ${target} bundle of connect alone carries no pool, replication, COPY BOTH or SQLSTATE table`, async () => {
    const r = await bundle(connectOnly, target)
    assert.deepEqual(carried(r, NOT_FOR_CONNECT), [])
    // The check can fail: createPool brings the pool.
    const withPool = await bundle(`export { connect, createPool } from ${JSON.stringify(join(built, entry))}`, target)
    assert.ok(carried(withPool, ['pool/pool.js']).length === 1, 'createPool bundles the pool')
  })

  test(`a ${target} bundle of connect alone loads COPY's row formats, the rarer codecs, the password handshakes and TLS only on first use`, async () => {
    const r = await split(connectOnly, target)
    const lazy = [...COPY_FORMATS, ...RARE_CODECS, ...ON_FIRST_USE.filter((f) => target === 'node' || !f.includes('tls') && !f.includes('pgpass'))]
    assert.deepEqual(carried(r, lazy), [], 'loaded up front')
    assert.deepEqual(carried(r, NOT_FOR_CONNECT), [])
    for (const file of lazy) assert.ok(has(r.lazy.inputs, file), `${file} is in a chunk loaded on first use`)
  })
}

test('the main entry imports nothing of src/walsender or src/replication; pipegres/replication does', async () => {
  for (const [entry, target] of [['index.js', 'node'], ['workerd/index.js', 'workerd']] as const) {
    const r = await bundle(join(built, entry), target)
    assert.deepEqual(carried(r, ['walsender/', 'replication/']), [], `${entry} bundles replication code`)
  }
  for (const [entry, target] of [['replication.js', 'node'], ['workerd/replication.js', 'workerd']] as const) {
    const r = await bundle(join(built, entry), target)
    assert.ok(has(r.inputs, 'walsender/subscription.js') && has(r.inputs, 'replication/pgoutput.js'), `${entry} bundles the walsender and the decoder`)
    if (target === 'workerd') for (const file of NODE_ONLY) assert.ok(!has(r.inputs, file), `${entry} contains ${file}`)
  }
})

/** The src/ files of what a dist/ entry loads up front: its file and the chunks it imports statically, by their source maps. */
function distSources(entry: string): string[] {
  const dist = join(root, 'dist')
  const files = new Set<string>()
  const sources = new Set<string>()
  const visit = (file: string): void => {
    if (files.has(file)) return
    files.add(file)
    const code = readFileSync(file, 'utf8')
    // Static imports only (`from"./chunks/x.js"`, `import"./chunks/x.js"`); import() is loaded on first use.
    for (const m of code.matchAll(/(?:from|import)\s*"(\.{1,2}\/[^"]+\.js)"/g)) visit(join(dirname(file), m[1]!))
    const map = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] }
    for (const s of map.sources) sources.add(join(dirname(file), s).slice(root.length + 1))
  }
  visit(join(dist, entry))
  return [...sources].sort()
}

test('dist/index.js and dist/workerd/index.js load nothing of src/walsender or src/replication (npm run build)', () => {
  for (const entry of ['index.js', 'workerd/index.js']) {
    const sources = distSources(entry)
    assert.ok(sources.includes('src/client.ts'), `${entry}: the source maps were read`)
    assert.deepEqual(sources.filter((s) => /^src\/(walsender|replication)\//.test(s)), [], entry)
    assert.deepEqual(sources.filter((s) => /^src\/copy\/(format|binary-format|text-format|csv-format)\.ts$/.test(s) || /^src\/auth\/scram\.ts$/.test(s)), [], `${entry} loads on first use only`)
  }
  assert.ok(distSources('replication.js').includes('src/walsender/subscription.ts'))
})

test('package.json sends pipegres/replication to its entries, the workerd condition first', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, Record<string, string>> }
  const entry = pkg.exports['./replication']!
  assert.deepEqual(Object.keys(entry), ['types', 'workerd', 'default'])
  assert.equal(entry.workerd, './dist/workerd/replication.js')
  assert.equal(entry.default, './dist/replication.js')
})
