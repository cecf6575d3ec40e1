import { ArgumentError, ConnectionError, connect, type Client, type ClientOptions, type StreamFactory } from '../../index.js'
import { PGliteStream, type PGliteLike } from './stream.js'

// pipegres in process with PGlite (PostgreSQL compiled to WebAssembly): the
// client's protocol code runs unchanged over a byte stream into PGlite's
// execProtocolRaw(). PGlite has one session and no network, so what needs a
// second session (cancelling a running query, a second client) or a network
// (TLS, hosts, passwords) fails with an error that says so.

export type { PGliteLike } from './stream.js'

/** Options of connectPGlite: those of connect(), less the ones that pick and reach a server. */
export type PGliteClientOptions = Omit<ClientOptions, 'connectionString' | 'host' | 'port' | 'hostaddr' | 'stream'>

/** PGlite instances whose one session a pipegres client holds. */
const inUse = new WeakMap<PGliteLike, true>()

const NETWORK_OPTIONS = ['connectionString', 'host', 'port', 'hostaddr', 'stream'] as const
const TLS_OPTIONS = ['sslrootcert', 'sslcert', 'sslkey', 'sslpassword', 'sslcrl', 'sslkeylogfile', 'tls'] as const
// Settings a server takes from the startup packet, which PGlite ignores: refused rather than
// dropped without a word (a TimeZone asked for and not applied would shift every timestamp).
const STARTUP_SETTINGS = ['applicationName', 'options', 'params', 'replication'] as const

function checkPGlite(pglite: unknown): asserts pglite is PGliteLike {
  if (typeof pglite !== 'object' || pglite === null || typeof (pglite as PGliteLike).execProtocolRaw !== 'function') {
    throw new ArgumentError(`connectPGlite expects a PGlite instance (new PGlite() or await PGlite.create() from @electric-sql/pglite), got ${pglite === null ? 'null' : typeof pglite}`)
  }
}

/**
 * The `stream` option for a client or pool over a PGlite instance. PGlite has one
 * session: a second connection while one is open fails with a ConnectionError, so
 * a pool over it needs `max: 1`; so does a cancel request, which is a second
 * connection (a query's timeout or signal cannot stop PGlite mid-statement).
 */
export function pgliteStream(pglite: PGliteLike): StreamFactory {
  checkPGlite(pglite)
  return ({ purpose }) => {
    if (purpose === 'cancel') {
      throw new ConnectionError('PG_UNSUPPORTED', 'PGlite cannot cancel a running query: it runs in this process, one statement at a time, with no second session to send a cancel request on')
    }
    if (pglite.closed === true) throw new ConnectionError('PG_CONNECTION_REFUSED', 'the PGlite instance is closed')
    if (inUse.has(pglite)) {
      throw new ConnectionError(
        'PG_CONNECTION_REFUSED',
        'PGlite has a single session and a pipegres client is using it already: end() that client first, or share it (a pool over PGlite needs max: 1)',
      )
    }
    inUse.set(pglite, true)
    return new PGliteStream(pglite, () => inUse.delete(pglite))
  }
}

/**
 * Resolves with a Client connected to `pglite` in process: every query goes
 * through pipegres's protocol code, pipelined. `options` are connect()'s, less
 * the ones that reach a server over a network; TLS does not apply (sslmode
 * other than disable is an ArgumentError). The user and database default to
 * PGlite's `postgres`.
 */
export function connectPGlite(pglite: PGliteLike, options: PGliteClientOptions = {}): Promise<Client> {
  checkPGlite(pglite)
  if (typeof options !== 'object' || options === null) throw new ArgumentError('connectPGlite options must be an object')
  for (const key of NETWORK_OPTIONS) {
    if ((options as Record<string, unknown>)[key] !== undefined) {
      throw new ArgumentError(`connectPGlite does not take ${key}: PGlite runs in this process, there is no server to reach`)
    }
  }
  const sslmode = options.sslmode
  if (sslmode !== undefined && sslmode !== 'disable' && sslmode !== 'prefer' && sslmode !== 'allow') {
    throw new ArgumentError(`connectPGlite cannot use sslmode=${sslmode}: PGlite runs in this process, with no network to encrypt; leave sslmode out`)
  }
  for (const key of TLS_OPTIONS) {
    if ((options as Record<string, unknown>)[key] !== undefined) throw new ArgumentError(`connectPGlite does not take ${key}: PGlite runs in this process, with no TLS to set up`)
  }
  for (const key of STARTUP_SETTINGS) {
    if ((options as Record<string, unknown>)[key] !== undefined) {
      throw new ArgumentError(
        `connectPGlite does not take ${key}: PGlite ignores the settings a server reads at connection time; run SET (or SELECT set_config(...)) once connected`,
      )
    }
  }
  return connect({
    user: 'postgres',
    database: 'postgres',
    ...options,
    // A name for messages only: nothing is resolved or dialled.
    host: 'pglite',
    port: 5432,
    sslmode: 'disable',
    stream: pgliteStream(pglite),
  })
}
