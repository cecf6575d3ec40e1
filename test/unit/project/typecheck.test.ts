import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

// The type-level tests in test/types: row types carried through query(),
// sql, stream(), cursor() and transactions, and misuse rejected by the
// compiler (an `@ts-expect-error` whose line compiles is itself an error).

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

test('test/types compiles with tsc --noEmit, every expected error included', { timeout: 120_000 }, () => {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const out = spawnSync(process.execPath, [tsc, '-p', join(root, 'test', 'types', 'tsconfig.json')], { cwd: root, encoding: 'utf8' })
  assert.equal(out.error, undefined)
  assert.equal(`${out.stdout}${out.stderr}`.trim(), '')
  assert.equal(out.status, 0)
})
