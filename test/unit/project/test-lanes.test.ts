import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { order, plannedRuns, runEnv, runLanes, runName, tagsOf, type TestFile } from '../../../scripts/test-lanes.js'

// The test runner's reading of `// test-tags:` headers and its order of files:
// a tag it misreads would run a timing test beside others, or leave a slow
// file to the end, where it alone would decide the suite's length.

test('tags are read from a header comment, with a reason in parentheses', () => {
  assert.deepEqual(tagsOf('// test-tags: slow, exclusive (it measures the event loop)\nimport x from "y"\n'), { slow: true, exclusive: true, matrix: false, pglite: false, stress: false })
  assert.deepEqual(tagsOf('// test-tags: matrix\n'), { slow: false, exclusive: false, matrix: true, pglite: false, stress: false })
  assert.deepEqual(tagsOf('// test-tags: matrix, pglite\n'), { slow: false, exclusive: false, matrix: true, pglite: true, stress: false })
  assert.deepEqual(tagsOf('import x from "y"\n// test-tags slow\n'), { slow: false, exclusive: false, matrix: false, pglite: false, stress: false })
  assert.throws(() => tagsOf('// test-tags: slwo\n'), /unknown test tag 'slwo'/)
})

test('slow files start first, then the larger ones; exclusive files are not ordered among them', () => {
  const file = (path: string, size: number, slow = false): TestFile => ({ path, size, tags: { slow, exclusive: false, matrix: false, pglite: false, stress: false } })
  const got = order([file('a', 10), file('b', 500), file('c', 20, true), file('d', 500)]).map((f) => f.path)
  assert.deepEqual(got, ['c', 'b', 'd', 'a'])
})

test('a file tagged pglite runs twice, the second time against PGlite with its own environment; --target keeps one of the two', () => {
  const file = (path: string, pglite: boolean): TestFile => ({ path, size: 1, tags: { slow: false, exclusive: false, matrix: false, pglite, stress: false } })
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

test('the stress tag is read like the others', () => {
  assert.deepEqual(tagsOf('// test-tags: slow, stress (it floods a million queries)\n'), { slow: true, exclusive: false, matrix: false, pglite: false, stress: true })
})

test('a file that waits for something being installed starts once it is there; the lanes run the other files meanwhile', async () => {
  const root = mkdtempSync(join(tmpdir(), 'pipegres-lanes-'))
  try {
    const started = join(root, 'started')
    mkdirSync(join(root, 'build', 't'), { recursive: true })
    for (const name of ['a', 'b', 'c']) {
      // Each file notes when it started, in a file the test reads.
      writeFileSync(
        join(root, 'build', 't', `${name}.test.js`),
        `import { test } from 'node:test'\nimport { appendFileSync } from 'node:fs'\ntest('${name}', () => appendFileSync(${JSON.stringify(started)}, '${name}\\n'))\n`,
      )
    }
    const file = (name: string, size: number): TestFile => ({ path: `t/${name}.test.js`, size, tags: { slow: false, exclusive: false, matrix: false, pglite: false, stress: false }, ...(name === 'a' ? { needs: ['pgbouncer'] } : {}) })
    let installed = false
    let release!: () => void
    const install = new Promise<void>((resolve) => (release = resolve)).then(() => void (installed = true))
    const ended: string[] = []
    const results = await runLanes([file('a', 300), file('b', 200), file('c', 100)], {
      root,
      nodeFlags: [],
      laneEnv: [process.env],
      fileLimitMs: 60_000,
      resultsDir: join(root, 'results'),
      onFile: (r) => {
        ended.push(r.file.path)
        // The install ends only when the files that do not need it are done.
        if (ended.length === 2) release()
      },
      blockedBy: (f) => (f.needs?.includes('pgbouncer') && !installed ? install : undefined),
    })
    assert.deepEqual(results.map((r) => r.code), [0, 0, 0])
    // a is the largest, first in the order, yet waits for its install.
    assert.deepEqual(readFileSync(started, 'utf8').trim().split('\n'), ['b', 'c', 'a'])
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
})
