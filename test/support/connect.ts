// Helpers for tests that open their own connections with explicit settings.

import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import * as net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after } from 'node:test'
import { connect, type Client, type ClientOptions } from '../../src/index.js'
import type { ServerInfo } from './servers/test-server.js'

/**
 * Keeps the user's PG* variables, ~/.pgpass and ~/.postgresql out of this test
 * file's process (each test file runs in its own process), so they cannot
 * change what a connection does. Returns the empty home directory.
 */
export async function isolateEnvironment(label: string): Promise<string> {
  for (const name of Object.keys(process.env)) if (name.startsWith('PG')) delete process.env[name]
  const home = await mkdtemp(join(tmpdir(), `pipegres-${label}-home-`))
  process.env.HOME = home
  after(() => rm(home, { recursive: true, force: true }))
  return home
}

/** Settings for one of the managed server's users over TCP. */
export function tcpOptions(server: ServerInfo, who: { user: string; password?: string }, extra: ClientOptions = {}): ClientOptions {
  return { host: server.host, port: server.port, database: server.database, user: who.user, password: who.password, ...extra }
}

/** Connects, runs `fn`, and always closes the client. */
export async function withClient<T>(options: ClientOptions | string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await connect(options)
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/** The connection attempt's error; fails the test if it connects. */
export async function connectError(options: ClientOptions | string): Promise<Error> {
  let client: Client
  try {
    client = await connect(options)
  } catch (err) {
    assert.ok(err instanceof Error, `rejected with a non-Error: ${String(err)}`)
    return err
  }
  const tls = client.tls
  await client.end()
  const who = typeof options === 'string' ? 'with a connection string' : `as ${options.user}`
  assert.fail(`connected ${who} (tls: ${tls}), but the connection should have failed`)
}

/** A local TCP port on which nothing listens. */
export async function closedPort(): Promise<number> {
  const s = net.createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as net.AddressInfo).port
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

/** The one row a query returns (it fails unless there is exactly one). */
export async function one<T = Record<string, unknown>>(client: Client, sql: string): Promise<T> {
  const { rows } = await client.query<T>(sql)
  assert.equal(rows.length, 1)
  return rows[0]!
}

/** Who we are and how we got here, as the server sees it. */
export async function whereAmI(client: Client): Promise<{ user: string; db: string; addr: string | null; ssl: boolean }> {
  return one(
    client,
    `SELECT current_user AS user, current_database() AS db, host(inet_server_addr()) AS addr,
            (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl`,
  )
}

export interface Session {
  user: string
  ssl: boolean
}

/** Who the server says this session is, and whether it is encrypted. */
export async function session(client: Client): Promise<Session> {
  const { rows } = await client.query<{ u: string; ssl: boolean }>(
    'SELECT current_user AS u, (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl',
  )
  return { user: rows[0]!.u, ssl: rows[0]!.ssl }
}
