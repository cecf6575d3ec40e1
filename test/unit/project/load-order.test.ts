import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { buildDir, repoRoot } from '../../support/paths.js'

// A module that is imported first in a fresh module graph fails to load only
// through a circle of runtime imports: a class used before its module
// finished, because another module of the circle happened to run first. So
// the runtime import graph of the package is read from its compiled modules
// (build/src, the same code as dist/), and every module that lies on a circle
// or leads into one is imported first in a fresh module graph, whichever
// module a user, a bundler or a test loads first. Every entry of the package's
// exports is imported first too. Importing every module one by one cost 33 s
// of CPU; a module that reaches no circle has its dependencies run before
// it, always, and cannot fail this way.

const built = join(buildDir, 'src')

function modules(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    return statSync(p).isDirectory() ? modules(p) : p.endsWith('.js') ? [p] : []
  })
}

// A static import or re-export with a relative specifier, at the start of a line (not in a comment);
// its clause may span lines. Dynamic import() runs after loading and cannot break the order.
const STATIC_IMPORT = /^[ \t]*(?:import|export)\b[^;'"`]*?\bfrom\s*(['"])(\.\.?\/[^'"]+)\1/gm
const BARE_IMPORT = /^[ \t]*import\s*(['"])(\.\.?\/[^'"]+)\1/gm

/** Each module's relative runtime imports, resolved; throws on one that names no file (a misread import). */
function importGraph(files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const code = readFileSync(file, 'utf8')
    const deps = [...code.matchAll(STATIC_IMPORT), ...code.matchAll(BARE_IMPORT)].map((m) => join(dirname(file), m[2]!))
    for (const dep of deps) if (!existsSync(dep)) throw new Error(`${file} imports ${dep}, which does not exist`)
    graph.set(file, [...new Set(deps)])
  }
  return graph
}

/** The modules on a circle of the graph, or leading into one. */
function circleBound(graph: Map<string, string[]>): Set<string> {
  // Tarjan's strongly connected components, iteratively: a component of more than one module, or
  // a module importing itself, is a circle.
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const onCircle = new Set<string>()
  let next = 0
  for (const root of graph.keys()) {
    if (index.has(root)) continue
    const work: Array<[string, number]> = [[root, 0]]
    index.set(root, next)
    low.set(root, next++)
    stack.push(root)
    onStack.add(root)
    while (work.length > 0) {
      const top = work[work.length - 1]!
      const [v, i] = top
      const deps = graph.get(v) ?? []
      if (i < deps.length) {
        top[1]++
        const w = deps[i]!
        if (!index.has(w)) {
          index.set(w, next)
          low.set(w, next++)
          stack.push(w)
          onStack.add(w)
          work.push([w, 0])
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
        continue
      }
      work.pop()
      if (work.length > 0) {
        const parent = work[work.length - 1]![0]
        low.set(parent, Math.min(low.get(parent)!, low.get(v)!))
      }
      if (low.get(v) === index.get(v)) {
        const component: string[] = []
        let w: string
        do {
          w = stack.pop()!
          onStack.delete(w)
          component.push(w)
        } while (w !== v)
        if (component.length > 1 || deps.includes(v)) for (const m of component) onCircle.add(m)
      }
    }
  }
  // Those leading into a circle: whatever imports a module already found, until nothing is added.
  const bound = new Set(onCircle)
  for (let added = true; added; ) {
    added = false
    for (const [m, deps] of graph) if (!bound.has(m) && deps.some((d) => bound.has(d))) added = bound.add(m) !== undefined
  }
  return bound
}

/** The modules the package's exports name (dist/X.js is build/src/X.js). */
function exportEntries(): string[] {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { exports: Record<string, Record<string, string>> }
  const entries = new Set<string>()
  for (const conditions of Object.values(pkg.exports)) {
    for (const [condition, target] of Object.entries(conditions)) {
      if (condition !== 'types' && target.startsWith('./dist/')) entries.add(join(built, target.slice('./dist/'.length)))
    }
  }
  return [...entries]
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

test('every module on or leading into a circle of imports, and every entry of the package, loads when it is the first one imported', { timeout: 240_000 }, async (t) => {
  const all = modules(built)
  assert.ok(all.length > 100, `${all.length} modules found under ${built}`)
  const graph = importGraph(all)
  const edges = [...graph.values()].reduce((n, deps) => n + deps.length, 0)
  assert.ok(edges > all.length, `${edges} imports read from ${all.length} modules: too few to be the package's`)
  const bound = circleBound(graph)
  const entries = exportEntries()
  // Integrations import their optional peer libraries, which the dev dependencies provide.
  assert.ok(entries.length >= 9, `${entries.length} entries in package.json's exports`)
  t.diagnostic(`${all.length} modules, ${edges} runtime imports; ${bound.size} on or leading into a circle: ${[...bound].map((m) => relative(built, m)).join(', ') || 'none'}`)
  const queue = [...new Set([...entries, ...bound])]
  const failures: string[] = []
  const runOne = async (): Promise<void> => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      const err = await importAlone(file)
      if (err !== undefined) failures.push(`${relative(built, file)}: ${err.split('\n')[0]}`)
    }
  }
  await Promise.all([runOne(), runOne()])
  assert.deepEqual(failures, [])
})

test('the check finds a circle, and what leads into it, and fails on a module that uses a class before its circle has defined it', async () => {
  // A circle of two made on the spot: a.js imports b.js, which extends a class of a.js at load.
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const dir = mkdtempSync(join(tmpdir(), 'pipegres-load-order-'))
  try {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}')
    writeFileSync(join(dir, 'a.js'), "import { B } from './b.js'\nexport class A {}\nexport const b = () => new B()\n")
    writeFileSync(join(dir, 'b.js'), "import { A } from './a.js'\nexport class B extends A {}\n")
    // c.js leads into the circle, d.js is apart; the import clause spread over lines is read too.
    writeFileSync(join(dir, 'c.js'), "import {\n  b,\n} from './a.js'\nexport const c = b\n")
    writeFileSync(join(dir, 'd.js'), "// import { A } from './a.js'\nexport const d = import('./a.js')\n")
    const files = ['a.js', 'b.js', 'c.js', 'd.js'].map((f) => join(dir, f))
    const bound = circleBound(importGraph(files))
    assert.deepEqual([...bound].map((f) => relative(dir, f)).sort(), ['a.js', 'b.js', 'c.js'])
    assert.equal(await importAlone(join(dir, 'b.js')), undefined)
    assert.match((await importAlone(join(dir, 'a.js'))) ?? '', /before initialization/)
    assert.match((await importAlone(join(dir, 'c.js'))) ?? '', /before initialization/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
