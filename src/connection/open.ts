import type { ByteStream } from '../config/byte-stream.js'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { openCustomStream } from './custom-stream.js'
import { openSocket, type TlsAttempt, type Transport } from './transport.js'

/**
 * Opens the transport of one connection attempt or cancel request: a socket of
 * pipegres's own, or the `stream` option's. `register` receives the stream as
 * soon as it exists so the caller can destroy it on a connect timeout.
 */
export function openTransport(
  config: ConnectionConfig,
  h: HostAddress,
  attempt: TlsAttempt,
  register: (s: ByteStream) => void,
  purpose: 'connection' | 'cancel',
): Promise<Transport> {
  if (config.stream !== undefined) return openCustomStream(config, config.stream, h, attempt, register, purpose)
  return openSocket(config, h, attempt, register)
}
