// A backend that completes startup and then hangs: it never reads another
// byte, so the client's writes fill the kernel's socket buffers and then back
// up in the client, as behind a server stuck in a long query. A CancelRequest
// gets its connection closed and changes nothing: the query never ends.

import * as net from 'node:net'
import { startupOk } from './backend-messages.js'

const CANCEL_REQUEST_CODE = 80877102

export interface StalledServer {
  /** Options to connect to it without TLS. */
  options: { host: string; port: number; user: string; database: string; sslmode: 'disable' }
  /** Sessions that completed startup. */
  readonly sessions: number
  readonly cancelRequests: number
  close(): Promise<void>
}

export async function stalledServer(): Promise<StalledServer> {
  const sockets = new Set<net.Socket>()
  let sessions = 0
  let cancelRequests = 0
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buf = Buffer.alloc(0)
    const onData = (chunk: Buffer): void => {
      buf = Buffer.concat([buf, chunk])
      if (buf.length < 8 || buf.length < buf.readInt32BE(0)) return
      socket.off('data', onData)
      socket.pause()
      if (buf.readInt32BE(4) === CANCEL_REQUEST_CODE) {
        cancelRequests++
        socket.end()
        return
      }
      sessions++
      socket.write(startupOk())
    }
    socket.on('data', onData)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as net.AddressInfo).port
  return {
    options: { host: '127.0.0.1', port, user: 'u', database: 'd', sslmode: 'disable' },
    get sessions() {
      return sessions
    },
    get cancelRequests() {
      return cancelRequests
    },
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
