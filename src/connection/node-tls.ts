import { appendFileSync, closeSync, openSync } from 'node:fs'
import type * as net from 'node:net'
import * as tls from 'node:tls'
import type { ByteStream } from '../config/byte-stream.js'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConfigError, ConnectionError } from '../errors.js'
import { finish, nodeTransport, waitConnect } from './node-connect.js'
import { tlsOptionsFor } from './tls-options.js'
import { describeHost, type Transport } from './transport.js'

// TLS on Node, Bun and Deno: from the first byte (sslnegotiation=direct), after
// an SSLRequest the server accepted, or around a Duplex of the `stream` option;
// and libpq's sslkeylogfile. Loaded by node-socket.ts and node-platform.ts the
// first time a connection is encrypted: node:tls, node:crypto under it and the
// certificate options (tls-options.ts) cost a program that never uses TLS
// nothing at import.

/** A socket of node:tls from the first byte (sslnegotiation=direct), with the "postgresql" ALPN protocol checked. */
export async function openDirectTls(config: ConnectionConfig, h: HostAddress, register: (s: ByteStream) => void): Promise<Transport> {
  const where = describeHost(h)
  const target = h.hostaddr ?? h.host
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

/** TLS over a socket whose SSLRequest the server accepted ('S'). */
export async function upgradeToTls(config: ConnectionConfig, h: HostAddress, socket: net.Socket, register: (s: ByteStream) => void): Promise<Transport> {
  const where = describeHost(h)
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
