import { test } from 'node:test'
import assert from 'node:assert/strict'
import { order, tagsOf, type TestFile } from '../../../scripts/test-lanes.js'

// The test runner's reading of `// test-tags:` headers and its order of files:
// a tag it misreads would run a timing test beside others, or leave a slow
// file to the end, where it alone would decide the suite's length.

test('tags are read from a header comment, with a reason in parentheses', () => {
  assert.deepEqual(tagsOf('// test-tags: slow, exclusive (it measures the event loop)\nimport x from "y"\n'), { slow: true, exclusive: true, matrix: false })
  assert.deepEqual(tagsOf('// test-tags: matrix\n'), { slow: false, exclusive: false, matrix: true })
  assert.deepEqual(tagsOf('import x from "y"\n// test-tags slow\n'), { slow: false, exclusive: false, matrix: false })
  assert.throws(() => tagsOf('// test-tags: slwo\n'), /unknown test tag 'slwo'/)
})

test('slow files start first, then the larger ones; exclusive files are not ordered among them', () => {
  const file = (path: string, size: number, slow = false): TestFile => ({ path, size, tags: { slow, exclusive: false, matrix: false } })
  const got = order([file('a', 10), file('b', 500), file('c', 20, true), file('d', 500)]).map((f) => f.path)
  assert.deepEqual(got, ['c', 'b', 'd', 'a'])
})
