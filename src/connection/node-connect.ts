import type * as net from 'node:net'
import type * as tls from 'node:tls'
import type { ConnectionConfig } from '../config/types.js'
import { ConnectionError } from '../errors.js'
import { socketError, tlsError, type ChunkReader, type Transport } from './transport.js'

// What the plain and the TLS sockets of Node share (node-socket.ts,
// node-tls.ts): waiting for a socket to connect, and the Transport made of it.
// node:net and node:tls themselves are the callers' to import (node:tls is
// loaded only when a connection is encrypted).

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
 * Node 24 and later also set the probe interval and count; earlier versions
 * take the first two arguments only, and the system's interval and count apply
 * (pipegres's own checks use the settings everywhere: see liveness.ts).
 */
function setKeepAlive(socket: net.Socket, config: ConnectionConfig): void {
  const set = socket.setKeepAlive as (this: net.Socket, enable: boolean, idle: number, interval?: number, count?: number) => net.Socket
  set.call(socket, true, config.keepAliveIdle, config.keepAliveInterval || undefined, config.keepAliveCount || undefined)
}

export function finish(socket: net.Socket, mode: Transport['mode'], config: ConnectionConfig, reader: ChunkReader | null = null): Transport {
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
