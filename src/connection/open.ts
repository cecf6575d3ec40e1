import type { ByteStream } from '../config/byte-stream.js'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { cloudflarePlatform } from './cloudflare-platform.js'
import { cloudflareStream } from './cloudflare-socket.js'
import { openCustomStream } from './custom-stream.js'
import { platform } from './platform.js'
import type { TlsAttempt, Transport } from './transport.js'

/**
 * Opens the transport of one connection attempt or cancel request: a socket of
 * the runtime's (see platform.ts), or the `stream` option's. `register`
 * receives the stream as soon as it exists so the caller can destroy it on a
 * connect timeout; `signal`, aborted when the caller gives up, reaches a
 * `stream` factory (the runtime's sockets are registered at once, and need it not).
 */
export function openTransport(
  config: ConnectionConfig,
  h: HostAddress,
  attempt: TlsAttempt,
  register: (s: ByteStream) => void,
  purpose: 'connection' | 'cancel',
  signal: AbortSignal,
): Promise<Transport> {
  // The Cloudflare transport given by name is the runtime's own, with its checks of the TLS settings.
  if (config.stream === cloudflareStream) return cloudflarePlatform.open(config, h, attempt, register, purpose)
  if (config.stream !== undefined) return openCustomStream(config, config.stream, h, attempt, register, purpose, signal)
  return platform().open(config, h, attempt, register, purpose)
}
