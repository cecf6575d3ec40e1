import assert from 'node:assert/strict'
import { ConfigError } from '../../src/errors.js'

/** Asserts that `fn` throws a ConfigError for `setting` whose message includes and excludes the given texts. */
export function assertConfigError(fn: () => unknown, setting: string, includes: readonly string[] = [], excludes: readonly string[] = []): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`)
    assert.equal(err.setting, setting, err.message)
    assert.equal(err.code, 'PG_CONFIG')
    for (const s of includes) assert.ok(err.message.includes(s), `message ${JSON.stringify(err.message)} should include ${JSON.stringify(s)}`)
    for (const s of excludes) assert.ok(!err.message.includes(s), `message ${JSON.stringify(err.message)} must not include ${JSON.stringify(s)}`)
    return true
  })
}
