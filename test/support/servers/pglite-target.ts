// The PGlite a test file runs against when PIPEGRES_TEST_TARGET=pglite (see
// test/support/target.ts): one instance per test file's process, made on first
// use. Every client the helpers open on it is a connectPGlite() client, so the
// tests go through pipegres/pglite as a user's code does; PGlite has one
// session, so a second client while one is open is refused, as it would be for
// the user (tests that need one take serverOnly()).
//
// PGlite keeps a timer of its own running, so the process would never exit
// with the instance open. It is closed once the file's tests are over and the
// file's shared clients (fileClient) have run their clean-up and ended.

import { after } from 'node:test'
import type { PGlite } from '@electric-sql/pglite'
import type { ByteStream, Client, ClientOptions } from '../../../src/index.js'
import { connectPGlite, pgliteStream, type PGliteClientOptions } from '../../../src/integrations/pglite/index.js'
import { onPGlite } from '../target.js'
import { openCachedPGlite } from './pglite-datadir.js'

let instance: Promise<PGlite> | undefined

/** What keeps the instance open: the file's tests (until the root's after hook), and each fileClient until it has ended. */
let holds = 1
let closing: Promise<void> | undefined

// At the top level, so that node:test ties the hook to the file, not to the test that happens to open PGlite first.
if (onPGlite) after(() => release())

function release(): Promise<void> | undefined {
  if (--holds > 0) return undefined
  closing ??= instance === undefined ? Promise.resolve() : instance.then((pglite) => (pglite.closed ? undefined : pglite.close()))
  return closing
}

/** Keeps the instance open until the returned function is called (once). */
export function holdPGlite(): () => Promise<void> {
  holds++
  let released = false
  return async () => {
    if (released) return
    released = true
    await release()
  }
}

/** The file's PGlite instance. */
export function testPGlite(): Promise<PGlite> {
  if (!onPGlite) throw new Error('testPGlite() is for PIPEGRES_TEST_TARGET=pglite runs')
  if (closing) throw new Error('the file\'s PGlite is closed: its tests are over')
  instance ??= openCachedPGlite()
  return instance
}

/** A connectPGlite() client on the file's instance, with `extra` as its options. */
export async function pgliteClient(extra: ClientOptions = {}): Promise<Client> {
  return connectPGlite(await testPGlite(), extra as PGliteClientOptions)
}

/**
 * Options for connect(), new Client() and createPool() that reach the file's
 * PGlite, as the README gives them for a pool: its one session through
 * pgliteStream(). A pool of more than one connection is refused its second.
 */
export async function pgliteConnectOptions(): Promise<ClientOptions> {
  return { host: 'pglite', user: 'postgres', database: 'postgres', sslmode: 'disable', stream: pgliteStream(await testPGlite()) }
}

/** A byte stream into the file's PGlite session, for the codec tests' raw protocol connection. */
export async function pgliteSessionStream(): Promise<ByteStream> {
  return pgliteStream(await testPGlite())({ host: 'pglite', port: 5432, purpose: 'connection' })
}
