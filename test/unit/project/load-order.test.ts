// test-tags: slow
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { buildDir } from '../../support/paths.js'

// Every compiled module of the package, imported first in a fresh module
// graph: a circle of runtime imports that works only because another module
// happens to load first (a class used before its module finished) fails here,
// whichever module a user, a bundler or a test loads first.

// The package's modules are build/src (the same code as dist/).
const built = join(buildDir, 'src')

function modules(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (p === join(built, 'integrations')) {
      // An integration is reached through its subpath's entry only (the package's exports), and
      // loads its library, which costs seconds: each entry once.
      return readdirSync(p).map((sub) => join(p, sub, 'index.js'))
    }
    return statSync(p).isDirectory() ? modules(p) : p.endsWith('.js') ? [p] : []
  })
}

/** Imports one module in a worker thread, which has a module graph of its own; resolves with the error's text, or undefined. */
function importAlone(file: string): Promise<string | undefined> {
  const code = `import(${JSON.stringify(pathToFileURL(file).href)}).then(() => process.exit(0), (e) => { console.error(String(e && e.stack || e)); process.exit(1) })`
  return new Promise((done) => {
    const worker = new Worker(code, { eval: true, stderr: true, stdout: true })
    let err = ''
    worker.stderr.on('data', (b: Buffer) => (err += b.toString()))
    worker.on('error', (e) => (err += String(e)))
    worker.on('exit', (code) => done(code === 0 ? undefined : err || `exit ${code}`))
  })
}

test('every module of the package loads when it is the first one imported', { timeout: 240_000 }, async () => {
  // Integrations import their optional peer libraries, which the dev dependencies provide.
  const all = modules(built)
  assert.ok(all.length > 100, `${all.length} modules found under ${built}`)
  const failures: string[] = []
  const queue = [...all]
  const runOne = async (): Promise<void> => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      const err = await importAlone(file)
      if (err !== undefined) failures.push(`${relative(built, file)}: ${err.split('\n')[0]}`)
    }
  }
  await Promise.all([runOne(), runOne()])
  assert.deepEqual(failures, [])
})

test('the check fails on a module that uses a class before its circle has defined it', async () => {
  // A circle of two made on the spot: a.js imports b.js, which extends a class of a.js at load.
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const dir = mkdtempSync(join(tmpdir(), 'pipegres-load-order-'))
  try {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}')
    writeFileSync(join(dir, 'a.js'), "import { B } from './b.js'\nexport class A {}\nexport const b = () => new B()\n")
    writeFileSync(join(dir, 'b.js'), "import { A } from './a.js'\nexport class B extends A {}\n")
    assert.equal(await importAlone(join(dir, 'b.js')), undefined)
    assert.match((await importAlone(join(dir, 'a.js'))) ?? '', /before initialization/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
