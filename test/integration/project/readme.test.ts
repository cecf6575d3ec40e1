// test-tags: slow
// test-needs: runtimes (Node 26, for the Temporal example)
import { after, test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startCluster, type Cluster } from '../../support/servers/cluster.js'
import { missingRuntime, nodeBinary } from '../../support/servers/matrix.js'
import { mainDatabase } from '../../support/servers/test-server.js'
import { repoRoot as root } from '../../support/paths.js'

// Every ```js block of the README runs as written, importing the built package
// by its name, against the test database. A trailing comment on a console.log
// line is the output that line must print. An example that reads CLUSTER_URL
// gets a primary with two streaming standbys, started for it. An example that
// uses the global Temporal runs on Node 26 where this runtime lacks it.

let cluster: Promise<Cluster> | undefined
after(async () => {
  if (cluster !== undefined) await (await cluster).stop()
})

const readme = readFileSync(join(root, 'README.md'), 'utf8')
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!)
// Files inside the package directory, so that `import 'pipegres'` resolves to the package itself.
const dir = join(root, 'build', 'readme-examples')

const EXAMPLE_LIMIT_MS = 90_000

function expectedOutputs(code: string): string[] {
  return code
    .split('\n')
    .filter((line) => line.includes('console.log(') && /\)\s*\/\/ /.test(line))
    .map((line) => line.slice(line.lastIndexOf('// ') + 3).trim())
}

test('the README has runnable examples', () => {
  assert.ok(blocks.length >= 6, `found ${blocks.length} blocks`)
})

blocks.forEach((code, i) => {
  const title = code.split('\n').find((l) => l.trim() && !l.startsWith('import'))!.trim()
  test(`README example ${i + 1}: ${title.slice(0, 60)}`, async () => {
    mkdirSync(dir, { recursive: true })
    const file = join(dir, `example-${i + 1}.mjs`)
    writeFileSync(file, code)
    const db = await mainDatabase()
    const env = { ...process.env }
    if (db.connectionString !== undefined) env.DATABASE_URL = db.connectionString
    if (code.includes('CLUSTER_URL')) {
      cluster ??= startCluster({ binDir: process.env.PIPEGRES_TEST_PGBIN || undefined, name: 'readme' })
      env.CLUSTER_URL = (await cluster).url()
    }
    let node = process.execPath
    if (/\bTemporal\./.test(code) && (globalThis as { Temporal?: unknown }).Temporal === undefined) {
      node = nodeBinary(26)
      const missing = missingRuntime(node)
      assert.equal(missing, undefined, `example ${i + 1} needs Node 26 for Temporal: ${missing}`)
    }
    const out = await new Promise<string>((res, rej) => {
      // PGlite's start-up alone runs initdb in WebAssembly, about 8 s of CPU: on a machine
      // loaded several times over, the PGlite example passed 30 s.
      // Its WebAssembly runs once per example, so V8's optimizing tier for it costs more than it
      // saves: the engine's baseline compiler only (a fresh PGlite: 11.8 s of CPU → 8.4 s).
      const flags = code.includes('@electric-sql/pglite') ? ['--liftoff-only'] : []
      execFile(node, [...flags, file], { env, timeout: EXAMPLE_LIMIT_MS }, (err, stdout, stderr) => {
        if (err?.killed === true) rej(new Error(`example ${i + 1} did not finish within ${EXAMPLE_LIMIT_MS / 1000} s: ${stderr}`))
        else if (err) rej(new Error(`example ${i + 1} failed: ${stderr || err.message}`))
        else res(stdout)
      })
    })
    const lines = out.split('\n').map((l) => l.trim())
    let at = 0
    for (const want of expectedOutputs(code)) {
      const found = lines.indexOf(want, at)
      assert.ok(found >= 0, `example ${i + 1} should print ${JSON.stringify(want)}; it printed:\n${out}`)
      at = found + 1
    }
  })
})
