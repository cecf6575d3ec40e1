import type * as Net from 'node:net'
import type { ByteStream } from '../config/byte-stream.js'
import { nodeBuiltin } from '../config/node-system.js'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConnectionError, ProtocolError } from '../errors.js'
import { writeSSLRequest } from '../protocol/frontend.js'
import { Writer } from '../protocol/writer.js'
import { finish, waitConnect } from './node-connect.js'
import { describeHost, isUnixHost, readSslAnswer, socketError, socketPath, TlsRefused, type ChunkReader, type TlsAttempt, type Transport } from './transport.js'

// pipegres's own sockets on Node, Bun and Deno: TCP, a unix socket, TLS after
// an SSLRequest, or TLS from the first byte (sslnegotiation=direct), all
// through node:net and node:tls (node-tls.ts, loaded the first time a connection
// is encrypted); and the probe of a silent server. Reached only through the platform
// the Node entry installs (node-platform.ts), so a Worker bundle leaves it out.

/** node:net, loaded by the first connection (see node-system.ts). */
const net = (): typeof Net => nodeBuiltin('node:net')

// A socket otherwise reads into a fresh 64 KiB buffer each time and passes it
// through the stream machinery (push, a 'data' event, a tick to read more),
// which is much of what an awaited query costs the client. One buffer can serve
// every socket: each read is handled in full before the next one is made, and
// nothing keeps a view of a chunk past its handling (see Request.keepsReads).
// Only for sockets that stay plain: TLS reads through its own layer.
const READ_BUFFER_SIZE = 64 * 1024
let readBuffer: Buffer | null = null

function plainReader(): { reader: ChunkReader; onread: Net.OnReadOpts } {
  const reader: ChunkReader = { target: null, early: [] }
  readBuffer ??= Buffer.allocUnsafe(READ_BUFFER_SIZE)
  const onread: Net.OnReadOpts = {
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
 * The TLS half (node-tls.ts), loaded on first use (see there), for a
 * connection whose `socket` is open: the first time, loading reads a file, and
 * an error or a close of the socket in that gap fails the connection rather
 * than going unheard (an 'error' without a listener would end the process).
 */
export async function nodeTls(socket: ByteStream, where: string): Promise<typeof import('./node-tls.js')> {
  let failure: Error | undefined
  let closed = false
  const onError = (err: Error): void => void (failure ??= socketError(err, where))
  const onClose = (): void => void (closed = true)
  socket.on('error', onError)
  socket.on('close', onClose)
  try {
    const layer = await import('./node-tls.js')
    if (failure !== undefined) throw failure
    if (closed) throw new ConnectionError('PG_CONNECTION_CLOSED', `connection to ${where} closed before it was established`)
    return layer
  } finally {
    socket.off('error', onError)
    socket.off('close', onClose)
  }
}

/**
 * Opens a transport over node:net and node:tls. `register` receives the socket
 * as soon as it exists so the caller can destroy it on a connect timeout.
 */
export async function openSocket(config: ConnectionConfig, h: HostAddress, attempt: TlsAttempt, register: (s: ByteStream) => void): Promise<Transport> {
  const where = describeHost(h)
  const unix = isUnixHost(h.host)
  const target = h.hostaddr ?? h.host

  if (attempt === 'direct' && !unix) return (await import('./node-tls.js')).openDirectTls(config, h, register)

  const plain = attempt === 'none' || unix ? plainReader() : null
  const onread = plain?.onread
  const socket = unix ? net().connect({ path: socketPath(h), onread }) : net().connect({ host: target, port: h.port, onread })
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
  return (await nodeTls(socket, where)).upgradeToTls(config, h, socket, register)
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
    const socket = isUnixHost(h.host) ? net().connect({ path: socketPath(h) }) : net().connect({ host: h.hostaddr ?? h.host, port: h.port })
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
