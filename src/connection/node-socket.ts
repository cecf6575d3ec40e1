import { appendFileSync, closeSync, openSync } from 'node:fs'
import * as net from 'node:net'
import * as tls from 'node:tls'
import type { ByteStream } from '../config/byte-stream.js'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConfigError, ConnectionError, ProtocolError } from '../errors.js'
import { writeSSLRequest } from '../protocol/frontend.js'
import { Writer } from '../protocol/writer.js'
import { tlsOptionsFor } from './tls-options.js'
import { describeHost, isUnixHost, readSslAnswer, socketError, socketPath, TlsRefused, tlsError, type ChunkReader, type TlsAttempt, type Transport } from './transport.js'

// pipegres's own sockets on Node, Bun and Deno: TCP, a unix socket, TLS after
// an SSLRequest, or TLS from the first byte (sslnegotiation=direct), all
// through node:net and node:tls; node:tls around a Duplex the `stream` option
// opens; and the probe of a silent server. Reached only through the platform
// the Node entry installs (node-platform.ts), so a Worker bundle leaves it out.

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

/** node:tls around a Node Duplex from the `stream` option that has no startTls() of its own. */
export async function wrapTls(config: ConnectionConfig, stream: ByteStream, h: HostAddress, mode: 'request' | 'direct'): Promise<Transport> {
  const where = describeHost(h)
  const options = tlsOptionsFor(config, h.host, mode === 'direct')
  openKeyLog(config)
  const secure = tls.connect({ ...options, socket: stream as unknown as NonNullable<tls.ConnectionOptions['socket']> })
  logKeys(secure, config)
  try {
    await waitConnect(secure, 'secureConnect', where)
  } catch (err) {
    secure.destroy()
    throw err
  }
  if (mode === 'direct' && secure.alpnProtocol !== 'postgresql') {
    secure.destroy()
    throw new ConnectionError('PG_TLS', `server at ${where} did not negotiate the "postgresql" ALPN protocol for a direct TLS connection`)
  }
  return nodeTransport(secure, mode)
}

/**
 * Opens a connection to the server and waits for a sign of life: the one-byte
 * answer to SSLRequest, which PostgreSQL and the poolers in front of it give
 * before any authentication (a direct-TLS server: the TCP handshake alone).
 * The server's process for it ends quietly when the connection closes.
 */
export function reachServer(config: ConnectionConfig, h: HostAddress, timeout: number): Promise<void> {
  const direct = config.sslnegotiation === 'direct'
  return new Promise((resolve, reject) => {
    const socket = isUnixHost(h.host) ? net.connect({ path: socketPath(h) }) : net.connect({ host: h.hostaddr ?? h.host, port: h.port })
    socket.unref()
    let settled = false
    const settle = (err: Error | null): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      if (err === null) resolve()
      else reject(err)
    }
    const timer = setTimeout(() => settle(new Error(`no answer within ${timeout} ms`)), timeout)
    timer.unref()
    socket.once('connect', () => {
      if (direct) return settle(null)
      const w = new Writer(16)
      writeSSLRequest(w)
      socket.write(w.take())
    })
    socket.once('data', () => settle(null))
    socket.once('error', (err) => settle(err))
    socket.once('close', () => settle(new Error('the server closed the connection without answering')))
  })
}
