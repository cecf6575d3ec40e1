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

/** A pipegres client's hold on PGlite's one session. */
interface Hold {
  /** Null while the client's stream is open; once it closed, the reset the next client waits for. */
  handedBack: Promise<void> | null
}

/** PGlite instances whose one session a pipegres client holds, or is handing back. */
const holds = new WeakMap<PGliteLike, Hold>()

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
 * An instance still starting (`new PGlite()`) is waited for.
 */
export function pgliteStream(pglite: PGliteLike): StreamFactory {
  checkPGlite(pglite)
  return ({ purpose, signal }) => {
    if (purpose === 'cancel') {
      throw new ConnectionError('PG_UNSUPPORTED', 'PGlite cannot cancel a running query: it runs in this process, one statement at a time, with no second session to send a cancel request on')
    }
    return openSession(pglite, signal)
  }
}

const isClosed = (pglite: PGliteLike) => pglite.closed === true
const isAborted = (signal: AbortSignal | undefined) => signal?.aborted === true

async function openSession(pglite: PGliteLike, signal: AbortSignal | undefined): Promise<PGliteStream> {
  const gaveUp = () => new ConnectionError('PG_CONNECTION_REFUSED', 'the connection attempt gave up before PGlite was ready')
  // A client that let go is still resetting the session: the next one starts after that.
  for (let hold = holds.get(pglite); hold !== undefined; hold = holds.get(pglite)) {
    if (hold.handedBack === null) {
      throw new ConnectionError(
        'PG_CONNECTION_REFUSED',
        'PGlite has a single session and a pipegres client is using it already: end() that client first, or share it (a pool over PGlite needs max: 1)',
      )
    }
    await hold.handedBack
  }
  if (signal?.aborted === true) throw gaveUp()
  if (pglite.closed === true) throw new ConnectionError('PG_CONNECTION_REFUSED', 'the PGlite instance is closed')
  // Taken before waiting for the instance, so that two clients starting at once cannot both have it.
  const hold: Hold = { handedBack: null }
  holds.set(pglite, hold)
  const letGo = () => {
    if (holds.get(pglite) === hold) holds.delete(pglite)
  }
  // An attempt that gives up (its connectTimeout) while the instance starts lets go at once,
  // before its caller hears of it: a connect that follows finds the session free.
  signal?.addEventListener('abort', letGo, { once: true })
  try {
    // `new PGlite()` returns before its WebAssembly instance is up, and an exchange
    // before then fails (0.5) or never settles (0.4); `await PGlite.create()` is ready already.
    if (pglite.ready !== true && pglite.waitReady !== undefined) await pglite.waitReady
  } catch (err) {
    letGo()
    throw new ConnectionError('PG_CONNECTION_REFUSED', `the PGlite instance failed to start: ${(err as Error)?.message ?? String(err)}`, { cause: err })
  } finally {
    signal?.removeEventListener('abort', letGo)
  }
  // Both may have changed while it started (TypeScript carries the checks above across the await).
  if (isAborted(signal)) {
    letGo()
    throw gaveUp()
  }
  if (isClosed(pglite)) {
    letGo()
    throw new ConnectionError('PG_CONNECTION_REFUSED', 'the PGlite instance is closed')
  }
  return new PGliteStream(pglite, (reset) => {
    hold.handedBack = reset.then(letGo)
  })
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
