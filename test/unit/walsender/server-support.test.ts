// What each PostgreSQL major offers a replication client (src/walsender/server-support.ts):
// the refusal names the option and the version it needs, and the README's
// table by version says what the code does.

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { ArgumentError } from '../../../src/index.js'
import { needsNewer, newestProtocol, protocolSince, REPLICATION_SINCE, requireSince, shortVersion } from '../../../src/walsender/server-support.js'
import { repoRoot as root } from '../../support/paths.js'

test('the newest pgoutput protocol of each major, and the first major of each protocol', () => {
  assert.deepEqual([13, 14, 15, 16, 17, 18].map(newestProtocol), [1, 2, 3, 4, 4, 4])
  for (const v of [1, 2, 3, 4] as const) {
    assert.equal(newestProtocol(protocolSince(v)), v)
    if (protocolSince(v) > 10) assert.ok(newestProtocol(protocolSince(v) - 1) < v)
  }
})

test('a refusal names the option, the version it needs and the server version as people write it', () => {
  assert.equal(shortVersion('14.23 (Debian 14.23-1.pgdg120+1)'), '14.23')
  assert.equal(shortVersion('18beta1'), '18')
  assert.equal(shortVersion(undefined), 'of unknown version')
  const err = needsNewer('binary: true', 14, '13.23')
  assert.ok(err instanceof ArgumentError)
  assert.equal(err.message, 'binary: true needs PostgreSQL 14 or later; this server is 13.23')
  assert.throws(() => requireSince('origin: \'none\'', 16, 15, '15.9'), /^ArgumentError: origin: 'none' needs PostgreSQL 16 or later; this server is 15\.9$/)
  assert.doesNotThrow(() => requireSince('binary: true', 14, 14, '14.0'))
})

test("the README's table of replication features by version is what the code refuses", () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const header = readme.indexOf('| | 13 | 14 | 15 | 16+ |')
  assert.ok(header !== -1, 'the README has the table')
  const rows = readme.slice(header).split('\n').slice(2).filter((l) => l.startsWith('|'))
  const row = (label: string) => {
    const line = rows.find((l) => l.startsWith(`| ${label}`))
    assert.ok(line !== undefined, `a row for ${label}`)
    return line.split('|').slice(2, 6).map((c) => c.trim())
  }
  const expect = (since: number) => [13, 14, 15, 16].map((m) => (m >= since ? 'yes' : '–'))
  assert.deepEqual(row('`binary`, `messages`'), expect(Math.max(REPLICATION_SINCE.binary, REPLICATION_SINCE.messages)))
  assert.deepEqual(row('`streaming`'), expect(REPLICATION_SINCE.streaming))
  assert.deepEqual(row('`twoPhase`'), expect(REPLICATION_SINCE.twoPhase))
  assert.deepEqual(row('`origin`'), expect(REPLICATION_SINCE.origin))
  assert.deepEqual(row('`readSlot()`'), expect(REPLICATION_SINCE.readSlot))
  assert.deepEqual(row('pgoutput `protocolVersion`'), [13, 14, 15, 16].map((m) => (newestProtocol(m) === 1 ? '1' : `1–${newestProtocol(m)}`)))
})
