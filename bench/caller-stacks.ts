// The cost of giving a failed query the caller's frames, per error, without a
// server: `node build/bench/caller-stacks.js`. A PgError reaches a caller
// three async functions up, as the query layer delivers it: resolving the
// awaited promise with a plain rejecting thenable (the cost before), or with
// rejectionAtCaller() (a capture in the caller's chain), with and without
// reading the stack. Alternates the variants over several rounds and prints
// medians, in microseconds per error.

import { PgError, rejectionAtCaller, type PgErrorFields } from '../src/errors.js'

const fields: PgErrorFields = {
  severity: 'ERROR', severityNonLocalized: 'ERROR', code: '22012', message: 'division by zero',
  detail: undefined, hint: undefined, position: undefined, internalPosition: undefined, internalQuery: undefined,
  where: undefined, schema: undefined, table: undefined, column: undefined, dataType: undefined, constraint: undefined,
  file: 'int.c', line: 1, routine: 'int4div',
}

function plain(err: Error): PromiseLike<never> {
  return { then: (_ok: unknown, fail?: (e: unknown) => unknown) => void fail!(err) } as unknown as PromiseLike<never>
}

type Deliver = (err: Error) => PromiseLike<never>

/** One query that fails: a promise resolved, in a later macrotask as a socket reply would, with `deliver(error)`. */
function failingQuery(deliver: Deliver): Promise<unknown> {
  return new Promise((resolve) => setImmediate(() => resolve(deliver(new PgError(fields, 'SELECT 1/0')))))
}

async function loadUserProfile(deliver: Deliver): Promise<unknown> {
  return await failingQuery(deliver)
}
async function handleRequest(deliver: Deliver): Promise<unknown> {
  return await loadUserProfile(deliver)
}
async function serve(deliver: Deliver, read: boolean): Promise<void> {
  try {
    await handleRequest(deliver)
  } catch (err) {
    if (read && !(err as Error).stack) throw new Error('no stack')
  }
}

async function perError(deliver: Deliver, read: boolean, n: number): Promise<number> {
  const t0 = performance.now()
  // Sequential, so each error is one turn of the event loop: the cost of one failure, not of a burst.
  for (let i = 0; i < n; i++) await serve(deliver, read)
  return ((performance.now() - t0) * 1000) / n
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const variants: [string, Deliver, boolean][] = [
  ['rejected as before, stack not read', plain, false],
  ['with the caller, stack not read', rejectionAtCaller, false],
  ['rejected as before, stack read', plain, true],
  ['with the caller, stack read', rejectionAtCaller, true],
]
const results = new Map<string, number[]>(variants.map(([name]) => [name, []]))
for (let round = 0; round < 7; round++) {
  for (const [name, deliver, read] of variants) results.get(name)!.push(await perError(deliver, read, 2000))
}
for (const [name, xs] of results) console.log(`${name.padEnd(40)} ${median(xs).toFixed(2)} µs per error`)
const base = median(results.get('rejected as before, stack read')!)
console.log(`capture and composition, stack read: +${(median(results.get('with the caller, stack read')!) - base).toFixed(2)} µs per error`)
