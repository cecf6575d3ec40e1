import { test } from 'node:test'
import assert from 'node:assert/strict'
import { order, plannedRuns, runEnv, runName, tagsOf, type TestFile } from '../../../scripts/test-lanes.js'

// The test runner's reading of `// test-tags:` headers and its order of files:
// a tag it misreads would run a timing test beside others, or leave a slow
// file to the end, where it alone would decide the suite's length.

test('tags are read from a header comment, with a reason in parentheses', () => {
  assert.deepEqual(tagsOf('// test-tags: slow, exclusive (it measures the event loop)\nimport x from "y"\n'), { slow: true, exclusive: true, matrix: false, pglite: false })
  assert.deepEqual(tagsOf('// test-tags: matrix\n'), { slow: false, exclusive: false, matrix: true, pglite: false })
  assert.deepEqual(tagsOf('// test-tags: matrix, pglite\n'), { slow: false, exclusive: false, matrix: true, pglite: true })
  assert.deepEqual(tagsOf('import x from "y"\n// test-tags slow\n'), { slow: false, exclusive: false, matrix: false, pglite: false })
  assert.throws(() => tagsOf('// test-tags: slwo\n'), /unknown test tag 'slwo'/)
})

test('slow files start first, then the larger ones; exclusive files are not ordered among them', () => {
  const file = (path: string, size: number, slow = false): TestFile => ({ path, size, tags: { slow, exclusive: false, matrix: false, pglite: false } })
  const got = order([file('a', 10), file('b', 500), file('c', 20, true), file('d', 500)]).map((f) => f.path)
  assert.deepEqual(got, ['c', 'b', 'd', 'a'])
})

test('a file tagged pglite runs twice, the second time against PGlite with its own environment; --target keeps one of the two', () => {
  const file = (path: string, pglite: boolean): TestFile => ({ path, size: 1, tags: { slow: false, exclusive: false, matrix: false, pglite } })
  const files = [file('test/integration/a.test.js', true), file('test/integration/b.test.js', false)]
  const env = { PIPEGRES_TEST_TARGET: 'pglite', PIPEGRES_TEST_SERVER: undefined }
  const both = plannedRuns(files, undefined, env)
  assert.deepEqual(both.map(runName), ['test/integration/a.test.js', 'test/integration/b.test.js', 'test/integration/a.test.js (PGlite)'])
  assert.deepEqual(both.map((f) => f.target), [undefined, undefined, 'pglite'])
  assert.deepEqual(plannedRuns(files, 'pglite', env).map(runName), ['test/integration/a.test.js (PGlite)'])
  assert.deepEqual(plannedRuns(files, 'server', env).map(runName), ['test/integration/a.test.js', 'test/integration/b.test.js'])
  // The lane's server is gone from the PGlite run's environment, the target is set; the server run's is the lane's.
  const lane = { PIPEGRES_TEST_SERVER: '{"port":1}', PATH: '/bin' }
  assert.deepEqual(runEnv(lane, both[2]!), { PATH: '/bin', PIPEGRES_TEST_TARGET: 'pglite' })
  assert.deepEqual(runEnv(lane, both[0]!), lane)
})
