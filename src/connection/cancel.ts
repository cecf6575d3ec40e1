import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConnectionError } from '../errors.js'
import { writeCancelRequest } from '../protocol/frontend.js'
import { Writer } from '../protocol/writer.js'
import type { ByteStream } from '../config/byte-stream.js'
import { openTransport } from './open.js'
import { describeHost, type TlsAttempt, type Transport } from './transport.js'
import { unrefTimer } from './timers.js'

// A CancelRequest goes on a connection of its own, to the same server, over TLS
// when the connection it cancels uses TLS (its secret key must not travel in
// the clear). The server answers nothing: it closes the connection once it has
// signalled the backend.
//
// The connection can be opened before deciding to send: the server forks a
// process for every connection it accepts, and TCP and TLS handshakes take
// round trips, so a CancelRequest written on an already open connection lands
// within a fraction of a millisecond instead of several (measured: ~5 ms on a
// local PostgreSQL 18). That is what keeps the window small in which a query
// that finishes just then lets the signal hit the query after it (see
// CancelScheduler).

const CANCEL_TIMEOUT_MS = 10_000
/** A cancel connection opened ahead of time and never used is closed after this long. */
const IDLE_MS = 2_000

export interface CancelChannel {
  /** Resolves once the connection is open (and TLS is set up): send() then writes at once. */
  readonly ready: Promise<void>
  /**
   * Writes the CancelRequest. Resolves once the server has closed the
   * connection (it signals the backend before that); rejects if the
   * connection could not be opened or timed out.
   */
  send(processId: number, secretKey: Uint8Array): Promise<void>
  /** Closes the connection without sending anything. */
  abandon(): void
}

/** How long a cancel connection may take to open, or the server to close it after the CancelRequest. */
export function cancelTimeoutOf(config: ConnectionConfig): number {
  return config.connectTimeout > 0 ? Math.min(config.connectTimeout, CANCEL_TIMEOUT_MS) : CANCEL_TIMEOUT_MS
}

/** Starts opening a cancel connection; nothing is written until send(). */
export function openCancelChannel(config: ConnectionConfig, host: HostAddress, tls: TlsAttempt): CancelChannel {
  let socket: ByteStream | undefined
  let done = false
  const limit = cancelTimeoutOf(config)
  const where = describeHost(host)
  /** Aborted if the channel closes before a `stream` factory handed its stream over. */
  const gaveUp = new AbortController()
  const finish = (): void => {
    done = true
    clearTimeout(openTimer)
    clearTimeout(idleTimer)
    if (socket === undefined) gaveUp.abort()
    socket?.destroy()
  }
  let failOpen!: (err: Error) => void
  const deadline = new Promise<never>((_, reject) => (failOpen = reject))
  const openTimer = setTimeout(() => {
    failOpen(new ConnectionError('PG_CONNECT_TIMEOUT', `opening a connection to ${where} for a cancel request timed out`))
  }, limit)
  // An unused channel must not keep the process alive, nor the server's process waiting.
  const idleTimer = setTimeout(finish, IDLE_MS)
  unrefTimer(openTimer)
  unrefTimer(idleTimer)
  const opened: Promise<Transport> = Promise.race([
    openTransport(config, host, tls, (s) => {
      socket = s
      if (done) s.destroy()
      else s.unref?.()
    }, 'cancel', gaveUp.signal),
    deadline,
  ])
  opened.then(
    (t) => {
      if (done) t.socket.destroy()
    },
    () => finish(),
  )
  return {
    ready: opened.then(() => undefined),
    async send(processId, secretKey) {
      if (done) throw new ConnectionError('PG_CONNECTION_CLOSED', `the cancel connection to ${where} was already closed`)
      clearTimeout(idleTimer)
      try {
        const { socket: s } = await opened
        if (done) throw new ConnectionError('PG_CONNECTION_CLOSED', `the cancel connection to ${where} was already closed`)
        clearTimeout(openTimer)
        s.ref?.()
        const w = new Writer(64)
        writeCancelRequest(w, processId, secretKey)
        let timer: NodeJS.Timeout | undefined
        await new Promise<void>((resolve, reject) => {
          s.on('data', () => {})
          s.once('close', () => resolve())
          s.once('error', () => resolve())
          timer = setTimeout(() => reject(new ConnectionError('PG_CONNECT_TIMEOUT', `the server at ${where} did not close the cancel connection`)), limit)
          s.resume()
          s.write(w.take())
          s.end()
        }).finally(() => clearTimeout(timer))
      } finally {
        finish()
      }
    },
    abandon: finish,
  }
}
