import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SqlState } from '../../src/index.js'
import { embeddedBinDir } from '../../harness/server.js'
import { nameCodes, parseErrcodes } from '../../scripts/gen-sqlstate.js'

// The generated SqlState table against the errcodes.txt the servers ship:
// a server's code without a name would have to be matched as a bare string.

const sources = [join(embeddedBinDir(), '..', 'share', 'postgresql', 'errcodes.txt'), '/usr/share/postgresql/15/errcodes.txt'].filter((p) => existsSync(p))

test('every SQLSTATE of the installed servers has a name in SqlState', () => {
  assert.ok(sources.length >= 1, 'the embedded server ships errcodes.txt')
  const values = new Set<string>(Object.values(SqlState))
  for (const file of sources) {
    const missing = parseErrcodes(readFileSync(file, 'utf8')).filter((c) => !values.has(c.code))
    assert.deepEqual(missing, [], `${file}: run node build/scripts/gen-sqlstate.js`)
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
