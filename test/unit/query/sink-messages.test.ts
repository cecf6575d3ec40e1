// The exchange with each sink and policy at message level: what the client
// writes for stream(), queryRaw(), describe() and rowMode 'columns', and what
// reaches the caller of the server's replies. The sinks on their own are in
// row-sinks.test.ts; cursor() and batch() have files of their own.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client, PgError } from '../../../src/index.js'
import { bindComplete, commandComplete, dataRow, errorResponse, int32, parameterDescription, parseComplete, readyForQuery, rowDescription } from '../../support/fakes/backend-messages.js'
import { NAMED, pgError } from '../../support/fakes/scripted-exchanges.js'
import { act, expect, scriptedBackend, send, type ScriptedBackend, type Step } from '../../support/fakes/scripted-backend.js'

const INT4 = 23

/** A statement described before it is bound (the policy of stream(), queryRaw() and rowMode 'columns'): Parse, Describe S, Flush, and the server's description. */
function describedFirst(sql: string, columns: Parameters<typeof rowDescription>[0]): Step[] {
  return [expect.parse({ name: NAMED, sql }), expect.describe('S', NAMED), expect.flush(), send(parseComplete(), parameterDescription([]), rowDescription(columns))]
}

/** Waits (bounded) until the client has sent a cancel request. */
function cancelSent(backend: () => ScriptedBackend): Step {
  return act('wait for the cancel request', async () => {
    const be = backend()
    for (let i = 0; i < 100 && be.cancels.length === 0; i++) await new Promise((r) => setTimeout(r, 10))
    assert.ok(be.cancels.length > 0, 'the client cancels the query')
  })
}

test('stream(): the statement is described before it is bound, in binary, and its rows handed over as they come', async () => {
  const text = 'SELECT n FROM t'
  const be = scriptedBackend([
    [
      ...describedFirst(text, [['n', INT4]]),
      expect.bind({ statement: NAMED, resultFormats: [1] }),
      expect.execute({ portal: '', maxRows: 0 }),
      expect.sync(),
      send(bindComplete(), dataRow([int32(1)]), dataRow([int32(2)]), commandComplete('SELECT 2'), readyForQuery()),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const rows: unknown[] = []
    const stream = db.stream(text)
    for await (const row of stream) rows.push(row)
    assert.deepEqual(rows, [{ n: 1 }, { n: 2 }])
    assert.equal(stream.command, 'SELECT')
    assert.equal(stream.rowCount, 2)
  })
})

test('stream(): a row that fails to decode fails the stream; the query is cancelled and the rest of its rows dropped', async () => {
  const text = 'SELECT n FROM t'
  const be: ScriptedBackend = scriptedBackend([
    [
      ...describedFirst(text, [['n', INT4]]),
      expect.bind({ statement: NAMED, resultFormats: [1] }),
      expect.execute(),
      expect.sync(),
      // An int4 of 2 bytes cannot be decoded.
      send(bindComplete(), dataRow([int32(1)]), dataRow([Uint8Array.of(0, 2)])),
      cancelSent(() => be),
      send(dataRow([int32(3)]), errorResponse(pgError('57014', 'canceling statement due to user request')), readyForQuery()),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const rows: unknown[] = []
    const err = await (async () => {
      for await (const row of db.stream(text)) rows.push(row)
    })().then(
      () => null,
      (e: unknown) => e,
    )
    assert.deepEqual(rows, [{ n: 1 }], 'the row after the failure is dropped')
    assert.ok(err instanceof Error && !(err instanceof PgError), `the decoding error, not the cancel's: ${String(err)}`)
  })
})

test('queryRaw(): the portal is described after Bind, and its RowDescription, rows and CommandComplete are passed on byte for byte', async () => {
  const text = 'SELECT n FROM t'
  const replies = [rowDescription([{ name: 'n', typeOid: INT4, format: 1 }]), dataRow([int32(7)]), commandComplete('SELECT 1')]
  const be = scriptedBackend([
    [
      ...describedFirst(text, [['n', INT4]]),
      expect.bind({ statement: NAMED }),
      expect.describe('P', ''),
      expect.execute(),
      expect.sync(),
      send(bindComplete(), ...replies, readyForQuery()),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const written: Uint8Array[] = []
    const destination = { write: (c: Uint8Array) => (written.push(Uint8Array.from(c)), true), once: () => destination, off: () => destination }
    const r = await db.queryRaw(text, [], destination)
    assert.equal(r.command, 'SELECT')
    assert.equal(r.rowCount, 1)
    assert.deepEqual(Buffer.concat(written), Buffer.concat(replies))
  })
})

test('queryRaw(): the server\'s error is passed on too, and such a query is never sent again', async () => {
  const text = 'SELECT n FROM t'
  const error = errorResponse(pgError('22012', 'division by zero'))
  const be = scriptedBackend([
    [
      ...describedFirst(text, [['n', INT4]]),
      expect.bind({ statement: NAMED }),
      expect.describe('P', ''),
      expect.execute(),
      expect.sync(),
      send(bindComplete(), rowDescription([['n', INT4]]), error, readyForQuery()),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const written: Uint8Array[] = []
    const destination = { write: (c: Uint8Array) => (written.push(Uint8Array.from(c)), true), once: () => destination, off: () => destination }
    await assert.rejects(db.queryRaw(text, [], destination), { code: '22012' })
    assert.deepEqual(Buffer.concat(written).subarray(-error.length), Buffer.from(error))
  })
})

test('describe(): Parse and Describe of the unnamed statement under one Sync; nothing is bound or executed', async () => {
  const text = 'SELECT n FROM t WHERE id = $1'
  const be = scriptedBackend([
    [
      expect.parse({ name: '', sql: text }),
      expect.describe('S', ''),
      expect.sync(),
      // Anything more the client wrote (a Bind, an Execute) would fail the script's end.
      send(parseComplete(), parameterDescription([INT4]), rowDescription([['n', INT4]]), readyForQuery()),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const d = await db.describe(text)
    assert.deepEqual(d.parameters, [INT4])
    assert.deepEqual(
      d.fields.map((f) => [f.name, f.typeOid]),
      [['n', INT4]],
    )
  })
})

test('rowMode columns: described before its first execution, so its columns come in binary into typed arrays', async () => {
  const text = 'SELECT n FROM t'
  const be = scriptedBackend([
    [
      ...describedFirst(text, [['n', INT4]]),
      expect.bind({ statement: NAMED, resultFormats: [1] }),
      expect.execute({ maxRows: 0 }),
      expect.sync(),
      send(bindComplete(), dataRow([int32(4)]), dataRow([int32(9)]), commandComplete('SELECT 2'), readyForQuery()),
    ],
  ])
  await be.run(new Client(be.options), async (db) => {
    const r = await db.query(text, [], { rowMode: 'columns' })
    assert.ok(r.columns?.['n'] instanceof Int32Array)
    assert.deepEqual(Array.from(r.columns['n']), [4, 9])
    assert.deepEqual(r.rows, [])
  })
})
