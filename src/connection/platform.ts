import type { ByteStream } from '../config/byte-stream.js'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConnectionError } from '../errors.js'
import type { TlsAttempt, Transport } from './transport.js'

// What the runtime gives a connection beside the protocol: its own sockets
// (node:net and node:tls on Node, Bun and Deno; cloudflare:sockets on Cloudflare
// Workers), node:tls around a Duplex from the `stream` option, a probe that a
// server still answers, and the password file. The package entry installs one
// platform when it loads (src/index.ts the Node one, src/worker.ts the Workers
// one), so that a Worker bundle never contains the node:net transport, the
// shared read buffer or the .pgpass reader, and Node never loads
// cloudflare:sockets. It is a property of the runtime, not a setting: one per
// process, installed before any connection exists.

export interface SocketPlatform {
  /** Names the runtime in messages: 'Node.js', 'Cloudflare Workers'. */
  readonly name: string
  /** Opens a connection without the `stream` option (or a cancel request's). */
  open(config: ConnectionConfig, h: HostAddress, attempt: TlsAttempt, register: (s: ByteStream) => void, purpose: 'connection' | 'cancel'): Promise<Transport>
  /** Encrypts a Node Duplex from the `stream` option with node:tls; absent where node:tls is not used. */
  wrapTls?: (config: ConnectionConfig, stream: ByteStream, h: HostAddress, mode: 'request' | 'direct') => Promise<Transport>
  /** Resolves once a new connection to the server gets an answer (see liveness.ts); rejects after `timeout` ms. */
  reach(config: ConnectionConfig, h: HostAddress, timeout: number): Promise<void>
  /** The password file's password for a connection; absent where files cannot be read. */
  passwordFromPassfile?: (path: string, host: string, port: number, database: string, user: string) => Promise<string | undefined>
}

let installed: SocketPlatform | undefined

/** Called by the package entry as it loads. */
export function installPlatform(platform: SocketPlatform): void {
  installed = platform
}

export function platform(): SocketPlatform {
  if (installed === undefined) {
    // Only code that imports pipegres's internal modules past its entry gets here.
    throw new ConnectionError('PG_CONNECTION_REFUSED', "pipegres has no socket transport: import it through its package entry ('pipegres'), which installs the one for this runtime")
  }
  return installed
}
