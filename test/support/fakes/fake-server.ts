// A scripted PostgreSQL backend, for what a real server cannot be made to do:
// malformed messages, replies out of turn, handshakes that lie. Each test writes
// a script that reads the client's messages and answers with exact bytes
// (built with ./backend-messages.ts).

import * as net from 'node:net'
import { startupOk } from './backend-messages.js'

export interface FrontendMessage {
  /** The type letter ('' for the untyped startup-phase messages). */
  type: string
  body: Buffer
}

/** One client connection as seen by the fake server. */
export class FakeConnection {
  private buf = Buffer.alloc(0)
  private waiter: (() => void) | null = null
  private ended = false
  /** Startup parameters the client sent. */
  startupParams: Record<string, string> = {}
  startupVersion = 0
  /** Every typed message read so far, so a test can check afterwards what the client did or did not send. */
  readonly received: FrontendMessage[] = []

  constructor(readonly socket: net.Socket) {
    socket.setNoDelay(true)
    socket.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d])
      this.waiter?.()
    })
    socket.on('close', () => {
      this.ended = true
      this.waiter?.()
    })
    socket.on('error', () => {})
  }

  private async need(n: number): Promise<void> {
    while (this.buf.length < n) {
      if (this.ended) throw new Error('client closed the connection')
      await new Promise<void>((r) => (this.waiter = r))
      this.waiter = null
    }
  }

  /** Reads an untyped message (StartupMessage, SSLRequest, CancelRequest). */
  async readUntyped(): Promise<Buffer> {
    await this.need(4)
    const len = this.buf.readInt32BE(0)
    await this.need(len)
    const body = this.buf.subarray(4, len)
    this.buf = this.buf.subarray(len)
    return body
  }

  /** Reads the StartupMessage, answering 'N' to any SSLRequest first. */
  async readStartup(): Promise<Record<string, string>> {
    for (;;) {
      const body = await this.readUntyped()
      const code = body.readInt32BE(0)
      if (code === 80877103) {
        this.socket.write('N')
        continue
      }
      this.startupVersion = code
      const parts = body.subarray(4).toString().split('\0')
      for (let i = 0; i + 1 < parts.length && parts[i] !== ''; i += 2) this.startupParams[parts[i]!] = parts[i + 1]!
      return this.startupParams
    }
  }

  async read(): Promise<FrontendMessage> {
    await this.need(5)
    const len = this.buf.readInt32BE(1)
    await this.need(1 + len)
    const m = { type: String.fromCharCode(this.buf[0]!), body: this.buf.subarray(5, 1 + len) }
    this.buf = this.buf.subarray(1 + len)
    this.received.push(m)
    return m
  }

  /** Reads messages up to and including the next Sync (or a Query, or Terminate). */
  async readUntilSync(): Promise<FrontendMessage[]> {
    const out: FrontendMessage[] = []
    for (;;) {
      const m = await this.read()
      out.push(m)
      if (m.type === 'S' || m.type === 'Q' || m.type === 'X') return out
    }
  }

  /** Completes a trust startup. */
  async acceptStartup(pid?: number): Promise<void> {
    await this.readStartup()
    this.write(startupOk(pid))
  }

  write(...chunks: Uint8Array[]): void {
    if (!this.socket.destroyed) this.socket.write(Buffer.concat(chunks))
  }

  /** Writes bytes one at a time, each in its own TCP segment as far as Nagle allows. */
  async writeSlowly(data: Uint8Array, delayMs = 0): Promise<void> {
    for (const b of data) {
      if (this.socket.destroyed) return
      this.socket.write(Buffer.of(b))
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs))
      else await new Promise((r) => setImmediate(r))
    }
  }

  get closed(): boolean {
    return this.ended
  }

  /** Resolves when the client closes its side. */
  async waitClosed(): Promise<void> {
    while (!this.ended) {
      await new Promise<void>((r) => (this.waiter = r))
      this.waiter = null
    }
  }
}

export interface FakeServer {
  port: number
  /** Options to connect to it without TLS. */
  options: { host: string; port: number; user: string; database: string; sslmode: 'disable' }
  /** Errors thrown by scripts (a script failing is a test failure). */
  errors: unknown[]
  /** Every connection accepted so far, in order. */
  connections: FakeConnection[]
  close(): Promise<void>
}

/** Starts a fake server that runs `script` for every connection. */
export async function fakeServer(script: (c: FakeConnection) => Promise<void>): Promise<FakeServer> {
  const sockets = new Set<net.Socket>()
  const errors: unknown[] = []
  const connections: FakeConnection[] = []
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    const conn = new FakeConnection(socket)
    connections.push(conn)
    script(conn).catch((err: unknown) => {
      if (!conn.closed) errors.push(err)
      socket.destroy()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as net.AddressInfo).port
  return {
    port,
    options: { host: '127.0.0.1', port, user: 'u', database: 'd', sslmode: 'disable' },
    errors,
    connections,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
