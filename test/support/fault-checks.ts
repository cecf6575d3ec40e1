// Checks every query of a fault test must pass, whatever the fault: it settles
// within a hard limit, a rejection is one of pipegres's error classes with a
// code, and no message, cause or stack carries a password.

import assert from 'node:assert/strict'
import { inspect } from 'node:util'
import { PgError, PipegresError } from '../../src/index.js'
import type { ServerInfo } from './servers/test-server.js'

export type Settled<T> = PromiseSettledResult<T>

/**
 * The outcome of `p`, which never rejects: call it as the query is issued, so
 * that a query failing while the test awaits something else is not an
 * unhandled rejection.
 */
export function outcome<T>(p: Promise<T>): Promise<Settled<T>> {
  return p.then(
    (value): Settled<T> => ({ status: 'fulfilled', value }),
    (reason: unknown): Settled<T> => ({ status: 'rejected', reason }),
  )
}

/** Settles like Promise.allSettled, but fails the test if `p` has not settled after `ms`. */
export async function settleWithin<T>(p: Promise<T>, ms: number, what: string): Promise<Settled<T>> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([outcome(p), limit])
  } finally {
    clearTimeout(timer)
  }
}

/** settleWithin for many promises sharing one deadline. */
export async function settleAllWithin<T>(ps: readonly Promise<T>[], ms: number, what: string): Promise<Settled<T>[]> {
  const all = Promise.allSettled(ps)
  const outcome = await settleWithin(all, ms, what)
  if (outcome.status === 'rejected') throw outcome.reason
  return outcome.value
}

/** Every password the managed server's users have: none may appear in an error. */
export function passwordsOf(server: ServerInfo): string[] {
  return [server.superuser.password, ...Object.values(server.users).flatMap((u: { password?: string }) => (u.password === undefined ? [] : [u.password]))]
}

/** A rejection reason as pipegres must produce it: PgError or a PipegresError with a code, and no password anywhere in it. */
export function assertCleanError(err: unknown, passwords: readonly string[], what = 'rejection'): asserts err is PgError | PipegresError {
  assert.ok(err instanceof PgError || err instanceof PipegresError, `${what}: not a pipegres error class: ${inspect(err)}`)
  assert.equal(typeof err.code, 'string', `${what}: no code`)
  assert.ok(err.code.length > 0, `${what}: empty code`)
  // The whole chain of causes, with stacks.
  const text = inspect(err, { depth: 10 }) + String(err.stack)
  for (const pw of passwords) {
    assert.ok(!text.includes(pw) && !text.includes(encodeURIComponent(pw)), `${what}: contains a password: ${text.slice(0, 500)}`)
  }
}

/** Waits until `ok()` holds, polling every 20 ms; fails naming `what` after `ms`. */
export async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = performance.now() + ms
  while (!(await ok())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** Every text an error exposes: messages, inspect output and stacks, down the cause chain. */
export function exposedText(err: unknown): string {
  const parts: string[] = [inspect(err, { depth: null, showHidden: true })]
  const seen = new Set<unknown>()
  const walk = (e: unknown): void => {
    if (e === null || e === undefined || seen.has(e)) return
    seen.add(e)
    if (e instanceof Error) {
      parts.push(String(e), e.message, e.stack ?? '')
      for (const key of Object.keys(e)) parts.push(`${key}=${String((e as unknown as Record<string, unknown>)[key])}`)
      if (e instanceof AggregateError) for (const inner of e.errors) walk(inner)
      walk(e.cause)
    } else {
      parts.push(String(e))
    }
  }
  walk(err)
  try {
    parts.push(JSON.stringify(err))
  } catch {}
  return parts.join('\n')
}

/** No form of `secret` (as it is, or URL-encoded) in any text the error exposes. */
export function assertNoSecret(err: unknown, secret: string): void {
  const text = exposedText(err)
  for (const form of new Set([secret, encodeURIComponent(secret)])) {
    assert.ok(!text.includes(form), `the secret appears in the error:\n${text}`)
  }
}
