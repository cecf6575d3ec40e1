import { test } from 'node:test'
import assert from 'node:assert/strict'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { batchUnitFiles, order, plannedRuns, runEnv, runLanes, runName, runPaths, tagsOf, type TestFile } from '../../../scripts/test-lanes.js'

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

const plain = { slow: false, exclusive: false, matrix: false, pglite: false, stress: false }

test('unit files share processes in batches of about equal size; every other run keeps its own', () => {
  const unit = (name: string, size: number, more: Partial<TestFile> = {}): TestFile => ({ path: `test/unit/${name}.test.js`, size, tags: plain, ...more })
  const files = [
    unit('a', 900),
    unit('b', 500),
    unit('c', 400),
    unit('d', 300),
    unit('e', 100),
    unit('slow', 50, { tags: { ...plain, slow: true } }),
    unit('alone', 50, { tags: { ...plain, exclusive: true } }),
    unit('needs', 50, { needs: ['runtimes'] }),
    unit('e', 100, { target: 'pglite', env: { PIPEGRES_TEST_TARGET: 'pglite' } }),
    { path: 'test/integration/x.test.js', size: 10, tags: plain },
  ]
  const runs = batchUnitFiles(files, 2)
  const batches = runs.filter((r) => r.batch)
  assert.equal(batches.length, 2)
  // Largest first into the lighter batch: 900 | 500 + 400 (900), then 300 to the first, 100 to the second.
  assert.deepEqual(batches.map((b) => b.batch), [
    ['test/unit/a.test.js', 'test/unit/d.test.js'],
    ['test/unit/b.test.js', 'test/unit/c.test.js', 'test/unit/e.test.js'],
  ])
  assert.deepEqual(batches.map((b) => b.size), [1200, 1000])
  assert.deepEqual(batches.map(runName), ['test/unit (batch 1 of 2, 2 files)', 'test/unit (batch 2 of 2, 3 files)'])
  // The slow, the exclusive, the one that waits for an install, the PGlite run and the integration file: as they were.
  assert.deepEqual(runs.filter((r) => !r.batch), files.slice(5))
  // Every file is run once.
  assert.equal(runs.flatMap(runPaths).length, files.length)
  // One unit file, or none to batch: nothing changes.
  assert.deepEqual(batchUnitFiles([files[0]!, files[9]!], 8), [files[0], files[9]])
  // Never more batches than pairs of files.
  assert.equal(batchUnitFiles(files, 16).filter((r) => r.batch).length, 2)
})

test('a batch runs its files in one process, the tests and hooks of each under its path; a failure names the file', async () => {
  const root = mkdtempSync(join(tmpdir(), 'pipegres-batch-'))
  try {
    const here = dirname(fileURLToPath(import.meta.url))
    mkdirSync(join(root, 'build', 'test', 'support'), { recursive: true })
    copyFileSync(join(here, '..', '..', 'support', 'batch.js'), join(root, 'build', 'test', 'support', 'batch.js'))
    mkdirSync(join(root, 'build', 'test', 'unit'), { recursive: true })
    const log = join(root, 'log')
    const write = (name: string, body: string) =>
      writeFileSync(join(root, 'build', 'test', 'unit', `${name}.test.js`), `import { after, test } from 'node:test'\nimport { appendFileSync } from 'node:fs'\nconst note = (s) => appendFileSync(${JSON.stringify(log)}, s + '\\n')\n${body}\n`)
    write('a', `test('a1', () => note('a1'))\nafter(() => note('a after'))\ntest('a2', () => note('a2'))`)
    write('b', `test('b1', () => { note('b1'); throw new Error('b1 broke') })\ntest('b2', () => note('b2'))`)
    const batch = batchUnitFiles([0, 1].map((i): TestFile => ({ path: `test/unit/${'ab'[i]}.test.js`, size: 1, tags: plain })), 1)
    assert.equal(batch.length, 1)
    const outputs: string[] = []
    const [result] = await runLanes(batch, { root, nodeFlags: [], laneEnv: [process.env], fileLimitMs: 60_000, resultsDir: join(root, 'results'), onFile: (_, out) => outputs.push(out) })
    assert.equal(result!.code, 1)
    assert.deepEqual([result!.counts?.tests, result!.counts?.pass, result!.counts?.fail], [4, 3, 1])
    assert.deepEqual(result!.failures, [{ test: 'test/unit/b.test.js › b1', error: 'b1 broke' }])
    // a's after hook ran after a's tests and before b's: each file's hooks stay its own.
    assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), ['a1', 'a2', 'a after', 'b1', 'b2'])
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
})
