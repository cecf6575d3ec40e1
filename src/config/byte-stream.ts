// The seam between a connection and the bytes it runs over. pipegres opens
// TCP, unix and TLS sockets itself; anything else (an SSH tunnel, a cloud SQL
// connector, a runtime without node:net, PostgreSQL in the same process)
// comes in through a `stream` factory returning one of these. A Node Duplex
// (net.Socket, tls.TLSSocket, a PassThrough pair) already has this shape.

/**
 * A byte stream to a PostgreSQL server, as `stream` returns it. Events:
 * `'data'` (a chunk of bytes, Uint8Array or Buffer), `'drain'` (after a
 * write returned false), `'error'` (an Error) and `'close'`, which must come
 * once the stream is closed, after an error too.
 */
export interface ByteStream {
  /** Sends the bytes; false asks the writer to wait for `'drain'` before writing more (it still takes these). */
  write(chunk: Uint8Array): boolean
  /** Closes the sending side after what was written. */
  end(): void
  /** Closes both sides at once. */
  destroy(error?: Error): void
  /** Stops `'data'` events until resume(). */
  pause(): void
  resume(): void
  on(event: string, listener: (...args: any[]) => void): unknown
  once(event: string, listener: (...args: any[]) => void): unknown
  off(event: string, listener: (...args: any[]) => void): unknown
  /**
   * Upgrades this stream to TLS after the server said yes to SSLRequest, or at once
   * for direct TLS, and resolves with the encrypted stream. Without it, a stream that
   * is a Node Duplex is wrapped with node:tls; any other cannot use TLS.
   */
  startTls?(options: StartTlsOptions): Promise<ByteStream>
  /** Optional, as a Node socket has them: batch writes; let the stream not keep the process alive (ref undoes it). */
  cork?(): void
  uncork?(): void
  ref?(): void
  unref?(): void
}

/** What a `startTls` upgrade is asked for (libpq's sslmode semantics). */
export interface StartTlsOptions {
  /** The server name to send as SNI and, with `verifyHost`, to check the certificate against. */
  servername: string
  /** Whether the certificate chain must be verified (sslmode verify-ca and verify-full). */
  verifyChain: boolean
  /** Whether the certificate must name `servername` (sslmode verify-full). */
  verifyHost: boolean
  /** For direct TLS (sslnegotiation=direct): the ALPN protocol to offer, `postgresql`. */
  alpn: string | undefined
}

/** What a `stream` factory is asked to connect to. */
export interface StreamTarget {
  /** The host entry being tried (a name, an address, or a unix-socket directory). */
  host: string
  port: number
  /** `'connection'` for a session; `'cancel'` for the short connection that carries a CancelRequest. */
  purpose: 'connection' | 'cancel'
  /**
   * Aborted when the attempt fails or gives up (its `connectTimeout`, say): a
   * factory still opening can stop there. A stream it hands over after that is
   * destroyed at once. Always set when pipegres calls the factory.
   */
  signal?: AbortSignal
}

/** Opens the byte stream for one connection attempt; called again for each attempt and each cancel. */
export type StreamFactory = (target: StreamTarget) => ByteStream | Promise<ByteStream>
