import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { repoRoot as root } from '../../support/paths.js'

// The type-level tests in test/typecheck: row types carried through query(),
// sql, stream(), cursor() and transactions, and misuse rejected by the
// compiler (an `@ts-expect-error` whose line compiles is itself an error).

test('test/typecheck compiles with tsc --noEmit, every expected error included', { timeout: 120_000 }, () => {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const out = spawnSync(process.execPath, [tsc, '-p', join(root, 'test', 'typecheck', 'tsconfig.json')], { cwd: root, encoding: 'utf8' })
  assert.equal(out.error, undefined)
  assert.equal(`${out.stdout}${out.stderr}`.trim(), '')
  assert.equal(out.status, 0)
})
