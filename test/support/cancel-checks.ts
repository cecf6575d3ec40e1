import assert from 'node:assert/strict'
import { AbortError, PgError } from '../../src/index.js'
import { adminQuery } from './servers/test-server.js'

// What the cancellation tests check of a query that was aborted, timed out or
// cancelled, and of the queries behind it.
//
// Servers before PostgreSQL 18 deliver a CancelRequest as two SIGINTs (to the
// backend, then to its process group). On a busy machine the second can land
// after the target failed, on the query behind it, which the client wrote
// long before: no client timing prevents that. Such a follower fails with
// query_canceled and the connection counts it in cancelMisfires. On 18 there
// is one signal, and a follower must never be hit.

/**
 * Checks the outcome of a query that ran behind a cancelled one: its value,
 * or, on a server before 18 only, a query_canceled. Returns true for a hit.
 *
 * `nearEnd`: the abort may have come within a few milliseconds of the target
 * ending on its own. Then a follower may be hit on 18 too: the client's last
 * look at the target and the signal reaching the backend are a moment apart
 * (see src/connection/cancel-scheduler.ts), which a loaded machine stretches.
 */
export function followerOutcome<T>(s: PromiseSettledResult<T>, serverMajor: number, check: (value: T) => void, what = 'a follower', nearEnd = false): boolean {
  if (s.status === 'fulfilled') {
    check(s.value)
    return false
  }
  const e = s.reason as unknown
  assert.ok(serverMajor < 18 || nearEnd, `${what} was hit on PostgreSQL ${serverMajor}: ${String(e)}`)
  assert.ok(e instanceof PgError && e.code === '57014', `${what} failed otherwise: ${String(e)}`)
  return true
}

/** Every hit is counted as a misfire, and nothing else is. */
export function assertMisfires(counted: number, hits: number): void {
  assert.equal(counted, hits, `cancelMisfires counts exactly the followers hit (${hits})`)
}

export function assertAbortError(e: unknown, reason: unknown): asserts e is AbortError {
  assert.ok(e instanceof AbortError, `expected an AbortError, got ${String(e)}`)
  assert.equal(e.code, 'PG_ABORTED')
  assert.equal(e.reason, reason)
}

/** The query was cancelled on the server: the error's cause is the server's query_canceled. */
export function assertCanceledOnServer(e: Error): void {
  assert.ok(e.cause instanceof PgError, `cause should be the server's error, got ${String(e.cause)}`)
  assert.equal(e.cause.code, '57014')
}

/** The state pg_stat_activity shows for a backend. */
export async function backendState(pid: number): Promise<{ state: string; query: string } | undefined> {
  const r = await adminQuery(`SELECT state, query FROM pg_stat_activity WHERE pid = ${pid}`)
  const row = r.rows[0]
  return row === undefined ? undefined : { state: row[0] ?? '', query: row[1] ?? '' }
}
