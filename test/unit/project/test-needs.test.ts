import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { needsOf, type Need } from '../../../scripts/prerequisites.js'
import { repoRoot } from '../../support/paths.js'

// A test file that uses something `npm install` does not bring must say so in its
// header (`// test-needs:`): the runner installs it on a first run and holds the
// file back until it is there. A file that forgot would start before its
// component and skip, on exactly the fresh machine where the install happens.

test('needs are read from a header comment, with a reason in parentheses; an unknown one is refused', () => {
  assert.deepEqual(needsOf('// test-tags: slow\n// test-needs: pgbouncer, runtimes (Node 26)\nimport x from "y"\n'), ['pgbouncer', 'runtimes'])
  assert.deepEqual(needsOf('import x from "y"\n'), [])
  assert.throws(() => needsOf('// test-needs: pgbounce\n'), /unknown test need 'pgbounce'/)
})

/** What in a test's source shows that it uses a component, and the need that brings it. */
const USES: [RegExp, Need][] = [
  [/\bfindPgBouncer\(/, 'pgbouncer'],
  [/\bfindPgBouncer124\(/, 'pgbouncer-1.24'],
  [/\bfindPgpool\(|\bstartPgpool\(/, 'pgpool'],
  [/\bfrom 'playwright-core'/, 'chromium'],
  [/\bnodeBinary\(|\bonNode26\(|\bpostgresBinDir\(/, 'runtimes'],
]

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    return e.isDirectory() ? testFiles(path) : e.name.endsWith('.test.ts') ? [path] : []
  })
}

test('every test file that uses a component beyond npm install names it in test-needs', () => {
  const forgotten: string[] = []
  let using = 0
  for (const path of testFiles(join(repoRoot, 'test'))) {
    const source = readFileSync(path, 'utf8')
    const declared = needsOf(source)
    const used = USES.filter(([pattern]) => pattern.test(source)).map(([, need]) => need)
    if (used.length > 0) using++
    for (const need of used) if (!declared.includes(need)) forgotten.push(`${relative(repoRoot, path)}: ${need}`)
  }
  assert.deepEqual(forgotten, [])
  // The patterns still find the files they are for.
  assert.ok(using >= 8, `only ${using} files use a component`)
})
