// Runs several test files in one process, each file's tests under a suite
// named by its path: `node build/test/support/batch.js test/unit/a.test.js ...`
// (paths relative to build/). The test runner (scripts/test-lanes.ts) batches
// the unit files this way: most of them run in well under a second, and as a
// process each they cost more in Node's start and in loading the sources than
// in their tests. A file's top-level hooks become its suite's hooks, so they
// run around its own tests, as they would in a process of its own; but every
// file's top-level code runs as the batch starts, before any test. That is why
// only unit files are batched: integration files set process-wide state at
// their top (HOME and the PG* variables, a global tracer provider), which the
// next file's would overwrite.

import { describe } from 'node:test'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const buildDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

const paths = process.argv.slice(2)
if (paths.length === 0) {
  console.error('usage: node build/test/support/batch.js <test file relative to build/> ...')
  process.exit(2)
}
for (const path of paths) {
  // The suite waits for the import: the tests a file declares at its top level are declared inside it.
  describe(path, async () => {
    await import(pathToFileURL(join(buildDir, path)).href)
  })
}
