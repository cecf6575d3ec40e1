// Loaded before every test file by the test runner (scripts/run-tests.ts,
// `--import`). Node's test harness keeps a map from every async resource to
// the test it descends from, through an async hook: an entry per promise,
// added when it is created and removed when it is garbage collected, which
// also makes the runtime track the collection of every promise. A test of a
// pipelined client makes millions of promises, and that bookkeeping was most
// of the CPU of such files: measured on Node 20 over the pool, pipeline,
// PgBouncer pipeline and flood files, 191 s of CPU with it, 145 s with
// promises left out of the map, 134 s with the hook's destroy callback gone
// too (the flood file alone: 58 s, 51 s, 41 s).
//
// Without that callback the map would keep every other resource (timers,
// sockets, ticks) for good, so it keeps the latest MAX_TRACKED of them: the
// harness is told of the oldest one's end when a newer one arrives. Tests
// themselves are never dropped (it places the tests a suite declares by them).
//
// What the map is for: an error thrown where no test awaits it (an uncaught
// exception or unhandled rejection) fails the test whose async descendant
// threw it. With promises left out, such an error raised after an `await`
// fails the file instead, with the error in the report ("a resource generated
// asynchronous activity after the test ended") and exit code 1, which the
// runner counts as a failure: nothing passes that failed before, the report
// just names the file rather than the test. `PIPEGRES_TEST_TRACK_PROMISES=1`
// leaves the harness as it is, to find that test.
//
// Only the harness's own hook is changed, recognised by its caller; any other
// hook (the client's own diagnostics, a test of them) sees every promise.

import asyncHooks, { type HookCallbacks } from 'node:async_hooks'

const createHook = asyncHooks.createHook

const MAX_TRACKED = 1 << 16

const fromHarness = (): boolean => /internal\/test_runner\/harness/.test(new Error().stack ?? '')

asyncHooks.createHook = function createHookLeavingOutPromises(callbacks: HookCallbacks) {
  const { init, destroy } = callbacks
  if (init === undefined || !fromHarness()) return createHook(callbacks)
  ;(globalThis as Record<symbol, unknown>)[Symbol.for('pipegres.test.untrackedPromises')] = true
  // The ids of the resources the harness was told of, oldest at `next` once full.
  const ring = new Float64Array(MAX_TRACKED)
  let next = 0
  let full = false
  return createHook({
    init(asyncId, type, triggerAsyncId, resource) {
      if (type === 'PROMISE') return
      init.call(this, asyncId, type, triggerAsyncId, resource)
      if (type === 'Test' || destroy === undefined) return
      if (full) destroy.call(this, ring[next]!)
      ring[next] = asyncId
      next = (next + 1) % MAX_TRACKED
      if (next === 0) full = true
    },
  })
}
