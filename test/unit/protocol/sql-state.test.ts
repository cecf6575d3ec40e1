import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SqlState } from '../../../src/index.js'
import { embeddedBinDir } from '../../support/servers/postgres.js'
import { nameCodes, parseErrcodes, pinnedSources, tableText } from '../../../scripts/gen-sqlstate.js'
import { repoRoot as root } from '../../support/paths.js'

// The generated SqlState table against pinned copies of the errcodes.txt of
// each server version tested (scripts/errcodes/): a server's code without a
// name would have to be matched as a bare string. The pins, not the installed
// servers, decide: a point release that adds a code must not fail the build.

const installed = [join(embeddedBinDir(), '..', 'share', 'postgresql', 'errcodes.txt'), '/usr/share/postgresql/15/errcodes.txt'].filter((p) => existsSync(p))

test('every SQLSTATE of the pinned server versions has a name in SqlState', () => {
  const pins = pinnedSources()
  assert.ok(pins.length >= 2, `pinned errcodes.txt copies: ${pins.map(([v]) => v).join(', ')}`)
  const values = new Set<string>(Object.values(SqlState))
  for (const [version, file] of pins) {
    const missing = parseErrcodes(readFileSync(file, 'utf8')).filter((c) => !values.has(c.code))
    assert.deepEqual(missing, [], `PostgreSQL ${version}: run node build/scripts/gen-sqlstate.js`)
  }
  assert.equal(readFileSync(join(root, 'src', 'protocol', 'sql-state.ts'), 'utf8'), tableText(pins), 'the table is what the pins make')
})

test('codes of an installed server the pins lack are reported, not failed', (t) => {
  // A newer point release may add codes: they still reach users as PgError.code strings
  // (see the errors tests); the note says how to pin that release.
  const values = new Set<string>(Object.values(SqlState))
  for (const file of installed) {
    const extra = parseErrcodes(readFileSync(file, 'utf8')).filter((c) => !values.has(c.code))
    if (extra.length > 0) t.diagnostic(`${file} has ${extra.map((c) => c.code).join(', ')}: pin it with node build/scripts/gen-sqlstate.js --pin ${file} VERSION`)
  }
})

test('names and codes are one-to-one, and read as the documentation names them', () => {
  const codes = Object.values(SqlState)
  assert.equal(new Set(codes).size, codes.length)
  assert.equal(SqlState.SerializationFailure, '40001')
  assert.equal(SqlState.DeadlockDetected, '40P01')
  assert.equal(SqlState.UniqueViolation, '23505')
  // An error and a warning share a condition name: the error keeps it.
  assert.equal(SqlState.StringDataRightTruncation, '22001')
  assert.equal(SqlState.WarningStringDataRightTruncation, '01004')
  // Retired by PostgreSQL 17, still named for older servers.
  assert.equal(SqlState.SnapshotTooOld, '72000')
})

test('the generator names aliases and refuses lines it cannot read', () => {
  const named = nameCodes(
    parseErrcodes(
      ['Section: Class 22 - Data Exception', '2202E    E    ERRCODE_ARRAY_ELEMENT_ERROR', '2202E    E    ERRCODE_ARRAY_SUBSCRIPT_ERROR    array_subscript_error', '22008    E    ERRCODE_DATETIME_VALUE_OUT_OF_RANGE'].join('\n'),
    ),
  )
  assert.deepEqual(named, [
    ['ArraySubscriptError', '2202E', 'Class 22 - Data Exception'],
    ['DatetimeValueOutOfRange', '22008', 'Class 22 - Data Exception'],
  ])
  assert.throws(() => parseErrcodes('2202 E ERRCODE_X x'), /cannot read line/)
})
