// The bounds of the dead-peer checks, as the README states them.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { livenessLimits } from '../../../src/connection/liveness.js'
import { resolveConfig } from '../../../src/config/index.js'

const limits = (s: string) => livenessLimits(resolveConfig(`postgresql://u@h/db?${s}`, { env: {} }))

test('defaults: a check after 60 s of silence, 3 × 10 s for its answer; a write undrained for the sum starts a check', () => {
  // Not strict: a backend running a long query reads nothing either, so only a server that no longer answers is given up.
  assert.deepEqual(limits('keepalives=1'), { idle: 60_000, window: 30_000, write: 90_000, writeStrict: false })
})

test('keepalives_idle, keepalives_interval and keepalives_count set the bound; 0 means the default', () => {
  assert.deepEqual(limits('keepalives_idle=5&keepalives_interval=2&keepalives_count=4'), { idle: 5_000, window: 8_000, write: 13_000, writeStrict: false })
  assert.deepEqual(limits('keepalives_idle=0&keepalives_interval=0&keepalives_count=0'), { idle: 60_000, window: 30_000, write: 90_000, writeStrict: false })
})

test('tcp_user_timeout (milliseconds) bounds an undrained write strictly, as the kernel would, with keepalives on or off', () => {
  assert.deepEqual(limits('tcp_user_timeout=2500'), { idle: 60_000, window: 30_000, write: 2_500, writeStrict: true })
  assert.deepEqual(limits('keepalives=0&tcp_user_timeout=2500'), { idle: 0, window: 30_000, write: 2_500, writeStrict: true })
})

test('keepalives=0 without tcp_user_timeout: no checks at all', () => {
  const l = limits('keepalives=0')
  assert.equal(l.idle, 0)
  assert.equal(l.write, 0)
})
