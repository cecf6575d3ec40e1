// What the integration tests run against: the PostgreSQL server (the default),
// or PGlite in the test's own process when PIPEGRES_TEST_TARGET=pglite.
// scripts/run-tests.ts sets it for the second run of each file tagged
// `// test-tags: pglite`; then openClient(), fileClient(), mainDatabase() and
// the codec tests' raw connection use one PGlite instance per test file
// (test/support/servers/pglite-target.ts), and getTestServer() and adminQuery()
// throw, so that nothing in such a run reaches a server unnoticed.
//
// A test that needs what PGlite lacks takes serverOnly(reason): skipped on
// PGlite with the reason, run on the server exactly as before.

export const TARGET_ENV = 'PIPEGRES_TEST_TARGET'

export type TestTarget = 'server' | 'pglite'

function targetFromEnv(): TestTarget {
  const raw = process.env[TARGET_ENV]
  if (raw === undefined || raw === '' || raw === 'server') return 'server'
  if (raw === 'pglite') return 'pglite'
  throw new Error(`${TARGET_ENV} is server or pglite, not ${JSON.stringify(raw)}`)
}

/** Read once: a file runs against one target from start to end. */
export const testTarget: TestTarget = targetFromEnv()

export const onPGlite = testTarget === 'pglite'

/**
 * node:test options for a test or suite that cannot run on PGlite: `{ skip }`
 * with the reason there, `{ skip: false }` on the server. Spread it beside other
 * options: `test(name, { timeout: 5000, ...serverOnly(NOT_ON_PGLITE.cancel) }, fn)`.
 */
export function serverOnly(reason: string): { skip: string | false } {
  return { skip: onPGlite ? `not on PGlite: ${reason}` : false }
}

/** The reasons that recur, by what the test needs. */
export const NOT_ON_PGLITE = {
  secondSession: 'it opens a second connection while the first is open, and PGlite has one session',
  outsideView: 'it looks from a second session at what an open transaction has not committed, and PGlite has one session',
  admin: 'it watches or ends its backend from an admin connection (pg_stat_activity, pg_terminate_backend), and PGlite has one session',
  cancel: 'it cancels a running statement, and PGlite runs each statement to its end in this process',
  pool: 'it runs a pool of several connections, and PGlite has one session',
  socket: 'it watches or slows the socket, and PGlite is reached through no socket',
  serverSettings: 'it needs the server\'s connection settings (a URL, a host, the unix socket), and PGlite has none',
  wholeReplies: 'PGlite answers each exchange in one piece once it is over, so no row can be read before the error that ends it',
  copyInAtEnd: 'PGlite takes a COPY FROM STDIN with all its data in one call, so the server sees no row before the writer ends',
} as const
