// test-tags: slow
// What a bundler puts in a Worker or a browser bundle of pipegres, read from
// esbuild's metafile: the Workers entry (the `workerd` export condition) leaves
// out the modules only Node needs (the node:net/node:tls transport with its
// shared read buffer, the .pgpass reader, node:tls's options), and needs
// nothing of the runtime beyond cloudflare:sockets and the nodejs_compat
// modules (no node:net, node:tls, node:fs or node:os); pipegres/wire needs
// nothing at all.

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { bundle } from '../../../scripts/bundle-size.js'

const here = dirname(fileURLToPath(import.meta.url))
// Compiled to build/test/unit; the package's modules are build/src (the same code as dist/).
const built = join(here, '..', '..', '..', 'src')
const root = join(here, '..', '..', '..', '..')

/** The modules only Node needs, by file name. */
const NODE_ONLY = ['connection/node-socket.js', 'connection/node-platform.js', 'connection/tls-options.js', 'config/pgpass.js', 'config/node-system.js']

const has = (inputs: string[], file: string): boolean => inputs.some((i) => i.endsWith(`/src/${file}`))

test('package.json sends the workerd condition of pipegres to the Workers entry', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, Record<string, string>> }
  const main = pkg.exports['.']!
  assert.equal(main.workerd, './dist/workerd.js')
  assert.equal(main.default, './dist/index.js')
  // Conditions are tried in order: workerd must come before default.
  assert.ok(Object.keys(main).indexOf('workerd') < Object.keys(main).indexOf('default'))
  assert.equal(pkg.exports['./cloudflare']?.default, './dist/cloudflare.js')
})

test('the Workers bundle leaves out the Node-only modules and needs only nodejs_compat modules', async () => {
  const r = await bundle(join(built, 'workerd.js'), 'workerd')
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
