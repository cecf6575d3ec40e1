import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { missingRuntime, nodeBinary } from './servers/matrix.js'

/**
 * For tests of what only a newer runtime has (the global Temporal, Node 26):
 * one test that runs `file` (the calling test file) on Node 26 with the same
 * environment and fails unless at least `minPass` of its tests passed there.
 * Never a skip: without that runtime installed the test fails, saying how to
 * install it.
 */
export function onNode26(file: string, minPass: number, env: NodeJS.ProcessEnv = {}): void {
  test(`on Node 26 (this runtime, Node ${process.versions.node}, lacks what these tests need)`, async () => {
    const node = nodeBinary(26)
    const missing = missingRuntime(node)
    assert.equal(missing, undefined, missing)
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env }
    // The child reports on its own, not as a subtest of this run.
    delete childEnv.NODE_TEST_CONTEXT
    const out = await new Promise<string>((resolve, reject) => {
      execFile(node, ['--test-reporter=tap', file], { env: childEnv, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`the tests failed on Node 26:\n${stdout}\n${stderr}`))
        else resolve(stdout)
      })
    })
    const pass = /^# pass (\d+)/m.exec(out)
    assert.ok(pass !== null && Number(pass[1]) >= minPass, `expected at least ${minPass} tests to pass on Node 26:\n${out}`)
  })
}
