// One frame for scripted-server scenarios: a scenario says what the fake
// server does and what the client must do; play() starts the server, connects,
// checks, and always closes both, so each test is only its table row.

import assert from 'node:assert/strict'
import { connect, Client, ProtocolError, ConnectionError, type ConnectOptions } from '../../../src/index.js'
import { fakeServer, type FakeConnection, type FakeServer } from './fake-server.js'

export interface Scenario {
  name: string
  /** A script for each connection, or, after a trust startup, an answer to each query (one per Sync; null: answer nothing). */
  server: { script: (c: FakeConnection) => Promise<void> } | { answer: (i: number, c: FakeConnection) => Uint8Array | null }
  /** Connection options on top of the fake server's address. */
  options?: Partial<ConnectOptions>
  expect:
    | { connectRejects: assert.AssertPredicate; after?: (s: FakeServer) => void }
    /** The queries, sent together, all fail, the first with a ProtocolError matching `failWith`. */
    | { queries: string[]; failWith: RegExp }
    /** Anything else about a connected client; `disconnected` settles on its disconnect event. */
    | { client: (c: Client, disconnected: Promise<Error | null>, s: FakeServer) => Promise<void> }
    /** A scenario that makes its own connections. */
    | { run: (s: FakeServer) => Promise<void> }
}

export async function play({ server, options, expect }: Scenario): Promise<void> {
  const s = await fakeServer('script' in server ? server.script : answering(server.answer))
  let c: Client | undefined
  try {
    if ('connectRejects' in expect) {
      await assert.rejects(connect({ ...s.options, ...options }), expect.connectRejects)
      expect.after?.(s)
      return
    }
    if ('run' in expect) return await expect.run(s)
    const client = (c = await connect({ ...s.options, ...options }))
    // Watched from the start, so the event cannot be missed.
    const disconnected = new Promise<Error | null>((r) => client.once('disconnect', r))
    if ('client' in expect) return await expect.client(client, disconnected, s)
    await expectProtocolFailure(client, disconnected, expect.queries.map((q) => client.query(q)), expect.failWith)
  } finally {
    await c?.end()
    await s.close()
  }
}

export function answering(answer: (i: number, c: FakeConnection) => Uint8Array | null): (c: FakeConnection) => Promise<void> {
  return async (c) => {
    await c.acceptStartup()
    for (let i = 0; ; i++) {
      const msgs = await c.readUntilSync()
      if (msgs.some((m) => m.type === 'X')) return
      const a = answer(i, c)
      if (a !== null) c.write(a)
    }
  }
}

export async function expectProtocolFailure(client: Client, disconnected: Promise<Error | null>, pending: Promise<unknown>[], pattern: RegExp): Promise<void> {
  const settled = await Promise.allSettled(pending)
  for (const s of settled) {
    assert.equal(s.status, 'rejected', 'no query may succeed on a broken stream')
    const e = (s as PromiseRejectedResult).reason as Error
    assert.ok(e instanceof ProtocolError || e instanceof ConnectionError, `unexpected ${e}`)
  }
  const first = (settled[0] as PromiseRejectedResult).reason as Error
  assert.ok(first instanceof ProtocolError, `expected a ProtocolError, got ${first}`)
  assert.match(first.message, pattern)
  assert.ok((await disconnected) instanceof ProtocolError)
  // The client itself is not closed: a later query would open a new connection.
  assert.equal(client.closed, false)
  assert.equal(client.connected, false)
}

/** A rejection of this class whose message matches. */
export const rejection =
  (kind: abstract new (...args: never[]) => Error, pattern: RegExp, check: (e: Error) => boolean = () => true) =>
  (e: unknown): boolean =>
    e instanceof kind && pattern.test(e.message) && check(e)

/** A script that answers the startup message with `bytes`, then only waits. */
export const afterStartup = (...bytes: Uint8Array[]) => ({
  script: async (c: FakeConnection) => {
    await c.readStartup()
    c.write(...bytes)
    await c.waitClosed()
  },
})
