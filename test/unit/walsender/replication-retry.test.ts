// When a replication stream tries again: a lost connection with backoff once
// the settings have reached the server, never before (wrong settings must not
// retry forever), and a server that ended a connection itself while it opened
// counts as reached.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConnectionError, PgError, type PgErrorFields } from '../../../src/errors.js'
import { ReplicationError } from '../../../src/replication/errors.js'
import { ReconnectPolicy } from '../../../src/walsender/replication-retry.js'

function pgError(code: string, severity = 'FATAL'): PgError {
  const fields = { severity, severityNonLocalized: severity, code, message: `server said ${code}` } as Partial<PgErrorFields>
  return new PgError(fields as PgErrorFields)
}

/** A connection closed by a FATAL, as the connection layer reports it: the server's error as the cause. */
const closedBy = (code: string): ConnectionError => new ConnectionError('PG_CONNECTION_CLOSED', `server closed the connection (SQLSTATE ${code})`, { cause: pgError(code) })

test('before any connection opened, only a server that ended the connection itself is tried again', () => {
  for (const code of ['57P01', '57P02', '57P03']) {
    const next = new ReconnectPolicy(1000).next(closedBy(code), false)
    assert.ok(next !== null, `${code} while opening is tried again`)
    assert.equal(next.attempt, 1)
  }
  // Refused, reset or not answering: nothing says the host, port or settings are right.
  assert.equal(new ReconnectPolicy(1000).next(new ConnectionError('PG_CONNECTION_REFUSED', 'connect ECONNREFUSED'), false), null)
  assert.equal(new ReconnectPolicy(1000).next(new ConnectionError('PG_CONNECTION_CLOSED', 'read ECONNRESET'), false), null)
  // The caller's settings refused: never again.
  assert.equal(new ReconnectPolicy(1000).next(pgError('28P01'), false), null)
  assert.equal(new ReconnectPolicy(1000).next(closedBy('28000'), false), null)
  assert.equal(new ReconnectPolicy(1000).next(closedBy('3D000'), false), null)
})

test('once a connection opened, a lost one is tried again with a growing, capped delay', () => {
  const policy = new ReconnectPolicy(400)
  policy.connected(1234)
  const delays: number[] = []
  for (let i = 0; i < 6; i++) {
    const next = policy.next(new ConnectionError('PG_CONNECTION_CLOSED', 'read ECONNRESET'), false)
    assert.ok(next !== null)
    assert.equal(next.attempt, i + 1)
    delays.push(next.delay)
  }
  // 100 ms doubling, jitter taking off up to half, never over the cap.
  delays.forEach((d, k) => assert.ok(d >= 50 * 2 ** Math.min(k, 2) && d <= 400, `delay ${k}: ${d}`))
  // A stream that ran starts the backoff over.
  policy.streamed()
  assert.equal(policy.next(closedBy('57P01'), true)?.attempt, 1)
  // A refusal that retrying cannot fix ends the stream even then.
  assert.equal(policy.next(new ReplicationError('server', 'publication does not exist'), true), null)
})
