import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConnectionError } from '../errors.js'
import { writeCancelRequest } from '../protocol/frontend.js'
import { Writer } from '../protocol/writer.js'
import type { Socket } from 'node:net'
import { describeHost, openTransport, type TlsAttempt } from './transport.js'

// A CancelRequest goes on a connection of its own, to the same server, over TLS
// when the connection it cancels uses TLS (its secret key must not travel in
// the clear). The server answers nothing: it closes the connection once it has
// signalled the backend.

const CANCEL_TIMEOUT_MS = 10_000

export async function sendCancelRequest(
  config: ConnectionConfig,
  host: HostAddress,
  tls: TlsAttempt,
  processId: number,
  secretKey: Uint8Array,
): Promise<void> {
  let socket: Socket | undefined
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      socket?.destroy()
      reject(new ConnectionError('PG_CONNECT_TIMEOUT', `sending a cancel request to ${describeHost(host)} timed out`))
    }, config.connectTimeout > 0 ? Math.min(config.connectTimeout, CANCEL_TIMEOUT_MS) : CANCEL_TIMEOUT_MS)
  })
  try {
    const transport = await Promise.race([openTransport(config, host, tls, (s) => (socket = s)), timeout])
    const s = transport.socket
    const w = new Writer(64)
    writeCancelRequest(w, processId, secretKey)
    const closed = new Promise<void>((resolve) => {
      s.on('data', () => {})
      s.once('close', () => resolve())
      s.once('error', () => resolve())
    })
    s.resume()
    s.end(w.take())
    await Promise.race([closed, timeout])
  } finally {
    clearTimeout(timer)
    socket?.destroy()
  }
}
