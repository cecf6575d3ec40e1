// The test runner loads test/support/untracked-promises.js before every file,
// leaving promises out of the test harness's bookkeeping. What must hold on
// every Node the suite runs on: the harness's hook is the one changed (so the
// CPU is saved at all), tests stay in their suites however many resources
// came before them, and an error that escapes a test after an await still
// fails the file, with the error in its output.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { repoRoot } from '../../support/paths.js'

const preload = pathToFileURL(join(repoRoot, 'build', 'test', 'support', 'untracked-promises.js')).href

const FIXTURE = `
import { describe, test } from 'node:test'
import { createHook } from 'node:async_hooks'

let promisesSeen = 0
createHook({ init(id, type) { if (type === 'PROMISE') promisesSeen++ } }).enable()

test('the harness was changed, other hooks were not', async () => {
  await Promise.resolve()
  console.log('untracked:', globalThis[Symbol.for('pipegres.test.untrackedPromises')] === true)
  console.log('another hook sees promises:', promisesSeen > 0)
})

// More resources than the harness is told of, between a suite's start and its tests: the suite
// itself must stay known, or its tests would land at the top level.
describe('a suite after many ticks', () => {
  for (let i = 0; i < 100000; i++) process.nextTick(() => {})
  test('declared in it', () => {})
})

test('an error escapes after an await', async () => {
  await new Promise((r) => setTimeout(r, 5))
  Promise.reject(new Error('escaped-after-await'))
  await new Promise((r) => setTimeout(r, 20))
})
`

function run(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1
      resolve({ code, out: stdout + stderr })
    })
  })
}

test('with the preload: the harness leaves promises out, and an escaped error still fails the file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pipegres-untracked-'))
  try {
    const file = join(dir, 'fixture.test.mjs')
    writeFileSync(file, FIXTURE)
    const withPreload = await run([`--import=${preload}`, '--test-reporter=spec', file])
    assert.match(withPreload.out, /untracked: true/, withPreload.out)
    assert.match(withPreload.out, /another hook sees promises: true/, withPreload.out)
    assert.match(withPreload.out, /escaped-after-await/, withPreload.out)
    assert.match(withPreload.out, /▶ a suite after many ticks\n\s+✔ declared in it/, withPreload.out)
    assert.equal(withPreload.code, 1, `the file must fail:\n${withPreload.out}`)

    // Without it, the same error fails the file too (pinned on the test), and nothing is changed.
    const plain = await run(['--test-reporter=spec', file])
    assert.match(plain.out, /untracked: false/, plain.out)
    assert.match(plain.out, /escaped-after-await/, plain.out)
    assert.equal(plain.code, 1, plain.out)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
