import type { ByteStream } from '../config/byte-stream.js'
import type { HostAddress } from '../config/types.js'
import { ConfigError, ConnectionError, ProtocolError } from '../errors.js'
import { unrefTimer } from './timers.js'

// What every transport shares, whoever opens it: the byte stream a connection
// runs over (a socket of node:net or node:tls, see node-socket.ts; one of
// cloudflare:sockets, see cloudflare-socket.ts; or whatever the `stream` option
// opens, see custom-stream.ts), how a host is named in messages, socket errors
// as ConnectionErrors, and the answer to SSLRequest. Everything above this file
// sees a ByteStream and whether it is encrypted. No node: module here: Workers
// load this file too.

export type TlsAttempt = 'none' | 'request' | 'request-or-plain' | 'direct'

export interface Transport {
  /** A net.Socket or tls.TLSSocket when pipegres opened it; whatever the `stream` option gave otherwise. */
  socket: ByteStream
  tls: boolean
  /** TLS whose certificate was verified (chain, and host name where the sslmode asks for it). */
  authorized: boolean
  /** How TLS was set up, so a cancel connection can do the same: 'direct', 'request' (SSLRequest) or 'none'. */
  mode: 'none' | 'request' | 'direct'
  /** The server certificate (DER) when TLS is in use, for SCRAM channel binding. */
  peerCertificate: Uint8Array | undefined
  /** Set when the socket reads into the shared buffer (see ChunkReader); the 'data' event is then never emitted. */
  reader: ChunkReader | null
}

/**
 * Where a socket that reads into the shared buffer hands each read: the
 * bytes [0, n) of `buf`, valid only during the call.
 */
export interface ChunkReader {
  target: ((buf: Buffer, n: number) => void) | null
  /** Copies of what arrived before there was a target. */
  early: Buffer[]
}

/**
 * Hands every read of the transport's socket to `onData`: through the shared
 * buffer where the socket reads into it, copied first while `mustCopy()` says
 * a view of it may be kept; else as the socket's 'data' events.
 */
export function readFrom(t: Transport, onData: (chunk: Uint8Array, n: number) => void, mustCopy: () => boolean): void {
  const reader = t.reader
  if (reader === null) {
    t.socket.on('data', (chunk: Uint8Array) => onData(chunk, chunk.length))
    return
  }
  reader.target = (buf, n) => (mustCopy() ? onData(Buffer.from(buf.subarray(0, n)), n) : onData(buf, n))
  for (const chunk of reader.early.splice(0)) onData(chunk, chunk.length)
}

/** Ends the sending side; a server that never closes its side must not keep the socket (and end()) waiting forever. */
export function endSocket(socket: ByteStream): void {
  socket.end()
  unrefTimer(setTimeout(() => socket.destroy(), 5000))
}

export function isUnixHost(host: string): boolean {
  return host.startsWith('/') || host.startsWith('@')
}

/** Where a host entry connects to, for messages (never contains a password). */
export function describeHost(h: HostAddress): string {
  if (isUnixHost(h.host)) return `${socketPath(h)}`
  const addr = h.hostaddr ?? h.host
  return addr.includes(':') ? `[${addr}]:${h.port}` : `${addr}:${h.port}`
}

export function socketPath(h: HostAddress): string {
  // '@name' is a socket in Linux's abstract namespace: the path starts with NUL.
  if (h.host.startsWith('@')) return `\0${h.host.slice(1)}/.s.PGSQL.${h.port}`
  // A directory given with a trailing slash names the same socket (as path.join would have it).
  return `${h.host.replace(/\/+$/, '')}/.s.PGSQL.${h.port}`
}

const connectCodes: Record<string, 'PG_CONNECTION_REFUSED' | 'PG_CONNECTION_RESET'> = {
  ECONNREFUSED: 'PG_CONNECTION_REFUSED',
  ENOENT: 'PG_CONNECTION_REFUSED',
  ENOTFOUND: 'PG_CONNECTION_REFUSED',
  EAI_AGAIN: 'PG_CONNECTION_REFUSED',
  EHOSTUNREACH: 'PG_CONNECTION_REFUSED',
  ENETUNREACH: 'PG_CONNECTION_REFUSED',
  EACCES: 'PG_CONNECTION_REFUSED',
  ECONNRESET: 'PG_CONNECTION_RESET',
  EPIPE: 'PG_CONNECTION_RESET',
}

/** Turns a socket-level error into a ConnectionError that names the host. */
export function socketError(err: unknown, where: string): ConnectionError | ProtocolError {
  if (err instanceof ConnectionError || err instanceof ProtocolError) return err
  const e = err as NodeJS.ErrnoException
  const code = (e.code ? connectCodes[e.code] : undefined) ?? 'PG_CONNECTION_CLOSED'
  const verb = code === 'PG_CONNECTION_REFUSED' ? 'could not connect to' : 'connection to'
  const suffix = code === 'PG_CONNECTION_REFUSED' ? '' : ' failed'
  return new ConnectionError(code, `${verb} ${where}${suffix}: ${e.message}`, { cause: err })
}

export function tlsError(err: unknown, where: string): ConnectionError | ProtocolError | ConfigError {
  if (err instanceof ConnectionError || err instanceof ConfigError) return err
  const e = err as NodeJS.ErrnoException
  if (e.code && connectCodes[e.code]) return socketError(err, where)
  return new ConnectionError('PG_TLS', `TLS connection to ${where} failed: ${e.message}`, { cause: err })
}

/** Reads the one-byte answer to SSLRequest. Any further byte is an attack (CVE-2021-23222) or a broken server. */
export function readSslAnswer(socket: ByteStream, where: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onData = (chunk: Uint8Array) => {
      cleanup()
      socket.pause()
      if (chunk.length !== 1) {
        reject(new ProtocolError(`server at ${where} sent ${chunk.length - 1} unexpected bytes after its answer to SSLRequest`))
        return
      }
      resolve(chunk[0]!)
    }
    const onError = (err: Error) => {
      cleanup()
      reject(socketError(err, where))
    }
    const onClose = () => {
      cleanup()
      reject(new ConnectionError('PG_CONNECTION_CLOSED', `server at ${where} closed the connection in answer to SSLRequest`))
    }
    const cleanup = () => {
      socket.off('data', onData)
      socket.off('error', onError)
      socket.off('close', onClose)
    }
    socket.on('data', onData)
    socket.once('error', onError)
    socket.once('close', onClose)
    socket.resume()
  })
}

/** Raised when the server refuses TLS ('N') so the caller can go on in plaintext where the sslmode allows it. */
export class TlsRefused extends ConnectionError {
  override get name(): string {
    return 'TlsRefused'
  }
}
