import { appendFileSync, closeSync, openSync } from 'node:fs'
import * as net from 'node:net'
import * as tls from 'node:tls'
import { join } from 'node:path'
import type { ByteStream } from '../config/byte-stream.js'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConfigError, ConnectionError, ProtocolError } from '../errors.js'
import { writeSSLRequest } from '../protocol/frontend.js'
import { Writer } from '../protocol/writer.js'
import { tlsOptionsFor } from './tls-options.js'

// Opens the byte stream a connection runs over: TCP, a unix socket, TLS after
// an SSLRequest, or TLS from the first byte (sslnegotiation=direct), or
// whatever the `stream` option opens (see custom-stream.ts). Everything above
// this file sees a ByteStream and whether it is encrypted.

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

// A socket otherwise reads into a fresh 64 KiB buffer each time and passes it
// through the stream machinery (push, a 'data' event, a tick to read more),
// which is much of what an awaited query costs the client. One buffer can serve
// every socket: each read is handled in full before the next one is made, and
// nothing keeps a view of a chunk past its handling (see Request.keepsReads).
// Only for sockets that stay plain: TLS reads through its own layer.
const READ_BUFFER_SIZE = 64 * 1024
let readBuffer: Buffer | null = null

function plainReader(): { reader: ChunkReader; onread: net.OnReadOpts } {
  const reader: ChunkReader = { target: null, early: [] }
  readBuffer ??= Buffer.allocUnsafe(READ_BUFFER_SIZE)
  const onread: net.OnReadOpts = {
    buffer: readBuffer,
    callback: (n, buf) => {
      const target = reader.target
      if (target !== null) target(buf as Buffer, n)
      else reader.early.push(Buffer.from(buf.subarray(0, n)))
      return true
    },
  }
  return { reader, onread }
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
  return join(h.host, `.s.PGSQL.${h.port}`)
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

export function waitConnect(socket: net.Socket, event: 'connect' | 'secureConnect', where: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => {
      cleanup()
      if (event === 'secureConnect') reject(tlsError(err, where))
      else reject(socketError(err, where))
    }
    const onClose = () => {
      cleanup()
      reject(new ConnectionError('PG_CONNECTION_CLOSED', `connection to ${where} closed before it was established`))
    }
    const onOk = () => {
      cleanup()
      resolve()
    }
    const cleanup = () => {
      socket.off('error', onError)
      socket.off('close', onClose)
      socket.off(event, onOk)
    }
    socket.once('error', onError)
    socket.once('close', onClose)
    socket.once(event, onOk)
  })
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
export class TlsRefused extends ConnectionError {}

/**
 * Opens a transport over node:net and node:tls. `register` receives the socket
 * as soon as it exists so the caller can destroy it on a connect timeout.
 */
export async function openSocket(config: ConnectionConfig, h: HostAddress, attempt: TlsAttempt, register: (s: ByteStream) => void): Promise<Transport> {
  const where = describeHost(h)
  const unix = isUnixHost(h.host)
  const target = h.hostaddr ?? h.host

  if (attempt === 'direct' && !unix) {
    const options = tlsOptionsFor(config, h.host, true)
    openKeyLog(config)
    const socket = tls.connect({ ...options, host: target, port: h.port })
    logKeys(socket, config)
    register(socket)
    try {
      await waitConnect(socket, 'secureConnect', where)
    } catch (err) {
      // A server before PostgreSQL 17 reads the ClientHello as a malformed
      // startup packet and hangs up: say so, rather than a bare "socket reset".
      if (err instanceof ConnectionError && (err.code === 'PG_CONNECTION_RESET' || err.code === 'PG_CONNECTION_CLOSED')) {
        throw new ConnectionError(
          'PG_TLS',
          `server at ${where} closed the connection during a direct TLS handshake (sslnegotiation=direct); ` +
            'PostgreSQL before 17 does not support direct TLS: use sslnegotiation=postgres',
          { cause: err },
        )
      }
      throw err
    }
    if (socket.alpnProtocol !== 'postgresql') {
      socket.destroy()
      throw new ConnectionError('PG_TLS', `server at ${where} did not negotiate the "postgresql" ALPN protocol for a direct TLS connection`)
    }
    return finish(socket, 'direct', config)
  }

  const plain = attempt === 'none' || unix ? plainReader() : null
  const onread = plain?.onread
  const socket = unix ? net.connect({ path: socketPath(h), onread }) : net.connect({ host: target, port: h.port, onread })
  register(socket)
  await waitConnect(socket, 'connect', where)
  // Unix sockets are never encrypted, whatever the sslmode (as in libpq).
  if (plain !== null) return finish(socket, 'none', config, plain.reader)

  const w = new Writer(64)
  writeSSLRequest(w)
  socket.write(w.take())
  const answer = await readSslAnswer(socket, where)
  if (answer === 0x4e /* N */) {
    if (attempt === 'request-or-plain') return finish(socket, 'none', config)
    socket.destroy()
    throw new TlsRefused('PG_TLS', `server at ${where} does not support TLS, but sslmode=${config.sslmode} requires it`)
  }
  if (answer !== 0x53 /* S */) {
    socket.destroy()
    throw new ProtocolError(`server at ${where} answered SSLRequest with byte 0x${answer.toString(16).padStart(2, '0')}`)
  }
  const options = tlsOptionsFor(config, h.host, false)
  openKeyLog(config)
  const secure = tls.connect({ ...options, socket })
  logKeys(secure, config)
  register(secure)
  await waitConnect(secure, 'secureConnect', where)
  return finish(secure, 'request', config)
}

/**
 * libpq 18's sslkeylogfile: the file is created (mode 0600, as libpq does) or
 * opened for appending before the handshake, so that a path that cannot be
 * written is a ConfigError before anything is sent.
 */
export function openKeyLog(config: ConnectionConfig): void {
  const file = config.sslkeylogfile
  if (file === undefined) return
  try {
    closeSync(openSync(file, 'a', 0o600))
  } catch (err) {
    throw new ConfigError('sslkeylogfile', `could not open the sslkeylogfile "${file}": ${(err as Error).message}`, { cause: err })
  }
}

/**
 * Appends each line of TLS key material (NSS key log format: CLIENT_RANDOM for
 * TLS 1.2, the *_TRAFFIC_SECRET_* lines for TLS 1.3) to the sslkeylogfile, for
 * Wireshark. Written at once, as libpq does, so the keys are there while the
 * connection is still being captured. A line that cannot be written closes
 * the connection: a key log with holes would fail the debugging it is for.
 */
export function logKeys(socket: tls.TLSSocket, config: ConnectionConfig): void {
  const file = config.sslkeylogfile
  if (file === undefined) return
  socket.on('keylog', (line: Buffer) => {
    try {
      appendFileSync(file, line, { mode: 0o600 })
    } catch (err) {
      socket.destroy(new ConfigError('sslkeylogfile', `could not write to the sslkeylogfile "${file}": ${(err as Error).message}`, { cause: err }))
    }
  })
}

/**
 * Node 24 and later also set the probe interval and count; earlier versions
 * take the first two arguments only, and the system's interval and count apply
 * (pipegres's own checks use the settings everywhere: see liveness.ts).
 */
function setKeepAlive(socket: net.Socket, config: ConnectionConfig): void {
  const set = socket.setKeepAlive as (this: net.Socket, enable: boolean, idle: number, interval?: number, count?: number) => net.Socket
  set.call(socket, true, config.keepAliveIdle, config.keepAliveInterval || undefined, config.keepAliveCount || undefined)
}

function finish(socket: net.Socket, mode: Transport['mode'], config: ConnectionConfig, reader: ChunkReader | null = null): Transport {
  socket.setNoDelay(true)
  if (config.keepAlive) setKeepAlive(socket, config)
  return nodeTransport(socket, mode, reader)
}

/** A transport over a socket of node:net or node:tls (the latter also over a custom stream). */
export function nodeTransport(socket: net.Socket, mode: Transport['mode'], reader: ChunkReader | null = null): Transport {
  const encrypted = mode !== 'none'
  let peerCertificate: Uint8Array | undefined
  if (encrypted) {
    const cert = (socket as tls.TLSSocket).getPeerX509Certificate()
    peerCertificate = cert?.raw
  }
  return { socket, tls: encrypted, authorized: encrypted && (socket as tls.TLSSocket).authorized === true, mode, peerCertificate, reader }
}
